// End-to-end test of the "What if" panel (the trace simulated on a cluster, in the worker) against
// `aiperf-cli simulate` with the same settings, of the agentic-code panel against
// `aiperf-cli synthesize-agentic-code`, and of the generative synthesis' arrivals table; the
// README's screenshots docs/images/what-if.png and agentic.png. Run by scripts/test-web.sh; standalone:
//   AIPERF_CLI=target/debug/aiperf-cli node tests/e2e/whatif.mjs
// Env: DIST (default dist), AIPERF_CLI (required), BENCH=1 (also time a 120,000-row trace:
//      re-simulation time and the main thread's long tasks; a measurement, not a test).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, existsSync, mkdtempSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import assert from 'node:assert/strict';
import { serve } from './server.mjs';
import { dropFiles, dropFromDisk, launch, watchedPage } from './browser.mjs';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DIST = resolve(ROOT, process.env.DIST ?? 'dist');
const IMAGES = join(ROOT, 'docs/images');
const TRACES = join(ROOT, 'tests/fixtures/traces');
assert.ok(process.env.AIPERF_CLI, 'AIPERF_CLI: the native CLI whose numbers the page must show');
const CLI = resolve(ROOT, process.env.AIPERF_CLI);
const TMP = mkdtempSync(join(tmpdir(), 'aiperf-web-whatif-'));
mkdirSync(IMAGES, { recursive: true });

const problems = [];
const step = (msg) => console.log(`[whatif] ${msg}`);

// The numbers the page shows, by their `data-metric` key.
async function shown(page) {
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#what-if [data-metric^="sim."]')]
    .map((e) => [e.getAttribute('data-metric').slice(4), Number(e.getAttribute('data-value'))])));
}

// Waits for the simulation of `replicas` replicas behind `router`, then for the page to settle.
async function waitSim(page, replicas, router, timeout = 60000) {
  await page.waitForFunction(([n, r]) => {
    const res = document.querySelector('#what-if .sim-results');
    return res && !document.querySelector('#sim-busy') && res.dataset.replicas === String(n) && res.dataset.router === r;
  }, [replicas, router], { timeout });
}

// Runs the command the panel shows on the trace and returns its summary row.
function cliSummary(page, cmd, trace, label) {
  const args = cmd.replace(/^aiperf-cli /, '').split(' ').map((a) => a.replace(/^'(.*)'$/, '$1'));
  args[1] = trace;
  const out = join(TMP, label);
  execFileSync(CLI, [...args, '--output-dir', out, '--no-records', '--overwrite'], { cwd: ROOT, stdio: 'ignore' });
  const rows = JSON.parse(readFileSync(join(out, 'simulate_summary.json'), 'utf8'));
  assert.equal(rows.length, 1);
  return rows[0];
}

const close = (a, b) => a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(b), 1e-300);

async function equalsCli(page, trace, label) {
  const cmd = await page.locator('#what-if .sim-cmd').textContent();
  const cli = cliSummary(page, cmd, trace, label);
  const ours = await shown(page);
  const keys = ['requests', 'token_hit_rate', 'row_hit_rate', 'ttft_p50_ms', 'ttft_p99_ms', 'latency_p50_ms', 'latency_p99_ms', 'imbalance', 'evictions'];
  if ('preemptions' in cli) keys.push('preemptions');
  for (const k of keys) {
    assert.ok(close(ours[k], cli[k]), `${label}: ${k} page ${ours[k]}, ${cmd} ${cli[k]}`);
  }
  step(`${label}: the page's numbers = ${cmd} (token hit ${(cli.token_hit_rate * 100).toFixed(2)} %, row hit ${(cli.row_hit_rate * 100).toFixed(2)} %, TTFT p50 ${cli.ttft_p50_ms.toFixed(1)} ms, imbalance ${cli.imbalance.toFixed(3)})`);
  return ours;
}

const { server, url } = await serve(DIST, 0);
const browser = await launch();
let failed = false;
try {
  const page = await watchedPage(browser, problems, { viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  await page.goto(url);
  await page.getByText('Open a Mooncake trace').waitFor();

  // 1. Open a trace: the panel simulates its defaults (4 replicas, kv-aware, LRU, unbounded).
  const trace = join(TRACES, 'conversation_head500.jsonl');
  await dropFiles(page, [['conversation_head500.jsonl', readFileSync(trace, 'utf8'), 'application/x-ndjson']]);
  await waitSim(page, 4, 'kv-aware');
  const first = await equalsCli(page, trace, 'defaults');
  assert.equal(await page.locator('#what-if tr[data-replica]').count(), 4);
  assert.ok(await page.locator('#what-if figure.chart svg').count() >= 4, 'charts drawn');

  // 2. Fewer replicas, another router, a finite capacity: new numbers, still the CLI's.
  await page.fill('#w-replicas', '2');
  await page.selectOption('#w-router', 'round-robin');
  await page.fill('#w-kv-blocks', '3000');
  await waitSim(page, 2, 'round-robin');
  const second = await equalsCli(page, trace, 'r2-round-robin-kv3000');
  assert.notEqual(second.token_hit_rate, first.token_hit_rate, 'the hit rate follows the controls');
  assert.ok(second.evictions > 0, 'a finite capacity evicts');

  // 3. Session affinity, LFU, a cap on running requests and a slower engine.
  await page.selectOption('#w-router', 'session-affinity');
  await page.selectOption('#w-policy', 'lfu');
  await page.fill('#w-max-running', '8');
  await page.fill('#w-prefill-per-token-ms', '0.08');
  await waitSim(page, 2, 'session-affinity');
  await page.waitForFunction(() => document.querySelector('#what-if .sim-cmd').textContent.includes('--prefill-per-token-ms 0.08') && !document.querySelector('#sim-busy'));
  await equalsCli(page, trace, 'session-affinity-lfu');

  // 3b. The step engine (token-budget steps, chunked prefill, preemption) on a small cache.
  await page.selectOption('#w-engine', 'step');
  await page.fill('#w-max-batch-tokens', '512');
  await page.fill('#w-kv-blocks', '60');
  await page.waitForFunction(() => document.querySelector('#what-if .sim-results[data-engine="step"]') && document.querySelector('#what-if .sim-cmd').textContent.includes('--kv-blocks 60') && !document.querySelector('#sim-busy'), null, { timeout: 60000 });
  const stepped = await equalsCli(page, trace, 'step-engine');
  assert.ok(stepped.preemptions > 0, 'a 60-block cache preempts running requests');
  step(`step engine: ${stepped.preemptions} preemptions, as the CLI's`);
  await page.selectOption('#w-engine', 'request');
  await page.fill('#w-max-batch-tokens', '2048');
  await page.fill('#w-kv-blocks', '3000');
  await page.waitForFunction(() => document.querySelector('#what-if .sim-results[data-engine="request"]') && document.querySelector('#what-if .sim-cmd').textContent.includes('--kv-blocks 3000') && !document.querySelector('#sim-busy'), null, { timeout: 60000 });

  // 4. An invalid control says what is accepted and keeps the last result.
  await page.fill('#w-replicas', '0');
  await page.getByText("'0' is not accepted: a whole number from 1 to 4096").waitFor();
  assert.equal(await page.locator('#what-if .sim-results').count(), 1);

  // The README's screenshot: 4 replicas, kv-aware, a finite capacity.
  await page.fill('#w-replicas', '4');
  await page.selectOption('#w-router', 'kv-aware');
  await page.selectOption('#w-policy', 'lru');
  await page.fill('#w-max-running', '');
  await page.fill('#w-prefill-per-token-ms', '0.05');
  await waitSim(page, 4, 'kv-aware');
  await equalsCli(page, trace, 'screenshot');
  await page.setViewportSize({ width: 1280, height: 1800 });
  await page.locator('#what-if').screenshot({ path: join(IMAGES, 'what-if.png') });
  await page.setViewportSize({ width: 1280, height: 900 });
  step('docs/images/what-if.png');

  // 5. Generative synthesis: the fidelity report's arrivals table, with intensity and duration.
  await page.getByLabel('Generate new requests').check();
  await page.fill('#f-num_requests', '400');
  await page.fill('#f-intensity', '2');
  await page.waitForFunction(() => document.querySelector('table.arrivals-fidelity tr[data-arrival="inter_arrival_cv"]') && !document.querySelector('#synth-busy'), null, { timeout: 60000 });
  const arrivalRows = await page.locator('table.arrivals-fidelity tbody tr').count();
  assert.ok(arrivalRows >= 7, `${arrivalRows} arrival statistics`);
  step(`generative synthesis (intensity 2): ${arrivalRows} arrival statistics, original vs synthesized`);

  // 6. Agentic-code sessions: the files are synthesize-agentic-code's, byte for byte.
  await page.fill('#a-num-sessions', '40');
  await page.fill('#a-seed', '7');
  await page.fill('#a-max-osl', '2000');
  await page.click('#agentic-generate');
  await page.waitForFunction(() => document.querySelector('.agentic-results[data-sessions="40"][data-seed="7"]') && !document.querySelector('#agentic-busy'), null, { timeout: 60000 });
  const agCmd = await page.locator('#agentic .agentic-cmd').textContent();
  assert.equal(agCmd, 'aiperf-cli synthesize-agentic-code --num-sessions 40 --seed 7 --max-osl 2000 --output-dir agentic');
  const agDir = join(TMP, 'agentic');
  execFileSync(CLI, [...agCmd.replace(/^aiperf-cli /, '').replace(/ --output-dir agentic$/, '').split(' '), '--output-dir', agDir], { cwd: ROOT, stdio: 'ignore' });
  for (const f of ['dataset.jsonl', 'manifest.json', 'quality.json', 'comparison.txt']) {
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.getByRole('button', { name: `Download ${f}` }).click()]);
    const path = join(TMP, `page-${f}`);
    await dl.saveAs(path);
    assert.equal(dl.suggestedFilename(), f);
    assert.ok(readFileSync(path).equals(readFileSync(join(agDir, f))), `${f} differs from: ${agCmd}`);
  }
  assert.equal(await page.locator('#agentic pre.comparison').textContent(), readFileSync(join(agDir, 'comparison.txt'), 'utf8'));
  assert.equal(await page.locator('#agentic figure[data-chart="prefix-layers"]').count(), 1);
  step(`agentic sessions: dataset.jsonl, manifest.json, quality.json, comparison.txt = ${agCmd}`);
  await page.locator('#agentic').screenshot({ path: join(IMAGES, 'agentic.png') });

  if (process.env.BENCH === '1') {
    // Agentic sessions: enough for 100,000 rows, timed in the worker and on the page.
    const perSession = Number(await page.locator('[data-metric="agentic.rows"]').getAttribute('data-value')) / 40;
    const sessions = Math.ceil(100_000 / perSession * 1.06);
    await page.fill('#a-max-osl', '');
    for (const seed of [1, 2, 3]) {
      await page.fill('#a-num-sessions', String(sessions));
      await page.fill('#a-seed', String(seed));
      await page.evaluate(() => { window.__longTasks = []; new PerformanceObserver((l) => window.__longTasks.push(...l.getEntries().map((e) => e.duration))).observe({ type: 'longtask' }); });
      const t0 = Date.now();
      await page.click('#agentic-generate');
      await page.waitForFunction(([n, s]) => document.querySelector(`.agentic-results[data-sessions="${n}"][data-seed="${s}"]`) && !document.querySelector('#agentic-busy'), [sessions, seed], { timeout: 120000 });
      const wall = Date.now() - t0;
      const rows = Number(await page.locator('[data-metric="agentic.rows"]').getAttribute('data-value'));
      const ms = Number(await page.locator('[data-metric="agentic.compute_ms"]').getAttribute('data-value'));
      const long = await page.evaluate(() => window.__longTasks);
      step(`BENCH agentic ${sessions} sessions (seed ${seed}): ${rows} rows generated in ${ms.toFixed(0)} ms in the worker, click → shown ${wall} ms, main-thread tasks over 50 ms: ${long.length} (longest ${Math.max(0, ...long).toFixed(0)} ms)`);
    }

    // 120,000 rows: the conversation trace repeated with shifted ids and times.
    const big = join(DIST, 'bench-120k.jsonl');
    if (!existsSync(big)) {
      const rows = readFileSync(join(TRACES, 'conversation_trace.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const out = createWriteStream(big);
      const span = rows[rows.length - 1].timestamp + 1000;
      for (let i = 0, n = 0; n < 120_000; i++) {
        for (const r of rows) {
          if (n++ >= 120_000) break;
          const row = { timestamp: r.timestamp + i * span, input_length: r.input_length, output_length: r.output_length, hash_ids: r.hash_ids.map((h) => h + i * 1_000_000) };
          if (!out.write(JSON.stringify(row) + '\n')) await new Promise((ok) => out.once('drain', ok));
        }
      }
      await new Promise((ok) => out.end(ok));
    }
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((l) => window.__longTasks.push(...l.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
    });
    await dropFromDisk(page, 'bench-120k.jsonl', 'bench-120k.jsonl');
    await page.waitForFunction(() => document.querySelector('[data-metric="sim.requests"]')?.getAttribute('data-value') === '120000' && !document.querySelector('#sim-busy'), null, { timeout: 300000 });
    const times = [];
    for (const [replicas, router] of [[8, 'kv-aware'], [8, 'round-robin'], [4, 'least-loaded'], [16, 'kv-aware'], [2, 'session-affinity']]) {
      await page.evaluate(() => { window.__longTasks = []; });
      const t0 = Date.now();
      await page.fill('#w-replicas', String(replicas));
      await page.selectOption('#w-router', router);
      await waitSim(page, replicas, router, 300000);
      const wall = Date.now() - t0;
      const m = await shown(page);
      const long = await page.evaluate(() => window.__longTasks);
      times.push({ replicas, router, compute_ms: m.compute_ms, wall_ms: wall, longest_task_ms: Math.max(0, ...long), long_tasks: long.length });
      step(`BENCH 120,000 rows, ${replicas} replicas ${router}: simulated in ${m.compute_ms.toFixed(0)} ms in the worker, change → numbers shown ${wall} ms (250 ms debounce included), main-thread tasks over 50 ms: ${long.length} (longest ${Math.max(0, ...long).toFixed(0)} ms)`);
    }
  }
  assert.deepEqual(problems, [], 'console errors or failed requests');
  step('PASS');
} catch (e) {
  failed = true;
  console.error(e);
  if (problems.length) console.error(problems.join('\n'));
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
