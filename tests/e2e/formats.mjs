// End-to-end test of the production trace formats in the browser app, in Chromium:
// each sample fixture is dropped on the page; the page must name the detected format, say "no
// prefix information" where the source has no hash ids, show the analysis `aiperf-cli
// analyze-trace FILE` computes (the downloaded analysis JSON equal to the CLI's --output-file,
// byte for byte), and download the converted Mooncake JSONL equal to `aiperf-cli convert-trace
// FILE` byte for byte. No console error.
// Run by scripts/test-web.sh; standalone:
//   AIPERF_CLI=target/debug/aiperf-cli node tests/e2e/formats.mjs
// Env: DIST (default dist), AIPERF_CLI (required), ARTIFACTS (default artifacts/web),
//      BENCH=1 (also time a generated ~100 MB Azure 2024-style CSV: drop → shown and the longest
//      main-thread task; written to ARTIFACTS/formats-timings.json).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync, createWriteStream, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, basename } from 'node:path';
import assert from 'node:assert/strict';
import { serve } from './server.mjs';
import { dropFiles, dropFromDisk, launch, watchedPage } from './browser.mjs';

const drop = (page, name, bytes) => dropFiles(page, [[name, bytes]]);

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DIST = resolve(ROOT, process.env.DIST ?? 'dist');
const ARTIFACTS = resolve(ROOT, process.env.ARTIFACTS ?? 'artifacts/web');
const FIXTURES = join(ROOT, 'tests/fixtures/traces/formats');
const CLI = process.env.AIPERF_CLI ? resolve(ROOT, process.env.AIPERF_CLI) : null;
if (!CLI) {
  console.error('[formats] AIPERF_CLI must name the aiperf-cli binary');
  process.exit(2);
}
mkdirSync(ARTIFACTS, { recursive: true });
const TMP = mkdtempSync(join(tmpdir(), 'aiperf-formats-e2e-'));
const step = (msg) => console.log(`[formats] ${msg}`);
const problems = [];
const cli = (args) => execFileSync(CLI, args, { cwd: ROOT, maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });

// [fixture, format the page must name, whether the source has prefix hashes]
const SAMPLES = [
  ['azure-llm-2023/AzureLLMInferenceTrace_code.csv.head2000', 'azure', false],
  ['constructed/azure2024_constructed.csv', 'azure', false],
  ['burstgpt/BurstGPT_3.csv.head400', 'burstgpt', false],
  ['servegen-offline/trace_a.jsonl.head180', 'servegen', true],
  ['constructed/bailian_constructed.jsonl', 'bailian', true],
  ['weka-kv-cache-tester/trace_0291.json', 'weka', true],
];

async function download(page, buttonText) {
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.getByRole('button', { name: buttonText }).click()]);
  const path = join(TMP, `${Date.now()}-${dl.suggestedFilename()}`);
  await dl.saveAs(path);
  return { name: dl.suggestedFilename(), bytes: readFileSync(path) };
}

async function waitFile(page, name, timeout = 60000) {
  await page.waitForFunction((name) => document.querySelector('.file-name')?.textContent === name
    && document.querySelector('.timing')?.dataset.shownMs
    && !document.querySelector('#analysis-busy')
    && document.querySelector('[data-metric="total_requests"]'), name, { timeout });
}

async function metric(page, key) {
  const el = page.locator(`[data-metric="${key}"]`).first();
  return Number(await el.getAttribute('data-value'));
}

const { server, url } = await serve(DIST, 0);
const browser = await launch();
let failed = false;
try {
  const page = await watchedPage(browser, problems, { viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  await page.goto(url);
  await page.getByText('Open a Mooncake trace').waitFor();

  // A Mooncake trace without any hash id: "no prefix information", not a 0 % hit rate.
  {
    const plain = Array.from({ length: 5 }, (_, i) => JSON.stringify({ timestamp: i * 100, input_length: 50 + i, output_length: 8 })).join('\n') + '\n';
    await drop(page, 'no-ids.jsonl', Buffer.from(plain));
    await waitFile(page, 'no-ids.jsonl');
    const shown = await page.locator('.trace-format').evaluate((e) => ({ ...e.dataset }));
    assert.equal(shown.prefixInfo, 'false', 'Mooncake without hash ids: no prefix information');
    assert.equal(await page.locator('#no-prefix-info').count(), 1);
    step('a Mooncake trace without hash ids says "no prefix information"');
  }

  for (const [rel, format, prefix] of SAMPLES) {
    const src = join(FIXTURES, rel);
    const name = basename(rel);
    await drop(page, name, readFileSync(src));
    await waitFile(page, name);
    const shown = await page.locator('.trace-format').evaluate((e) => ({ ...e.dataset }));
    assert.equal(shown.format, format, `${name}: detected format`);
    assert.match(await page.locator('#detected-format').textContent(), new RegExp(`format: ${format} `), `${name}: format shown`);
    assert.equal(shown.prefixInfo, String(prefix), `${name}: prefix information`);
    assert.equal(await page.locator('#no-prefix-info').count(), prefix ? 0 : 1, `${name}: "no prefix information" shown`);
    // The analysis: the page's numbers and its JSON are the CLI's.
    const analysisOut = join(TMP, `${name}.analysis.json`);
    cli(['analyze-trace', src, '--output-file', analysisOut]);
    const want = JSON.parse(readFileSync(analysisOut, 'utf8'));
    assert.equal(await metric(page, 'total_requests'), want.total_requests, `${name}: rows`);
    // Every number the page shows (ISL/OSL mean/median/max, hit rates, …) equals the CLI's.
    let checked = 0;
    const entries = Object.entries(want).flatMap(([k, v]) => (v && typeof v === 'object' ? Object.entries(v).map(([s, sv]) => [`${k}.${s}`, sv]) : [[k, v]]));
    for (const [key, v] of entries) {
      if (typeof v !== 'number' || (await page.locator(`[data-metric="${key}"]`).count()) === 0) continue;
      const got = await metric(page, key);
      assert.ok(got === v || Math.abs(got - v) <= 1e-9 * Math.max(Math.abs(v), 1e-300), `${name}: ${key}: page ${got}, CLI ${v}`);
      checked++;
    }
    assert.ok(checked >= 10, `${name}: only ${checked} numbers compared`);
    const a = await download(page, 'Download analysis JSON');
    assert.ok(a.bytes.equals(readFileSync(analysisOut)), `${name}: analysis JSON differs from aiperf-cli analyze-trace`);
    // The converted trace: convert-trace's bytes.
    const convOut = join(TMP, `${name}.mooncake.jsonl`);
    cli(['convert-trace', src, '--output-file', convOut]);
    const c = await download(page, 'Download Mooncake JSONL');
    assert.ok(c.bytes.equals(readFileSync(convOut)), `${name}: converted JSONL differs from aiperf-cli convert-trace`);
    step(`${name}: ${format}, ${want.total_requests} rows, ${checked} numbers, analysis JSON and converted JSONL = the CLI's`);
  }
  // A format named by the user replaces detection: the wrong one fails with the CLI's message.
  const azure = join(FIXTURES, 'constructed/azure2024_constructed.csv');
  await page.locator('#trace-format').selectOption('burstgpt');
  await drop(page, 'azure2024_constructed.csv', readFileSync(azure));
  const err = page.locator('section.card.error[role="alert"]');
  await err.waitFor({ timeout: 60000 });
  let cliErr = '';
  try { cli(['analyze-trace', '--trace-format', 'burstgpt', azure]); } catch (e) { cliErr = String(e.stderr); }
  const reason = cliErr.trim().split('\n').pop().replace(/^error: [^:]*:1: /, '');
  assert.ok(reason.length > 10 && (await err.textContent()).includes(reason), `chosen format error: page "${await err.textContent()}", CLI "${cliErr}"`);
  await page.locator('#trace-format').selectOption('azure');
  await drop(page, 'azure2024_constructed.csv', readFileSync(azure));
  await waitFile(page, 'azure2024_constructed.csv');
  assert.match(await page.locator('#detected-format').textContent(), /format: azure \(chosen by the user\)/);
  await page.locator('#trace-format').selectOption('auto');
  step('a chosen format replaces detection (a wrong one: the CLI\'s error)');
  // Conversion settings and transforms: the download equals convert-trace with the same flags.
  await page.locator('#conversion summary').click();
  const setFlags = async (flags) => {
    for (const [flag, value] of Object.entries(flags)) {
      const input = page.locator(`#cv-${flag}`);
      if (flag === 'drop-failed') await input.setChecked(value === true);
      else await input.fill(String(value));
      await input.dispatchEvent('change');
    }
  };
  for (const [rel, flags] of [
    ['servegen-offline/trace_a.jsonl.head180', { 'arrival-rate': 20, 'output-length': 128 }],
    ['burstgpt/BurstGPT_3.csv.head400', { 'drop-failed': true, 'sample-fraction': 0.5, 'sample-seed': 3, 'max-idle-gap-ms': 1000, 'start-ms': 500 }],
    ['azure-llm-2023/AzureLLMInferenceTrace_code.csv.head2000', { 'end-ms': 60000, 'max-idle-gap-ms': 200 }],
  ]) {
    await setFlags(flags);
    const src = join(FIXTURES, rel);
    const name = basename(rel);
    await drop(page, name, readFileSync(src));
    await waitFile(page, name);
    const args = Object.entries(flags).flatMap(([f, v]) => (v === true ? [`--${f}`] : [`--${f}`, String(v)]));
    const convOut = join(TMP, `${name}.flags.jsonl`);
    cli(['convert-trace', src, ...args, '--output-file', convOut]);
    const c = await download(page, 'Download Mooncake JSONL');
    assert.ok(c.bytes.equals(readFileSync(convOut)), `${name}: converted JSONL differs from aiperf-cli convert-trace ${args.join(' ')}`);
    const rows = readFileSync(convOut, 'utf8').trim().split('\n').length;
    assert.equal(await metric(page, 'total_requests'), rows, `${name}: rows after the transforms`);
    const notes = await page.locator('.format-notes').textContent();
    if (flags['drop-failed']) assert.match(notes, /failed rows dropped/, `${name}: dropped failed rows reported`);
    if (flags['sample-fraction'] || flags['max-idle-gap-ms']) assert.match(notes, /transforms: /, `${name}: transforms reported`);
    step(`${name} with ${args.join(' ')}: ${rows} rows, converted JSONL = convert-trace's`);
    await setFlags(Object.fromEntries(Object.keys(flags).map((f) => [f, f === 'drop-failed' ? false : ''])));
  }
  // Settings changed after a trace is open apply to it with the button: read again, converted anew.
  {
    const rel = 'burstgpt/BurstGPT_3.csv.head400';
    const src = join(FIXTURES, rel);
    const name = basename(rel);
    await drop(page, name, readFileSync(src));
    await waitFile(page, name);
    const before = await metric(page, 'total_requests');
    await setFlags({ 'drop-failed': true });
    await page.locator('#cv-apply').click();
    const convOut = join(TMP, `${name}.apply.jsonl`);
    cli(['convert-trace', src, '--drop-failed', '--output-file', convOut]);
    const rows = readFileSync(convOut, 'utf8').trim().split('\n').length;
    assert.ok(rows < before, `${name}: --drop-failed keeps fewer rows (${rows} of ${before})`);
    await page.waitForFunction((n) => document.querySelector('[data-metric="total_requests"]')?.dataset.value === String(n) && !document.querySelector('#analysis-busy'), rows, { timeout: 60000 });
    await waitFile(page, name);
    const c = await download(page, 'Download Mooncake JSONL');
    assert.ok(c.bytes.equals(readFileSync(convOut)), `${name}: re-applied conversion differs from convert-trace --drop-failed`);
    step(`settings applied to the open ${name}: ${before} → ${rows} rows = convert-trace --drop-failed`);
    await setFlags({ 'drop-failed': false });
  }
  // Several WEKA files dropped together merge into one trace, as convert-trace A B does.
  {
    const files = ['trace_0291.json', 'trace_0504.json'].map((n) => join(FIXTURES, 'weka-kv-cache-tester', n));
    await setFlags({ 'file-spacing-ms': 5000 });
    // Given out of name order: the page merges them in name order.
    await dropFiles(page, [...files].reverse().map((f) => [basename(f), readFileSync(f)]));
    const convOut = join(TMP, 'weka-merged.jsonl');
    cli(['convert-trace', ...files, '--file-spacing-ms', '5000', '--output-file', convOut]);
    const merged = readFileSync(convOut, 'utf8').trim().split('\n').length;
    await page.waitForFunction((n) => document.querySelector('[data-metric="total_requests"]')?.dataset.value === String(n) && !document.querySelector('#analysis-busy'), merged, { timeout: 60000 });
    await waitFile(page, 'trace_0291.json');
    const c = await download(page, 'Download Mooncake JSONL');
    assert.ok(c.bytes.equals(readFileSync(convOut)), 'merged WEKA JSONL differs from aiperf-cli convert-trace A B --file-spacing-ms 5000');
    const rows = readFileSync(convOut, 'utf8').trim().split('\n').length;
    assert.equal(await metric(page, 'total_requests'), rows, 'merged WEKA rows');
    step(`two WEKA files dropped together: ${rows} rows = convert-trace trace_0291.json trace_0504.json --file-spacing-ms 5000`);
    await setFlags({ 'file-spacing-ms': '' });
  }
  await page.screenshot({ path: join(ARTIFACTS, 'web-formats.png') });

  if (process.env.BENCH === '1') {
    // ~100 MB of Azure 2024-style CSV (TIMESTAMP with microseconds and zone, context/generated tokens).
    const big = join(DIST, 'bench-azure2024.csv');
    if (!existsSync(big)) {
      const out = createWriteStream(big);
      out.write('TIMESTAMP,ContextTokens,GeneratedTokens\n');
      let bytes = 0;
      const t0 = Date.UTC(2024, 4, 10);
      for (let i = 0; bytes < 100_000_000; i++) {
        const us = i * 4_321;
        const d = new Date(t0 + Math.floor(us / 1000));
        const frac = String(us % 1_000_000).padStart(6, '0');
        const ts = d.toISOString().slice(0, 19).replace('T', ' ') + '.' + frac + '+00:00';
        const line = `${ts},${100 + ((i * 7919) % 8000)},${1 + ((i * 104729) % 700)}\n`;
        bytes += line.length;
        if (!out.write(line)) await new Promise((ok) => out.once('drain', ok));
      }
      await new Promise((ok) => out.end(ok));
    }
    const size = statSync(big).size;
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((l) => window.__longTasks.push(...l.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
    });
    await dropFromDisk(page, 'bench-azure2024.csv', 'bench-azure2024.csv');
    await waitFile(page, 'bench-azure2024.csv', 600000);
    const b = await page.locator('.timing').evaluate((e) => ({ ...e.dataset }));
    const long = await page.evaluate(() => window.__longTasks);
    const rows = await metric(page, 'total_requests');
    const timings = { bytes: size, rows, shown_ms: +b.shownMs, parse_ms: +b.parseMs, analysis_ms: +b.computeMs, main_thread_long_tasks_ms: long };
    writeFileSync(join(ARTIFACTS, 'formats-timings.json'), JSON.stringify(timings, null, 2) + '\n');
    step(`Azure 2024 CSV ${(size / 1e6).toFixed(0)} MB, ${rows} rows: drop → shown ${(+b.shownMs).toFixed(0)} ms (read+convert ${(+b.parseMs).toFixed(0)} ms, analysis ${(+b.computeMs).toFixed(0)} ms); main-thread long tasks: ${long.length ? long.map((d) => d.toFixed(0)).join(', ') + ' ms' : 'none'}`);
  }

  assert.deepEqual(problems, [], 'no console errors, page errors or failed requests');
  step('PASS');
} catch (e) {
  failed = true;
  console.error('[formats] FAIL:', e.message);
  if (problems.length) console.error('[formats] browser problems:\n  ' + problems.join('\n  '));
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
