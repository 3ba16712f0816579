//! The trace's charts, drawn by the core's chart kit ([`aiperf_core::view::svg`]) that draws the
//! run report's: each `*_svg` function turns chart data into the kit's markup (numbers and
//! escaped texts only, values in hover texts), and each component inserts that markup.

use std::rc::Rc;

use aiperf_core::analysis::Analysis;
use aiperf_core::view::svg::{self, Axis, Bar, COLOURS, HBar, Line, Plot, Scale};
use yew::prelude::*;

use crate::chart_data::{Dist, Series};
use crate::format::{compact, int, pct};

/// The kit's markup as a node of the page.
pub(crate) fn markup(svg: String) -> Html {
    Html::from_html_unchecked(AttrValue::from(svg))
}

/// A chart with nothing to draw: its title and why.
fn empty(title: &str, why: &str) -> Html {
    html! { <figure class="chart"><figcaption>{ title }</figcaption><p class="muted">{ why }</p></figure> }
}

/// A chart's id from its title: `Input length` → `input-length`.
fn slug(title: &str) -> String {
    let s: String =
        title.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
}

/// Histogram (bars, left axis: requests) with the cumulative share (line, right axis: %).
/// `percent`: the values are fractions, shown as percentages.
pub fn dist_svg(title: &str, x_label: &str, d: &Dist, percent: bool) -> String {
    let xfmt = |v: f64| if percent { format!("{:.0}%", v * 100.0) } else { compact(v) };
    let range = |lo: f64, hi: f64| {
        if percent { format!("{:.0}–{:.0} %", lo * 100.0, hi * 100.0) } else { format!("{}–{}", int(lo), int(hi)) }
    };
    let bars = d
        .counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let lo = d.lo + d.step * i as f64;
            let hi = lo + d.step;
            let share = c as f64 / d.total.max(1) as f64;
            Bar {
                x0: lo,
                x1: hi,
                y: c as f64,
                tip: format!("{}: {} requests ({})", range(lo, hi), int(c as f64), pct(share)),
            }
        })
        .collect();
    let caption = if d.overflow > 0 {
        format!(
            "{} requests ({}) above {} are not drawn.",
            int(d.overflow as f64),
            pct(d.overflow as f64 / d.total.max(1) as f64),
            xfmt(d.hi())
        )
    } else {
        String::new()
    };
    svg::plot(
        &slug(title),
        title,
        &Plot {
            x: Axis {
                label: x_label,
                scale: if percent { Scale::Percent } else { Scale::Linear },
                range: Some((d.lo, d.hi())),
            },
            y: Axis { label: "requests", ..Axis::default() },
            bars,
            bar_name: "requests per bin",
            share: Some(Line {
                name: "cumulative share".into(),
                colour: COLOURS[1],
                points: d.cdf.clone(),
                ..Line::default()
            }),
            share_label: "cumulative %",
            caption,
            ..Plot::default()
        },
    )
}

#[derive(Properties, PartialEq)]
pub struct DistProps {
    pub title: AttrValue,
    /// The x quantity with its unit, e.g. "input length (tokens)".
    pub x_label: AttrValue,
    pub dist: Rc<Dist>,
    /// Values are fractions, shown as percentages.
    #[prop_or(false)]
    pub percent: bool,
}

/// Histogram with the cumulative share ([`dist_svg`]).
#[component]
pub fn DistChart(p: &DistProps) -> Html {
    if p.dist.total == 0 {
        return empty(&p.title, "No values.");
    }
    markup(dist_svg(&p.title, &p.x_label, &p.dist, p.percent))
}

/// Requests per second over time, one bar per window (minutes on the axis beyond ten minutes).
pub fn arrivals_svg(s: &Series) -> String {
    let end = s.points.last().map_or(1.0, |p| p.0 + s.window_s);
    let minutes = end > 600.0;
    let unit = if minutes { 60.0 } else { 1.0 };
    let bars = s
        .points
        .iter()
        .map(|&(x, y)| Bar {
            x0: x / unit,
            x1: (x + s.window_s) / unit,
            y,
            tip: format!("{}–{} s: {} requests/s", int(x), int(x + s.window_s), compact(y)),
        })
        .collect();
    let window = if s.window_s >= 60.0 {
        format!("{} min", compact(s.window_s / 60.0))
    } else {
        format!("{} s", compact(s.window_s))
    };
    svg::plot(
        "arrivals",
        "Arrivals over time",
        &Plot {
            x: Axis {
                label: if minutes { "time since the first request (min)" } else { "time since the first request (s)" },
                scale: Scale::Linear,
                range: Some((0.0, end / unit)),
            },
            y: Axis { label: "requests / s", ..Axis::default() },
            bars,
            caption: format!("Mean rate per {window} window."),
            ..Plot::default()
        },
    )
}

#[derive(Properties, PartialEq)]
pub struct SeriesProps {
    pub series: Rc<Series>,
}

/// Requests per second over time ([`arrivals_svg`]).
#[component]
pub fn ArrivalsChart(p: &SeriesProps) -> Html {
    if p.series.points.is_empty() {
        return empty("Arrivals over time", "The trace has no timestamps.");
    }
    markup(arrivals_svg(&p.series))
}

/// Hit rate of a finite LRU prefix cache by capacity (log axis), with the unbounded cache's as a
/// dashed line; `None` without a finite capacity to draw.
pub fn cache_svg(a: &Analysis) -> Option<String> {
    let points = &a.lru_hit_rate_curve;
    let finite: Vec<(f64, f64)> =
        points.iter().filter_map(|c| c.capacity_blocks.map(|b| (b as f64, c.hit_rate))).collect();
    let last = finite.last()?.0;
    let unbounded = points.iter().find(|c| c.capacity_blocks.is_none()).map(|c| c.hit_rate);
    let x_max = 10f64.powf(last.max(10.0).log10().ceil());
    let bs = f64::from(a.block_size);
    let point_tips =
        finite.iter().map(|&(x, y)| format!("{} blocks (≈ {} tokens): {}", int(x), compact(x * bs), pct(y))).collect();
    let mut lines = vec![Line {
        name: "finite LRU cache".into(),
        colour: COLOURS[0],
        points: finite,
        point_tips,
        ..Line::default()
    }];
    if let Some(u) = unbounded {
        lines.push(Line {
            name: "unbounded cache".into(),
            colour: COLOURS[2],
            dashed: true,
            points: vec![(1.0, u), (x_max, u)],
            tip: format!("unbounded cache: {}", pct(u)),
            ..Line::default()
        });
    }
    Some(svg::plot(
        "cache-hit-rate",
        "Finite-cache hit rate (LRU prefix cache)",
        &Plot {
            x: Axis { label: "cache capacity (blocks, log scale)", scale: Scale::Log, range: Some((1.0, x_max)) },
            y: Axis { label: "hit rate", scale: Scale::Percent, range: Some((0.0, 1.0)) },
            lines,
            caption: format!(
                "Dashed: unbounded cache ({}). One block = {} tokens.",
                unbounded.map(pct).unwrap_or_default(),
                int(bs)
            ),
            ..Plot::default()
        },
    ))
}

#[derive(Properties, PartialEq)]
pub struct CacheProps {
    /// Its `lru_hit_rate_curve` and `block_size` are drawn.
    pub analysis: Rc<Analysis>,
}

/// Hit rate by cache capacity ([`cache_svg`]).
#[component]
pub fn CacheChart(p: &CacheProps) -> Html {
    match cache_svg(&p.analysis) {
        Some(svg) => markup(svg),
        None => empty("Finite-cache hit rate", "No hash ids in this trace."),
    }
}

/// The largest prefix groups as horizontal bars, as shares of all requests.
pub fn groups_svg(a: &Analysis) -> String {
    let rows: Vec<HBar> = a
        .top_prefix_groups
        .iter()
        .map(|g| HBar {
            label: format!("root {}", g.root_id),
            value: g.requests as f64,
            text: format!("{} requests · {:.1} blocks shared", int(g.requests as f64), g.mean_shared_blocks),
            tip: format!(
                "root block {}: {} requests ({}), sharing {:.1} blocks on average, up to {}",
                g.root_id,
                int(g.requests as f64),
                pct(g.requests as f64 / a.total_requests.max(1) as f64),
                g.mean_shared_blocks,
                g.max_shared_blocks
            ),
        })
        .collect();
    svg::hbar_chart("prefix-groups", "Top prefix branches (requests sharing a first block)", &rows)
}

#[derive(Properties, PartialEq)]
pub struct GroupsProps {
    /// Its `top_prefix_groups` are drawn, as shares of `total_requests`.
    pub analysis: Rc<Analysis>,
}

/// The largest prefix groups ([`groups_svg`]).
#[component]
pub fn GroupsChart(p: &GroupsProps) -> Html {
    if p.analysis.top_prefix_groups.is_empty() {
        return empty("Top prefix branches", "No two requests share a first block.");
    }
    markup(groups_svg(&p.analysis))
}

/// Cumulative distributions of the original (solid) and the synthesized (dashed) trace.
pub fn cdf_compare_svg(title: &str, x_label: &str, original: &Dist, synthesized: &Dist) -> String {
    let median = |d: &Dist| d.cdf.iter().find(|p| p.1 >= 0.5).map(|p| compact(p.0)).unwrap_or_else(|| "–".into());
    let line = |name: &str, d: &Dist, colour, dashed| Line {
        name: name.into(),
        colour,
        dashed,
        points: d.cdf.clone(),
        tip: format!("{name}, median ≈ {}", median(d)),
        ..Line::default()
    };
    svg::plot(
        &format!("cdf-{}", slug(title)),
        title,
        &Plot {
            x: Axis { label: x_label, scale: Scale::Linear, range: Some((0.0, original.hi().max(synthesized.hi()))) },
            y: Axis { label: "share of requests ≤ x", scale: Scale::Percent, range: Some((0.0, 1.0)) },
            lines: vec![
                line("original", original, COLOURS[0], false),
                line("synthesized", synthesized, COLOURS[1], true),
            ],
            ..Plot::default()
        },
    )
}

#[derive(Properties, PartialEq)]
pub struct CdfCompareProps {
    pub title: AttrValue,
    pub x_label: AttrValue,
    pub original: Rc<Dist>,
    pub synthesized: Rc<Dist>,
}

/// Cumulative distributions of the original and the synthesized trace ([`cdf_compare_svg`]).
#[component]
pub fn CdfCompare(p: &CdfCompareProps) -> Html {
    markup(cdf_compare_svg(&p.title, &p.x_label, &p.original, &p.synthesized))
}

/// KV blocks held over time, one line per replica (or the mean and the fullest), with the
/// capacity as a dashed line when it is finite.
pub fn kv_svg(lines: &[(String, Vec<(f64, f64)>)], capacity: Option<u64>) -> String {
    let end = lines.iter().flat_map(|l| l.1.last()).map(|p| p.0).fold(0.0, f64::max);
    let mut drawn: Vec<Line> = lines
        .iter()
        .enumerate()
        .map(|(i, (name, points))| Line {
            name: name.clone(),
            colour: COLOURS[i % COLOURS.len()],
            points: points.clone(),
            tip: format!("{name}: up to {} blocks", int(points.iter().map(|p| p.1).fold(0.0, f64::max))),
            ..Line::default()
        })
        .collect();
    if let Some(cap) = capacity {
        drawn.push(Line {
            name: "capacity".into(),
            colour: "#777777",
            dashed: true,
            points: vec![(0.0, cap as f64), (end, cap as f64)],
            tip: format!("capacity: {} blocks per replica", int(cap as f64)),
            ..Line::default()
        });
    }
    svg::plot(
        "kv-usage",
        "KV cache usage over time",
        &Plot {
            x: Axis {
                label: "time since the first request (s)",
                scale: Scale::Linear,
                range: Some((0.0, end.max(1e-3))),
            },
            y: Axis { label: "blocks held", ..Axis::default() },
            lines: drawn,
            ..Plot::default()
        },
    )
}

/// Requests routed to each replica (the first `max` replicas), as horizontal bars.
pub fn balance_svg(requests: &[u64], max: usize) -> String {
    let total: u64 = requests.iter().sum();
    let rows: Vec<HBar> = requests
        .iter()
        .take(max)
        .enumerate()
        .map(|(i, &r)| HBar {
            label: format!("replica {i}"),
            value: r as f64,
            text: int(r as f64),
            tip: format!("replica {i}: {} requests ({})", int(r as f64), pct(r as f64 / total.max(1) as f64)),
        })
        .collect();
    svg::hbar_chart("routing-balance", "Requests per replica (routing balance)", &rows)
}

/// The prefix layers of an agentic dataset (blocks by how many sessions share them), as
/// horizontal bars of their distinct blocks.
pub fn layers_svg(layers: &[crate::agentic::Layer], block_size: u64) -> String {
    let rows: Vec<HBar> = layers
        .iter()
        .map(|l| HBar {
            label: l.name.clone(),
            value: l.blocks as f64,
            text: format!("{} blocks", int(l.blocks as f64)),
            tip: format!(
                "{}: {} distinct blocks (≈ {} tokens), {:.1} blocks a request in {} sessions",
                l.name,
                int(l.blocks as f64),
                compact((l.blocks * block_size) as f64),
                l.mean_blocks,
                int(l.sessions as f64)
            ),
        })
        .collect();
    svg::hbar_chart("prefix-layers", "Prefix layers (distinct blocks)", &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::view::svg::line_chart;

    #[test]
    fn the_trace_charts_are_drawn_by_the_reports_kit() {
        let dist = Dist::lengths(&(0..500).map(f64::from).chain([1e6]).collect::<Vec<_>>());
        let svg = dist_svg("Input <length>", "tokens", &dist, false);
        // The report's frame: same figure, same view box, same title.
        let report = line_chart("t", "T", "x", "y", &[]);
        let frame = r#"<svg viewBox="0 0 460 260" width="460" height="260" role="img" aria-label="#;
        assert!(svg.starts_with(&format!(r#"<figure class="chart" data-chart="input-length">{frame}"#)), "{svg}");
        assert!(report.starts_with(&format!(r#"<figure class="chart" data-chart="t">{frame}"#)));
        assert!(svg.contains(r#"<text x="60" y="16" class="title">Input &lt;length&gt;</text>"#));
        // The kit's plot, with one bar per bin (each with its hover text) and the cumulative share.
        assert_eq!(svg.matches("</rect>").count(), dist.counts.len());
        assert!(svg.contains(r#"<path class="share""#));
        assert!(svg.contains("Input &lt;length&gt;") && !svg.contains("<length>"));
        assert!(
            svg.contains(r#"<figcaption class="note">1 requests (0.2 %) above 500 are not drawn.</figcaption>"#),
            "{svg}"
        );
        let tips: Vec<&str> = svg
            .match_indices("<title>")
            .map(|(i, _)| &svg[i + 7..i + 7 + svg[i + 7..].find('<').unwrap_or(0)])
            .collect();
        assert_eq!(tips[0], "0–10: 10 requests (2.0 %)");
    }

    #[test]
    fn every_trace_chart_keeps_its_hover_texts() {
        let s = Series::rates(&[1, 3, 2, 2, 5], 1.0, 2);
        let a = arrivals_svg(&s);
        assert!(a.contains("<title>0–3 s: 2 requests/s</title>") && a.contains("Mean rate per 3 s window."), "{a}");
        let d = Dist::lengths(&[1.0, 2.0, 3.0]);
        let c = cdf_compare_svg("ISL, original vs synthesized", "tokens", &d, &d);
        assert!(c.contains(r#"data-chart="cdf-isl-original-vs-synthesized""#));
        assert!(
            c.contains("<title>original, median ≈ 2</title>") && c.contains("<title>synthesized, median ≈ 2</title>")
        );
        assert_eq!(slug("Context length (reused prefix)"), "context-length-reused-prefix");
        let kv = kv_svg(&[("replica 0".into(), vec![(0.0, 1.0), (2.0, 5.0)])], Some(8));
        assert!(kv.contains("<title>replica 0: up to 5 blocks</title>") && kv.contains("capacity: 8 blocks"), "{kv}");
        let b = balance_svg(&[3, 1], 16);
        assert!(b.contains("<title>replica 0: 3 requests (75.0 %)</title>"), "{b}");
    }
}
