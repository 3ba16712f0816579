// End-to-end test of the web app against `trunk build --release` output (dist/), in Debian's
// Chromium driven by playwright-core. Run by scripts/test-web.sh; standalone:
//   AIPERF_CLI=target/debug/aiperf-cli node tests/e2e/run.mjs
// Env: DIST (default dist), AIPERF_CLI (path of the native CLI, for the byte-for-byte checks),
//      ARTIFACTS (default artifacts/web), BENCH=1 (also time the 1,000,000-row trace).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync, mkdtempSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { serve } from './server.mjs';
import { dropFiles, dropFromDisk, launch, watchedPage } from './browser.mjs';

const drop = (page, name, content) => dropFiles(page, [[name, content, 'application/x-ndjson']]);
const dropBytes = (page, name, bytes) => dropFiles(page, [[name, bytes, 'application/gzip']]);

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DIST = resolve(ROOT, process.env.DIST ?? 'dist');
const ARTIFACTS = resolve(ROOT, process.env.ARTIFACTS ?? 'artifacts/web');
const CLI = process.env.AIPERF_CLI ? resolve(ROOT, process.env.AIPERF_CLI) : null;
const TRACES = join(ROOT, 'tests/fixtures/traces');
const GOLDEN = join(ROOT, 'tests/fixtures/golden/aiperf-0.13.0/analyze');
mkdirSync(ARTIFACTS, { recursive: true });
const TMP = mkdtempSync(join(tmpdir(), 'aiperf-web-e2e-'));

const problems = [];
const step = (msg) => console.log(`[e2e] ${msg}`);

function cli(args) {
  return execFileSync(CLI, args, { cwd: ROOT, maxBuffer: 1 << 30 });
}

function cliHas(sub) {
  if (!CLI) return false;
  try {
    execFileSync(CLI, [sub, '--help'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function synthDownloadMatchesCli(page, label) {
  await page.waitForTimeout(500);
  await page.waitForFunction(() => !document.querySelector('#synth-busy') && document.querySelector('[data-synth="total_requests"]'), null, { timeout: 60000 });
  const syn = await download(page, 'Download synthesized JSONL');
  const shownCmd = await page.locator('.cmd').nth(1).textContent();
  const out = join(TMP, `cli-${label}.jsonl`);
  const args = shownCmd.replace(/^aiperf-cli /, '').split(' ').map((a) => a.replace(/^'(.*)'$/, '$1'));
  args[1] = join(TRACES, 'synthetic_trace.jsonl');
  args[args.length - 1] = out;
  cli(args);
  assert.ok(syn.bytes.equals(readFileSync(out)), `synthesized JSONL differs from: ${shownCmd}`);
  step(`synthesized JSONL (${label}) = ${shownCmd}`);
}

async function metric(page, key) {
  const el = page.locator(`[data-metric="${key}"]`).first();
  return { value: Number(await el.getAttribute('data-value')), text: (await el.textContent()).trim() };
}

async function waitAnalysis(page, blockSize, timeout = 60000) {
  await page.waitForFunction((bs) => {
    const sec = document.querySelector(`section[data-block-size="${bs}"]`);
    return sec && !document.querySelector('#analysis-busy') && document.querySelector('[data-metric="total_requests"]');
  }, blockSize, { timeout });
}

async function download(page, buttonText) {
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.getByRole('button', { name: buttonText }).click()]);
  const path = join(TMP, dl.suggestedFilename());
  await dl.saveAs(path);
  return { name: dl.suggestedFilename(), bytes: readFileSync(path) };
}

function close(a, b) {
  return a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(b), 1e-300);
}

const { server, url } = await serve(DIST, 0);
const browser = await launch();
let failed = false;
try {
  const page = await watchedPage(browser, problems, { viewport: { width: 1280, height: 800 }, acceptDownloads: true });

  step(`open ${url}`);
  await page.goto(url);
  await page.getByText('Open a Mooncake trace').waitFor();
  const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  assert.ok(csp.includes("default-src 'none'") && !csp.includes('__INLINE'), `CSP: ${csp}`);
  assert.ok(await page.getByText('never leaves this browser').isVisible());
  await page.screenshot({ path: join(ARTIFACTS, 'web-empty.png') });

  // 1. Drop the synthetic trace and check every number against the golden analysis.
  step('drop synthetic_trace.jsonl');
  await drop(page, 'synthetic_trace.jsonl', readFileSync(join(TRACES, 'synthetic_trace.jsonl'), 'utf8'));
  await waitAnalysis(page, 512);
  const golden = JSON.parse(readFileSync(join(GOLDEN, 'synthetic_trace_bs512.json'), 'utf8'));
  let checked = 0;
  for (const [k, v] of Object.entries(golden)) {
    if (typeof v === 'number') {
      const m = await metric(page, k);
      assert.ok(close(m.value, v), `${k}: page ${m.value}, golden ${v}`);
      checked++;
    } else {
      for (const [s, sv] of Object.entries(v)) {
        const m = await metric(page, `${k}.${s}`);
        assert.ok(close(m.value, sv), `${k}.${s}: page ${m.value}, golden ${sv}`);
        const dec = k === 'hit_rate_stats' ? 4 : 2;
        const want = sv.toLocaleString('en-US', { minimumFractionDigits: dec, maximumFractionDigits: dec });
        assert.equal(m.text, want, `${k}.${s} shown`);
        checked++;
      }
    }
  }
  assert.equal((await metric(page, 'total_requests')).text, '3,993');
  assert.equal((await metric(page, 'cache_hit_rate')).text, '42.3 %');
  step(`${checked} numbers equal the golden analysis`);
  assert.equal(await page.locator('figure.chart svg').count() >= 7, true, 'charts drawn');

  // 2. The analysis JSON download is the CLI's --output-file, byte for byte.
  const a512 = await download(page, 'Download analysis JSON');
  if (CLI) {
    const out = join(TMP, 'cli512.json');
    cli(['analyze-trace', join(TRACES, 'synthetic_trace.jsonl'), '--output-file', out]);
    assert.ok(a512.bytes.equals(readFileSync(out)), 'analysis JSON (block size 512) differs from the CLI');
    step('analysis JSON = aiperf-cli analyze-trace --output-file (bs 512)');
  }

  // 3. Change the block size: the view, the URL and the download follow.
  await page.fill('#f-block_size', '0');
  await page.getByText('must be a whole number from 1 to 16777216').waitFor();
  await page.fill('#f-block_size', '16');
  await waitAnalysis(page, 16);
  await page.waitForFunction(() => location.search.includes('block_size=16'));
  const a16 = await download(page, 'Download analysis JSON');
  if (CLI) {
    const out = join(TMP, 'cli16.json');
    cli(['analyze-trace', join(TRACES, 'synthetic_trace.jsonl'), '--block-size', '16', '--output-file', out]);
    assert.ok(a16.bytes.equals(readFileSync(out)), 'analysis JSON (block size 16) differs from the CLI');
    step('analysis JSON = aiperf-cli analyze-trace --block-size 16 --output-file');
  }
  await page.getByRole('button', { name: 'Copy' }).first().click(); // must not raise a console error
  const cmd = await page.locator('.cmd').first().textContent();
  assert.equal(cmd, 'aiperf-cli analyze-trace synthetic_trace.jsonl --block-size 16 --output-file analysis.json');
  await page.fill('#f-block_size', '512');
  await waitAnalysis(page, 512);

  // 4. Synthesis: change parameters, compare the download with the CLI.
  await page.fill('#f-speedup_ratio', 'abc');
  await page.getByText('must be a number').waitFor();
  await page.fill('#f-speedup_ratio', '2');
  await page.fill('#f-prefix_root_multiplier', '2');
  await page.fill('#f-seed', '7');
  await page.waitForFunction(() => location.search.includes('seed=7') && location.search.includes('speedup_ratio=2'));
  if (cliHas('synthesize-trace')) {
    await synthDownloadMatchesCli(page, 'transform');
    // Generative mode: a new trace of N requests learned from this one.
    await page.getByLabel('Generate new requests').check();
    await page.fill('#f-num_requests', '0');
    await page.getByText('must be a whole number from 1 to 268435456').waitFor();
    await page.fill('#f-num_requests', '300');
    await page.waitForFunction(() => location.search.includes('mode=generate') && location.search.includes('num_requests=300'));
    await synthDownloadMatchesCli(page, 'generate');
    assert.equal(await page.locator('[data-synth="total_requests"]').textContent(), '300');
    await page.getByLabel('Transform every request').check();
  } else {
    step('SKIPPED synthesized download check: no aiperf-cli with synthesize-trace (set AIPERF_CLI)');
  }

  // 5. The link reproduces the parameters.
  const link = page.url();
  const page2 = await page.context().newPage();
  page2.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page2.goto(link);
  await page2.getByText('Open a Mooncake trace').waitFor();
  assert.equal(await page2.locator('#f-seed').count(), 0, 'fields appear only with a trace');
  await page2.goto(link + '&sample=1');
  await page2.locator('[data-metric="total_requests"]').waitFor({ timeout: 60000 });
  assert.equal(await page2.inputValue('#f-seed'), '7');
  assert.equal(await page2.inputValue('#f-speedup_ratio'), '2');
  assert.equal((await metric(page2, 'total_requests')).text, '12,031');
  step('shared link restores the parameters; sample loads');
  // A link with a bad value shows the analysis and says what is wrong, instead of a blank page.
  await page2.goto(url + '?block_size=abc&bogus=1&sample=1');
  await page2.locator('[data-metric="total_requests"]').waitFor({ timeout: 60000 });
  await page2.getByText('must be a whole number').waitFor();
  await page2.getByText('Ignored an unknown link parameter: bogus').waitFor();
  step('bad link values are flagged, not fatal');
  await page2.close();

  // Keyboard only: Tab reaches the file button, then "Load sample"; Enter opens the sample.
  const page3 = await page.context().newPage();
  page3.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page3.goto(url);
  await page3.getByText('Open a Mooncake trace').waitFor();
  await page3.keyboard.press('Tab');
  assert.equal(await page3.evaluate(() => document.activeElement?.id), 'file-input');
  await page3.keyboard.press('Tab');
  assert.equal(await page3.evaluate(() => document.activeElement?.textContent), 'Load sample');
  await page3.keyboard.press('Enter');
  await page3.locator('[data-metric="total_requests"]').waitFor({ timeout: 60000 });
  assert.ok(page3.url().includes('sample=1'), 'loading the sample puts it in the link');
  await page3.keyboard.press('Tab');
  assert.equal(await page3.evaluate(() => document.activeElement?.id), 'trace-format', 'next stop: the trace format select');
  await page3.keyboard.press('Tab');
  assert.equal(await page3.evaluate(() => document.activeElement?.tagName), 'SUMMARY', 'next stop: the conversion settings');
  await page3.keyboard.press('Tab');
  assert.equal(await page3.evaluate(() => document.activeElement?.id), 'f-block_size', 'next stop: the block size field');
  step('keyboard: file button, sample button and fields reachable with Tab');
  await page3.close();

  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(ARTIFACTS, 'web-1280x800.png'), fullPage: false });
  await page.screenshot({ path: join(ARTIFACTS, 'web-full.png'), fullPage: true });
  await page.locator('section[aria-labelledby="synth-h"]').screenshot({ path: join(ARTIFACTS, 'web-synthesis.png') });
  await page.setViewportSize({ width: 420, height: 900 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(ARTIFACTS, 'web-narrow.png'), fullPage: false });
  await page.setViewportSize({ width: 1280, height: 800 });

  // 6. Gzipped traces open too.
  await dropBytes(page, 'synthetic_trace.jsonl.gz', gzipSync(readFileSync(join(TRACES, 'synthetic_trace.jsonl'))));
  await page.waitForFunction(() => document.querySelector('.file-name')?.textContent === 'synthetic_trace.jsonl.gz' && document.querySelector('[data-metric="total_requests"]'), null, { timeout: 60000 });
  assert.ok(close((await metric(page, 'cache_hit_rate')).value, golden.cache_hit_rate), 'gzip: cache hit rate');
  assert.equal((await metric(page, 'total_requests')).text, '3,993');
  step('gzipped trace analysed like the plain one');

  // 7. Invalid rows are listed with their line numbers.
  await drop(page, 'bad.jsonl', '{"input_length": 10, "hash_ids": [1]}\n{"input_length": "ten"}\nnot json\n');
  await page.locator('.bad-rows').waitFor();
  const bad = await page.locator('.bad-rows tbody tr').allTextContents();
  assert.equal(bad.length, 2);
  assert.ok(bad[0].startsWith('2') && bad[0].includes('input_length'), bad[0]);
  assert.ok(bad[1].startsWith('3'), bad[1]);
  await drop(page, 'all-bad.jsonl', 'nope\n');
  await page.getByText('Cannot open all-bad.jsonl').waitFor();
  step('invalid rows listed with line numbers');

  // 8. Timing: conversation trace, drop → analysis shown.
  const timings = {};
  await drop(page, 'conversation_trace.jsonl', readFileSync(join(TRACES, 'conversation_trace.jsonl'), 'utf8'));
  await page.waitForFunction(() => document.querySelector('.timing')?.dataset.shownMs, null, { timeout: 60000 });
  const t = await page.locator('.timing').evaluate((e) => ({ ...e.dataset }));
  timings.conversation = { shown_ms: +t.shownMs, parse_ms: +t.parseMs, analysis_ms: +t.computeMs };
  step(`conversation_trace.jsonl: drop → shown ${(+t.shownMs).toFixed(1)} ms (parse ${(+t.parseMs).toFixed(1)} ms, analysis ${(+t.computeMs).toFixed(1)} ms)`);

  if (process.env.BENCH === '1') {
    // A 1,000,000-row trace: the conversation trace repeated with shifted ids and times.
    const big = join(DIST, 'bench-1m.jsonl');
    if (!existsSync(big)) {
      const rows = readFileSync(join(TRACES, 'conversation_trace.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const out = createWriteStream(big);
      const span = rows[rows.length - 1].timestamp + 1000;
      for (let i = 0, n = 0; n < 1_000_000; i++) {
        for (const r of rows) {
          if (n++ >= 1_000_000) break;
          const row = { timestamp: r.timestamp + i * span, input_length: r.input_length, output_length: r.output_length, hash_ids: r.hash_ids.map((h) => h + i * 1_000_000) };
          if (!out.write(JSON.stringify(row) + '\n')) await new Promise((ok) => out.once('drain', ok));
        }
      }
      await new Promise((ok) => out.end(ok));
    }
    const size = (await import('node:fs')).statSync(big).size;
    // Main-thread tasks over 50 ms while the worker reads and analyses: the page must stay responsive.
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((l) => window.__longTasks.push(...l.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
    });
    await dropFromDisk(page, 'bench-1m.jsonl', 'bench-1m.jsonl');
    await page.locator('progress').waitFor({ timeout: 60000 });
    await page.waitForTimeout(700);
    await page.screenshot({ path: join(ARTIFACTS, 'web-progress.png') });
    await page.waitForFunction(() => document.querySelector('.file-name')?.textContent === 'bench-1m.jsonl' && document.querySelector('.timing')?.dataset.shownMs, null, { timeout: 600000 });
    const b = await page.locator('.timing').evaluate((e) => ({ ...e.dataset }));
    const long = await page.evaluate(() => window.__longTasks);
    timings.million = { bytes: size, shown_ms: +b.shownMs, parse_ms: +b.parseMs, analysis_ms: +b.computeMs, main_thread_long_tasks_ms: long };
    step(`main-thread long tasks during the 1M-row load: ${long.length ? long.map((d) => d.toFixed(0)).join(', ') + ' ms' : 'none'}`);
    step(`1,000,000 rows (${(size / 1e6).toFixed(0)} MB): drop → shown ${(+b.shownMs).toFixed(0)} ms (parse ${(+b.parseMs).toFixed(0)} ms, analysis ${(+b.computeMs).toFixed(0)} ms)`);
  }
  writeFileSync(join(ARTIFACTS, 'timings.json'), JSON.stringify(timings, null, 2) + '\n');

  assert.deepEqual(problems, [], 'no console errors, page errors or failed requests');
  step(`PASS (screenshots in ${ARTIFACTS})`);
} catch (e) {
  failed = true;
  console.error('[e2e] FAIL:', e.message);
  if (problems.length) console.error('[e2e] browser problems:\n  ' + problems.join('\n  '));
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
