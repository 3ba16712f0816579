//! A run's tables: the summary (the console's numbers and the outcome counts) and the GPU
//! telemetry.

use std::fmt::Write as _;

use crate::results::aggregate::Report;
use crate::server::gpu::{DcgmField, EnergyMetric, TelemetryExport};
use crate::view::svg::esc;

/// The console's summary as a table (same numbers, 2 decimals) with the outcome counts.
pub fn summary_table(r: &Report) -> String {
    let mut out = String::from(
        r#"<table class="summary"><thead><tr><th>Metric</th><th>avg</th><th>min</th><th>max</th><th>p50</th><th>p90</th><th>p99</th><th>std</th></tr></thead><tbody>"#,
    );
    for (m, d) in &r.metrics {
        let p = |q| d.percentile(q).map_or("-".to_string(), |v| format!("{v:.2}"));
        let _ = write!(
            out,
            r#"<tr data-metric="{}"><td>{} ({})</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>"#,
            m.tag(),
            esc(m.header()),
            m.unit(),
            d.avg,
            d.min,
            d.max,
            p(50.0),
            p(90.0),
            p(99.0),
            d.std
        );
    }
    // AIPerf's time-weighted metrics: their statistics weigh each value by how long it held.
    for (m, t) in &r.timeline {
        let _ = write!(
            out,
            r#"<tr data-metric="{}"><td>{} ({}, time-weighted)</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td></tr>"#,
            m.tag(),
            esc(m.header()),
            m.unit(),
            t.avg,
            t.min,
            t.max,
            t.p50,
            t.p90,
            t.p99,
            t.std
        );
    }
    out.push_str("</tbody></table>");
    out.push_str(r#"<table class="scalars"><tbody>"#);
    let mut scalar = |tag: &str, name: &str, unit: &str, v: String| {
        let _ = write!(out, r#"<tr data-metric="{tag}"><td>{name} ({unit})</td><td>{v}</td></tr>"#);
    };
    scalar("request_count", "Request Count", "requests", r.request_count.to_string());
    scalar("error_request_count", "Error Request Count", "requests", r.error_request_count.to_string());
    if r.error_request_count > 0 {
        scalar("context_overflow_count", "Context Overflow Count", "requests", r.context_overflow_count.to_string());
    }
    scalar("request_throughput", "Request Throughput", "requests/sec", format!("{:.2}", r.request_throughput));
    scalar(
        "output_token_throughput",
        "Output Token Throughput",
        "tokens/sec",
        format!("{:.2}", r.output_token_throughput),
    );
    scalar("benchmark_duration", "Benchmark Duration", "sec", format!("{:.2}", r.benchmark_duration_s));
    if let (Some(g), Some(n)) = (r.goodput, r.good_request_count) {
        scalar("goodput", "Goodput", "requests/sec", format!("{g:.2} ({n} requests met every SLO)"));
    }
    if let Some(c) = r.cache_hit_rate {
        scalar("cache_hit_rate", "Cache Hit Rate (server)", "ratio", format!("{c:.4}"));
    }
    if let Some(c) = r.expected_cache_hit_rate {
        scalar("expected_cache_hit_rate", "Cache Hit Rate (trace, theoretical)", "ratio", format!("{c:.4}"));
    }
    out.push_str("</tbody></table>");
    let o = r.outcomes;
    let _ = write!(
        out,
        r#"<p class="outcomes">Outcomes: <b>{}</b> completed, <b>{}</b> cancelled, <b>{}</b> timed out, <b>{}</b> failed"#,
        o.completed, o.cancelled, o.timed_out, o.failed
    );
    out.push_str("</p>");
    if !r.error_summary.is_empty() {
        out.push_str(r#"<table class="errors"><thead><tr><th>error</th><th>count</th><th>first message</th></tr></thead><tbody>"#);
        for (k, n) in &r.error_summary {
            let m = r.error_examples.get(k).map_or("", String::as_str);
            let _ = write!(out, "<tr><td>{}</td><td>{n}</td><td>{}</td></tr>", esc(k), esc(m));
        }
        out.push_str("</tbody></table>");
    }
    out
}

/// The GPUs scraped during the run (AIPerf's `telemetry_data`): a row per GPU and DCGM field,
/// a gauge's statistics or a counter's rise over the run.
pub fn gpu_table(t: &TelemetryExport) -> String {
    let mut out = String::from(
        r#"<h3>GPU telemetry</h3><table class="summary gpus"><thead><tr><th>GPU</th><th>Metric</th><th>avg</th><th>min</th><th>max</th><th>p50</th><th>p90</th><th>p99</th></tr></thead><tbody>"#,
    );
    for (endpoint, gpus) in &t.endpoints {
        for g in gpus {
            let who = format!("{} {} ({endpoint})", g.index, g.name);
            for (field, s) in &g.metrics {
                let Some(d) = DcgmField::of_field(field) else {
                    continue;
                };
                let f = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
                let name = if d.is_counter() {
                    format!("{} ({}, rise over the run)", d.short(), d.unit)
                } else {
                    format!("{} ({})", d.short(), d.unit)
                };
                let _ = write!(
                    out,
                    r#"<tr data-metric="{field}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                    esc(&who),
                    esc(&name),
                    f(s.avg),
                    f(s.min),
                    f(s.max),
                    f(s.get("p50")),
                    f(s.get("p90")),
                    f(s.get("p99")),
                );
            }
        }
    }
    out.push_str("</tbody></table>");
    out
}

/// AIPerf's GPU energy-efficiency metrics: a table per vendor, in AIPerf's console order.
pub fn energy_table(metrics: &[EnergyMetric]) -> String {
    let mut out = String::new();
    for (title, ms) in EnergyMetric::console_groups(metrics) {
        let _ = write!(
            out,
            r#"<h3>{}</h3><table class="summary energy"><thead><tr><th>Metric</th><th>avg</th></tr></thead><tbody>"#,
            esc(title)
        );
        for e in ms {
            let _ = write!(
                out,
                r#"<tr data-metric="{}"><td>{} ({})</td><td>{:.2}</td></tr>"#,
                esc(&e.tag()),
                esc(e.metric.header),
                esc(e.metric.unit),
                e.value
            );
        }
        out.push_str("</tbody></table>");
    }
    out
}
