//! The console table printed at the end of a run.

use std::fmt::Write as _;

use super::fields::{cpu_per_request_us, scalars, url_name};
use crate::datetime::iso8601;
use crate::replay::sharding::Sharding;
use crate::results::aggregate::Report;
use crate::results::metrics::Metric;
use crate::results::summary::RunSummary;
use crate::server::gpu::EnergyMetric;
use crate::server::kinds::ServerView;
use crate::stats::Distribution;

/// The header and one line per metric (avg, min, max, p99, p90, p50, std) of the console's
/// distribution table.
pub fn distribution_table<'a>(out: &mut String, metrics: impl Iterator<Item = &'a (Metric, Distribution)>) {
    let _ = writeln!(
        out,
        "{:<52} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "Metric", "avg", "min", "max", "p99", "p90", "p50", "std"
    );
    for (metric, d) in metrics {
        let name = format!("{} ({})", metric.header(), metric.unit());
        let p = |q| d.percentile(q).unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "{:<52} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2}",
            name,
            d.avg,
            d.min,
            d.max,
            p(99.0),
            p(90.0),
            p(50.0),
            d.std
        );
    }
}

/// The console table.
pub fn console_table(s: &RunSummary) -> String {
    let mut out = String::new();
    let title =
        if s.was_cancelled { "aiperf-cli profile | Metrics (run cancelled)" } else { "aiperf-cli profile | Metrics" };
    let _ = writeln!(out, "\n{title}");
    distribution_table(&mut out, s.report.metrics.iter().filter(|(m, _)| m.on_console()));
    for (_, header, unit, v) in scalars(&s.report) {
        let _ = writeln!(out, "{:<52} {:>11.2}", format!("{header} ({unit})"), v);
    }
    for (title, metrics) in EnergyMetric::console_groups(&s.gpu_energy) {
        let _ = writeln!(out, "{title}:");
        for e in metrics {
            let _ = writeln!(out, "  {:<50} {:>11.2}", format!("{} ({})", e.metric.header, e.metric.unit), e.value);
        }
    }
    if !s.report.per_url.is_empty() {
        let _ = writeln!(out, "Per URL (sessions spread round robin, each on one URL):");
        let _ = writeln!(
            out,
            "  {:<4} {:<44} {:>8} {:>7} {:>13} {:>13} {:>13} {:>13}",
            "#", "URL", "requests", "errors", "latency p50", "latency p99", "TTFT p50", "TTFT p99"
        );
        for u in &s.report.per_url {
            let p = |d: &Option<Distribution>, q| {
                d.as_ref().and_then(|d| d.percentile(q)).map_or_else(|| "-".to_owned(), |v| format!("{v:.2} ms"))
            };
            let _ = writeln!(
                out,
                "  #{:<3} {:<44} {:>8} {:>7} {:>13} {:>13} {:>13} {:>13}",
                u.index,
                url_name(s, u),
                u.request_count,
                u.error_request_count,
                p(&u.request_latency, 50.0),
                p(&u.request_latency, 99.0),
                p(&u.time_to_first_token, 50.0),
                p(&u.time_to_first_token, 99.0)
            );
        }
    }
    let o = s.report.outcomes;
    let _ = writeln!(
        out,
        "Outcomes: {} completed, {} cancelled, {} timed out, {} failed (TTFT covers every request that received a token)",
        o.completed, o.cancelled, o.timed_out, o.failed
    );
    if let Some(t) = s.report.token_count_check {
        let _ = writeln!(
            out,
            "Output tokens: server (usage) {}, client re-tokenized {} ({:+.2}%) over {} request(s)",
            t.server_output_tokens,
            t.client_output_tokens,
            t.relative_difference() * 100.0,
            t.requests
        );
    }
    if let Some(server) = s.report.usage_prompt_tokens {
        let _ = writeln!(
            out,
            "Input tokens: client {} (input_sequence_length), server (usage) {} over the successful requests",
            s.report.total_input_tokens, server
        );
    }
    if !s.report.error_summary.is_empty() {
        let _ = writeln!(
            out,
            "Errors ({} failed request(s)), by kind, with the first message:",
            s.report.error_request_count
        );
        for (k, n) in &s.report.error_summary {
            match s.report.error_examples.get(k).filter(|m| !m.is_empty()) {
                Some(m) => {
                    let _ = writeln!(out, "  {k} × {n}: {m}");
                }
                None => {
                    let _ = writeln!(out, "  {k} × {n}");
                }
            }
        }
    }
    if let Some(v) = &s.server {
        console_server(&mut out, &s.report, v);
    }
    if let Some((w, e)) = s.warmup {
        let _ = writeln!(out, "Warmup: {w} request(s), {e} error(s), not measured");
    }
    if let Some((prog, meas)) = s.calibration {
        let _ = writeln!(
            out,
            "Calibration against the mock server: programmed TTFT {prog:.3} ms, measured TTFT p50 {meas:.3} ms → client + network overhead {:.3} ms",
            meas - prog
        );
    }
    if let Some(d) = s.report.get(Metric::SendLateness) {
        let p = |q| d.percentile(q).unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "Send lateness (actual − scheduled): p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            p(50.0),
            p(90.0),
            p(99.0),
            d.max
        );
    }
    if let Some(cpu) = s.client_cpu_s {
        let _ = writeln!(
            out,
            "Client CPU while replaying: {cpu:.2} s ({:.0} µs per request); ready to send {:.0} ms after start",
            cpu_per_request_us(s, cpu),
            s.startup_ms
        );
    }
    match &s.sharding {
        Some(Sharding::Shard(r)) => {
            let clock = r.clock.map_or_else(
                || "clock offset against the target unknown (no Date header)".to_owned(),
                |c| format!("target clock {:+.1} ms ± {:.1} ms from this one", c.offset_ms, c.uncertainty_ms),
            );
            let zero = if r.common_start { "common start" } else { "own start" };
            let _ = writeln!(
                out,
                "Shard {}/{} ({zero} {}); {clock}",
                r.index,
                r.count,
                iso8601(u128::from(r.start_unix_ns))
            );
        }
        Some(Sharding::Merged(m)) => {
            let kept: Vec<String> = m.shards.iter().map(|r| r.index.to_string()).collect();
            let _ = writeln!(
                out,
                "Merged {} of {} shard(s) (K = {}){}",
                m.shards.len(),
                m.count,
                kept.join(", "),
                if m.partial { "; PARTIAL: see sharding.problems in profile_export_aiperf.json" } else { "" }
            );
        }
        None => {}
    }
    let _ = writeln!(out, "Tokenizer: {}", s.tokenizer);
    out
}

fn console_server(out: &mut String, r: &Report, v: &ServerView) {
    let pct = |x: Option<f64>| x.map_or_else(|| "n/a".to_owned(), |x| format!("{:.2}%", x * 100.0));
    let _ = writeln!(
        out,
        "Prefix-cache hit rate: trace (theoretical) {} | server metrics {}{} | usage cached_tokens {}",
        pct(r.expected_cache_hit_rate),
        pct(v.prefix_cache_hit_rate.as_ref().map(|s| s.value)),
        v.prefix_cache_hit_rate.as_ref().map_or_else(String::new, |s| format!(" ({})", s.source)),
        pct(r.cache_hit_rate)
    );
    let mut parts = Vec::new();
    if let Some(s) = &v.kv_cache_usage {
        parts.push(format!(
            "KV-cache usage avg {:.1}%, max {:.1}% ({})",
            s.value.0 * 100.0,
            s.value.1 * 100.0,
            s.source
        ));
    }
    if let Some(s) = &v.queue_depth_max {
        parts.push(format!("queue depth max {} ({})", s.value, s.source));
    }
    if let Some(s) = &v.running_max {
        parts.push(format!("running max {} ({})", s.value, s.source));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "Server: {}", parts.join("; "));
    }
}
