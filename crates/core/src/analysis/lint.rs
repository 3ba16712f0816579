//! Lint: rows that parse but will not replay the way the trace's author meant.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::trace::Trace;

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
}

impl Lint {
    /// Total number of findings.
    pub fn total(&self) -> u64 {
        self.block_length_mismatch.count
            + self.non_positive_input_length.count
            + self.non_monotonic_timestamps.count
            + self.duplicate_session_turns.count
            + self.ids_at_several_positions
    }
}

pub(super) fn lint(trace: &Trace, block_size: u32, ids_at_several_positions: u64) -> Lint {
    // In i128: n·bs reaches 2^64 for the longest rows and largest blocks.
    let bs = i128::from(block_size);
    let mut lint = Lint { ids_at_several_positions, ..Lint::default() };
    let mut prev_ts: Option<f64> = None;
    let mut turns: HashSet<(&str, u64)> = HashSet::new();
    for (row, ids) in trace.iter() {
        if let Some(i) = row.input_length() {
            if i < 1 {
                lint.non_positive_input_length.add(row.line);
            }
            let (n, i) = (ids.len() as i128, i128::from(i));
            if n > 0 && !((n - 1) * bs < i && i <= n * bs) {
                lint.block_length_mismatch.add(row.line);
            }
        }
        if let Some(t) = row.timestamp.map(|t| t.as_f64()) {
            if prev_ts.is_some_and(|p| t < p) {
                lint.non_monotonic_timestamps.add(row.line);
            }
            prev_ts = Some(t);
            if let Some(s) = &row.session_id
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
    use crate::trace::{ParseOptions, parse_str};

    #[test]
    fn finds_each_problem_with_its_line() {
        let text = "{\"timestamp\":5,\"input_length\":600,\"hash_ids\":[1,2]}\n\
                    {\"timestamp\":4,\"input_length\":1100,\"hash_ids\":[1,2]}\n\
                    {\"timestamp\":6,\"input_length\":0,\"session_id\":\"s\"}\n\
                    {\"timestamp\":6,\"input_length\":3,\"session_id\":\"s\",\"hash_ids\":[2]}\n";
        let t = parse_str(text, ParseOptions::default()).unwrap().trace;
        let l = lint(&t, 512, 1);
        assert_eq!(l.block_length_mismatch.first_lines, [2]);
        assert_eq!(l.non_monotonic_timestamps.first_lines, [2]);
        assert_eq!(l.non_positive_input_length.first_lines, [3]);
        assert_eq!(l.duplicate_session_turns.first_lines, [4]);
        assert_eq!(l.total(), 5);
    }
}
