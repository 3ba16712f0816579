//! AIPerf's `--cache-bust` markers: the text that makes one conversation's prompt differ from
//! every other's so that a server's prefix cache cannot carry work between them.
//!
//! A session's marker is `[rid:D]`, `D` the first 12 hex digits of SHA-256 over
//! `"{benchmark_id}:{pass}:{lane}:{trace_id}"`, followed by a blank line for the prefix targets
//! and preceded by one for the suffix targets; the digest names no phase, so a session's
//! warm-up and profiling turns carry the same marker. The two warm-up isolation targets carry
//! the constant `[warmup]` and a blank line instead, on warm-up requests only.
//!
//! Where it goes ([`mark`], [`mark_messages`]): a system target's marker on the request's system
//! message when it has one, else on the conversation's first user message, where a first-turn
//! target's goes; which session gets which ([`CacheBust::marker`], [`pass`]): every session AIPerf
//! draws counts once, warm-up and profiling alike, so no two session runs of a run share a marker.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where a marker goes: AIPerf's `CacheBustTarget`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    None,
    SystemPrefix,
    SystemSuffix,
    FirstTurnPrefix,
    FirstTurnSuffix,
    WarmupIsolationSystem,
    WarmupIsolationFirstTurn,
}

/// The warm-up isolation targets' marker.
pub const WARMUP_ISOLATION_MARKER: &str = "[warmup]\n\n";

impl Target {
    /// Every target, in AIPerf's order.
    pub const ALL: [Target; 7] = [
        Target::None,
        Target::SystemPrefix,
        Target::SystemSuffix,
        Target::FirstTurnPrefix,
        Target::FirstTurnSuffix,
        Target::WarmupIsolationSystem,
        Target::WarmupIsolationFirstTurn,
    ];

    /// AIPerf's name of the target.
    pub fn name(self) -> &'static str {
        match self {
            Target::None => "none",
            Target::SystemPrefix => "system_prefix",
            Target::SystemSuffix => "system_suffix",
            Target::FirstTurnPrefix => "first_turn_prefix",
            Target::FirstTurnSuffix => "first_turn_suffix",
            Target::WarmupIsolationSystem => "warmup_isolation_system",
            Target::WarmupIsolationFirstTurn => "warmup_isolation_first_turn",
        }
    }

    /// The target of an AIPerf name, any case.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// The marker goes before the text it marks (else after it).
    pub fn is_prefix(self) -> bool {
        !matches!(self, Target::SystemSuffix | Target::FirstTurnSuffix)
    }

    /// The marker goes on the system message when the request has one.
    pub fn wants_system(self) -> bool {
        matches!(self, Target::SystemPrefix | Target::SystemSuffix | Target::WarmupIsolationSystem)
    }

    /// Warm-up requests only carry the marker (the constant [`WARMUP_ISOLATION_MARKER`]).
    pub fn isolates_warmup(self) -> bool {
        matches!(self, Target::WarmupIsolationSystem | Target::WarmupIsolationFirstTurn)
    }
}

/// The phase a request is sent in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Warmup,
    Profiling,
}

/// AIPerf's `--cache-bust` over one run: its target and its `benchmark_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheBust {
    pub target: Target,
    pub benchmark_id: String,
}

impl CacheBust {
    /// The marker of a session run of `phase` whose place in AIPerf's count of the sessions it
    /// drew is `pass` ([`pass`]), `trace_id` its conversation's id: the warm-up isolation
    /// targets' constant on warm-up requests only, else the session's digest in both phases.
    pub fn marker(&self, phase: Phase, pass: u64, trace_id: &str) -> Option<String> {
        if self.target.isolates_warmup() && phase == Phase::Profiling {
            return None;
        }
        marker(&self.benchmark_id, pass, pass, trace_id, self.target)
    }
}

/// A session run's place in AIPerf's count of the sessions it drew (`recycle_pass` and lane of
/// its marker): a warm-up's `run` (its runs draw one session each, in order); after a warm-up
/// that drew `warmup_draws`, a generated run's `run` after them, and a fixed schedule's
/// `session` (its index in trace order) after them, AIPerf drawing every conversation of a
/// fixed schedule, in trace order, as its profiling phase begins.
pub fn pass(phase: Phase, warmup_draws: u64, fixed: bool, run: u64, session: u32) -> u64 {
    match (phase, fixed) {
        (Phase::Warmup, _) => run,
        (Phase::Profiling, false) => warmup_draws.saturating_add(run),
        (Phase::Profiling, true) => warmup_draws.saturating_add(u64::from(session)),
    }
}

/// `text` with `marker` before it (prefix targets) or after it; a text that already carries the
/// marker at that edge is kept as it is (AIPerf's `_content_has_marker_at_edge`).
pub fn mark(text: &str, marker: &str, target: Target) -> String {
    match target.is_prefix() {
        true if text.starts_with(marker) => text.to_owned(),
        false if text.ends_with(marker) => text.to_owned(),
        true => format!("{marker}{text}"),
        false => format!("{text}{marker}"),
    }
}

/// A chat request's `messages` marked as AIPerf's worker marks a conversation's: a system
/// target's marker on the leading system message when there is one, else (and a first-turn
/// target's always) on the first user message. A string content gets the marker at its edge
/// ([`mark`]); a list of content parts gets `{"type":"text","text":MARKER}` (the marker trimmed)
/// as its first or last part. Returns whether a message was marked (a conversation without a
/// user message, or whose content is neither, is sent unmarked, as AIPerf's).
pub fn mark_messages(messages: &mut [Value], marker: &str, target: Target) -> bool {
    let role = |m: &Value, r: &str| m.get("role").and_then(Value::as_str) == Some(r);
    let at = match messages.first() {
        Some(m) if target.wants_system() && role(m, "system") => Some(0),
        _ => messages.iter().position(|m| role(m, "user")),
    };
    let Some(message) = at.and_then(|i| messages.get_mut(i)) else { return false };
    let part = || serde_json::json!({"type": "text", "text": marker.trim()});
    match message.get_mut("content") {
        Some(Value::String(text)) => {
            *text = mark(text, marker, target);
            true
        }
        Some(Value::Array(parts)) => {
            let edge = if target.is_prefix() { parts.first() } else { parts.last() };
            if edge != Some(&part()) {
                if target.is_prefix() {
                    parts.insert(0, part());
                } else {
                    parts.push(part());
                }
            }
            true
        }
        // AIPerf reads a missing content as an empty text.
        None => {
            if let Value::Object(m) = message {
                m.insert("content".into(), Value::String(marker.to_owned()));
            }
            true
        }
        Some(_) => false,
    }
}

/// The markers AIPerf tokenizes to estimate a marker's tokens
/// (`estimate_marker_token_cost`: their mean, rounded); none for [`Target::None`] and the warm-up
/// isolation targets, whose profiling requests carry no marker.
pub fn cost_samples(target: Target) -> Vec<String> {
    if target.isolates_warmup() {
        return Vec::new();
    }
    (0..8u64).filter_map(|i| marker("estimator", i, i, &format!("estimator-{i}"), target)).collect()
}

/// The marker of one session (`None` for [`Target::None`]), as AIPerf's
/// `build_cache_bust_marker(benchmark_id, pass, lane, trace_id, target=…)` renders it.
pub fn marker(benchmark_id: &str, pass: u64, lane: u64, trace_id: &str, target: Target) -> Option<String> {
    match target {
        Target::None => None,
        Target::WarmupIsolationSystem | Target::WarmupIsolationFirstTurn => Some(WARMUP_ISOLATION_MARKER.to_owned()),
        _ => {
            let digest = Sha256::digest(format!("{benchmark_id}:{pass}:{lane}:{trace_id}").as_bytes());
            let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
            Some(if target.is_prefix() { format!("[rid:{hex}]\n\n") } else { format!("\n\n[rid:{hex}]") })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_aiperfs_text_in_aiperfs_places() {
        // AIPerf 0.13.0: build_cache_bust_marker("bench", 0, 0, "conv-1", target=FIRST_TURN_PREFIX)
        let m = marker("bench", 0, 0, "conv-1", Target::FirstTurnPrefix);
        assert_eq!(m.as_deref(), Some("[rid:d93df164e575]\n\n"));
        let rid = "[rid:d93df164e575]";
        assert_eq!(marker("bench", 0, 0, "conv-1", Target::SystemPrefix), Some(format!("{rid}\n\n")));
        assert_eq!(marker("bench", 0, 0, "conv-1", Target::SystemSuffix), Some(format!("\n\n{rid}")));
        assert_eq!(marker("bench", 0, 0, "conv-1", Target::FirstTurnSuffix), Some(format!("\n\n{rid}")));
        assert_ne!(marker("bench", 1, 1, "conv-1", Target::FirstTurnPrefix), m, "each pass its own");
        assert_eq!(marker("bench", 3, 3, "c", Target::WarmupIsolationSystem).as_deref(), Some("[warmup]\n\n"));
        assert_eq!(marker("bench", 3, 3, "c", Target::None), None);
        for t in Target::ALL {
            assert_eq!(Target::from_name(&t.name().to_uppercase()), Some(t));
        }
        assert_eq!(Target::from_name("middle"), None);
    }

    #[test]
    fn a_session_keeps_its_marker_and_no_two_sessions_share_one() {
        let bust = CacheBust { target: Target::FirstTurnPrefix, benchmark_id: "b".into() };
        let warm = bust.marker(Phase::Warmup, pass(Phase::Warmup, 0, false, 2, 9), "s");
        assert_eq!(warm, marker("b", 2, 2, "s", Target::FirstTurnPrefix));
        // After a warm-up of 4 draws, generated run 0 is the fifth session drawn.
        assert_eq!(pass(Phase::Profiling, 4, false, 0, 9), 4);
        assert_eq!(pass(Phase::Profiling, 4, true, 0, 9), 13);
        assert_ne!(bust.marker(Phase::Profiling, 4, "s"), bust.marker(Phase::Profiling, 5, "s"));
        let iso = CacheBust { target: Target::WarmupIsolationFirstTurn, benchmark_id: "b".into() };
        assert_eq!(iso.marker(Phase::Warmup, 3, "s").as_deref(), Some(WARMUP_ISOLATION_MARKER));
        assert_eq!(iso.marker(Phase::Profiling, 3, "s"), None);
        assert_eq!(cost_samples(Target::WarmupIsolationSystem), Vec::<String>::new());
        assert_eq!(cost_samples(Target::SystemSuffix).len(), 8);
    }

    #[test]
    fn markers_land_where_aiperfs_worker_puts_them() {
        use serde_json::json;
        let m = "[rid:0123456789ab]\n\n";
        let s = "\n\n[rid:0123456789ab]";
        assert_eq!(mark("hi", m, Target::FirstTurnPrefix), format!("{m}hi"));
        assert_eq!(mark(&format!("{m}hi"), m, Target::FirstTurnPrefix), format!("{m}hi"), "never twice");
        assert_eq!(mark("hi", s, Target::SystemSuffix), format!("hi{s}"));
        let convo = || json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "u1"}, {"role": "user", "content": "u2"}]);
        let marked = |target, marker: &str, mut v: Value| {
            assert!(mark_messages(v.as_array_mut().unwrap(), marker, target));
            v
        };
        assert_eq!(marked(Target::SystemPrefix, m, convo())[0]["content"], format!("{m}sys"));
        assert_eq!(marked(Target::SystemSuffix, s, convo())[0]["content"], format!("sys{s}"));
        let first = marked(Target::FirstTurnSuffix, s, convo());
        assert_eq!(
            (first[1]["content"].as_str(), first[2]["content"].as_str()),
            (Some(&*format!("u1{s}")), Some("u2"))
        );
        // No system message: a system target falls back to the first user message.
        let alone = marked(
            Target::SystemPrefix,
            m,
            json!([{"role": "assistant", "content": "a"}, {"role": "user", "content": "u"}]),
        );
        assert_eq!(alone[1]["content"], format!("{m}u"));
        let parts =
            marked(Target::FirstTurnPrefix, m, json!([{"role": "user", "content": [{"type": "text", "text": "u"}]}]));
        assert_eq!(
            parts[0]["content"],
            json!([{"type": "text", "text": "[rid:0123456789ab]"}, {"type": "text", "text": "u"}])
        );
        let mut none = json!([{"role": "assistant", "content": "a"}]);
        assert!(!mark_messages(none.as_array_mut().unwrap(), m, Target::FirstTurnPrefix));
    }
}
