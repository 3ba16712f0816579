//! The summary files of a run and the console table: `profile_export_aiperf.json` ([`summary_json`]),
//! `profile_export_aiperf.csv` ([`summary_csv`]) and [`console_table`] (shown, and kept in `profile_export_console.txt`).
//!
//! Every exporter is a pure function of a [`RunSummary`], so the CLI only writes bytes and each
//! format is pinned by a snapshot test.

mod console;
mod csv;
mod json;

pub use console::{console_table, distribution_table};
pub use csv::summary_csv;
pub(crate) use json::dist_json;
pub use json::summary_json;

use crate::results::aggregate::{Report, UrlReport};
use crate::results::summary::RunSummary;

/// A summary file of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFormat {
    /// `profile_export_aiperf.json`.
    Json,
    /// `profile_export_aiperf.csv`.
    Csv,
    /// `profile_export_console.txt`: the console's table, as AIPerf keeps it.
    Console,
}

impl SummaryFormat {
    /// Every summary file, in the order they are written.
    pub const ALL: [SummaryFormat; 3] = [SummaryFormat::Json, SummaryFormat::Csv, SummaryFormat::Console];

    /// The file's name in the artifact folder (AIPerf's).
    pub fn file_name(self) -> &'static str {
        match self {
            SummaryFormat::Json => "profile_export_aiperf.json",
            SummaryFormat::Csv => "profile_export_aiperf.csv",
            SummaryFormat::Console => "profile_export_console.txt",
        }
    }

    /// The file's contents.
    pub fn serialize(self, s: &RunSummary) -> String {
        match self {
            SummaryFormat::Json => summary_json(s),
            SummaryFormat::Csv => summary_csv(s),
            SummaryFormat::Console => console_table(s),
        }
    }
}

/// A distribution's statistics in AIPerf's `STAT_KEYS` order (the CSV columns): avg, min, max,
/// sum, p1…p99, std.
pub(crate) fn stat_keys(d: &crate::stats::Distribution) -> Vec<(String, f64)> {
    let mut v = vec![
        ("avg".to_owned(), d.avg),
        ("min".to_owned(), d.min),
        ("max".to_owned(), d.max),
        ("sum".to_owned(), d.sum),
    ];
    v.extend(crate::stats::REPORT_PERCENTILES.iter().zip(d.percentiles).map(|(p, x)| (format!("p{p}"), x)));
    v.push(("std".to_owned(), d.std));
    v
}

/// Run-level scalars: (tag, header, unit, value): AIPerf's, each where AIPerf has it for the
/// same run, then ours.
pub(crate) fn scalars(r: &Report) -> Vec<(&'static str, &'static str, &'static str, f64)> {
    let mut v = vec![
        ("request_throughput", "Request Throughput", "requests/sec", r.request_throughput),
        ("request_count", "Request Count", "requests", r.request_count as f64),
        ("output_token_throughput", "Output Token Throughput", "tokens/sec", r.output_token_throughput),
        ("total_output_tokens", "Total Output Tokens", "tokens", r.total_output_tokens as f64),
        ("benchmark_duration", "Benchmark Duration", "sec", r.benchmark_duration_s),
        ("total_isl", "Total Input Sequence Length", "tokens", r.total_input_tokens as f64),
        ("total_osl", "Total Output Sequence Length", "tokens", r.total_output_tokens as f64),
    ];
    if r.error_request_count > 0 {
        v.push(("error_request_count", "Error Request Count", "requests", r.error_request_count as f64));
        v.push(("context_overflow_count", "Context Overflow Count", "requests", r.context_overflow_count as f64));
    }
    if let Some(n) = r.total_error_input_tokens {
        v.push(("total_error_isl", "Total Error Input Sequence Length", "tokens", n as f64));
    }
    if let Some(n) = r.osl_mismatch_count {
        v.push(("osl_mismatch_count", "OSL Mismatch Count", "requests", n as f64));
    }
    if let Some(n) = r.usage_discrepancy_count {
        v.push(("usage_discrepancy_count", "Usage Discrepancy Count", "requests", n as f64));
    }
    for (tag, header, n) in [
        ("total_usage_completion_tokens", "Total Usage Completion Tokens", r.usage_completion_tokens),
        ("total_usage_prompt_cache_read_tokens", "Total Usage Prompt Cache Read Tokens", r.usage_cache_read_tokens),
        ("total_usage_total_tokens", "Total Usage Total Tokens", r.usage_total_tokens),
        ("total_usage_prompt_tokens", "Total Usage Prompt Tokens", r.usage_prompt_tokens),
    ] {
        if let Some(n) = n {
            v.push((tag, header, "tokens", n as f64));
        }
    }
    let attempted = r.request_count + r.error_request_count;
    if attempted > 0 {
        let rate = r.error_request_count as f64 * 100.0 / attempted as f64;
        v.push(("request_error_rate", "Request Error Rate", "%", rate));
        v.push(("completed_request_count", "Completed Requests (Success + Error)", "requests", attempted as f64));
    }
    if let (Some(read), Some(prompt)) = (r.usage_cache_read_tokens, r.usage_prompt_tokens.filter(|&p| p > 0)) {
        let pct = read as f64 / prompt as f64 * 100.0;
        v.push(("overall_usage_prompt_cache_read_pct", "Overall Usage Prompt Cache Read %", "%", pct));
    }
    v.push(("input_token_throughput", "Input Token Throughput", "tokens/sec", r.input_token_throughput));
    v.push(("total_token_throughput", "Total Token Throughput", "tokens/sec", r.total_token_throughput));
    if let (Some(n), Some(g), Some(f)) = (r.good_request_count, r.goodput, r.good_request_fraction) {
        v.push(("good_request_count", "Good Request Count", "requests", n as f64));
        v.push(("goodput", "Goodput", "requests/sec", g));
        v.push(("good_request_fraction", "GoodRequestFraction", "ratio", f));
    }
    v.push(("run_duration", "Run Duration (all requests)", "sec", r.run_duration_s));
    if let Some(c) = r.cache_hit_rate {
        v.push(("cache_hit_rate", "Cache Hit Rate (server)", "ratio", c));
    }
    if let Some(c) = r.expected_cache_hit_rate {
        v.push(("expected_cache_hit_rate", "Cache Hit Rate (trace, theoretical)", "ratio", c));
    }
    v
}

/// A p99 of the anchored send lag above this (ms) flags a fixed-schedule replay as degraded
/// (AIPerf's `REPLAY_SCHED_DEGRADED_THRESHOLD_MS`).
pub const REPLAY_SCHED_DEGRADED_MS: f64 = 500.0;

/// AIPerf's `replay_sched_lag_p50/p90/p99` and `replay_sched_degraded`, for a fixed-schedule run
/// only (its `input_config`'s profiling phase): the send lateness of each request anchored at the
/// least late one (p − min, the percentiles linear as numpy's), in ms; degraded (1) when the p99
/// is over [`REPLAY_SCHED_DEGRADED_MS`]. Every request counts, a session's later turns too (AIPerf
/// leaves out the turns sent after a delay, which carry no time of their own in its schedule).
pub(crate) fn replay_sched_lag(s: &RunSummary) -> Vec<(&'static str, &'static str, &'static str, f64)> {
    let fixed = s
        .input_config
        .get("phases")
        .and_then(serde_json::Value::as_array)
        .and_then(|p| p.last())
        .and_then(|p| p.get("type"))
        .is_some_and(|t| t == "fixed_schedule");
    let Some(d) = s.report.get(crate::results::metrics::Metric::SendLateness).filter(|_| fixed) else {
        return Vec::new();
    };
    let lag = |p: f64| d.percentile(p).map_or(0.0, |v| (v - d.min).max(0.0));
    let p99 = lag(99.0);
    vec![
        ("replay_sched_lag_p50", "Replay Schedule Lag p50", "ms", lag(50.0)),
        ("replay_sched_lag_p90", "Replay Schedule Lag p90", "ms", lag(90.0)),
        ("replay_sched_lag_p99", "Replay Schedule Lag p99", "ms", p99),
        (
            "replay_sched_degraded",
            "Replay Schedule Degraded",
            "count",
            f64::from(u8::from(p99 > REPLAY_SCHED_DEGRADED_MS)),
        ),
    ]
}

fn cpu_per_request_us(s: &RunSummary, cpu: f64) -> f64 {
    let total = s.report.request_count + s.report.error_request_count;
    if total > 0 { cpu * 1e6 / total as f64 } else { 0.0 }
}

/// The URL of a per-URL entry (its index when the summary does not list it).
fn url_name(s: &RunSummary, u: &UrlReport) -> String {
    s.urls.get(u.index as usize).cloned().unwrap_or_else(|| format!("url #{}", u.index))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::replay::sharding::Sharding;
    use crate::results::aggregate::Aggregate;
    use crate::results::record::{RecordError, RequestRecord};
    use crate::server::kinds::ServerView;

    fn sample() -> RunSummary {
        let mut agg = Aggregate::default();
        for i in 0..4u64 {
            let rec = RequestRecord {
                scheduled_ns: i * 10_000_000,
                sent_ns: i * 10_000_000 + 50_000,
                chunk_ns: vec![i * 10_000_000 + 20_000_000, i * 10_000_000 + 30_000_000],
                end_ns: i * 10_000_000 + 31_000_000,
                streaming: true,
                input_tokens: Some(100),
                output_tokens: Some(2),
                ..Default::default()
            };
            agg.add(&rec, false, &[]);
        }
        let failed = RequestRecord {
            error: Some(RecordError { kind: "timeout".into(), message: "x".into() }),
            end_ns: 60_000_000,
            ..Default::default()
        };
        agg.add(&failed, false, &[]);
        RunSummary {
            report: agg.report(false),
            benchmark_id: "0123456789ab".into(),
            cli_command: "aiperf-cli profile -m m --api-key '<redacted>'".into(),
            incomplete_reason: None,
            input_config: json!({"models": {"items": [{"name": "m"}]}, "endpoint": {"api_key": "<redacted>"}}),
            cli_config: json!({"model": "m", "api_key": "<redacted>", "random_seed": 7}),
            was_cancelled: false,
            start_unix_ns: 1_700_000_000_123_456_000,
            end_unix_ns: 1_700_000_001_000_000_000,
            tokenizer: "test".into(),
            warmup: None,
            calibration: Some((10.0, 19.95)),
            client_cpu_s: Some(0.001),
            startup_ms: 12.0,
            ..RunSummary::default()
        }
    }

    /// Two URLs: three requests on the first, one success and one failure on the second.
    fn two_urls() -> RunSummary {
        let mut agg = Aggregate::default();
        for i in 0..5u64 {
            let rec = RequestRecord {
                scheduled_ns: i * 10_000_000,
                sent_ns: i * 10_000_000,
                chunk_ns: vec![i * 10_000_000 + (i + 1) * 1_000_000, i * 10_000_000 + 20_000_000],
                end_ns: i * 10_000_000 + 21_000_000,
                streaming: true,
                input_tokens: Some(10),
                output_tokens: Some(2),
                url_index: Some(if i % 2 == 0 { 0 } else { 1 }),
                error: (i == 3).then(|| RecordError { kind: "http_status".into(), message: "HTTP 500".into() }),
                ..Default::default()
            };
            agg.add(&rec, false, &[]);
        }
        RunSummary {
            urls: vec!["http://a.test:8000".into(), "https://<redacted>@b.test".into()],
            calibration: None,
            client_cpu_s: None,
            ..sample_with(agg)
        }
    }

    fn sample_with(agg: Aggregate) -> RunSummary {
        RunSummary { report: agg.report(false), ..sample() }
    }

    #[test]
    fn per_url_counts_and_latencies_in_every_export() {
        let s = two_urls();
        let table = console_table(&s);
        let json = summary_json(&s);
        let csv = summary_csv(&s);
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["per_url"][0]["request_count"], 3);
        assert_eq!(v["per_url"][1]["error_request_count"], 1);
        assert_eq!(v["per_url"][1]["url"], "https://<redacted>@b.test");
        insta::assert_snapshot!("per_url_console", table);
        insta::assert_snapshot!("per_url_json", v["per_url"].to_string());
        insta::assert_snapshot!("per_url_csv", csv.split("\nURL,").nth(1).unwrap());
        // One URL: no per-URL section anywhere.
        let one = sample();
        assert!(!console_table(&one).contains("Per URL") && !summary_json(&one).contains("per_url"));
        assert!(!summary_csv(&one).contains("\nURL,"));
    }

    #[test]
    fn a_shard_and_a_merge_say_so_in_the_json_and_the_table() {
        use crate::replay::sharding::{ClockOffset, MergedRun, ShardRun};
        let shard = ShardRun {
            index: 1,
            count: 3,
            start_unix_ns: 1_700_000_000_000_000_000,
            common_start: true,
            clock: Some(ClockOffset { offset_ms: -12.5, uncertainty_ms: 50.0, probes: 10 }),
        };
        let mut s = sample();
        s.sharding = Some(Sharding::Shard(shard.clone()));
        let v: Value = serde_json::from_str(&summary_json(&s)).unwrap();
        assert_eq!(v["sharding"]["shard"]["count"], 3);
        assert_eq!(v["sharding"]["shard"]["clock"]["offset_ms"], -12.5);
        assert!(
            console_table(&s)
                .contains("Shard 1/3 (common start 2023-11-14T22:13:20.000000Z); target clock -12.5 ms ± 50.0 ms")
        );
        s.sharding = Some(Sharding::Merged(MergedRun {
            count: 3,
            shards: vec![shard],
            records: vec![4],
            partial: true,
            problems: vec!["shard 0/3 is missing".into()],
        }));
        let v: Value = serde_json::from_str(&summary_json(&s)).unwrap();
        assert_eq!(v["sharding"]["merged"]["problems"][0], "shard 0/3 is missing");
        assert!(console_table(&s).contains("Merged 1 of 3 shard(s) (K = 1); PARTIAL"));
    }

    #[test]
    fn console_table_snapshot() {
        insta::assert_snapshot!(console_table(&sample()));
    }

    #[test]
    fn summary_json_snapshot() {
        insta::assert_snapshot!(summary_json(&sample()));
    }

    #[test]
    fn summary_csv_snapshot() {
        insta::assert_snapshot!(summary_csv(&sample()));
    }

    #[test]
    fn the_three_hit_rates_are_shown_side_by_side() {
        use crate::server::kinds::Sourced;
        let mut s = sample();
        s.report.expected_cache_hit_rate = Some(0.5);
        s.report.cache_hit_rate = Some(0.25);
        s.server = Some(ServerView {
            prefix_cache_hit_rate: Some(Sourced {
                value: 0.4,
                source: "vllm:prefix_cache_hits / vllm:prefix_cache_queries".into(),
            }),
            kv_cache_usage: Some(Sourced { value: (0.1, 0.3), source: "vllm:kv_cache_usage_perc".into() }),
            queue_depth_max: Some(Sourced { value: 3.0, source: "vllm:num_requests_waiting".into() }),
            running_max: None,
        });
        let table = console_table(&s);
        assert!(table.contains("Prefix-cache hit rate: trace (theoretical) 50.00% | server metrics 40.00% (vllm:prefix_cache_hits / vllm:prefix_cache_queries) | usage cached_tokens 25.00%"), "{table}");
        assert!(table.contains("Server: KV-cache usage avg 10.0%, max 30.0% (vllm:kv_cache_usage_perc); queue depth max 3 (vllm:num_requests_waiting)"), "{table}");
        let j: Value = serde_json::from_str(&summary_json(&s)).unwrap();
        let c = &j["prefix_cache_comparison"];
        assert_eq!(
            (c["trace_theoretical"].as_f64(), c["server_metrics"].as_f64(), c["usage_cached_tokens"].as_f64()),
            (Some(0.5), Some(0.4), Some(0.25))
        );
        assert_eq!(c["server_kv_cache_usage"]["max"], 0.3);
        assert_eq!(c["server_queue_depth"]["max"], 3.0);
    }

    #[test]
    fn a_fixed_schedule_run_has_aiperfs_anchored_send_lag() {
        let mut s = sample();
        assert!(!summary_json(&s).contains("replay_sched_lag_p50"));
        s.input_config = json!({"phases": [{"name": "profiling", "type": "fixed_schedule"}]});
        let v: Value = serde_json::from_str(&summary_json(&s)).unwrap();
        // Send lateness 0.05 ms on the four successful requests and 0 on the failed one.
        let late = s.report.get(crate::results::metrics::Metric::SendLateness).unwrap();
        let p50 = late.percentile(50.0).unwrap() - late.min;
        assert!((v["replay_sched_lag_p50"]["avg"].as_f64().unwrap() - p50).abs() < 1e-12, "{v}");
        assert_eq!(v["replay_sched_degraded"], json!({"unit": "count", "avg": 0.0}));
        assert!(summary_csv(&s).contains("\r\nReplay Schedule Degraded,0.00\r\n"));
    }

    #[test]
    fn a_cancelled_run_says_so_and_formats_name_their_files() {
        let mut s = sample();
        s.was_cancelled = true;
        assert!(console_table(&s).contains("(run cancelled)"));
        assert!(summary_json(&s).contains("\"was_cancelled\": true"));
        let names: Vec<&str> = SummaryFormat::ALL.iter().map(|f| f.file_name()).collect();
        assert_eq!(names, ["profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export_console.txt"]);
    }
}
