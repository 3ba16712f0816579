//! AIPerf's `--cache-bust` markers: the text that makes one conversation's prompt differ from
//! every other's so that a server's prefix cache cannot carry work between them.
//!
//! A session's marker is `[rid:D]`, `D` the first 12 hex digits of SHA-256 over
//! `"{benchmark_id}:{pass}:{lane}:{trace_id}"`, followed by a blank line for the prefix targets
//! and preceded by one for the suffix targets; the digest names no phase, so a session's
//! warm-up and profiling turns carry the same marker. The two warm-up isolation targets carry
//! the constant `[warmup]` and a blank line instead, on warm-up requests only.
//!
//! Not yet applied to requests by `profile` (the option is refused there): this is the text alone.

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
}
