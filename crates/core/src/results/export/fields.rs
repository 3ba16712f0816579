//! What every summary file shows alike: the run-level scalars, a distribution's statistics in
//! AIPerf's order, the fixed schedule's lag, the CPU per request and a per-URL entry's name.

use crate::results::aggregate::{Report, UrlReport};
use crate::results::summary::RunSummary;

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

pub(super) fn cpu_per_request_us(s: &RunSummary, cpu: f64) -> f64 {
    let total = s.report.request_count + s.report.error_request_count;
    if total > 0 { cpu * 1e6 / total as f64 } else { 0.0 }
}

/// The URL of a per-URL entry (its index when the summary does not list it).
pub(super) fn url_name(s: &RunSummary, u: &UrlReport) -> String {
    s.urls.get(u.index as usize).cloned().unwrap_or_else(|| format!("url #{}", u.index))
}
