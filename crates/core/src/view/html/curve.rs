//! A sweep's or a capacity search's section: its charts against the load and the table of its
//! points.

use std::fmt::Write as _;

use crate::view::compare::num;
use crate::view::curve::{Curve, CurveKind};
use crate::view::svg::{COLOURS, Line, esc, line_chart};

/// A chart of a curve: id, title, unit and its (metric, statistic) lines.
type CurveChart = (&'static str, &'static str, &'static str, &'static [(&'static str, &'static str)]);

/// A sweep or capacity search: latency, throughput and goodput against the load (and, for a
/// search, each point's good fraction with its interval against the target), and a table of
/// the points.
pub fn curve_section(c: &Curve) -> String {
    let mut out = String::new();
    let x_label = format!("{} ({})", c.parameter, c.unit);
    match c.kind {
        CurveKind::Sweep => {
            let _ = write!(out, r#"<section class="curve"><h2>Sweep of {}</h2>"#, esc(&x_label));
        }
        CurveKind::Search => {
            let answer = c.capacity.map_or("none passed".to_string(), |v| format!("{} {}", num(v), c.unit));
            let _ = write!(
                out,
                r#"<section class="curve"><h2>Capacity search on {}: capacity {}</h2><p>Target good fraction {}; stop: {}.</p>"#,
                esc(&x_label),
                esc(&answer),
                c.target.map_or("-".into(), num),
                esc(c.stop.as_deref().unwrap_or("-"))
            );
        }
    }
    out.push_str(r#"<div class="charts">"#);
    if c.kind == CurveKind::Search {
        let mean: Vec<(f64, f64)> = c.points.iter().map(|p| (p.value, p.good.map_or(f64::NAN, |g| g.mean))).collect();
        let low: Vec<(f64, f64)> = c.points.iter().map(|p| (p.value, p.good.map_or(f64::NAN, |g| g.low))).collect();
        let high: Vec<(f64, f64)> = c.points.iter().map(|p| (p.value, p.good.map_or(f64::NAN, |g| g.high))).collect();
        let mut lines = vec![
            Line { name: "good fraction".into(), colour: COLOURS[0], dashed: false, points: mean, ..Line::default() },
            Line { name: "interval low".into(), colour: COLOURS[0], dashed: true, points: low, ..Line::default() },
            Line { name: "interval high".into(), colour: COLOURS[4], dashed: true, points: high, ..Line::default() },
        ];
        if let (Some(t), Some(first), Some(last)) = (c.target, c.points.first(), c.points.last()) {
            lines.push(Line {
                name: "target".into(),
                colour: COLOURS[1],
                dashed: true,
                points: vec![(first.value, t), (last.value, t)],
                ..Line::default()
            });
        }
        out.push_str(&line_chart("curve-good", "Good fraction against load", &x_label, "fraction of requests", &lines));
    }
    let charts: [CurveChart; 5] = [
        (
            "curve-ttft",
            "TTFT against load",
            "ms",
            &[("time_to_first_token", "p50"), ("time_to_first_token", "p90"), ("time_to_first_token", "p99")],
        ),
        (
            "curve-latency",
            "Request latency against load",
            "ms",
            &[("request_latency", "p50"), ("request_latency", "p90"), ("request_latency", "p99")],
        ),
        ("curve-itl", "ITL against load", "ms", &[("inter_token_latency", "p50"), ("inter_token_latency", "p99")]),
        (
            "curve-throughput",
            "Throughput and goodput against load",
            "requests/sec",
            &[("request_throughput", "avg"), ("goodput", "avg")],
        ),
        ("curve-lateness", "Send lateness against load", "ms", &[("send_lateness", "p50"), ("send_lateness", "p99")]),
    ];
    for (id, title, unit, series) in charts {
        let lines: Vec<Line<'_>> = series
            .iter()
            .enumerate()
            .filter(|(_, (m, st))| c.has(m, st))
            .map(|(k, (m, st))| Line {
                name: if st == &"avg" { (*m).replace('_', " ") } else { (*st).to_string() },
                colour: COLOURS[k % COLOURS.len()],
                dashed: false,
                points: c.series(m, st),
                ..Line::default()
            })
            .collect();
        if !lines.is_empty() {
            out.push_str(&line_chart(id, title, &x_label, unit, &lines));
        }
    }
    out.push_str("</div>");
    let _ = write!(
        out,
        r#"<table class="curve-points"><thead><tr><th>{}</th><th>runs</th><th>request throughput</th><th>goodput</th><th>TTFT p99 (ms)</th><th>latency p99 (ms)</th><th>errors</th>"#,
        esc(&c.parameter)
    );
    if c.kind == CurveKind::Search {
        out.push_str("<th>good fraction [interval]</th><th>passed</th>");
    }
    out.push_str("<th>folder</th></tr></thead><tbody>");
    let cell = |v: Option<f64>| v.map_or("-".to_string(), num);
    for p in &c.points {
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            num(p.value),
            if p.was_cancelled { " (stopped)" } else { "" },
            p.runs,
            cell(p.get("request_throughput", "avg")),
            cell(p.get("goodput", "avg")),
            cell(p.get("time_to_first_token", "p99")),
            cell(p.get("request_latency", "p99")),
            cell(p.get("error_request_count", "avg")),
        );
        if let Some(g) = p.good {
            let _ = write!(
                out,
                "<td>{} [{}, {}]</td><td>{}</td>",
                num(g.mean),
                num(g.low),
                num(g.high),
                if g.passed {
                    "yes"
                } else if g.saturated {
                    "no (saturated)"
                } else {
                    "no"
                }
            );
        } else if c.kind == CurveKind::Search {
            out.push_str("<td>-</td><td>-</td>");
        }
        let _ = write!(out, "<td>{}</td></tr>", esc(&p.artifact_dir));
    }
    out.push_str("</tbody></table></section>");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::view::html::report_page_with;
    use crate::view::tests::run_of;

    #[test]
    fn a_sweep_is_drawn_against_its_load() {
        use crate::campaign::sweep::{Axis, Figure, SweepPoint, sweep_json};
        let fig =
            |metric: &str, stat: &'static str, value: f64| Figure { metric: metric.into(), stat, unit: "ms", value };
        let points: Vec<SweepPoint> = [10.0, 20.0, 40.0]
            .iter()
            .map(|&v| {
                let figures = vec![
                    fig("time_to_first_token", "p50", v),
                    fig("time_to_first_token", "p99", 2.0 * v),
                    fig("request_latency", "p99", 10.0 * v),
                    fig("request_throughput", "avg", v * 0.9),
                    fig("goodput", "avg", 12.0),
                ];
                SweepPoint::of(v, Axis::RequestRate.format(v), &[figures], false)
            })
            .collect();
        let curve = Curve::from_json("s", &sweep_json(Axis::RequestRate, &points, &serde_json::Value::Null)).unwrap();
        let html = curve_section(&curve);
        assert!(html.contains("Sweep of request_rate (requests/sec)"));
        for id in ["curve-ttft", "curve-latency", "curve-throughput"] {
            assert!(html.contains(&format!(r#"data-chart="{id}""#)), "{id}");
        }
        // No figure for ITL or lateness: no empty chart.
        assert!(!html.contains(r#"data-chart="curve-itl""#) && !html.contains(r#"data-chart="curve-good""#));
        // One path per series, three points each.
        assert_eq!(html.matches("<tr><td>").count(), 3);
        assert!(html.contains("<td>36</td>"), "request throughput 0.9 × 40");
        let run = run_of(20, "sub");
        let page = report_page_with(&[&curve], &[&run], 0);
        assert!(page.find("curve-ttft").unwrap() < page.find(r#"class="run""#).unwrap());
        assert!(!page.contains("https://"));
    }

    #[test]
    fn a_search_shows_its_answer_and_each_points_good_fraction() {
        use crate::campaign::search::search_json;
        let (s, answer) = crate::view::curve::tests::searched(8.0, 64.0, 0.2, |v| if v <= 20.0 { 0.97 } else { 0.4 });
        let text = search_json(crate::campaign::sweep::Axis::RequestRate, &s, Some(answer), &serde_json::Value::Null);
        let c = Curve::from_json("s", &text).unwrap();
        let html = curve_section(&c);
        let cap = num(answer.capacity.unwrap());
        assert!(html.contains(&format!("capacity {cap} requests/sec")), "{html}");
        assert!(html.contains(r#"data-chart="curve-good""#));
        assert!(html.contains("<td>yes</td>") && html.contains("<td>no"));
        assert_eq!(html.matches("<tr><td>").count(), s.points().len());
    }
}
