//! Agentic-code sessions: AIPerf 0.13.0's `synthesize agentic-code` generator, seeded and pure.
//!
//! - [`config`]: its configuration (the keys of AIPerf's `default.json`, or a previous run's
//!   `manifest.json`), checked, unknown keys refused by name;
//! - [`sessions`]: the state machine drawing each session's turns (lognormal initial context,
//!   new tokens and generation lengths, mixture delays, context growth, resets, restarts);
//! - [`to_trace`]: the sessions as a Mooncake trace, written as AIPerf writes its
//!   `dataset.jsonl`: the first turn of a session carries `timestamp`, `group_id` and its whole
//!   layered prefix (global system prompt, group prefix, session context), later turns only their
//!   new blocks, an incremental `input_length` and their `delay`;
//! - [`report`]: `manifest.json`, `quality.json` and `comparison.txt`.
//!
//! Numbers are drawn from the core's [`PyRandom`](crate::rng::PyRandom), so the same
//! seed gives the same bytes on every platform (but not AIPerf's numpy draws: the two agree in
//! distribution, not sample for sample).

pub mod config;
pub mod report;
pub mod sessions;

pub use config::{AgenticConfig, ConfigError};
pub use report::{Quality, comparison_text, manifest_json, quality, quality_json, session_minutes};
pub use sessions::{EndReason, GenerateError, Session, Sessions, Turn, generate};

use serde_json::Value;

use crate::trace::{Input, Number, Row, Trace};
use config::{MAX_GROUP_BLOCKS, MAX_GROUPS, MAX_SESSION_BLOCKS};

/// Hash ids of a session's first turn: layer 1 (ids from 0), its group's layer 1.5 and its own
/// session blocks, as many as `input_length` needs.
pub fn first_turn_ids(cfg: &AgenticConfig, s: &Session, input_length: u64, out: &mut Vec<u64>) {
    let bs = cfg.block_size;
    let l1 = cfg.cache.layer1_tokens.div_ceil(bs);
    let l15 = cfg.cache.layer1_5_tokens.div_ceil(bs);
    let total = input_length.div_ceil(bs);
    let l1_used = l1.min(total);
    out.extend(0..l1_used);
    let l15_used = l15.min(total - l1_used);
    let group_base = l1 + s.group * MAX_GROUP_BLOCKS;
    out.extend(group_base..group_base + l15_used);
    let own = total - l1_used - l15_used;
    let base = l1 + MAX_GROUPS * MAX_GROUP_BLOCKS + s.index * MAX_SESSION_BLOCKS;
    out.extend(base..base + own);
}

/// `round(x, 1)`.
fn tenth(x: f64) -> f64 {
    (x * 10.0).round_ties_even() / 10.0
}

/// The sessions as Mooncake rows in AIPerf's `dataset.jsonl` layout: later turns get fresh ids
/// from one counter over the dataset, past every id used before.
pub fn to_trace(cfg: &AgenticConfig, sessions: &Sessions) -> Trace {
    let ids_guess = sessions.turns.len() * 8 + sessions.sessions.len() * 128;
    let mut trace = Trace::with_capacity(sessions.turns.len(), ids_guess);
    let mut next_id = 0u64;
    let mut ids = Vec::new();
    for s in &sessions.sessions {
        let sid: Box<str> = s.id.as_str().into();
        for (i, t) in sessions.turns_of(s).iter().enumerate() {
            ids.clear();
            let mut row = Row::new(Input::Length(t.new_tokens as i64));
            row.output_length = Some(t.output_length);
            row.session_id = Some(sid.clone());
            if i == 0 {
                first_turn_ids(cfg, s, t.new_tokens, &mut ids);
                if let Some(&last) = ids.last() {
                    next_id = next_id.max(last + 1);
                }
                row.timestamp = Some(Number::Float(0.0));
                let rare = row.rare_mut();
                rare.unknown.push(("group_id".to_owned(), Value::from(s.group)));
                if s.continuation {
                    rare.unknown.push(("is_restart".to_owned(), Value::Bool(true)));
                }
            } else {
                let n = t.new_tokens.div_ceil(cfg.block_size);
                ids.extend(next_id..next_id + n);
                next_id += n;
                row.delay = Some(Number::Float(tenth(t.delay_ms)));
            }
            trace.push(row, ids.iter().copied());
        }
    }
    trace
}

/// Where the fresh-id counter of [`to_trace`] stands when each session's rows begin, so that
/// [`write_dataset_rows`] can write any run of sessions on its own.
pub fn dataset_id_starts(cfg: &AgenticConfig, sessions: &Sessions) -> Vec<u64> {
    let mut starts = Vec::with_capacity(sessions.sessions.len());
    let mut next_id = 0u64;
    let mut ids = Vec::new();
    for s in &sessions.sessions {
        starts.push(next_id);
        for (i, t) in sessions.turns_of(s).iter().enumerate() {
            if i == 0 {
                ids.clear();
                first_turn_ids(cfg, s, t.new_tokens, &mut ids);
                if let Some(&last) = ids.last() {
                    next_id = next_id.max(last + 1);
                }
            } else {
                next_id += t.new_tokens.div_ceil(cfg.block_size);
            }
        }
    }
    starts
}

/// Appends the JSONL lines of the sessions at positions `range`, byte for byte as
/// [`write_trace`](crate::trace::write_trace) writes the rows [`to_trace`] makes of them, without
/// building those rows; `id_starts` is [`dataset_id_starts`].
pub fn write_dataset_rows(
    cfg: &AgenticConfig,
    sessions: &Sessions,
    id_starts: &[u64],
    range: std::ops::Range<usize>,
    out: &mut String,
) {
    use crate::trace::{write_int, write_number, write_str};
    let mut ids = Vec::new();
    for (s, &start) in sessions.sessions[range.clone()].iter().zip(&id_starts[range]) {
        let mut next_id = start;
        for (i, t) in sessions.turns_of(s).iter().enumerate() {
            ids.clear();
            if i == 0 {
                first_turn_ids(cfg, s, t.new_tokens, &mut ids);
                if let Some(&last) = ids.last() {
                    next_id = next_id.max(last + 1);
                }
                out.push_str("{\"timestamp\":");
                write_number(out, Number::Float(0.0));
                out.push_str(",\"session_id\":");
                write_str(out, &s.id);
            } else {
                let n = t.new_tokens.div_ceil(cfg.block_size);
                ids.extend(next_id..next_id + n);
                next_id += n;
                out.push_str("{\"session_id\":");
                write_str(out, &s.id);
                out.push_str(",\"delay\":");
                write_number(out, Number::Float(tenth(t.delay_ms)));
            }
            out.push_str(",\"input_length\":");
            write_int(out, t.new_tokens as i64);
            out.push_str(",\"output_length\":");
            write_int(out, t.output_length);
            if !ids.is_empty() {
                out.push_str(",\"hash_ids\":[");
                for (k, &id) in ids.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    write_int(out, id);
                }
                out.push(']');
            }
            if i == 0 {
                out.push_str(",\"group_id\":");
                write_int(out, s.group);
                if s.continuation {
                    out.push_str(",\"is_restart\":true");
                }
            }
            out.push_str("}\n");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::trace::write_trace;

    #[test]
    fn rows_carry_the_layered_prefix_then_only_new_blocks() {
        let cfg = AgenticConfig::default();
        let s = generate(&cfg, 20, 5).unwrap();
        let trace = to_trace(&cfg, &s);
        assert_eq!(trace.len(), s.turns.len());
        let (first, ids) = trace.iter().next().unwrap();
        let n = first.input_length().unwrap() as u64;
        assert_eq!(ids.len() as u64, n.div_ceil(512));
        assert_eq!(&ids[..63], &(0..63).collect::<Vec<_>>()[..]);
        assert_eq!(ids[63], 63 + s.sessions[0].group * 200);
        assert_eq!(ids[103], 63 + 200_000);
        for (row, ids) in trace.iter() {
            let n = row.input_length().unwrap() as u64;
            assert_eq!(ids.len() as u64, n.div_ceil(512), "every row's ids cover its input");
        }
        let text = write_trace(&trace);
        let line = text.lines().next().unwrap();
        assert!(line.starts_with(r#"{"timestamp":0.0,"session_id":"sess-"#), "{line}");
        assert!(line.ends_with(&format!(r#"],"group_id":{}}}"#, s.sessions[0].group)), "{line}");
        let second = text.lines().nth(1).unwrap();
        assert!(second.contains(r#","delay":"#) && !second.contains("group_id"), "{second}");
    }

    #[test]
    fn dataset_lines_written_directly_are_the_traces_lines() {
        let restarts = AgenticConfig::from_json(r#"{"restart_initial_probability": 0.5}"#).unwrap();
        let groups = AgenticConfig::from_json(
            r#"{"cache": {"layer1_tokens": 32000, "layer1_5_tokens": 3000, "layer2": {"mean": 15000, "median": 5000, "max": 30000},
                "layer1_5_groups": {"num_groups": 5, "zipf_alpha": 0.6}}}"#,
        )
        .unwrap();
        for (cfg, seed) in [(AgenticConfig::default(), 1), (restarts, 2), (groups, 3)] {
            let s = generate(&cfg, 40, seed).unwrap();
            let want = write_trace(&to_trace(&cfg, &s));
            let starts = dataset_id_starts(&cfg, &s);
            let mut whole = String::new();
            write_dataset_rows(&cfg, &s, &starts, 0..s.sessions.len(), &mut whole);
            assert_eq!(whole, want);
            // Parts written apart join into the same text.
            let mut parts = String::new();
            for k in (0..s.sessions.len()).step_by(7) {
                write_dataset_rows(&cfg, &s, &starts, k..(k + 7).min(s.sessions.len()), &mut parts);
            }
            assert_eq!(parts, want);
        }
    }

    #[test]
    fn reports_have_aiperfs_keys() {
        let cfg = AgenticConfig::default();
        let s = generate(&cfg, 50, 1).unwrap();
        let q = quality(&s, &cfg);
        let v: Value = serde_json::from_str(&quality_json(&q)).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["config_summary", "observed_vs_target", "session_stats", "session_end_stats"]);
        let ovt: Vec<&str> = v["observed_vs_target"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            ovt,
            ["initial_context", "generation_length", "new_tokens_per_turn", "inter_turn_delay_ms", "turns_per_session"]
        );
        let text = comparison_text(&q, &session_minutes(&s));
        assert!(text.starts_with("Agentic Code Session Profile: Target vs Synthesized Dataset\n"));
        assert!(text.contains("\n  max_prompt_tokens                          200,000     200,000\n"), "{text}");
        assert!(text.contains("  (70% agentic ~2s, 30% human ~40s)\n"), "{text}");
        let m = manifest_json(&cfg, 1, 50, "default");
        assert_eq!(AgenticConfig::from_json(&m).unwrap(), cfg);
    }
}
