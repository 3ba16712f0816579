//! Runs as HTML with inline SVG charts: the fragment the browser app shows and the self-contained
//! report file of `aiperf-cli report` (the same fragment inside a page with its CSS, the records
//! of the plotted points and a few lines of JavaScript for the record-on-click). Nothing refers to
//! anything outside the document: no scripts, fonts, images or styles from the network.
//!
//! To add a chart: compute its data in [`super::charts`], draw it with [`super::svg::line_chart`],
//! [`super::svg::scatter_chart`], [`super::svg::bar_chart`], [`super::svg::lanes_chart`] or
//! [`super::svg::plot`] inside [`run_section`] (one run) or [`comparison_section`].

mod curve;
mod tables;

pub use curve::curve_section;
pub use tables::{energy_table, gpu_table, summary_table};

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::charts::{Quantity, Slices, band, cdf, hist, rates, scatters};
use super::compare::{Comparison, compare, num};
use super::curve::Curve;
use super::run::Run;
use super::sessions::{LaneBarKind, SwimLane, has_multi_turn_sessions, swim_lane};
use super::svg::{
    Axis, COLOURS, Lanes, Line, Plot, RowBar, bar_chart, esc, lanes_chart, line_chart, plot, scatter_chart, tick,
};
use crate::results::aggregate::Report;

/// A slice width in seconds, never rounded to zero: `0.001`, `0.02`, `0.5`, `2`, `1.5`.
fn slice_width(w: f64) -> String {
    if w >= 1.0 {
        return tick(w);
    }
    let s = format!("{w:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" { format!("{w:e}") } else { s.to_owned() }
}

/// One run: summary, time series, the swim-lane of its sessions (when a session has more than one
/// turn), distributions, trace-aware scatter plots.
pub fn run_section(run: &Run, k: usize) -> String {
    RunSection::of(run, k).with_summary(&run.report)
}

/// A run's section but its summary table: the rest is drawn from the records (and the request
/// count), so it can be made before the summary's time-weighted metrics are known, while
/// another worker computes them.
#[derive(Debug)]
pub struct RunSection {
    head: String,
    rest: String,
}

impl RunSection {
    pub fn of(run: &Run, k: usize) -> RunSection {
        let head = format!(
            r#"<section class="run" data-run="{k}"><h2 class="run-label c{}">{}</h2>"#,
            k % COLOURS.len(),
            esc(&run.label)
        );
        RunSection { head, rest: section_rest(run, k) }
    }

    /// The section, with `report`'s summary table in its place.
    pub fn with_summary(self, report: &Report) -> String {
        let table = summary_table(report);
        let mut out = String::with_capacity(self.head.len() + table.len() + self.rest.len());
        out.push_str(&self.head);
        out.push_str(&table);
        out.push_str(&self.rest);
        out
    }
}

/// What follows the summary table in a run's section.
fn section_rest(run: &Run, k: usize) -> String {
    let mut out = String::new();
    if let Some(t) = &run.gpus {
        out.push_str(&gpu_table(t));
    }
    out.push_str(&energy_table(&run.gpu_energy));
    let s = Slices::of(run);
    out.push_str(r#"<h3>Over the run</h3>"#);
    let quantities: &[Quantity] = if run.report.request_count == 0 {
        out.push_str(r#"<p class="note">No request succeeded: over the run, only the send lateness is drawn.</p>"#);
        &[Quantity::Lateness]
    } else {
        &[Quantity::Ttft, Quantity::Itl, Quantity::Latency, Quantity::Lateness]
    };
    out.push_str(r#"<div class="charts">"#);
    for &q in quantities {
        let b = band(run, &s, q);
        let lines: Vec<Line<'_>> =
            [("p50", &b.p50, COLOURS[0]), ("p90", &b.p90, COLOURS[3]), ("p99", &b.p99, COLOURS[1])]
                .into_iter()
                .map(|(name, y, colour)| Line {
                    name: name.into(),
                    colour,
                    dashed: false,
                    points: b.t.iter().copied().zip(y.iter().copied()).collect(),
                    ..Line::default()
                })
                .collect();
        let title = format!("{} per {} s slice{} (p50, p90, p99)", q.name(), slice_width(s.width_s), run_slices(&s));
        out.push_str(&line_chart(
            &format!("band-{}", slug(q.name())),
            &title,
            "time (s)",
            &format!("{} ({})", q.name(), q.unit()),
            &lines,
        ));
    }
    for r in rates(run, &s) {
        let line = Line {
            name: r.name.into(),
            colour: COLOURS[2],
            dashed: false,
            points: r.t.iter().copied().zip(r.y).collect(),
            ..Line::default()
        };
        out.push_str(&line_chart(
            &format!("rate-{}", slug(r.name)),
            &format!("{} per {} s slice{}", r.name, slice_width(s.width_s), run_slices(&s)),
            "time (s)",
            r.unit,
            &[line],
        ));
    }
    if let Some(srv) = &run.server {
        let _ = write!(out, r#"</div><h3>The server's metrics ({})</h3><div class="charts">"#, esc(&srv.endpoint));
        for (i, (title, unit, tracks)) in srv.charts.iter().enumerate() {
            let lines: Vec<Line<'_>> = tracks
                .iter()
                .enumerate()
                .map(|(j, t)| Line {
                    name: t.name.clone(),
                    colour: COLOURS[j % COLOURS.len()],
                    dashed: false,
                    points: t.points.clone(),
                    ..Line::default()
                })
                .collect();
            out.push_str(&line_chart(&format!("server-{i}"), title, "time since the run's start (s)", unit, &lines));
        }
    }
    if has_multi_turn_sessions(run) {
        out.push_str(r#"</div><h3>Sessions</h3><div class="charts">"#);
        swim_lane_charts(&mut out, &swim_lane(run));
    }
    out.push_str(r#"</div><h3>Distributions</h3><div class="charts">"#);
    for q in Quantity::DISTRIBUTIONS {
        let v = q.sorted_values(run);
        if v.is_empty() {
            continue;
        }
        let axis = format!("{} ({})", q.name(), q.unit());
        let line = Line {
            name: run.label.clone(),
            colour: COLOURS[k % COLOURS.len()],
            dashed: false,
            points: cdf(&v),
            ..Line::default()
        };
        out.push_str(&line_chart(
            &format!("cdf-{}", slug(q.name())),
            &format!("{} CDF", q.name()),
            &axis,
            "fraction of requests",
            &[line],
        ));
        out.push_str(&bar_chart(
            &format!("hist-{}", slug(q.name())),
            &format!("{} histogram", q.name()),
            &axis,
            &hist(&v),
        ));
    }
    out.push_str(r#"</div><h3>Requests (click a point for its record)</h3><div class="charts">"#);
    for c in scatters(run) {
        out.push_str(&scatter_chart(c.id, c.title, c.x_label, c.y_label, &[(k, COLOURS[k % COLOURS.len()], &c.data)]));
    }
    out.push_str("</div></section>");
    out
}

/// The swim-lane (sessions on their slots) and, on the same time axis, the requests in flight
/// and sessions open.
fn swim_lane_charts(out: &mut String, lane: &SwimLane) {
    let x = Axis { label: "time (s)", range: Some((0.0, lane.end_s)), ..Axis::default() };
    let bars = lane
        .bars
        .iter()
        .map(|b| RowBar { row: b.row, x0: b.x0, x1: b.x1, light: b.kind == LaneBarKind::Delay, tip: b.tip.clone() })
        .collect();
    let mut caption = String::from(
        "Each session on a slot, reused once the session before it ended: turns dark, delays between turns light, a tick where a session starts on a used slot.",
    );
    let note = lane.summary_note();
    if !note.is_empty() {
        caption.push(' ');
        caption.push_str(&note);
    }
    out.push_str(&lanes_chart(
        "swim-lane",
        &format!("Sessions on {} slots ({} sessions)", lane.slots, lane.sessions),
        &Lanes { x: x.clone(), row_label: "slot", rows: lane.rows, bars, marks: lane.reuses.clone(), caption },
    ));
    let slots = lane.slots as f64;
    let lines = vec![
        Line {
            name: "requests in flight".into(),
            colour: COLOURS[0],
            points: lane.in_flight.clone(),
            ..Line::default()
        },
        Line { name: "sessions open".into(), colour: COLOURS[4], points: lane.open.clone(), ..Line::default() },
        Line {
            name: "slots".into(),
            colour: COLOURS[1],
            dashed: true,
            points: vec![(0.0, slots), (lane.end_s, slots)],
            ..Line::default()
        },
    ];
    out.push_str(&plot(
        "swim-lane-concurrency",
        "Requests in flight and sessions open",
        &Plot { x, y: Axis { label: "count", ..Axis::default() }, lines, ..Plot::default() },
    ));
}

/// Marks charts drawn on the run's own `--slice-duration` slices.
fn run_slices(s: &Slices) -> &'static str {
    if s.from_run { " (--slice-duration)" } else { "" }
}

fn slug(s: &str) -> String {
    s.to_lowercase().replace(' ', "-")
}

/// Several runs: the side-by-side table, differing settings, overlaid CDFs and time series.
pub fn comparison_section(runs: &[&Run], c: &Comparison) -> String {
    let mut out = String::from(
        r#"<section class="comparison"><h2>Comparison</h2><table class="compare"><thead><tr><th>Metric</th>"#,
    );
    for (i, l) in c.labels.iter().enumerate() {
        let base = if i == c.baseline { " (baseline)" } else { "" };
        let _ = write!(out, r#"<th class="c{}">{}{base}</th>"#, i % COLOURS.len(), esc(l));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &c.rows {
        let _ = write!(out, "<tr><td>{} ({})</td>", esc(&r.name), r.unit);
        for (i, v) in r.values.iter().enumerate() {
            let cell = match (v, r.change(i, c.baseline)) {
                (None, _) => "-".to_string(),
                (Some(v), _) if i == c.baseline => num(*v),
                (Some(v), Some((d, Some(p)))) => format!(r#"{} <small>{d:+.2} ({p:+.1}%)</small>"#, num(*v)),
                (Some(v), Some((d, None))) => format!(r#"{} <small>{d:+.2}</small>"#, num(*v)),
                (Some(v), None) => num(*v),
            };
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    if c.config_diff.is_empty() {
        out.push_str(r#"<p class="config-diff">Same input_config for every run.</p>"#);
    } else {
        out.push_str(r#"<table class="config-diff"><thead><tr><th>input_config</th>"#);
        for l in &c.labels {
            let _ = write!(out, "<th>{}</th>", esc(l));
        }
        out.push_str("</tr></thead><tbody>");
        for (k, vals) in &c.config_diff {
            let _ = write!(out, "<tr><td>{}</td>", esc(k));
            for v in vals {
                let _ = write!(out, "<td>{}</td>", esc(v));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
    }
    out.push_str(r#"<div class="charts">"#);
    let colour = |i: usize| COLOURS[i % COLOURS.len()];
    for q in [Quantity::Ttft, Quantity::Itl, Quantity::Latency, Quantity::Osl] {
        let lines: Vec<Line<'_>> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| Line {
                name: r.label.clone(),
                colour: colour(i),
                dashed: false,
                points: cdf(&q.sorted_values(r)),
                ..Line::default()
            })
            .collect();
        out.push_str(&line_chart(
            &format!("cmp-cdf-{}", slug(q.name())),
            &format!("{} CDF", q.name()),
            &format!("{} ({})", q.name(), q.unit()),
            "fraction of requests",
            &lines,
        ));
    }
    // Time series: each run from its own first send.
    for q in [Quantity::Ttft, Quantity::Latency] {
        let lines: Vec<Line<'_>> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let b = band(r, &Slices::of(r), q);
                Line {
                    name: r.label.clone(),
                    colour: colour(i),
                    dashed: false,
                    points: b.t.into_iter().zip(b.p50).collect(),
                    ..Line::default()
                }
            })
            .collect();
        out.push_str(&line_chart(
            &format!("cmp-band-{}", slug(q.name())),
            &format!("{} p50 over the run", q.name()),
            "time (s)",
            &format!("{} ({})", q.name(), q.unit()),
            &lines,
        ));
    }
    let lines: Vec<Line<'_>> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let rt = rates(r, &Slices::of(r)).swap_remove(0);
            Line {
                name: r.label.clone(),
                colour: colour(i),
                dashed: false,
                points: rt.t.into_iter().zip(rt.y).collect(),
                ..Line::default()
            }
        })
        .collect();
    out.push_str(&line_chart("cmp-throughput", "Request throughput over the run", "time (s)", "requests/s", &lines));
    out.push_str("</div></section>");
    out
}

/// The body of a page showing `runs` (the browser app sets it into its run view).
pub fn runs_fragment(runs: &[&Run], baseline: usize) -> String {
    let sections: Vec<String> = runs.iter().enumerate().map(|(k, r)| run_section(r, k)).collect();
    runs_fragment_of(runs, baseline, &sections)
}

/// [`runs_fragment`] with each run's section already made (`sections[k]`: [`run_section`] of run
/// `k`).
pub fn runs_fragment_of(runs: &[&Run], baseline: usize, sections: &[String]) -> String {
    let mut out = String::new();
    if runs.len() > 1 {
        out.push_str(&comparison_section(runs, &compare(runs, baseline)));
    }
    for s in sections {
        out.push_str(s);
    }
    out
}

/// Styles of the run views: inlined in the report, and linked by the web app's `index.html` (the
/// page's security policy admits no inline style). No `style` attribute is used.
pub const CSS: &str = include_str!("../runs.css");

/// The self-contained report file: one page, no network.
pub fn report_page(runs: &[&Run], baseline: usize) -> String {
    report_page_with(&[], runs, baseline)
}

/// The report file with sweeps or searches drawn first.
pub fn report_page_with(curves: &[&Curve], runs: &[&Run], baseline: usize) -> String {
    let mut names: Vec<String> = curves.iter().map(|c| format!("{} curve", c.parameter)).collect();
    names.extend(runs.iter().map(|r| r.label.clone()));
    let title = names.join(" vs ");
    let mut out = String::with_capacity(1 << 20);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\"><title>aiperf-cli report: {}</title><style>{CSS}body{{margin:16px}}</style></head><body class=\"runs\"><h1>aiperf-cli report</h1>",
        esc(&title)
    );
    for c in curves {
        out.push_str(&curve_section(c));
    }
    if !runs.is_empty() {
        out.push_str(&runs_fragment(runs, baseline));
    }
    out.push_str(r#"<pre class="record" id="record">Click a point to see that request's record.</pre>"#);
    // The records of the plotted points, per run, keyed by request index.
    for (k, r) in runs.iter().enumerate() {
        let mut shown: BTreeMap<u32, String> = BTreeMap::new();
        let t0 = r.t0_ns();
        for c in scatters(r) {
            for &i in &c.data.index {
                shown.entry(i).or_insert_with(|| r.describe_from(i as usize, t0).unwrap_or_default());
            }
        }
        // No `<` inside the JSON (only in its strings, escaped), so nothing can end the element early.
        let json = serde_json::to_string(&shown).unwrap_or_default().replace('<', "\\u003c");
        let _ = write!(out, r#"<script type="application/json" id="records-{k}">{json}</script>"#);
    }
    out.push_str(
        r#"<script>
document.addEventListener('click', function (e) {
  var c = e.target.closest ? e.target.closest('[data-i]') : null;
  if (!c) return;
  var data = JSON.parse(document.getElementById('records-' + c.getAttribute('data-run')).textContent);
  document.getElementById('record').textContent = data[c.getAttribute('data-i')] || '';
});
</script></body></html>
"#,
    );
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::tests::run_of;
    use super::*;

    #[test]
    fn report_is_self_contained_and_escaped() {
        let a = run_of(120, "a<script>");
        let b = run_of(80, "b");
        let page = report_page(&[&a, &b], 0);
        assert!(!page.contains("a<script>"));
        assert!(page.contains("a&lt;script&gt;"));
        for needle in ["http://", "https://", "src=", "href=", "@import", "url("] {
            let hits: Vec<_> = page
                .match_indices(needle)
                .filter(|(i, _)| !page[*i..].starts_with("http://www.w3.org/2000/svg"))
                .collect();
            assert!(hits.is_empty(), "{needle} in the report");
        }
        assert!(page.contains(r#"class="compare""#));
        assert!(!runs_fragment(&[&a, &b], 1).contains("style="), "the app's CSP admits no inline style");
        assert!(page.matches("<svg").count() >= 20);
        let ttft = a.report.get(crate::results::metrics::Metric::TimeToFirstToken).unwrap();
        assert!(page.contains(&format!("<td>{:.2}</td>", ttft.percentiles[4])));
        // Every plotted point has its record.
        let start = page.find(r#"id="records-0">"#).unwrap() + r#"id="records-0">"#.len();
        let end = start + page[start..].find("</script>").unwrap();
        let recs: BTreeMap<String, String> = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(recs.len(), 120);
        assert!(recs["0"].contains("trace line: 1"));
    }

    #[test]
    fn aiperfs_session_run_gets_a_swim_lane_and_a_one_turn_run_none() {
        let (run, _) = super::super::tests::aiperf_run("sessions");
        let html = run_section(&run, 0);
        let start = html.find(r#"<figure class="chart" data-chart="swim-lane">"#).unwrap();
        let lane = &html[start..start + html[start..].find("</figure>").unwrap()];
        // 10 sessions of 3 turns: every turn once, the 2 delays of each session between them.
        assert!(lane.contains("(10 sessions)"), "{lane}");
        assert_eq!(lane.matches(", turn ").count(), 30);
        assert_eq!(lane.matches("between turns before turn").count(), 20);
        assert!(lane.contains("session s0, turn 2: sent"));
        assert!(!lane.contains("Drawn:"), "the whole run is drawn");
        assert!(html.contains(r#"data-chart="swim-lane-concurrency""#));
        assert!(html.find("<h3>Sessions</h3>").unwrap() < html.find("<h3>Distributions</h3>").unwrap());
        let (one, _) = super::super::tests::aiperf_run("non-streaming");
        assert!(!run_section(&one, 0).contains("swim-lane"));
    }
}
