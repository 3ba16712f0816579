//! A finished run read back from its exports: `profile_export.jsonl` (one [`RequestRecord`] per
//! line) and, when present, `profile_export_aiperf.json` (its `input_config` says how tokens were
//! counted and which goodput SLOs applied).
//!
//! The summary is recomputed with [`Aggregate`] exactly as the CLI's records stage computed it
//! (same records, same order, same settings), so its numbers are the CLI's to the digit. Each
//! record is kept as a compact [`Point`] (about 80 bytes) for the charts ([`charts`]), the
//! comparison of runs ([`compare`]) and the self-contained HTML ([`html`]); the aggregate keeps the
//! metric values the percentiles need, as the CLI does.
//!
//! `loader` reads the records as their bytes arrive, `summary` the summary file's settings and
//! GPU data; `mod.rs` holds the run they make ([`Run`], one [`Point`] a request).

pub mod charts;
pub mod compare;
pub mod curve;
pub mod html;
pub mod server;
pub mod sessions;
pub mod svg;

mod error;
mod loader;
mod run;
mod summary;

pub use error::RunError;
pub use loader::{CurvesApart, LoadedPart, PendingRun, RecordBatch, RecordReader, RestOfFile, RunLoader};
pub use run::{CONFIG_FILE, MAX_LINE_BYTES, MAX_RUNS, NONE, Point, Run, default_label};
pub use summary::{RunSettings, gpu_energy_of_summary, gpu_telemetry_of_summary};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::results::aggregate::Aggregate;
    use crate::results::line::record_line;
    use crate::results::metrics::{Metric, Slo, parse_goodput};
    use crate::results::record::RequestRecord;
    use crate::results::record::{RecordError, ServerUsage};
    use proptest::prelude::*;
    use serde_json::Value;

    /// A plausible record: `i`-th request, `fail` makes it a timeout.
    pub fn record(i: u64, fail: bool) -> RequestRecord {
        let sent = 1_000_000 + i * 7_000_000;
        let first = sent + 20_000_000 + (i % 13) * 1_000_000;
        let chunks: Vec<u64> = (0..4).map(|k| first + k * 3_000_000).collect();
        RequestRecord {
            session_id: Some(format!("s{}", i % 5)),
            session_num: (i % 5) as u32,
            turn: (i / 5) as u32,
            trace_line: i as u32 + 1,
            scheduled_ns: sent - (i % 3) * 100_000,
            sent_ns: sent,
            end_ns: chunks[3] + 1000,
            chunk_ns: chunks,
            streaming: true,
            input_tokens: Some(100 + i * 10),
            output_tokens: Some(4),
            usage: ServerUsage {
                prompt_tokens: Some(100 + i * 10),
                completion_tokens: Some(4),
                cached_tokens: Some(i * 3),
                first_chunk_tokens: None,
            },
            expected_cached_tokens: Some(i * 4),
            error: fail.then(|| RecordError { kind: "timeout".into(), message: "too slow".into() }),
            ..Default::default()
        }
    }

    pub fn jsonl(records: &[RequestRecord], server: bool, slos: &[Slo]) -> (Vec<u8>, Aggregate) {
        let mut agg = Aggregate::default();
        let mut out = Vec::new();
        for r in records {
            let m = agg.add(r, server, slos);
            out.extend(record_line(r, m.as_ref(), 1_795_627_514_000_000_000));
        }
        (out, agg)
    }

    pub fn run_of(n: u64, label: &str) -> Run {
        let records: Vec<_> = (0..n).map(|i| record(i, i % 9 == 8)).collect();
        let (text, _) = jsonl(&records, true, &[]);
        Run::from_jsonl(label, "profile_export.jsonl", &text, RunSettings::default()).unwrap()
    }

    #[test]
    fn recomputed_report_is_the_records_stages() {
        let records: Vec<_> = (0..50).map(|i| record(i, i % 7 == 3)).collect();
        let slos = parse_goodput("time_to_first_token:30").unwrap();
        let (text, agg) = jsonl(&records, false, &slos);
        let cfg = r#"{"input_config": {"goodput": "time_to_first_token:30", "client_token_count": true}}"#;
        let settings = RunSettings::from_summary_json("x.json", cfg).unwrap();
        assert!(!settings.server_token_count);
        let run = Run::from_jsonl("a", "profile_export.jsonl", &text, settings).unwrap();
        assert_eq!(run.report, agg.report(true));
        assert_eq!(run.points.len(), 50);
        assert_eq!(run.failures.len(), 7);
        assert_eq!(run.sessions.len(), 5);
        assert!(run.describe(3).unwrap().contains("error: timeout: too slow"));
        assert!(run.describe(0).unwrap().contains("trace line: 1"));
        assert_eq!(run.describe(50), None);
    }

    /// The runs AIPerf 0.13.0 wrote (`tests/fixtures/aiperf-0.13.0-runs`, made by
    /// `scripts/make-aiperf-fixtures.sh`).
    pub fn aiperf_run(name: &str) -> (Run, Value) {
        let dir = format!("{}/../../tests/fixtures/aiperf-0.13.0-runs/{name}", env!("CARGO_MANIFEST_DIR"));
        let summary = std::fs::read_to_string(format!("{dir}/{CONFIG_FILE}")).unwrap();
        let records = std::fs::read(format!("{dir}/profile_export.jsonl")).unwrap();
        let settings = RunSettings::from_summary_json(CONFIG_FILE, &summary).unwrap();
        (
            Run::from_jsonl(name, "profile_export.jsonl", &records, settings).unwrap(),
            serde_json::from_str(&summary).unwrap(),
        )
    }

    /// Equal to 6 significant digits.
    fn close(ours: f64, theirs: f64) -> bool {
        (ours - theirs).abs() <= 5e-6 * theirs.abs().max(1e-9)
    }

    /// AIPerf's runs open, and the core recomputes AIPerf's own numbers from its records:
    /// requests, and every statistic of the latencies, to 6 significant digits.
    #[test]
    fn aiperfs_runs_give_aiperfs_numbers() {
        let shapes = [
            "sessions",
            "fixed-schedule-streaming",
            "completions-streaming",
            "non-streaming",
            "errors",
            "cancelled",
            "raw-multi-turn",
            "server-metrics",
            "gpu-telemetry",
            "timeslices-goodput",
        ];
        for name in shapes {
            let (run, theirs) = aiperf_run(name);
            let count = theirs["request_count"]["avg"].as_f64().unwrap_or(0.0);
            assert_eq!(run.report.request_count as f64, count, "{name}: request_count");
            let errors = theirs["error_request_count"]["avg"].as_f64().unwrap_or(0.0);
            assert_eq!(run.report.error_request_count as f64, errors, "{name}: error_request_count");
            // The first eight of the report: the latencies, the per-user rate and both lengths.
            for &metric in &Metric::ALL[..8] {
                let want = &theirs[metric.tag()];
                let Some(d) = run.report.get(metric) else {
                    assert!(want.is_null(), "{name}: {} is in AIPerf's summary only", metric.tag());
                    continue;
                };
                assert!(!want.is_null(), "{name}: {} is in ours only", metric.tag());
                let stats = [("avg", d.avg), ("min", d.min), ("max", d.max), ("std", d.std)]
                    .into_iter()
                    .chain([("p50", 50.0), ("p90", 90.0), ("p99", 99.0)].map(|(k, p)| (k, d.percentile(p).unwrap())));
                for (stat, ours) in stats {
                    let t = want[stat].as_f64().unwrap_or_else(|| panic!("{name}: no {stat} for {}", metric.tag()));
                    assert!(close(ours, t), "{name}: {}.{stat}: ours {ours}, AIPerf {t}", metric.tag());
                }
            }
        }
    }

    /// AIPerf's time-weighted metrics of its own runs, weighed over its phase window (the
    /// summary's `start_time`/`end_time`): to 1e-3 (AIPerf's float64 times; the window known to
    /// the microsecond), the `min` and `max` of a decode throughput left out: AIPerf's float64
    /// times hold slivers where a request's decode rate is 0 while it counts as decoding (0 is
    /// its `min` of `active_decode_*`), and the other way round (see the golden test's
    /// `SLIVER_SENSITIVE`).
    #[test]
    fn aiperfs_runs_weigh_its_time_weighted_metrics_over_its_phase() {
        let mut compared = 0;
        for name in ["sessions", "fixed-schedule-streaming", "completions-streaming", "timeslices-goodput"] {
            let (run, theirs) = aiperf_run(name);
            assert!(run.settings.phase_window_ns.is_some(), "{name}");
            for (metric, t) in &run.report.timeline {
                let want = &theirs[metric.tag()];
                for (stat, ours) in t.stats() {
                    if matches!(stat, "min" | "max") && metric.tag().contains("decode_throughput") {
                        continue;
                    }
                    let w = want[stat].as_f64().unwrap_or_else(|| panic!("{name}: no {stat} for {}", metric.tag()));
                    assert!(
                        (ours - w).abs() <= 1e-3 * w.abs() + 1e-9,
                        "{name}: {}.{stat}: ours {ours}, AIPerf {w}",
                        metric.tag()
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared >= 4 * 100, "{compared}");
        // A window that does not hold the records (a summary in another time zone) is not used.
        let (run, _) = aiperf_run("sessions");
        let (a, b) = run.settings.phase_window_ns.unwrap();
        let mut shifted = run.settings.clone();
        shifted.phase_window_ns = Some((a + 3_600_000_000_000, b + 3_600_000_000_000));
        let dir = format!("{}/../../tests/fixtures/aiperf-0.13.0-runs/sessions", env!("CARGO_MANIFEST_DIR"));
        let records = std::fs::read(format!("{dir}/profile_export.jsonl")).unwrap();
        let mut none = run.settings.clone();
        none.phase_window_ns = None;
        let off = Run::from_jsonl("s", "profile_export.jsonl", &records, shifted).unwrap();
        let without = Run::from_jsonl("s", "profile_export.jsonl", &records, none).unwrap();
        assert_eq!(off.report.timeline, without.report.timeline);
        assert_ne!(run.report.timeline, without.report.timeline);
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let (mut text, _) = jsonl(&[record(0, false)], true, &[]);
        text.extend_from_slice(b"{\"metadata\": {\"session_num\": 1}}\n");
        let e = Run::from_jsonl("a", "p.jsonl", &text, RunSettings::default()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("p.jsonl:2: "), "{msg}");
        assert!(matches!(e, RunError::Line { line: 2, .. }));
        let e = Run::from_jsonl("a", "p.jsonl", b"not json\n", RunSettings::default()).unwrap_err();
        assert!(e.to_string().starts_with("p.jsonl:1: metadata:"), "{e}");
        let e = Run::from_jsonl("a", "p.jsonl", b"\n\n", RunSettings::default()).unwrap_err();
        assert_eq!(e, RunError::Empty { file: "p.jsonl".into() });
        let e = RunSettings::from_summary_json("c.json", r#"{"input_config": {"goodput": "ttft:1"}}"#).unwrap_err();
        assert!(e.to_string().contains("c.json: input_config.goodput"), "{e}");
        assert!(RunSettings::from_summary_json("c.json", "[]").is_err());
    }

    #[test]
    fn labels_default_to_the_folder() {
        assert_eq!(default_label("artifacts/run-a/profile_export.jsonl"), "run-a");
        assert_eq!(default_label("profile_export.jsonl"), "profile_export.jsonl");
        assert_eq!(default_label("runs/b/"), "b");
    }

    proptest! {
        /// However the bytes are split into pushes, the run is the same.
        #[test]
        fn chunking_does_not_matter(n in 1u64..40, cuts in proptest::collection::vec(0usize..4000, 0..8)) {
            let records: Vec<_> = (0..n).map(|i| record(i, i % 4 == 1)).collect();
            let (text, agg) = jsonl(&records, true, &[]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (text.len() + 1)).collect();
            cuts.sort_unstable();
            let mut l = RunLoader::new("f", RunSettings::default());
            let mut at = 0;
            for c in cuts.into_iter().chain([text.len()]) {
                l.push(&text[at..c]).unwrap();
                at = c;
            }
            let run = l.finish("x").unwrap();
            prop_assert_eq!(run.report, agg.report(false));
            prop_assert_eq!(run.points.len() as u64, n);
        }

        /// The groups of curves computed apart, from the timeline as it crosses to another
        /// worker, give the run finished in one place, and its section drawn meanwhile is the
        /// whole run's; figures of another shape are computed again where the run finishes.
        #[test]
        fn curves_computed_apart_give_the_same_run(
            n in 1u64..40,
            apart in proptest::sample::subsequence((0..crate::results::timeline::CURVE_GROUPS).collect::<Vec<_>>(), 0..=4),
            misshaped in any::<bool>(),
        ) {
            let records: Vec<_> = (0..n).map(|i| record(i, i % 4 == 1)).collect();
            let (text, _) = jsonl(&records, true, &[]);
            let whole = Run::from_jsonl("x", "f", &text, RunSettings::default()).unwrap();
            let mut l = RunLoader::new("f", RunSettings::default());
            l.push(&text).unwrap();
            let bytes = bincode::serialize(&l.curves_apart(&apart).unwrap()).unwrap();
            let request: CurvesApart<'static> = bincode::deserialize(&bytes).unwrap();
            let given = if misshaped { Vec::new() } else { request.compute() };
            let pending = l.finish_apart("x", &crate::fork::InTurn, &apart).unwrap();
            // The section but its summary table is drawn before the curves are in.
            let drawn = html::RunSection::of(pending.run(), 0);
            let run = pending.complete(Some(given));
            prop_assert_eq!(&run.report, &whole.report);
            prop_assert_eq!(run.report.timeline.len(), 14);
            prop_assert_eq!(drawn.with_summary(&run.report), html::run_section(&whole, 0));
        }
    }
}
