//! What AIPerf writes beside the dataset: `manifest.json` (re-runs the generation),
//! `quality.json` (each distribution against its target, with the same keys) and
//! `comparison.txt` (the target-vs-dataset table), as pure functions of the sessions.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::config::AgenticConfig;
use super::sessions::{EndReason, Sessions};
use crate::stats;

/// Prefill and decode speeds behind the comparison's estimated session durations.
const PREFILL_TPS: f64 = 20_000.0;
const DECODE_TPS: f64 = 60.0;
/// The comparison's fixed generation-length percentile targets.
const TARGET_P05: f64 = 30.0;
const TARGET_P99: f64 = 3_750.0;

/// Count, mean, population standard deviation and numpy-style percentiles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PercentileStats {
    pub count: usize,
    pub mean: f64,
    pub std: f64,
    pub median: f64,
    pub p05: f64,
    pub p25: f64,
    pub p75: f64,
    pub p95: f64,
    pub p99: f64,
}

/// `round(x, digits)` as Python rounds: to the nearest, ties to even, on the exact binary value.
fn round_to(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$}").parse().unwrap_or(x)
}

impl PercentileStats {
    /// The statistics of `values`, rounded to `digits` decimals if given; zeros when empty.
    pub fn of(values: &[f64], digits: Option<usize>) -> Self {
        if values.is_empty() {
            return PercentileStats {
                count: 0,
                mean: 0.0,
                std: 0.0,
                median: 0.0,
                p05: 0.0,
                p25: 0.0,
                p75: 0.0,
                p95: 0.0,
                p99: 0.0,
            };
        }
        let sorted = stats::sorted(values);
        let r = |x: Option<f64>| {
            let x = x.unwrap_or(0.0);
            digits.map_or(x, |d| round_to(x, d))
        };
        let p = |q: f64| r(stats::percentile_sorted(&sorted, q));
        PercentileStats {
            count: values.len(),
            mean: r(stats::mean(values)),
            std: r(stats::std_dev(values)),
            median: p(50.0),
            p05: p(5.0),
            p25: p(25.0),
            p75: p(75.0),
            p95: p(95.0),
            p99: p(99.0),
        }
    }
}

/// One distribution against its target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QualityMetric {
    pub target_mean: Option<f64>,
    pub target_median: Option<f64>,
    pub observed: PercentileStats,
    pub pct_error_mean: Option<f64>,
    pub pct_error_median: Option<f64>,
}

fn pct_error(target: f64, observed: f64) -> f64 {
    if target == 0.0 { 0.0 } else { (observed - target).abs() / target * 100.0 }
}

impl QualityMetric {
    fn of(values: &[f64], target_mean: Option<f64>, target_median: Option<f64>) -> Self {
        let observed = PercentileStats::of(values, Some(2));
        QualityMetric {
            pct_error_mean: target_mean.map(|t| round_to(pct_error(t, observed.mean), 2)),
            pct_error_median: target_median.map(|t| round_to(pct_error(t, observed.median), 2)),
            target_mean,
            target_median,
            observed,
        }
    }
}

/// How sessions ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionEndStats {
    pub total_sessions: usize,
    pub forced_retires: usize,
    pub probabilistic_resets: usize,
    pub target_turn_completions: usize,
    pub restart_splits: usize,
    pub retire_fraction: f64,
    pub reset_fraction: f64,
    pub target_turn_fraction: f64,
    pub restart_split_fraction: f64,
    pub final_context_utilization: PercentileStats,
}

/// `quality.json`: AIPerf's `QualityReport`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Quality {
    pub config_summary: Map<String, Value>,
    pub observed_vs_target: Map<String, Value>,
    pub session_stats: PercentileStats,
    pub session_end_stats: SessionEndStats,
}

/// The configuration's key numbers, flat (AIPerf's `config_summary`).
pub fn config_summary(cfg: &AgenticConfig) -> Map<String, Value> {
    let c = &cfg.cache;
    let (l1, l15) = (c.layer1_tokens, c.layer1_5_tokens);
    let d = &cfg.inter_turn_delay;
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_owned(), v);
    };
    put("initial_context_mean", json!((l1 + l15) as f64 + c.layer2.mean));
    put("initial_context_median", json!((l1 + l15) as f64 + c.layer2.median));
    put("layer1_tokens", json!(l1));
    put("layer1_5_tokens", json!(l15));
    put("layer2_mean", json!(c.layer2.mean));
    put("layer2_median", json!(c.layer2.median));
    put("num_groups", json!(c.layer1_5_groups.num_groups));
    put("zipf_alpha", json!(c.layer1_5_groups.zipf_alpha));
    put("new_tokens_per_turn_mean", json!(cfg.new_tokens_per_turn.mean));
    put("new_tokens_per_turn_median", json!(cfg.new_tokens_per_turn.median));
    put("generation_length_mean", json!(cfg.generation_length.mean));
    put("generation_length_median", json!(cfg.generation_length.median));
    put("max_prompt_tokens", json!(cfg.max_prompt_tokens));
    put("block_size", json!(cfg.block_size));
    put("inter_turn_delay_agentic_fraction", json!(d.agentic_fraction));
    put("inter_turn_delay_agentic_mean_ms", json!(d.agentic_delay.mean));
    put("inter_turn_delay_human_mean_ms", json!(d.human_delay.mean));
    put("turn_mode_enabled", json!(u8::from(cfg.turns.is_some())));
    if let Some(r) = &cfg.reset {
        put("reset_base_probability", json!(r.base_probability));
        put("reset_context_scaling", json!(r.context_scaling));
    }
    if let Some(t) = &cfg.turns {
        put("turns_mean", json!(t.mean));
        put("turns_median", json!(t.median));
        put("turns_min", json!(t.min));
        put("turns_max", json!(t.max));
        put("turns_allow_truncation", json!(u8::from(t.allow_truncation)));
        if let Some(a) = t.max_session_attempts {
            put("turns_max_session_attempts", json!(a));
        }
    }
    m
}

/// The quality report of `sessions` generated from `cfg`.
pub fn quality(sessions: &Sessions, cfg: &AgenticConfig) -> Quality {
    let mut initial = Vec::with_capacity(sessions.sessions.len());
    let mut new_tokens = Vec::with_capacity(sessions.turns.len());
    let mut outputs = Vec::with_capacity(sessions.turns.len());
    let mut delays = Vec::with_capacity(sessions.turns.len());
    let mut turns_per = Vec::with_capacity(sessions.sessions.len());
    let mut final_util = Vec::with_capacity(sessions.sessions.len());
    let mut ends = [0usize; 4];
    for s in &sessions.sessions {
        let turns = sessions.turns_of(s);
        turns_per.push(turns.len() as f64);
        ends[s.end as usize] += 1;
        if let Some(last) = turns.last() {
            final_util.push(last.input_length as f64 / cfg.max_prompt_tokens as f64);
        }
        for (i, t) in turns.iter().enumerate() {
            if i == 0 {
                initial.push(t.input_length as f64);
            } else {
                new_tokens.push(t.new_tokens as f64);
                delays.push(t.delay_ms);
            }
            outputs.push(t.output_length as f64);
        }
    }
    let c = &cfg.cache;
    let prefix = (c.layer1_tokens + c.layer1_5_tokens) as f64;
    let mut ovt = Map::new();
    let mut put = |k: &str, values: &[f64], mean: Option<f64>, median: Option<f64>| {
        if !values.is_empty() {
            let m = QualityMetric::of(values, mean, median);
            ovt.insert(k.to_owned(), serde_json::to_value(m).unwrap_or(Value::Null));
        }
    };
    put("initial_context", &initial, Some(prefix + c.layer2.mean), Some(prefix + c.layer2.median));
    put("generation_length", &outputs, Some(cfg.generation_length.mean), Some(cfg.generation_length.median));
    put("new_tokens_per_turn", &new_tokens, Some(cfg.new_tokens_per_turn.mean), Some(cfg.new_tokens_per_turn.median));
    put("inter_turn_delay_ms", &delays, None, None);
    let turn_target = cfg.turns.as_ref().map(|t| (t.mean as f64, t.median as f64));
    put("turns_per_session", &turns_per, turn_target.map(|t| t.0), turn_target.map(|t| t.1));
    let total = sessions.sessions.len();
    let frac = |n: usize| round_to(n as f64 / total.max(1) as f64, 4);
    let or_zero = |v: Vec<f64>| if v.is_empty() { vec![0.0] } else { v };
    Quality {
        config_summary: config_summary(cfg),
        observed_vs_target: ovt,
        session_stats: PercentileStats::of(&or_zero(turns_per), Some(2)),
        session_end_stats: SessionEndStats {
            total_sessions: total,
            forced_retires: ends[EndReason::ForcedRetire as usize],
            probabilistic_resets: ends[EndReason::ProbabilisticReset as usize],
            target_turn_completions: ends[EndReason::TargetTurnCount as usize],
            restart_splits: ends[EndReason::RestartSplit as usize],
            retire_fraction: frac(ends[EndReason::ForcedRetire as usize]),
            reset_fraction: frac(ends[EndReason::ProbabilisticReset as usize]),
            target_turn_fraction: frac(ends[EndReason::TargetTurnCount as usize]),
            restart_split_fraction: frac(ends[EndReason::RestartSplit as usize]),
            final_context_utilization: PercentileStats::of(&or_zero(final_util), Some(2)),
        },
    }
}

/// `quality.json`'s text (two-space indents, no final newline, as AIPerf writes it).
pub fn quality_json(q: &Quality) -> String {
    serde_json::to_string_pretty(q).unwrap_or_default()
}

/// `manifest.json`'s text: the seed, the number of sessions written and the configuration.
pub fn manifest_json(cfg: &AgenticConfig, seed: u64, num_sessions: usize, config_name: &str) -> String {
    let m = json!({
        "seed": seed,
        "num_sessions": num_sessions,
        "config_name": config_name,
        "generation_params": cfg.to_value(),
    });
    serde_json::to_string_pretty(&m).unwrap_or_default()
}

/// Estimated minutes of each session: its delays plus every turn's prefill of its new tokens and
/// decode of its answer.
pub fn session_minutes(sessions: &Sessions) -> Vec<f64> {
    sessions
        .sessions
        .iter()
        .map(|s| {
            let ms: f64 = sessions
                .turns_of(s)
                .iter()
                .map(|t| {
                    t.delay_ms + (t.new_tokens as f64 / PREFILL_TPS + t.output_length as f64 / DECODE_TPS) * 1000.0
                })
                .sum();
            ms / 1000.0 / 60.0
        })
        .collect()
}

/// `x` with thousands separators and `decimals` decimals (Python's `{:,.Nf}`).
fn grouped(x: f64, decimals: usize) -> String {
    let s = format!("{:.decimals$}", x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    if x.is_sign_negative() && s.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

fn get(v: Option<&Value>, k: &str) -> Option<f64> {
    v.and_then(|v| v.get(k)).and_then(Value::as_f64)
}

/// `comparison.txt`: the target-vs-dataset table AIPerf prints after generating.
pub fn comparison_text(q: &Quality, session_minutes: &[f64]) -> String {
    let cfg = &q.config_summary;
    let ovt = &q.observed_vs_target;
    let ends = &q.session_end_stats;
    let total_turns = ovt.get("generation_length").and_then(|g| g["observed"]["count"].as_u64()).unwrap_or(0);
    let num = |k: &str| cfg.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let mut lines: Vec<String> = Vec::new();
    let mut w = |s: String| lines.push(s);
    w("Agentic Code Session Profile: Target vs Synthesized Dataset".into());
    w("=".repeat(60));
    w(String::new());
    w(format!(
        "{} sessions | {} turns | block_size={}",
        grouped(ends.total_sessions as f64, 0),
        grouped(total_turns as f64, 0),
        num("block_size")
    ));
    w(String::new());
    w(format!("{:40} {:>12} {:>12} {:>8}", "", "Target", "Dataset", "Error"));
    w("-".repeat(76));
    let row = |label: &str, target: Option<f64>, obs: Option<f64>, err: Option<f64>| {
        let t = target.map_or_else(|| format!("{:>12}", "-"), |t| format!("{:>12}", grouped(t, 0)));
        let o = obs.map_or_else(|| format!("{:>12}", "-"), |o| format!("{:>12}", grouped(o, 1)));
        let e = err.map_or(String::new(), |e| {
            let plus = match (obs, target) {
                (Some(o), Some(t)) => e.abs() == 0.0 || o >= t,
                _ => true,
            };
            format!("  {}{:.1}%", if plus { '+' } else { '-' }, e.abs())
        });
        format!("  {label:38}{t}{o}{e}")
    };
    let block = |w: &mut dyn FnMut(String), label: &str, key: &str| {
        w(label.to_owned());
        let m = ovt.get(key);
        let obs = m.and_then(|m| m.get("observed"));
        w(row("mean", get(m, "target_mean"), get(obs, "mean"), get(m, "pct_error_mean")));
        w(row("median", get(m, "target_median"), get(obs, "median"), get(m, "pct_error_median")));
    };
    block(&mut w, "Initial Context (tokens)", "initial_context");
    w(String::new());
    block(&mut w, "New Tokens Per Turn", "new_tokens_per_turn");
    w(String::new());
    block(&mut w, "Generation Length (tokens)", "generation_length");
    let gen_obs = ovt.get("generation_length").and_then(|g| g.get("observed"));
    w(row("p05", Some(TARGET_P05), get(gen_obs, "p05"), None));
    w(row("p99", Some(TARGET_P99), get(gen_obs, "p99"), None));
    w(String::new());
    w("Prompt".into());
    let mpt = grouped(num("max_prompt_tokens"), 0);
    w(format!("  {:38}{mpt:>12}{mpt:>12}", "max_prompt_tokens"));
    w(String::new());
    w("Additional Dataset Statistics".into());
    w("-".repeat(76));
    w("Turns Per Session".into());
    let s = &q.session_stats;
    for (label, v) in [
        ("mean", s.mean),
        ("median", s.median),
        ("p05", s.p05),
        ("p25", s.p25),
        ("p75", s.p75),
        ("p95", s.p95),
        ("p99", s.p99),
    ] {
        w(format!("  {label:38}{:>12}{v:>12.1}", "-"));
    }
    w(String::new());
    if let Some(delay) = ovt.get("inter_turn_delay_ms").and_then(|d| d.get("observed")) {
        w("Inter-Turn Delay (ms)".into());
        for label in ["mean", "median", "p05", "p95"] {
            let v = delay.get(label).and_then(Value::as_f64).unwrap_or(0.0);
            w(format!("  {label:38}{:>12}{:>12}", "-", grouped(v, 0)));
        }
        let af = num("inter_turn_delay_agentic_fraction");
        let am = num("inter_turn_delay_agentic_mean_ms") / 1000.0;
        let hm = num("inter_turn_delay_human_mean_ms") / 1000.0;
        w(format!("  ({:.0}% agentic ~{am:.0}s, {:.0}% human ~{hm:.0}s)", af * 100.0, (1.0 - af) * 100.0));
        w(String::new());
    }
    let d = PercentileStats::of(session_minutes, None);
    if d.count > 0 {
        w(format!(
            "Session Duration (estimated @ {} prefill tok/s, {} decode tok/s)",
            grouped(PREFILL_TPS, 0),
            grouped(DECODE_TPS, 0)
        ));
        for (label, v) in [("mean", d.mean), ("median", d.median)] {
            w(format!("  {label:38}{:>12}{v:>12.1} min", "-"));
        }
        w(String::new());
    }
    w("Session Endings".into());
    w(format!("  {:38}{:>12}{:>12}", "forced retires (hit context limit)", "-", ends.forced_retires));
    w(format!("  {:38}{:>12}{:>12}", "probabilistic resets", "-", ends.probabilistic_resets));
    w(format!("  {:38}{:>12}{:>12}", "restart splits", "-", ends.restart_splits));
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_and_rounded_like_python() {
        assert_eq!(grouped(61_335.74, 1), "61,335.7");
        assert_eq!(grouped(200_000.0, 0), "200,000");
        assert_eq!(grouped(999.96, 1), "1,000.0");
        assert_eq!(grouped(-1_234.5, 1), "-1,234.5");
        assert_eq!(round_to(1.005, 2), 1.0);
        assert_eq!(round_to(2.675, 2), 2.67);
    }
}
