// Trunk post-build hook: puts the SHA-256 of every inline <script> of the staged index.html into
// the Content-Security-Policy placeholder, so the policy allows exactly those scripts and nothing
// else inline. Run by Trunk with TRUNK_STAGING_DIR set.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) {
  console.error('csp.mjs: TRUNK_STAGING_DIR is not set (run me from a Trunk hook)');
  process.exit(1);
}
const file = join(dir, 'index.html');
let html = readFileSync(file, 'utf8');
const hashes = [];
for (const m of html.matchAll(/<script\b(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)) {
  hashes.push(`'sha256-${createHash('sha256').update(m[1], 'utf8').digest('base64')}'`);
}
if (!html.includes('__INLINE_SCRIPT_HASHES__')) {
  console.error('csp.mjs: no __INLINE_SCRIPT_HASHES__ placeholder in index.html');
  process.exit(1);
}
html = html.replace('__INLINE_SCRIPT_HASHES__', hashes.join(' '));
writeFileSync(file, html);
console.log(`csp.mjs: ${hashes.length} inline script hash(es) added to the CSP`);
