// End-to-end test of the run view and of `aiperf-cli report`, in Chromium: runs are produced by
// the real CLI against `aiperf-cli mock-server` (127.0.0.1), dropped on the page (one run, then
// two compared), and the report file is opened from file:// with every request watched.
// Run by scripts/test-web.sh; standalone:
//   AIPERF_CLI=target/debug/aiperf-cli node tests/e2e/runs.mjs
// Env: DIST (default dist), AIPERF_CLI (required), ARTIFACTS (default artifacts/web),
//      BENCH=1 (also time a synthetic profile_export.jsonl of BENCH_RECORDS records, 1,000,000 by default).
// Writes docs/images/run-view.png and docs/images/run-compare.png (shown by README.md).
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync, mkdtempSync, createWriteStream, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';
import { serve } from './server.mjs';
import { dropFiles, launch, watchedPage } from './browser.mjs';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DIST = resolve(ROOT, process.env.DIST ?? 'dist');
const ARTIFACTS = resolve(ROOT, process.env.ARTIFACTS ?? 'artifacts/web');
const IMAGES = join(ROOT, 'docs/images');
const CLI = process.env.AIPERF_CLI ? resolve(ROOT, process.env.AIPERF_CLI) : null;
if (!CLI) {
  console.error('[runs] AIPERF_CLI must name the aiperf-cli binary');
  process.exit(2);
}
mkdirSync(ARTIFACTS, { recursive: true });
mkdirSync(IMAGES, { recursive: true });
const TMP = mkdtempSync(join(tmpdir(), 'aiperf-runs-e2e-'));
const step = (msg) => console.log(`[runs] ${msg}`);
const problems = [];

const cli = (args) => execFileSync(CLI, args, { cwd: ROOT, maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });

// The mock server, on a free port of 127.0.0.1, stopping by itself after 300 s.
const mock = spawn(CLI, ['mock-server', '--port', '0', '--exit-after-seconds', '300', '--ttft-ms', '15', '--itl-ms', '2'], { stdio: ['ignore', 'pipe', 'ignore'] });
const mockUrl = await new Promise((ok, fail) => {
  let buf = '';
  mock.stdout.on('data', (d) => {
    buf += d;
    const m = buf.match(/http:\/\/(127\.0\.0\.1:\d+)/);
    if (m) ok(`http://${m[1]}`);
  });
  mock.on('exit', () => fail(new Error('the mock server exited')));
});

// A trace of 60 requests with shared prefixes, replayed twice with different settings.
const trace = join(TMP, 'trace.jsonl');
writeFileSync(trace, Array.from({ length: 60 }, (_, i) => JSON.stringify({ timestamp: i * 20, input_length: 100 + i * 9, output_length: 8, hash_ids: [i % 4, 100 + i] })).join('\n') + '\n');
const tok = join(ROOT, 'tests/fixtures/tokenizers/smollm2-135m/tokenizer.json');
const runA = join(TMP, 'run-a');
const runB = join(TMP, 'run-b');
const base = ['profile', '-m', 'm', '-u', mockUrl, '--tokenizer', tok, '--input-file', trace, '--streaming'];
cli([...base, '--artifact-dir', runA, '--goodput', 'time_to_first_token:20', '--slice-duration', '0.25']);
cli([...base, '--artifact-dir', runB, '--concurrency', '2']);
// A sweep of three concurrencies (its curve is drawn from its summary file).
const sweep = join(TMP, 'sweep');
cli([...base, '--artifact-dir', sweep, '--concurrency', '1,2,4', '--request-count', '12', '--ui-type', 'none']);
mock.kill();
const summaryA = JSON.parse(readFileSync(join(runA, 'profile_export_aiperf.json'), 'utf8'));
step(`two runs against the mock: ${summaryA.request_count.avg} requests each`);

const files = (dir, prefix) => [
  [`${prefix}.jsonl`, readFileSync(join(dir, 'profile_export.jsonl'), 'utf8')],
  [`${prefix}_aiperf.json`, readFileSync(join(dir, 'profile_export_aiperf.json'), 'utf8')],
];

// The numbers a run view shows for run A (or for the run of `summary`) must be the CLI's, to the
// displayed precision.
async function checkNumbers(page, where, summary = summaryA) {
  const row = (tag) => page.locator(`${where} section.run[data-run="0"] tr[data-metric="${tag}"] td`);
  assert.equal(await row('request_count').nth(1).textContent(), String(summary.request_count.avg), 'request count');
  const cells = await row('time_to_first_token').allTextContents();
  // Metric, avg, min, max, p50, p90, p99, std.
  assert.equal(cells[4], summary.time_to_first_token.p50.toFixed(2), 'TTFT p50');
  assert.equal(cells[5], summary.time_to_first_token.p90.toFixed(2), 'TTFT p90');
  assert.equal(cells[6], summary.time_to_first_token.p99.toFixed(2), 'TTFT p99');
  assert.equal(cells[1], summary.time_to_first_token.avg.toFixed(2), 'TTFT avg');
  const charts = await page.locator(`${where} figure.chart svg`).count();
  assert.ok(charts >= 3, `${charts} charts`);
  return { charts, p50: cells[4] };
}

// A plausible streaming record repeated `n` times with varying times and lengths, as
// `profile_export.jsonl` (368 bytes a record).
// `varied`: with sessions and failed requests (of two kinds) throughout.
async function writeRecords(path, n, varied = false) {
  const out = createWriteStream(path);
  for (let i = 0; i < n; i++) {
    const sent = 1_000_000 + i * 1_000_000;
    const first = sent + 20_000_000 + (i % 17) * 1_000_000;
    const chunks = [first, first + 2_000_000, first + 4_000_000, first + 6_000_000];
    const md = { session_run: i, turn: 0, trace_line: i + 1, scheduled_ns: sent - (i % 5) * 10_000, sent_ns: sent, chunk_ns: chunks, end_ns: chunks[3] + 1000, streaming: true, input_tokens: 200 + (i % 300), output_tokens: 4, usage: { prompt_tokens: 200 + (i % 300), completion_tokens: 4, cached_tokens: (i % 3) * 64 }, expected_cached_tokens: (i % 4) * 64 };
    const line = { metadata: md, metrics: {} };
    if (varied) {
      md.session_id = `s${(i * 7919) % 5003}`;
      md.turn = Math.floor(i / 5003);
      if (i % 997 === 3) {
        md.chunk_ns = chunks.slice(0, i % 2);
        md.end_ns = sent + 30_000_000;
        line.error = { type: i % 2 ? 'ReadTimeout' : 'ServerError', message: `failed request ${i}` };
      }
    }
    if (!out.write(JSON.stringify(line) + '\n')) await new Promise((ok) => out.once('drain', ok));
  }
  await new Promise((ok) => out.end(ok));
}

// Drops `file`, served beside the app, as a run's `profile_export.jsonl` (no huge evaluate() argument).
async function dropServed(page, file) {
  await page.evaluate(async (file) => {
    const blob = await (await fetch(file)).blob();
    const dt = new DataTransfer();
    dt.items.add(new File([blob], 'profile_export.jsonl'));
    document.querySelector('.page').dispatchEvent(new DragEvent('drop', { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, file);
}

// Every summary row of the first run shown in `page`: metric → its cells' text.
const summaryRows = (page) => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('section.run[data-run="0"] tr[data-metric]')]
  .map((tr) => [tr.dataset.metric, [...tr.querySelectorAll('td')].map((td) => td.textContent)])));

const timings = {};
const { server, url } = await serve(DIST, 0);
const browser = await launch();
let failed = false;
try {
  const page = await watchedPage(browser, problems, { viewport: { width: 1280, height: 900 } });
  await page.goto(url);
  await page.getByText('Open a Mooncake trace').waitFor();

  // One run: profile_export.jsonl with its summary file and the server's metrics.
  await dropFiles(page, [
    ['profile_export.jsonl', readFileSync(join(runA, 'profile_export.jsonl'), 'utf8')],
    ['profile_export_aiperf.json', readFileSync(join(runA, 'profile_export_aiperf.json'), 'utf8')],
    ['server_metrics_export.json', readFileSync(join(runA, 'server_metrics_export.json'), 'utf8')],
  ]);
  await page.waitForFunction(() => document.querySelector('.runs-timing')?.dataset.shownMs, null, { timeout: 60000 });
  const one = await checkNumbers(page, '.runs-panel');
  step(`one run: ${one.charts} charts, TTFT p50 ${one.p50} ms as the CLI's, shown ${await page.locator('.runs-timing').getAttribute('data-shown-ms')} ms after the drop`);
  // Its --slice-duration slices, and the server's own metrics over the run.
  const sliced = await page.locator('.runs-panel svg[aria-label*="(--slice-duration)"]').count();
  assert.ok(sliced >= 4, `${sliced} charts on the run's own slices`);
  const serverCharts = await page.locator('.runs-panel figure[data-chart^="server-"]').count();
  assert.ok(serverCharts >= 3, `${serverCharts} server-metrics charts`);
  assert.ok(await page.getByText('KV-cache usage (server)').count() > 0);
  step(`time slices: ${sliced} charts on the run's 0.25 s slices; the server's metrics: ${serverCharts} charts over the run`);
  await page.locator('.runs-panel circle.pt').first().click();
  await page.waitForFunction(() => document.querySelector('#record')?.textContent.includes('trace line:'), null, { timeout: 10000 });
  step(`record on click: ${(await page.locator('#record').textContent()).split('\n').slice(0, 2).join(' / ')}`);
  // A run that AIPerf 0.13.0 wrote opens like ours and shows AIPerf's own numbers.
  const theirs = join(ROOT, 'tests/fixtures/aiperf-0.13.0-runs/sessions');
  const theirSummary = JSON.parse(readFileSync(join(theirs, 'profile_export_aiperf.json'), 'utf8'));
  await dropFiles(page, ['profile_export.jsonl', 'profile_export_aiperf.json', 'server_metrics_export.json'].map((f) => [f, readFileSync(join(theirs, f), 'utf8')]));
  const theirP50 = theirSummary.time_to_first_token.p50.toFixed(2);
  await page.waitForFunction((p50) => document.querySelectorAll('.runs-panel section.run[data-run="0"] tr[data-metric="time_to_first_token"] td')[4]?.textContent === p50, theirP50, { timeout: 60000 });
  const aiperfRun = await checkNumbers(page, '.runs-panel', theirSummary);
  step(`a run AIPerf wrote: ${theirSummary.request_count.avg} requests, TTFT p50 ${aiperfRun.p50} ms as AIPerf's summary, ${aiperfRun.charts} charts`);
  // AIPerf's --gpu-telemetry run: its GPUs and their energy efficiency, AIPerf's numbers.
  const gpuRun = join(ROOT, 'tests/fixtures/aiperf-0.13.0-runs/gpu-telemetry');
  const gpuSummary = JSON.parse(readFileSync(join(gpuRun, 'profile_export_aiperf.json'), 'utf8'));
  await dropFiles(page, ['profile_export.jsonl', 'profile_export_aiperf.json', 'server_metrics_export.json'].map((f) => [f, readFileSync(join(gpuRun, f), 'utf8')]));
  await page.waitForFunction(() => document.querySelector('.runs-panel table.gpus tr[data-metric="nvidia_power_usage"]'), null, { timeout: 60000 });
  const gpu0 = Object.values(Object.values(gpuSummary.telemetry_data.endpoints)[0].gpus)[0];
  const powerCells = await page.locator('.runs-panel table.gpus tr[data-metric="nvidia_power_usage"]').first().locator('td').allTextContents();
  assert.equal(powerCells[2], gpu0.metrics.nvidia_power_usage.avg.toFixed(2), `GPU power avg: ${powerCells}`);
  const perToken = await page.locator('.runs-panel table.energy tr[data-metric="nvidia_energy_per_output_token"] td').nth(1).textContent();
  assert.equal(perToken, gpuSummary.nvidia_energy_per_output_token.avg.toFixed(2), 'energy per output token');
  const energyRows = await page.locator('.runs-panel table.energy tbody tr').count();
  step(`AIPerf's GPU run: power avg ${powerCells[2]} W as its telemetry_data, ${energyRows} energy-efficiency rows (per output token ${perToken})`);
  // Back to run A for the screenshot.
  await dropFiles(page, [
    ['profile_export.jsonl', readFileSync(join(runA, 'profile_export.jsonl'), 'utf8')],
    ['profile_export_aiperf.json', readFileSync(join(runA, 'profile_export_aiperf.json'), 'utf8')],
    ['server_metrics_export.json', readFileSync(join(runA, 'server_metrics_export.json'), 'utf8')],
  ]);
  await page.waitForFunction((p50) => document.querySelectorAll('.runs-panel section.run[data-run="0"] tr[data-metric="time_to_first_token"] td')[4]?.textContent === p50, summaryA.time_to_first_token.p50.toFixed(2), { timeout: 60000 });
  await page.locator('.runs-panel').scrollIntoViewIfNeeded();
  await page.setViewportSize({ width: 1280, height: 1700 });
  await page.evaluate(() => document.querySelector('.runs-panel').scrollIntoView());
  await page.screenshot({ path: join(IMAGES, 'run-view.png') });
  await page.setViewportSize({ width: 1280, height: 900 });

  // Two runs compared, labels from the file names, one edited.
  await dropFiles(page, [...files(runA, 'run-a'), ...files(runB, 'run-b')]);
  await page.waitForFunction(() => document.querySelectorAll('.runs section.run').length === 2 && document.querySelector('table.compare'), null, { timeout: 60000 });
  const heads = await page.locator('table.compare th').allTextContents();
  assert.ok(heads.some((h) => h.startsWith('run-a')) && heads.some((h) => h.startsWith('run-b')), `headers: ${heads}`);
  await checkNumbers(page, '.runs-panel');
  await page.getByLabel('label of run 2').fill('concurrency 2');
  await page.getByLabel('label of run 2').press('Enter');
  await page.getByLabel('label of run 2').blur();
  await page.waitForFunction(() => [...document.querySelectorAll('table.compare th')].some((t) => t.textContent === 'concurrency 2'), null, { timeout: 10000 });
  const rows = await page.locator('table.compare tbody tr').count();
  step(`two runs: comparison table of ${rows} rows, labels run-a and (edited) concurrency 2`);
  await page.setViewportSize({ width: 1280, height: 1500 });
  await page.evaluate(() => document.querySelector('.runs-panel').scrollIntoView());
  await page.screenshot({ path: join(IMAGES, 'run-compare.png') });
  await page.setViewportSize({ width: 1280, height: 900 });

  // A sweep: its summary file alone draws latency and throughput against the load.
  await dropFiles(page, [['profile_export_aiperf_sweep.json', readFileSync(join(sweep, 'profile_export_aiperf_sweep.json'), 'utf8')]]);
  await page.waitForFunction(() => document.querySelector('.runs section.curve figure[data-chart="curve-ttft"]'), null, { timeout: 60000 });
  const sweepRows = await page.locator('.runs table.curve-points tbody tr').count();
  assert.equal(sweepRows, 3, 'one row per concurrency');
  const sweepJson = JSON.parse(readFileSync(join(sweep, 'profile_export_aiperf_sweep.json'), 'utf8'));
  const p99 = sweepJson.points[2].metrics.time_to_first_token.p99;
  const cellText = await page.locator('.runs table.curve-points tbody tr').nth(2).locator('td').nth(4).textContent();
  assert.ok(Math.abs(Number(cellText) - p99) <= Math.max(0.01, p99 * 1e-3), `TTFT p99 at concurrency 4: ${cellText} vs ${p99}`);
  const curveCharts = await page.locator('.runs section.curve figure.chart').count();
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.evaluate(() => document.querySelector('.runs-panel').scrollIntoView());
  await page.screenshot({ path: join(IMAGES, 'run-sweep.png') });
  await page.setViewportSize({ width: 1280, height: 900 });
  step(`sweep: ${curveCharts} charts against the load, ${sweepRows} points, TTFT p99 at concurrency 4 ${cellText} ms as the sweep summary`);

  // A run big enough (100,000 records, 37 MB) for the worker to hand half of the file, then half
  // of its time-weighted curves, to its helper: the same summary, every row and digit, and the
  // same section as the CLI's report (sessions and failures numbered across the two parts).
  const bigName = `test-100000-records-${process.pid}.jsonl`;
  // Named so that the CLI labels the run as the page does (after its file): the same section.
  const bigRun = join(TMP, 'profile_export');
  mkdirSync(bigRun);
  await writeRecords(join(bigRun, 'profile_export.jsonl'), 100_000, true);
  copyFileSync(join(bigRun, 'profile_export.jsonl'), join(DIST, bigName));
  try {
    await dropServed(page, bigName);
    await page.waitForFunction(() => document.querySelector('.run-label-edit span.small')?.textContent === '100,000 requests' && document.querySelector('.runs-timing')?.dataset.shownMs, null, { timeout: 120000, polling: 200 });
  } finally {
    rmSync(join(DIST, bigName), { force: true });
  }
  assert.equal(await page.locator('.runs-timing').getAttribute('data-curves-apart'), '1', 'the helper computed part of the curves');
  const readApart = +(await page.locator('.runs-timing').getAttribute('data-records-apart'));
  assert.ok(readApart > 30_000 && readApart < 70_000, `the helper read the second part of the file: ${readApart} records`);
  const shownRows = await summaryRows(page);
  const bigReport = join(TMP, 'big.html');
  cli(['report', bigRun, '--output', bigReport]);
  const bpage = await page.context().newPage();
  await bpage.goto(pathToFileURL(bigReport).href);
  const cliRows = await summaryRows(bpage);
  const section = (p) => p.evaluate(() => document.querySelector('section.run[data-run="0"]').outerHTML);
  const [shownSection, cliSection] = [await section(page), await section(bpage)];
  await bpage.close();
  assert.ok(Object.keys(cliRows).length >= 40, `${Object.keys(cliRows).length} summary rows in the CLI's report`);
  assert.ok('effective_decode_throughput' in cliRows && 'tokens_in_flight' in cliRows, 'time-weighted rows in the report');
  assert.deepEqual(shownRows, cliRows, "the run view shows the CLI report's summary");
  assert.ok(shownSection === cliSection, `the run's section (${shownSection.length} characters) is the CLI report's (${cliSection.length})`);
  step(`100,000 records: ${readApart} read by the helper, half the time-weighted curves computed there, the charts drawn meanwhile; ${Object.keys(shownRows).length} summary rows and the whole section (${shownSection.length} characters) equal to the CLI's report`);

  // The same file with a line that cannot be read in the helper's part: the worker reads that
  // part itself and names the line, as it does for a small file.
  const badName = `test-bad-line-${process.pid}.jsonl`;
  const lines = readFileSync(join(bigRun, 'profile_export.jsonl'), 'utf8').split('\n');
  lines[80_000] = '{"metadata": {"turn": 1}}';
  writeFileSync(join(DIST, badName), lines.join('\n'));
  try {
    await dropServed(page, badName);
    await page.waitForFunction(() => /profile_export\.jsonl:80001: /.test(document.querySelector('.runs-failed')?.textContent ?? ''), null, { timeout: 120000, polling: 200 });
  } finally {
    rmSync(join(DIST, badName), { force: true });
  }
  step(`a bad line in the helper's part (line 80,001 of 100,000): the worker read that part itself and named the line`);

  if (process.env.BENCH === '1') {
    // BENCH_RECORDS (default 1,000,000) records: a plausible streaming request repeated with
    // varying times and lengths.
    const n = Number(process.env.BENCH_RECORDS ?? 1_000_000);
    const count = n.toLocaleString('en-US');
    const file = `bench-${n}-records.jsonl`;
    const big = join(DIST, file);
    if (!existsSync(big)) await writeRecords(big, n);
    const size = statSync(big).size;
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((l) => window.__longTasks.push(...l.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
    });
    await dropServed(page, file);
    await page.waitForFunction((count) => document.querySelector('.run-label-edit span.small')?.textContent === `${count} requests` && document.querySelector('.runs-timing')?.dataset.shownMs, count, { timeout: 600000, polling: 200 });
    const shown = +(await page.locator('.runs-timing').getAttribute('data-shown-ms'));
    const compute = +(await page.locator('.runs-timing').getAttribute('data-compute-ms'));
    // The worker's stages: bytes read, records parsed, summary, HTML (absent from builds without them).
    const stages = {};
    for (const s of ['read', 'parse', 'summary', 'html']) {
      const v = await page.locator('.runs-timing').getAttribute(`data-${s}-ms`);
      if (v !== null) stages[`${s}_ms`] = +v;
    }
    const chunks = await page.locator('.runs-timing').getAttribute('data-chunks');
    if (chunks !== null) stages.chunks = +chunks;
    const long = await page.evaluate(() => window.__longTasks);
    timings[n === 1_000_000 ? 'million_records' : `records_${n}`] = { bytes: size, shown_ms: shown, worker_ms: compute, worker_stages: stages, main_thread_long_tasks_ms: long };
    const staged = Object.entries(stages).map(([k, v]) => `${k.replace('_ms', '')} ${v.toFixed(0)}`).join(', ');
    step(`${count} records (${(size / 1e6).toFixed(0)} MB): drop → shown ${shown.toFixed(0)} ms (worker ${compute.toFixed(0)} ms${staged ? `: ${staged}` : ''}); main-thread tasks over 50 ms: ${long.length ? long.map((d) => d.toFixed(0)).join(', ') + ' ms' : 'none'}`);
  }

  // The report file: opened from disk, nothing requested beyond the file itself.
  const report = join(TMP, 'report.html');
  cli(['report', runA, runB, '--output', report]);
  const reportUrl = pathToFileURL(report).href;
  const rpage = await page.context().newPage();
  const requests = [];
  rpage.on('request', (r) => requests.push(r.url()));
  rpage.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`report console ${m.type()}: ${m.text()}`); });
  rpage.on('pageerror', (e) => problems.push(`report page error: ${e.message}`));
  await rpage.goto(reportUrl);
  const rcharts = await checkNumbers(rpage, 'body');
  assert.ok(await rpage.locator('table.compare').isVisible());
  await rpage.locator('circle.pt').first().click();
  assert.match(await rpage.locator('#record').textContent(), /trace line: \d+/);
  assert.deepEqual(requests, [reportUrl], `requests from the report: ${requests}`);
  step(`report.html from file://: ${rcharts.charts} charts, same TTFT p50 ${rcharts.p50} ms, record on click, no request but the file itself`);

  // The sweep's report: its curve, then its sub-runs; from disk, nothing requested.
  const sweepReport = join(TMP, 'sweep.html');
  cli(['report', sweep, '--output', sweepReport]);
  const sweepUrl = pathToFileURL(sweepReport).href;
  const spage = await page.context().newPage();
  const sreqs = [];
  spage.on('request', (r) => sreqs.push(r.url()));
  spage.on('pageerror', (e) => problems.push(`sweep report page error: ${e.message}`));
  await spage.goto(sweepUrl);
  assert.ok(await spage.locator('section.curve figure[data-chart="curve-throughput"]').count() === 1);
  assert.equal(await spage.locator('section.run').count(), 3, 'the three sub-runs');
  assert.deepEqual(sreqs, [sweepUrl], `requests from the sweep report: ${sreqs}`);
  step('sweep report.html from file://: curve and three sub-runs, no request but the file itself');

  writeFileSync(join(ARTIFACTS, 'runs-timings.json'), JSON.stringify(timings, null, 2) + '\n');
  assert.deepEqual(problems, [], 'no console errors, page errors or failed requests');
  step('PASS');
} catch (e) {
  failed = true;
  console.error('[runs] FAIL:', e.message);
  if (problems.length) console.error('[runs] browser problems:\n  ' + problems.join('\n  '));
} finally {
  mock.kill();
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
