//! The summary files of a run and the console table: `profile_export_aiperf.json` ([`summary_json`]),
//! `profile_export_aiperf.csv` ([`summary_csv`]) and [`console_table`] (shown, and kept in `profile_export_console.txt`).
//!
//! Every exporter is a pure function of a [`RunSummary`], so the CLI only writes bytes and each
//! format is pinned by a snapshot test.

mod console;
mod csv;
mod fields;
mod json;

pub use console::{console_table, distribution_table};
pub use csv::summary_csv;
pub use fields::REPLAY_SCHED_DEGRADED_MS;
pub(crate) use fields::{scalars, stat_keys};
pub(crate) use json::dist_json;
pub use json::summary_json;

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
