//! `aiperf-cli simulate` as a user runs it: a sweep's folders open with `report` and `compare`,
//! the summary table, bad options.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};

use common::{cli, fixture};

/// The 500-row conversation trace.
const HEAD500: &str = "traces/conversation_head500.jsonl";

/// Simulates the 500-row conversation trace into `dir/sim` with `extra`; asserts that it
/// succeeded and returns the output folder and what the command printed.
fn simulate_head500(dir: &Path, extra: &[&str]) -> (PathBuf, String) {
    let out = dir.join("sim");
    let trace = fixture(HEAD500);
    let mut args = vec!["simulate", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["--output-dir", out.to_str().unwrap()]);
    let o = cli(&args);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}{stdout}", String::from_utf8_lossy(&o.stderr));
    (out, stdout)
}

#[test]
fn a_sweep_writes_run_folders_that_report_and_compare_open() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = fixture(HEAD500);
    let (out, stdout) = simulate_head500(
        tmp.path(),
        &[
            "--replicas",
            "1,2",
            "--kv-blocks",
            "200,unbounded",
            "--router",
            "kv-aware,round-robin",
            "--max-running",
            "16",
        ],
    );
    assert!(stdout.contains("r2_kv200_kv-aware_lru"), "{stdout}");

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("simulate_summary.json")).unwrap()).unwrap();
    let runs = summary.as_array().unwrap();
    assert_eq!(runs.len(), 8);
    let hit = |name: &str| runs.iter().find(|r| r["run"] == name).unwrap()["row_hit_rate"].as_f64().unwrap();
    // One replica with an unbounded cache hits what the analysis calls the theoretical rate,
    // less what concurrency hides (none: a block is cached when its request starts).
    let a =
        cli(&["analyze-trace", trace.to_str().unwrap(), "--output-file", tmp.path().join("a.json").to_str().unwrap()]);
    assert!(a.status.success());
    let analysis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("a.json")).unwrap()).unwrap();
    let theory = analysis["cache_hit_rate"].as_f64().unwrap();
    assert!((hit("r1_kvunbounded_kv-aware_lru") - theory).abs() < 1e-9, "{theory}");
    // Splitting the trace blindly over two replicas loses hits; the KV-aware router keeps more.
    assert!(hit("r2_kvunbounded_round-robin_lru") < hit("r2_kvunbounded_kv-aware_lru"));
    let records = std::fs::read_to_string(out.join("r2_kv200_kv-aware_lru/profile_export.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 500);

    let html = tmp.path().join("report.html");
    let run = out.join("r2_kv200_kv-aware_lru");
    let r = cli(&["report", run.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::metadata(&html).unwrap().len() > 1000);
    let other = out.join("r2_kv200_round-robin_lru");
    let c = cli(&["compare", run.to_str().unwrap(), other.to_str().unwrap()]);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
}

/// A simulated run folder read back as `report` and `compare` read it (its records through the
/// run loader) gives the numbers the simulation wrote in its summary, to the bit: the records'
/// chunk times come back exactly, so the time-weighted metrics are swept from the same requests.
#[test]
fn a_simulated_run_reads_back_to_the_numbers_it_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, _) = simulate_head500(tmp.path(), &["--replicas", "2", "--kv-blocks", "200", "--max-running", "16"]);
    let dir = out.join("r2_kv200_kv-aware_lru");
    let text = std::fs::read_to_string(dir.join("profile_export_aiperf.json")).unwrap();
    let settings = aiperf_core::view::RunSettings::from_summary_json("profile_export_aiperf.json", &text).unwrap();
    let records = std::fs::read(dir.join("profile_export.jsonl")).unwrap();
    let run = aiperf_core::view::Run::from_jsonl("sim", "profile_export.jsonl", &records, settings).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(run.report.timeline.len(), 14);
    for (metric, weighted) in &run.report.timeline {
        for (stat, value) in weighted.stats() {
            assert_eq!(summary[metric.tag()][stat].as_f64(), Some(value), "{} {stat}", metric.tag());
        }
    }
    use aiperf_core::results::metrics::Metric;
    for metric in [Metric::TimeToFirstToken, Metric::InterTokenLatency, Metric::RequestLatency] {
        let d = run.report.get(metric).unwrap();
        assert_eq!(summary[metric.tag()]["avg"].as_f64(), Some(d.avg), "{}", metric.tag());
        assert_eq!(summary[metric.tag()]["p99"].as_f64(), d.percentile(99.0), "{}", metric.tag());
    }
    assert_eq!(summary["request_count"]["avg"].as_f64(), Some(run.report.request_count as f64));
}

#[test]
fn bad_capacity_names_the_value_and_what_is_accepted() {
    let trace = fixture("traces/conversation_head500.jsonl");
    let o = cli(&["simulate", trace.to_str().unwrap(), "--kv-blocks", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("'lots' is not a block count: a whole number ≥ 1, or `unbounded`"), "{e}");
}

/// An earlier simulation is not replaced unasked, the input trace is never an output, and more
/// replicas than the bound are refused before the trace is read.
#[test]
fn earlier_results_and_the_input_are_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sim");
    let trace = tmp.path().join("t.jsonl");
    std::fs::copy(fixture("traces/arxiv_first20.jsonl"), &trace).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", trace.to_str().unwrap(), "--output-dir", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        cli(&args)
    };
    assert!(run(&[]).status.success());
    let summary = std::fs::read(out.join("simulate_summary.json")).unwrap();
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("holds an earlier simulation"));
    assert_eq!(std::fs::read(out.join("simulate_summary.json")).unwrap(), summary);
    assert!(run(&["--overwrite"]).status.success());

    // The trace where a run's records would go.
    let inside = out.join("r1_kvunbounded_kv-aware_lru/profile_export.jsonl");
    std::fs::copy(&trace, &inside).unwrap();
    let o = cli(&["simulate", inside.to_str().unwrap(), "--output-dir", out.to_str().unwrap(), "--overwrite"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&inside).unwrap(), std::fs::read(&trace).unwrap(), "the input is untouched");

    let o = run(&["--replicas", "4097", "--overwrite"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("a whole number from 1 to 4096"));
}

/// A run folder whose records follow the engine model exactly: 20 ms + 0.1 ms per uncached
/// prompt token to the first token, 10 ms + 2 ms per request running between tokens (counted as
/// the simulator counts them: the request and those of its group that started before it).
fn modelled_run(dir: &std::path::Path) {
    use aiperf_core::results::line::record_line;
    use aiperf_core::results::record::{RequestRecord, ServerUsage};
    std::fs::create_dir_all(dir).unwrap();
    let mut lines = Vec::new();
    for group in 0..12u64 {
        let in_flight = 1 + group % 4;
        let sent = group * 100_000_000_000;
        for j in 0..in_flight {
            let (input, cached) = (300 + 100 * j + 7 * group, 100);
            let first = sent + 20_000_000 + (input - cached) * 100_000;
            let itl = 10_000_000 + 2_000_000 * (j + 1);
            let chunks: Vec<u64> = (0..5).map(|k| first + k * itl).collect();
            let rec = RequestRecord {
                session_num: (group * 4 + j) as u32,
                sent_ns: sent,
                scheduled_ns: sent,
                first_byte_ns: Some(first),
                end_ns: chunks[4],
                chunk_ns: chunks,
                streaming: true,
                input_tokens: Some(input),
                output_tokens: Some(5),
                usage: ServerUsage {
                    prompt_tokens: Some(input),
                    completion_tokens: Some(5),
                    cached_tokens: Some(cached),
                    first_chunk_tokens: None,
                },
                ..RequestRecord::default()
            };
            lines.extend(record_line(&rec, None, 0));
        }
    }
    std::fs::write(dir.join("profile_export.jsonl"), lines).unwrap();
}

#[test]
fn calibrate_fits_the_engine_from_a_run_and_writes_the_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let measured = tmp.path().join("measured");
    modelled_run(&measured);
    let out = tmp.path().join("sim");
    let trace = fixture("traces/arxiv_first20.jsonl");
    let args = ["simulate", trace.to_str().unwrap(), "--output-dir", out.to_str().unwrap()];
    let o = cli(&[&args[..], &["--calibrate", measured.to_str().unwrap()]].concat());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}{stdout}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("prefill 20.000 ms + 0.10000 ms per uncached token (R² 1.000"), "{stdout}");
    assert!(stdout.contains("decode 10.000 ms + 2.0000 ms per running request (R² 1.000"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("simulate_summary.json")).unwrap()).unwrap();
    let fit = &summary[0]["calibration"]["time_to_first_token"];
    assert!((fit["slope_ms"].as_f64().unwrap() - 0.1).abs() < 1e-9, "{fit}");
    // The prefill is fitted on the requests that found their URL idle: the first of each group.
    assert_eq!(fit["points"], 12);
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("r1_kvunbounded_kv-aware_lru/profile_export_aiperf.json")).unwrap(),
    )
    .unwrap();
    let engine = &run["aiperf_cli_config"]["engine"];
    assert!((engine["decode_per_running_us"].as_f64().unwrap() - 2000.0).abs() < 1e-6, "{engine}");
    assert!(run["aiperf_cli_config"]["calibration"]["inter_token_latency"]["r2"].as_f64().unwrap() > 0.999_999);

    // AIPerf's own run folder: real timings, a fit with its error said.
    let aiperf = fixture("aiperf-0.13.0-runs/fixed-schedule-streaming");
    let o = cli(&[&args[..], &["--overwrite", "--calibrate", aiperf.to_str().unwrap()]].concat());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}{stdout}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("Calibrated engine (30 requests"), "{stdout}");

    // A folder without records, and the timing options beside --calibrate, are refused.
    let o = cli(&[&args[..], &["--overwrite", "--calibrate", tmp.path().to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is no run folder"));
    let o = cli(&[&args[..], &["--calibrate", measured.to_str().unwrap(), "--prefill-fixed-ms", "3"]].concat());
    assert_eq!(o.status.code(), Some(2));
}

/// Per trace line, from a run's records: (time to first token in ms, cached prompt tokens, prompt
/// tokens) of each completed request.
fn completed(records: &std::path::Path) -> Completed {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(records).unwrap().read_to_end(&mut bytes).unwrap();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut plain).unwrap();
        bytes = plain;
    }
    let mut out = std::collections::BTreeMap::new();
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let r: serde_json::Value = serde_json::from_slice(line).unwrap();
        if r.get("error").is_some_and(|e| !e.is_null()) || r["metadata"]["was_cancelled"] == true {
            continue;
        }
        let m = &r["metrics"];
        let v = |k: &str| m[k]["value"].as_f64().unwrap_or(0.0);
        let line = r["metadata"]["trace_line"].as_u64().unwrap();
        out.insert(line, (v("time_to_first_token"), v("usage_prompt_cache_read_tokens"), v("usage_prompt_tokens")));
    }
    out
}

/// The real run `tests/fixtures/real-runs/NAME` as a run folder under `dir` (its records
/// unpacked), for `simulate --calibrate`.
fn real_run(dir: &std::path::Path, name: &str) -> PathBuf {
    let src = fixture(&format!("real-runs/{name}"));
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(src.join("profile_export.jsonl.gz"), run.join("profile_export.jsonl")).unwrap();
    std::fs::copy(src.join("profile_export_aiperf.json"), run.join("profile_export_aiperf.json")).unwrap();
    run
}

/// Completed requests by trace line: (time to first token ms, cached tokens, prompt tokens).
type Completed = std::collections::BTreeMap<u64, (f64, f64, f64)>;

/// Percentile `q` (0–100) of the time to first token of every request of `runs`.
fn ttft_percentile(runs: &Completed, q: f64) -> f64 {
    let times: Vec<f64> = runs.values().map(|r| r.0).collect();
    aiperf_core::stats::percentile_sorted(&aiperf_core::stats::sorted(&times), q).unwrap()
}

/// The fraction of the prompt tokens of `runs` served from the cache.
fn token_hit_rate(runs: &Completed) -> f64 {
    let (c, p) = runs.values().fold((0.0, 0.0), |(c, p), r| (c + r.1, p + r.2));
    c / p
}

/// A replay measured on a real GPU server at saturation (llama.cpp with CUDA on an H200, 8 slots,
/// up to 334 requests queued; `tests/fixtures/real-runs/llamacpp-cuda-h200/README.md`), simulated
/// with the server's settings and calibrated from the run: on the requests the run completed, the
/// simulated time to first token is within 15% of the measured at p50, p90 and p99, and the token
/// hit rate within half a point. Calibrated as if every request started when sent (no
/// `--max-running`), the queue's mean wait becomes a fixed prefill time of every request and p90
/// is off by more than 40%.
#[test]
fn a_saturated_real_server_is_simulated_from_its_calibrated_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = real_run(tmp.path(), "llamacpp-cuda-h200");
    let trace = fixture("traces/conversation_head500.jsonl");
    let simulate = |name: &str, slots: &[&str]| {
        let out = tmp.path().join(name);
        let mut args = vec!["simulate", trace.to_str().unwrap(), "--block-size", "512", "--kv-blocks", "2048"];
        args.extend(slots);
        args.extend(["--calibrate", run.to_str().unwrap(), "--output-dir", out.to_str().unwrap()]);
        let o = cli(&args);
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}{stdout}", String::from_utf8_lossy(&o.stderr));
        (completed(&out.join("r1_kv2048_kv-aware_lru/profile_export.jsonl")), stdout)
    };
    let measured = completed(&run.join("profile_export.jsonl"));
    assert_eq!(measured.len(), 297);
    let ttft = |runs: &Completed, q| {
        let times: Vec<f64> = measured.keys().map(|l| runs[l].0).collect();
        aiperf_core::stats::percentile_sorted(&aiperf_core::stats::sorted(&times), q * 100.0).unwrap()
    };
    let hit = |runs: &Completed| {
        let (c, p) = measured.keys().fold((0.0, 0.0), |(c, p), l| (c + runs[l].1, p + runs[l].2));
        c / p
    };

    let (sim, stdout) = simulate("queued", &["--max-running", "8"]);
    assert!(stdout.contains("8 slots per URL, mean wait for one"), "{stdout}");
    for q in [0.5, 0.9, 0.99] {
        let (m, s) = (ttft(&measured, q), ttft(&sim, q));
        assert!((s / m - 1.0).abs() < 0.15, "p{}: measured {m} ms, simulated {s} ms", q * 100.0);
    }
    assert!((hit(&sim) - hit(&measured)).abs() < 0.005, "hit {} vs {}", hit(&sim), hit(&measured));

    let (naive, stdout) = simulate("naive", &[]);
    assert!(stdout.contains("--max-running 8 takes the wait for a slot out"), "{stdout}");
    let (m, s) = (ttft(&measured, 0.9), ttft(&naive, 0.9));
    assert!((s / m - 1.0).abs() > 0.4, "p90: measured {m} ms, simulated without slots {s} ms");
}

/// A replay measured on the same GPU server below saturation (the trace's timestamps stretched 4
/// times: 156 requests, all completed, at most 7 queued; `tests/fixtures/real-runs/
/// llamacpp-cuda-h200-quarter/README.md`), simulated with the server's settings and calibrated
/// from the run: the token hit rate within half a point, the time to first token within 35% at
/// p50, p90 and p99 and below the measured one. The simulator runs each request's prefill on its
/// own; llama.cpp fills each step with the running requests' next tokens and then prompt tokens up
/// to its batch size, so prefills share the GPU with one another and with the decoding slots, and
/// a request sent while others prefill waits longer than the model says (measured − simulated:
/// 21% at p50, 29% at p90, 21% at p99).
#[test]
fn a_real_server_below_saturation_is_simulated_from_its_calibrated_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (measured, sim) = h200_quarter(tmp.path(), &[]);
    assert_eq!((measured.len(), sim.len()), (156, 156));
    for q in [50.0, 90.0, 99.0] {
        let (m, s) = (ttft_percentile(&measured, q), ttft_percentile(&sim, q));
        assert!(s < m && s / m > 0.65, "p{q}: measured {m} ms, simulated {s} ms");
    }
    let (hit_sim, hit_measured) = (token_hit_rate(&sim), token_hit_rate(&measured));
    assert!((hit_sim - hit_measured).abs() < 0.005, "hit {hit_sim} vs {hit_measured}");
}

/// The same run in engine steps (`--engine step`: prefills share each step's 2048-token budget
/// with the decoding requests, as vLLM v1 schedules them): the median time to first token, 21%
/// low with a prefill per request, comes within 10% of the measured (2% on this run), closer
/// than the per-request engine's; the tails stay within 35% below, the hit rate within half a point.
#[test]
fn engine_steps_bring_the_median_time_to_first_token_to_the_real_servers() {
    let tmp = tempfile::tempdir().unwrap();
    let (measured, per_request) = h200_quarter(&tmp.path().join("a"), &[]);
    let (_, steps) = h200_quarter(&tmp.path().join("b"), &["--engine", "step"]);
    assert_eq!(steps.len(), 156);
    let m = ttft_percentile(&measured, 50.0);
    let (r, s) = (ttft_percentile(&per_request, 50.0), ttft_percentile(&steps, 50.0));
    assert!((s / m - 1.0).abs() < 0.10, "p50: measured {m} ms, steps {s} ms");
    assert!((s - m).abs() < (r - m).abs(), "p50: measured {m} ms, steps {s} ms, per request {r} ms");
    for q in [90.0, 99.0] {
        let (m, s) = (ttft_percentile(&measured, q), ttft_percentile(&steps, q));
        assert!(s < m && s / m > 0.65, "p{q}: measured {m} ms, steps {s} ms");
    }
    assert!((token_hit_rate(&steps) - token_hit_rate(&measured)).abs() < 0.005);
}

/// The same run in engine steps in llama.cpp's order (`--engine step-llamacpp`: every request
/// a slot is free for starts, prompts computed in slot order beside every decoding slot's token,
/// no preemption), against vLLM's order: 154 of the 156 times to first token change (by up to
/// 14 s) but p50, p90 and p99 stay within 2% of the measured of each other (p50 −3% against −2%
/// of the measured, p90 −29% both, p99 −21% against −22%): the order is not what keeps the
/// tails short. Held to the same bounds as vLLM's order.
#[test]
fn llamacpp_step_order_moves_single_requests_not_the_distribution() {
    let tmp = tempfile::tempdir().unwrap();
    let (measured, vllm) = h200_quarter(&tmp.path().join("a"), &["--engine", "step"]);
    let (_, llama) = h200_quarter(&tmp.path().join("b"), &["--engine", "step-llamacpp"]);
    assert_eq!(llama.len(), 156);
    let moved = llama.iter().filter(|(line, r)| (r.0 - vllm[*line].0).abs() > 1.0).count();
    assert!(moved > 100, "{moved} of 156 times to first token moved");
    for q in [50.0, 90.0, 99.0] {
        let (m, v, l) = (ttft_percentile(&measured, q), ttft_percentile(&vllm, q), ttft_percentile(&llama, q));
        assert!((l - v).abs() < 0.02 * m, "p{q}: measured {m} ms, vLLM's order {v} ms, llama.cpp's {l} ms");
        assert!(l < m && l / m > 0.65, "p{q}: measured {m} ms, llama.cpp's order {l} ms");
    }
    assert!((ttft_percentile(&llama, 50.0) / ttft_percentile(&measured, 50.0) - 1.0).abs() < 0.10);
    assert!((token_hit_rate(&llama) - token_hit_rate(&measured)).abs() < 0.005);
}

/// The H200 run's records and its simulation (calibrated from it, `extra` options added).
fn h200_quarter(dir: &std::path::Path, extra: &[&str]) -> (Completed, Completed) {
    std::fs::create_dir_all(dir).unwrap();
    let run = real_run(dir, "llamacpp-cuda-h200-quarter");
    // The rows the run replayed, on the stretched clock it replayed them on.
    let text = std::fs::read_to_string(fixture("traces/conversation_head500.jsonl")).unwrap();
    let rows: Vec<String> = text
        .lines()
        .take(156)
        .map(|l| {
            let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
            row["timestamp"] = serde_json::json!(row["timestamp"].as_u64().unwrap() * 4);
            row.to_string()
        })
        .collect();
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, rows.join("\n") + "\n").unwrap();
    let out = dir.join("sim");
    let args = [
        "simulate",
        trace.to_str().unwrap(),
        "--block-size",
        "512",
        "--kv-blocks",
        "2048",
        "--max-running",
        "8",
        "--calibrate",
        run.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ];
    let o = cli(&[args.as_slice(), extra].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (completed(&run.join("profile_export.jsonl")), completed(&out.join("r1_kv2048_kv-aware_lru/profile_export.jsonl")))
}

/// A replay on vLLM's CPU build with a small KV cache (v0.32.0 serving SmolLM2-135M, 49 blocks
/// of 128 tokens of which 48 cache prompts, max_num_seqs 4, two cores under a load of ~15;
/// `tests/fixtures/real-runs/vllm-cpu-smollm2/README.md`): 40 requests sharing prefixes, the last
/// 20 repeating the first 20, whose 61 distinct blocks do not fit, so the cache evicts. Simulated
/// with the server's settings and calibrated from the run: the cached tokens of 39 requests of 40
/// are the server's exactly, the token hit rate is within 1 point of the measured 64.45%
/// (64.82%), and the time to first token within 10% at p99 and 25% at p50 (the fit's mean error
/// is 13 s a request: the server's speed followed the machine's load, which the linear model
/// does not). Holding prompt blocks only (`--prompt-blocks-only`: no block for the output tokens
/// of a prompt that fills its last block) gives 38 alike and 65.91%; releasing a request's
/// blocks head first, not tail first as vLLM does, 34 alike and 58.99%.
#[test]
fn a_small_vllm_cache_is_simulated_from_its_calibrated_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = real_run(tmp.path(), "vllm-cpu-smollm2");
    let trace = fixture("traces/conversation_prefix_groups_b128_twice.jsonl");
    let out = tmp.path().join("sim");
    let o = cli(&[
        "simulate",
        trace.to_str().unwrap(),
        "--block-size",
        "128",
        "--kv-blocks",
        "48",
        "--max-running",
        "4",
        "--calibrate",
        run.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let measured = completed(&run.join("profile_export.jsonl"));
    let sim = completed(&out.join("r1_kv48_kv-aware_lru/profile_export.jsonl"));
    assert_eq!((measured.len(), sim.len()), (40, 40));

    let alike = measured.iter().filter(|(line, m)| sim[*line].1 == m.1).count();
    assert!(alike >= 39, "{alike} of 40 requests hit the same tokens");
    let hit = |runs: &Completed| 100.0 * token_hit_rate(runs);
    assert!((hit(&measured) - 64.45).abs() < 0.01, "measured {}", hit(&measured));
    assert!((hit(&sim) - hit(&measured)).abs() < 1.0, "hit {} vs {}", hit(&sim), hit(&measured));
    for (q, tolerance) in [(50.0, 0.25), (99.0, 0.10)] {
        let (m, s) = (ttft_percentile(&measured, q), ttft_percentile(&sim, q));
        assert!((s / m - 1.0).abs() < tolerance, "p{q}: measured {m} ms, simulated {s} ms");
    }
}
