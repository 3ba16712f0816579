// Benchmark (not a test): the run's record parser in WebAssembly in a Chromium Web Worker, apart
// from the rest of the worker. Builds `crates/web/examples/parse_bench.rs` for wasm32 (release),
// binds it with wasm-bindgen, shrinks it with wasm-opt -Os (as trunk does), loads it into a module worker and times, on the 100,000 records of
// `crates/core/benches/run_lines.rs` (made in the worker by the same writer), the fast line
// parser and the whole RunLoader, RUNS times each. Results go to BENCHMARKS.md by hand.
//   node tests/e2e/parse_bench.mjs
// Env: RECORDS (default 100000), RUNS (default 5), ARTIFACTS (default artifacts/web: writes
//      parse-bench.json), CARGO_TARGET_DIR.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serve } from './server.mjs';
import { launch } from './browser.mjs';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const ARTIFACTS = resolve(ROOT, process.env.ARTIFACTS ?? 'artifacts/web');
const TARGET = resolve(ROOT, process.env.CARGO_TARGET_DIR ?? 'target');
const RECORDS = Number(process.env.RECORDS ?? 100_000);
const RUNS = Number(process.env.RUNS ?? 5);

execFileSync('cargo', ['build', '-p', 'aiperf-web', '--example', 'parse_bench', '--target', 'wasm32-unknown-unknown', '--release'],
  { cwd: ROOT, stdio: 'inherit' });
const dir = mkdtempSync(join(tmpdir(), 'aiperf-parse-bench-'));
execFileSync('wasm-bindgen', ['--target', 'web', '--out-dir', dir,
  join(TARGET, 'wasm32-unknown-unknown/release/examples/parse_bench.wasm')], { stdio: 'inherit' });
// wasm-opt -Os, as trunk builds the worker (`data-wasm-opt="s"` in index.html).
const bg = join(dir, 'parse_bench_bg.wasm');
execFileSync(join(ROOT, 'node_modules/.bin/wasm-opt'), ['-Os', '--enable-bulk-memory', '--enable-nontrapping-float-to-int',
  '--enable-sign-ext', '--enable-mutable-globals', '--enable-reference-types', '--enable-multivalue', bg, '-o', bg], { stdio: 'inherit' });
writeFileSync(join(dir, 'worker.js'), `
import init, { make_lines, parse_fast_lines, run_loader_lines } from './parse_bench.js';
onmessage = async ({ data: { records, runs } }) => {
  try {
    await init();
    const bytes = make_lines(records);
    const out = { bytes, parse_fast_ms: [], run_loader_ms: [] };
    for (const [key, f] of [['parse_fast_ms', parse_fast_lines], ['run_loader_ms', run_loader_lines]]) {
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const n = f();
        out[key].push(performance.now() - t0);
        if (n !== records) throw new Error(key + ': ' + n + ' records of ' + records);
      }
    }
    postMessage(out);
  } catch (e) {
    postMessage({ error: String(e) });
  }
};
`);
writeFileSync(join(dir, 'index.html'), `<!doctype html><meta charset="utf-8"><script type="module">
const w = new Worker('worker.js', { type: 'module' });
w.onmessage = (e) => { window.__result = e.data; };
w.postMessage({ records: ${RECORDS}, runs: ${RUNS} });
</script>`);

const { server, url } = await serve(dir);
const browser = await launch();
let failed = false;
try {
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForFunction(() => window.__result, null, { timeout: 600000, polling: 500 });
  const r = await page.evaluate(() => window.__result);
  if (r.error) throw new Error(r.error);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const mibs = (ms) => r.bytes / (1 << 20) / (ms / 1000);
  const result = { records: RECORDS, ...r, chromium: browser.version(),
    parse_fast_mib_s: mibs(median(r.parse_fast_ms)), run_loader_mib_s: mibs(median(r.run_loader_ms)) };
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(join(ARTIFACTS, 'parse-bench.json'), JSON.stringify(result, null, 2) + '\n');
  const fmt = (xs) => xs.map((x) => x.toFixed(0)).join(', ');
  console.log(`[parse-bench] ${RECORDS} records, ${(r.bytes / 1e6).toFixed(1)} MB, Chromium ${result.chromium}`);
  console.log(`[parse-bench] parse_fast: ${fmt(r.parse_fast_ms)} ms; median ${result.parse_fast_mib_s.toFixed(0)} MiB/s`);
  console.log(`[parse-bench] RunLoader: ${fmt(r.run_loader_ms)} ms; median ${result.run_loader_mib_s.toFixed(0)} MiB/s`);
} catch (e) {
  failed = true;
  console.error('[parse-bench] FAIL:', e.message);
} finally {
  await browser.close();
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
