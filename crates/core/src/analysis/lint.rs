//! Lint: rows that parse but will not replay the way the trace's author meant.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::input::AnalysisInput;

/// How many offending line numbers each finding keeps.
const EXAMPLES: usize = 10;

/// One kind of problem: how many rows have it and the first few line numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LintFinding {
    pub count: u64,
    pub first_lines: Vec<u64>,
}

impl LintFinding {
    fn add(&mut self, line: u32) {
        self.count += 1;
        if self.first_lines.len() < EXAMPLES {
            self.first_lines.push(line.into());
        }
    }
}

/// Everything the lint checks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lint {
    /// Rows with n ids whose input length is not in `((n-1)·bs, n·bs]`.
    pub block_length_mismatch: LintFinding,
    /// Rows with `input_length < 1`: nothing to send.
    pub non_positive_input_length: LintFinding,
    /// Rows whose timestamp is earlier than the previous timed row's.
    pub non_monotonic_timestamps: LintFinding,
    /// Rows repeating an earlier turn of the same session (same `session_id` and `timestamp`).
    pub duplicate_session_turns: LintFinding,
    /// Distinct ids that appear at two or more positions (a block id should name one position).
    pub ids_at_several_positions: u64,
    /// The timestamps look like seconds, not milliseconds (see [`SecondsLike`]).
    #[serde(default)]
    pub timestamps_look_like_seconds: Option<SecondsLike>,
}

impl Lint {
    /// Total number of findings.
    pub fn total(&self) -> u64 {
        self.block_length_mismatch.count
            + self.non_positive_input_length.count
            + self.non_monotonic_timestamps.count
            + self.duplicate_session_turns.count
            + self.ids_at_several_positions
            + u64::from(self.timestamps_look_like_seconds.is_some())
    }
}

// ---- Seconds-vs-milliseconds check ----

/// Evidence that a trace's `timestamp` values are seconds (Bailian/Qwen, BurstGPT style) although
/// Mooncake wants milliseconds: replayed as is, such a trace runs 1,000× too fast.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecondsLike {
    /// Rows with a timestamp.
    pub timed_rows: u64,
    /// Of those, rows whose timestamp has a fractional part.
    pub fractional: u64,
    /// Last minus first timestamp, in the file's unit.
    pub span: f64,
    /// Requests per second the trace implies if the values are milliseconds.
    pub implied_rate_per_s: f64,
}

impl SecondsLike {
    /// What to do about it.
    pub const FIX: &'static str = "multiply the timestamps by 1000, or convert the source file with \
        `aiperf-cli convert-trace --trace-format bailian` (or the format it came from)";
}

impl std::fmt::Display for SecondsLike {
    /// The evidence, then the fix: `412 of 500 timestamps are fractional; 500 rows within 165 ms
    /// would be 3,030 requests/s sustained; fix: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut evidence = Vec::new();
        if self.fractional > 0 {
            evidence.push(format!("{} of {} timestamps are fractional", self.fractional, self.timed_rows));
        }
        if self.implied_rate_per_s > SECONDS_MAX_PLAUSIBLE_RATE {
            evidence.push(format!(
                "{} rows within {} ms would be {} requests/s sustained",
                self.timed_rows,
                self.span,
                super::text::group_thousands(self.implied_rate_per_s, 0)
            ));
        }
        write!(f, "{}; fix: {}", evidence.join("; "), Self::FIX)
    }
}

/// Rows needed before a short span alone is evidence.
const SECONDS_MIN_ROWS: u64 = 100;
/// Above this average rate (requests per second, if the values were ms) a span is implausible.
const SECONDS_MAX_PLAUSIBLE_RATE: f64 = 1000.0;

/// Flags fractional values on most rows, or at least [`SECONDS_MIN_ROWS`] rows whose span, read as
/// milliseconds, sustains more than [`SECONDS_MAX_PLAUSIBLE_RATE`] requests per second. A warning:
/// the trace is still read and replayed as given.
fn seconds_like(input: &AnalysisInput) -> Option<SecondsLike> {
    let (mut timed, mut fractional) = (0u64, 0u64);
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for row in input.rows() {
        let Some(t) = row.timestamp() else { continue };
        timed += 1;
        if t.fract() != 0.0 {
            fractional += 1;
        }
        lo = lo.min(t);
        hi = hi.max(t);
    }
    if timed < 2 {
        return None;
    }
    // Finite whatever the values (±1e308 spans overflow): the analysis must serialize to JSON.
    let span = (hi - lo).min(f64::MAX);
    let implied_rate_per_s = if span > 0.0 { (timed as f64 * 1000.0 / span).min(f64::MAX) } else { f64::MAX };
    let mostly_fractional = fractional * 2 > timed;
    let too_dense = timed >= SECONDS_MIN_ROWS && implied_rate_per_s > SECONDS_MAX_PLAUSIBLE_RATE;
    (mostly_fractional || too_dense).then_some(SecondsLike { timed_rows: timed, fractional, span, implied_rate_per_s })
}

pub(super) fn lint(input: &AnalysisInput, block_size: u32, ids_at_several_positions: u64) -> Lint {
    // In i128: n·bs reaches 2^64 for the longest rows and largest blocks.
    let bs = i128::from(block_size);
    let mut lint =
        Lint { ids_at_several_positions, timestamps_look_like_seconds: seconds_like(input), ..Lint::default() };
    let mut prev_ts: Option<f64> = None;
    let mut turns: HashSet<(u32, u64)> = HashSet::new();
    for (row, ids) in input.iter() {
        if let Some(i) = row.input_length() {
            if i < 1 {
                lint.non_positive_input_length.add(row.line);
            }
            let (n, i) = (ids.len() as i128, i128::from(i));
            if n > 0 && !((n - 1) * bs < i && i <= n * bs) {
                lint.block_length_mismatch.add(row.line);
            }
        }
        if let Some(t) = row.timestamp() {
            if prev_ts.is_some_and(|p| t < p) {
                lint.non_monotonic_timestamps.add(row.line);
            }
            prev_ts = Some(t);
            if let Some(s) = row.session()
                && !turns.insert((s, t.to_bits()))
            {
                lint.duplicate_session_turns.add(row.line);
            }
        }
    }
    lint
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ParseOptions, Trace, parse_str};

    #[test]
    fn finds_each_problem_with_its_line() {
        let text = "{\"timestamp\":5,\"input_length\":600,\"hash_ids\":[1,2]}\n\
                    {\"timestamp\":4,\"input_length\":1100,\"hash_ids\":[1,2]}\n\
                    {\"timestamp\":6,\"input_length\":0,\"session_id\":\"s\"}\n\
                    {\"timestamp\":6,\"input_length\":3,\"session_id\":\"s\",\"hash_ids\":[2]}\n";
        let t = parse_str(text, ParseOptions::default()).unwrap().trace;
        let l = lint(&AnalysisInput::of(&t), 512, 1);
        assert_eq!(l.block_length_mismatch.first_lines, [2]);
        assert_eq!(l.non_monotonic_timestamps.first_lines, [2]);
        assert_eq!(l.non_positive_input_length.first_lines, [3]);
        assert_eq!(l.duplicate_session_turns.first_lines, [4]);
        assert_eq!(l.total(), 5);
        assert_eq!(l.timestamps_look_like_seconds, None);
    }

    fn timed(stamps: impl Iterator<Item = String>) -> AnalysisInput {
        let text: String = stamps.map(|t| format!("{{\"timestamp\":{t},\"input_length\":5}}\n")).collect();
        let trace: Trace = parse_str(&text, ParseOptions::default()).unwrap().trace;
        AnalysisInput::of(&trace)
    }

    #[test]
    fn fractional_timestamps_look_like_seconds() {
        let t = timed(["0.0", "0.25", "61.114", "61.5"].into_iter().map(String::from));
        let s = seconds_like(&t).unwrap();
        assert_eq!((s.timed_rows, s.fractional, s.span), (4, 3, 61.5));
    }

    #[test]
    fn a_dense_span_over_many_rows_looks_like_seconds() {
        // 2,000 rows within 1,000 "ms": 2,000 requests per second if these were milliseconds.
        let s = seconds_like(&timed((0..2000).map(|i| (i / 2).to_string()))).unwrap();
        assert_eq!(s.fractional, 0);
        assert_eq!(s.span, 999.0);
        assert!((s.implied_rate_per_s - 2002.0).abs() < 0.01);
        // The same rows one ms apart each are a plausible 1,000 rows/s.
        assert_eq!(seconds_like(&timed((0..2000).map(|i| (i * 2).to_string()))), None);
        // Few rows prove nothing.
        assert_eq!(seconds_like(&timed((0..10).map(|i| (i / 2).to_string()))), None);
    }

    #[test]
    fn a_real_trace_in_seconds_is_flagged_and_in_milliseconds_is_not() {
        let text = include_str!("../../../../tests/fixtures/traces/conversation_head500.jsonl");
        let ms = parse_str(text, ParseOptions::default()).unwrap().trace;
        assert_eq!(seconds_like(&AnalysisInput::of(&ms)), None);
        // The same 500 rows with every timestamp divided by 1000 (165 s become 165 "ms").
        let seconds: String = text
            .lines()
            .map(|line| {
                let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
                let t = v["timestamp"].as_f64().unwrap() / 1000.0;
                v["timestamp"] = serde_json::json!(t);
                format!("{v}\n")
            })
            .collect();
        let s = seconds_like(&AnalysisInput::of(&parse_str(&seconds, ParseOptions::default()).unwrap().trace)).unwrap();
        assert_eq!((s.timed_rows, s.span), (500, 165.0));
        assert!(s.fractional * 2 < s.timed_rows, "caught by its rate, not its fractions");
        assert!(s.implied_rate_per_s > 3000.0);
        // 100 rows are enough evidence; 99 are not.
        assert!(seconds_like(&timed((0..100).map(|i| (i / 4).to_string()))).is_some());
        assert_eq!(seconds_like(&timed((0..99).map(|i| (i / 4).to_string()))), None);
    }
}
