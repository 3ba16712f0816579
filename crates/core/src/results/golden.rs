//! AIPerf's own numbers: the records of each run in `tests/fixtures/aiperf-0.13.0-runs/` (its
//! `profile_export.jsonl`: metadata times and per-record values) are rebuilt as our records,
//! aggregated by our code, and every statistic of `profile_export_aiperf.json` is compared with
//! ours to 6 significant digits, for the metrics computed from the same inputs.

use serde_json::Value;

use crate::results::aggregate::Aggregate;
use crate::results::export::{summary_csv, summary_json};
use crate::results::line::read_line;
use crate::results::metrics::parse_goodput;
use crate::results::record::RequestRecord;
use crate::results::summary::RunSummary;

/// AIPerf's metrics that need what its records do not carry: the HTTP client's own timings
/// (`http_req_*`), the fixed-schedule lag (its send offsets are internal), the GPU energy
/// efficiency (`nvidia_*`: from its GPU telemetry, checked in `server::gpu`); and the rates, which
/// AIPerf divides by its phase's wall-clock window (`start_time` to `end_time`, not in the
/// records) where ours divide by the benchmark duration: checked apart.
fn not_compared(tag: &str) -> bool {
    matches!(
        tag,
        "request_throughput"
            | "output_token_throughput"
            | "input_token_throughput"
            | "total_token_throughput"
            | "goodput"
    ) || tag.starts_with("http_req_")
        || tag.starts_with("replay_sched_")
        || tag.starts_with("nvidia_")
}

/// AIPerf's time-weighted metrics (`effective_*` but `effective_latency`, `active_*`,
/// `tokens_in_flight`).
fn time_weighted(tag: &str) -> bool {
    (tag.starts_with("effective_") && tag != "effective_latency")
        || tag.starts_with("active_")
        || tag == "tokens_in_flight"
}

/// How far a time-weighted statistic of ours may be from AIPerf's (relative): AIPerf weighs over
/// its phase's window, known here only from `start_time`/`end_time` to the microsecond, and
/// computes on float64 wall-clock times (256 ns steps near 2026) where ours are exact
/// nanoseconds. Over the nine fixture runs: avg within 1.3e-5, percentiles 2e-5, min and max
/// 3e-5, std 1.6e-4 (it squares the rates of the shortest chunk gaps, where 256 ns weigh most).
const TIME_WEIGHTED_TOLERANCE: f64 = 1e-3;

/// The CSV names of the time-weighted metrics.
const TIME_WEIGHTED_HEADERS: [&str; 3] = ["Effective ", "Active ", "Tokens In Flight"];

/// The largest throughput can be held for a segment of a few hundred nanoseconds that exists in
/// AIPerf's float64 times and not in our exact ones (or the other way round): two requests'
/// chunk rates overlapping, or a request's rate still held where its concurrency already fell.
/// The `max` of the throughput curves is not compared (their averages, percentiles and std are).
const SLIVER_SENSITIVE: [&str; 2] = ["Effective Decode Throughput", "Active Decode Throughput"];

/// `start_time`/`end_time` of AIPerf's summary (local time of the machine that ran it: UTC for
/// the fixtures) as Unix nanoseconds.
fn window(theirs: &Value) -> (u64, u64) {
    let at = |k: &str| {
        let t = theirs[k].as_str().and_then(crate::datetime::parse_datetime).unwrap_or_else(|| panic!("{k}"));
        t.unix_ns as u64
    };
    (at("start_time"), at("end_time"))
}

fn ns(v: &Value) -> Option<u64> {
    v.as_f64().map(|ms| (ms * 1e6).round() as u64)
}

/// One AIPerf line as our record: read by the one reader of the JSONL line, then put where
/// AIPerf's own computation puts it. Its wall-clock times are float64 in its column store (256 ns
/// steps near 2026), counted here from `base`; a non-streamed answer ends at its latency; a failed
/// request's input length is its `error_isl`, the requested output length comes from the OSL
/// mismatch.
fn record(line: &Value, base: u64, streaming: bool) -> RequestRecord {
    let raw = serde_json::to_vec(line).unwrap_or_default();
    let mut rec = RequestRecord::default();
    assert!(read_line(&raw, &mut rec).unwrap_or(false), "not a record: {line}");
    let m = &line["metrics"];
    let val = |k: &str| m.get(k).map(|x| &x["value"]);
    let int = |k: &str| val(k).and_then(Value::as_f64).map(|v| v as u64);
    let float64 = |t: u64| (t as f64) as u64;
    // The chunk times and the exchange's move with the send, as AIPerf's are differences from it.
    let sent = rec.sent_ns;
    let with_send = |t: u64| (i128::from(t) - i128::from(sent) + i128::from(float64(sent)) - i128::from(base)) as u64;
    rec.chunk_ns = rec.chunk_ns.iter().map(|&c| with_send(c)).collect();
    if let Some(h) = &mut rec.http {
        h.send_end_ns = with_send(h.send_end_ns);
        h.body_first_ns = h.body_first_ns.map(with_send);
        h.body_last_ns = h.body_last_ns.map(with_send);
    }
    rec.sent_ns = with_send(rec.sent_ns);
    rec.scheduled_ns = float64(rec.scheduled_ns).saturating_sub(base);
    rec.end_ns = if streaming {
        float64(rec.end_ns) - base
    } else {
        rec.sent_ns + val("request_latency").and_then(ns).unwrap_or(0)
    };
    rec.streaming = streaming;
    rec.input_tokens = rec.input_tokens.or(int("error_isl"));
    rec.max_tokens = match (rec.output_tokens, val("osl_mismatch_diff_pct").and_then(Value::as_f64)) {
        (Some(n), Some(d)) => Some((n as f64 / (1.0 + d / 100.0)).round() as u64),
        _ => None,
    };
    rec
}

fn close(a: f64, b: f64) -> bool {
    near(a, b, 1e-6)
}

fn near(a: f64, b: f64, relative: f64) -> bool {
    (a - b).abs() <= relative * a.abs().max(b.abs()) + 1e-9
}

/// Reads a file of one of AIPerf's fixture runs.
fn reader(shape: &str) -> impl Fn(&str) -> String {
    let dir = format!("{}/../../tests/fixtures/aiperf-0.13.0-runs/{shape}", env!("CARGO_MANIFEST_DIR"));
    move |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).unwrap_or_else(|e| panic!("{dir}/{f}: {e}"))
}

/// The profiling phase's lines of AIPerf's `profile_export.jsonl` (warm-up left out).
fn profiling_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["metadata"]["benchmark_phase"] == "profiling")
        .collect()
}

/// Compares one run; returns the AIPerf keys compared.
fn compare(shape: &str, goodput: &str) -> usize {
    let read = reader(shape);
    let theirs: Value = serde_json::from_str(&read("profile_export_aiperf.json")).unwrap_or_default();
    let streaming = theirs["input_config"]["endpoint"]["streaming"].as_bool().unwrap_or(false);
    let lines = profiling_lines(&read("profile_export.jsonl"));
    let base = lines
        .iter()
        .flat_map(|l| [l["metadata"]["credit_issued_ns"].as_u64(), l["metadata"]["request_start_ns"].as_u64()])
        .flatten()
        .map(|t| (t as f64) as u64)
        .min()
        .unwrap_or(0);
    // The phase's window starts before its first credit.
    let (from, to) = window(&theirs);
    let base = base.min(from);
    let slos = parse_goodput(goodput).unwrap_or_default();
    let mut agg = Aggregate::default();
    for l in &lines {
        agg.add(&record(l, base, streaming), false, &slos);
    }
    let mut report = agg.report(!slos.is_empty());
    report.timeline = agg.timeline.metrics(from - base, to - base);
    let summary = RunSummary { report, ..RunSummary::default() };
    let ours: Value = serde_json::from_str(&summary_json(&summary)).unwrap_or_default();
    let mut compared = 0;
    let mut problems = Vec::new();
    for (tag, t) in theirs.as_object().into_iter().flatten() {
        // A non-streamed answer's record has one end time, its latency's; AIPerf's
        // `request_end_ns` (effective latency's end) comes later.
        if t.get("unit").is_none() || not_compared(tag) || (!streaming && tag == "effective_latency") {
            continue;
        }
        let Some(o) = ours.get(tag) else {
            problems.push(format!("{tag}: missing"));
            continue;
        };
        if o["unit"] != t["unit"] {
            problems.push(format!("{tag}: unit {} vs AIPerf's {}", o["unit"], t["unit"]));
        }
        let tolerance = if time_weighted(tag) { TIME_WEIGHTED_TOLERANCE } else { 1e-6 };
        let sliver = tag.contains("decode_throughput");
        for (stat, tv) in t.as_object().into_iter().flatten().filter(|(k, _)| *k != "unit" && !(sliver && *k == "max"))
        {
            match (o.get(stat).and_then(Value::as_f64), tv.as_f64()) {
                (Some(a), Some(b)) if near(a, b, tolerance) => {}
                (a, b) => problems.push(format!("{tag}.{stat}: ours {a:?}, AIPerf's {b:?}")),
            }
        }
        compared += 1;
    }
    // The CSV: AIPerf's headers, and each of its rows that we have, cell for cell.
    let csv = summary_csv(&summary);
    let their_csv = read("profile_export_aiperf.csv");
    let rates = [
        "Request Throughput",
        "Output Token Throughput (",
        "Input Token Throughput",
        "Total Token Throughput",
        "Goodput",
    ];
    let mut rows = 0;
    for line in their_csv.split("\r\n").filter(|l| !l.is_empty() && !l.starts_with("Endpoint,")) {
        let name = line.split(',').next().unwrap_or_default();
        if name == "Metric" {
            assert!(csv.contains(&format!("{line}\r\n")), "{shape}: CSV header {line}");
            continue;
        }
        let ours_line = csv.split("\r\n").find(|l| l.split(',').next() == Some(name));
        let skip = rates.iter().any(|r| name.starts_with(r)) || (!streaming && name.starts_with("Effective Latency"));
        // A time-weighted row: each cell within the tolerance (and the two decimals' rounding).
        let cells_near = |l: &str| {
            let cells = |x: &str| x.split(',').skip(1).map(|c| c.parse::<f64>().ok()).collect::<Vec<_>>();
            let (a, b) = (cells(l), cells(line));
            a.len() == b.len()
                && a.iter().zip(&b).enumerate().all(|(i, pair)| match pair {
                    // max (the third column) of a ratio: see `SLIVER_SENSITIVE`.
                    _ if i == 2 && SLIVER_SENSITIVE.iter().any(|t| l.starts_with(t)) => true,
                    (Some(x), Some(y)) => near(*x, *y, TIME_WEIGHTED_TOLERANCE) || (x - y).abs() <= 0.011,
                    (x, y) => x == y,
                })
        };
        let time_weighted_row = TIME_WEIGHTED_HEADERS.iter().any(|h| name.starts_with(h));
        match ours_line {
            Some(l) if l == line || skip || (time_weighted_row && cells_near(l)) => rows += 1,
            Some(l) => problems.push(format!("CSV: ours {l}\n     AIPerf's {line}")),
            None => {}
        }
    }
    assert!(problems.is_empty(), "{shape}:\n{}", problems.join("\n"));
    assert!(rows >= compared, "{shape}: {rows} CSV rows for {compared} metrics");
    assert!(close(
        ours["request_throughput"]["avg"].as_f64().unwrap_or(0.0)
            * ours["benchmark_duration"]["avg"].as_f64().unwrap_or(0.0),
        ours["request_count"]["avg"].as_f64().unwrap_or(-1.0)
    ));
    compared
}

#[test]
fn every_metric_of_aiperfs_summaries_from_its_records() {
    for (shape, goodput, at_least) in [
        ("errors", "", 40),
        ("cancelled", "", 40),
        ("non-streaming", "", 20),
        ("completions-streaming", "", 35),
        ("fixed-schedule-streaming", "", 35),
        ("sessions", "", 35),
        ("server-metrics", "", 35),
        ("gpu-telemetry", "", 35),
        ("raw-multi-turn", "", 35),
        ("timeslices-goodput", "time_to_first_token:30 request_latency:80", 35),
    ] {
        let n = compare(shape, goodput);
        assert!(n >= at_least, "{shape}: {n} metrics compared");
    }
}

/// AIPerf's time slices of the same records: `profile_export_aiperf_timeslices.json` slice by
/// slice and `.csv` row by row, for the metrics computed from the same inputs (AIPerf's slice
/// grid starts at its first request's start, as ours at time zero: the records are counted from
/// there). Returns the slice values compared.
fn compare_timeslices(shape: &str, goodput: &str, slice_ns: u64) -> usize {
    use crate::results::timeslices::{Slicer, timeslices_csv, timeslices_json};
    let read = reader(shape);
    let theirs: Value = serde_json::from_str(&read("profile_export_aiperf_timeslices.json")).unwrap_or_default();
    let lines = profiling_lines(&read("profile_export.jsonl"));
    let base = lines
        .iter()
        .filter_map(|l| l["metadata"]["request_start_ns"].as_u64())
        .map(|t| (t as f64) as u64)
        .min()
        .unwrap_or(0);
    let slos = parse_goodput(goodput).unwrap_or_default();
    let mut slicer = Slicer::new(slice_ns).unwrap_or_else(|e| panic!("{e}"));
    let mut run = crate::results::aggregate::Aggregate::default();
    let mut run_end = 0;
    for l in &lines {
        let r = record(l, base, true);
        run_end = run_end.max(r.end_ns);
        slicer.add(&r, false, &slos);
        run.add(&r, false, &slos);
    }
    let slices = slicer.finish(run_end, !slos.is_empty(), &run.timeline);
    let ours: Value =
        serde_json::from_str(&timeslices_json(&slices, u128::from(base), &Value::Null)).unwrap_or_default();
    let (theirs, ours) = (theirs["timeslices"].as_array().cloned().unwrap_or_default(), ours["timeslices"].clone());
    assert_eq!(theirs.len(), ours.as_array().map_or(0, Vec::len), "{shape}: slices");
    let mut problems = Vec::new();
    let mut compared = 0;
    for (i, t) in theirs.iter().enumerate() {
        let o = &ours[i];
        for edge in ["start_ns", "end_ns"] {
            let (a, b) = (o[edge].as_f64().unwrap_or(0.0), t[edge].as_f64().unwrap_or(-1.0));
            // AIPerf's times are float64 (256 ns steps near 2026).
            if (a - b).abs() > 512.0 {
                problems.push(format!("slice {i}: {edge} ours {a}, AIPerf's {b}"));
            }
        }
        for (tag, tv) in t.as_object().into_iter().flatten() {
            let per_slice_rate = matches!(tag.as_str(), "request_throughput" | "output_token_throughput" | "goodput");
            if tv.get("unit").is_none() || (not_compared(tag) && !per_slice_rate) {
                continue;
            }
            let tolerance = if time_weighted(tag) { TIME_WEIGHTED_TOLERANCE } else { 1e-6 };
            // The `max` of a decode throughput: see `SLIVER_SENSITIVE`.
            let sliver = tag.contains("decode_throughput");
            for (stat, x) in
                tv.as_object().into_iter().flatten().filter(|(k, _)| *k != "unit" && !(sliver && *k == "max"))
            {
                match (o[tag].get(stat).and_then(Value::as_f64), x.as_f64()) {
                    (Some(a), Some(b)) if near(a, b, tolerance) => compared += 1,
                    (a, b) => problems.push(format!("slice {i}: {tag}.{stat}: ours {a:?}, AIPerf's {b:?}")),
                }
            }
        }
    }
    // The CSV: its header, and each row of a metric we have: name, unit, stat and value.
    let csv = timeslices_csv(&slices, u128::from(base));
    let their_csv = read("profile_export_aiperf_timeslices.csv");
    let key = |l: &str| {
        let c: Vec<&str> = l.split(',').collect();
        (c.first().map(|s| s.to_string()), c.get(3..).map(|r| r.join(",")))
    };
    assert_eq!(csv.split("\r\n").next(), their_csv.split("\r\n").next(), "{shape}: CSV header");
    let our_rows: std::collections::HashSet<_> = csv.split("\r\n").map(key).collect();
    let our_names: std::collections::HashSet<String> =
        csv.split("\r\n").filter_map(|l| l.split(',').nth(3).map(str::to_owned)).collect();
    // Each of our rows' value by its slice and its metric, unit and statistic.
    let our_csv_values: std::collections::HashMap<(Option<String>, String), f64> = csv
        .split("\r\n")
        .filter_map(|l| {
            let (slice, rest) = key(l);
            let (rest, value) = rest?.rsplit_once(',').map(|(a, b)| (a.to_owned(), b.to_owned()))?;
            Some(((slice, rest), value.parse().ok()?))
        })
        .collect();
    let mut rows = 0;
    for line in their_csv.split("\r\n").skip(1).filter(|l| !l.is_empty()) {
        let name = line.split(',').nth(3).unwrap_or_default();
        let rate = ["Request Throughput", "Output Token Throughput", "Goodput"].contains(&name);
        let time_weighted_row = TIME_WEIGHTED_HEADERS.iter().any(|h| name.starts_with(h));
        if !our_names.contains(name) || (name.contains("Throughput") && !rate && !time_weighted_row) {
            continue;
        }
        // A time-weighted row: the same slice, metric and statistic, its value within the
        // tolerance (or the last of its two decimals).
        let weighted_near = || {
            if SLIVER_SENSITIVE.iter().any(|t| name.starts_with(t)) && line.contains(",max,") {
                return true;
            }
            let (slice, rest) = key(line);
            let (rest, value) = rest.as_deref().and_then(|r| r.rsplit_once(',')).unwrap_or_default();
            let value: f64 = value.parse().unwrap_or(f64::NAN);
            our_csv_values
                .get(&(slice, rest.to_owned()))
                .is_some_and(|&v| near(v, value, TIME_WEIGHTED_TOLERANCE) || (v - value).abs() <= 0.011)
        };
        if our_rows.contains(&key(line)) || (time_weighted_row && weighted_near()) {
            rows += 1;
        } else {
            problems.push(format!("CSV row: AIPerf's {line}"));
        }
    }
    assert!(problems.is_empty(), "{shape}:\n{}", problems.join("\n"));
    assert!(rows >= 500, "{shape}: {rows} CSV rows matched");
    compared
}

#[test]
fn aiperfs_time_slices_from_its_records() {
    let n = compare_timeslices("timeslices-goodput", "time_to_first_token:30 request_latency:80", 1_000_000_000);
    // 638 values of the per-request metrics and scalars, 216 of the time-weighted ones.
    assert!(n >= 850, "{n} slice values compared");
}
