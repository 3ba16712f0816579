//! Charts as SVG built by components: one frame (axes, ticks, labels) shared by all, values in
//! tooltips (`<title>`) and in the text around them.

use std::rc::Rc;

use aiperf_core::analysis::Analysis;
use yew::prelude::*;

use crate::chart_data::{Dist, Series, log_ticks, ticks};
use crate::format::{compact, int, pct};

const W: f64 = 560.0;
const H: f64 = 250.0;
const L: f64 = 58.0;
const R: f64 = 52.0;
const T: f64 = 12.0;
const B: f64 = 44.0;

fn px(f: f64) -> String {
    format!("{f:.1}")
}

/// Maps data to the plot area.
struct Frame {
    x_max: f64,
    y_max: f64,
    x_log: bool,
    x_min: f64,
}

impl Frame {
    fn x(&self, v: f64) -> f64 {
        let t = if self.x_log {
            (v.max(self.x_min).log10() - self.x_min.log10()) / (self.x_max.log10() - self.x_min.log10())
        } else {
            v / self.x_max
        };
        L + t.clamp(0.0, 1.0) * (W - L - R)
    }
    fn y(&self, v: f64) -> f64 {
        H - B - (v / self.y_max).clamp(0.0, 1.0) * (H - T - B)
    }
    /// `y` on the right axis, 0..=1.
    fn y_frac(&self, f: f64) -> f64 {
        H - B - f.clamp(0.0, 1.0) * (H - T - B)
    }

    fn axes(
        &self,
        xt: &[f64],
        yt: &[f64],
        xfmt: &dyn Fn(f64) -> String,
        yfmt: &dyn Fn(f64) -> String,
        xl: &str,
        yl: &str,
    ) -> Html {
        html! {
            <g class="axes">
                { for yt.iter().map(|&v| { let y = px(self.y(v)); html! {
                    <g>
                        <line class="grid" x1={px(L)} x2={px(W - R)} y1={y.clone()} y2={y.clone()} />
                        <text class="tick" x={px(L - 6.0)} y={y} dy="0.32em" text-anchor="end">{ yfmt(v) }</text>
                    </g>
                }})}
                { for xt.iter().map(|&v| { let x = px(self.x(v)); html! {
                    <g>
                        <line class="tickmark" x1={x.clone()} x2={x.clone()} y1={px(H - B)} y2={px(H - B + 4.0)} />
                        <text class="tick" x={x} y={px(H - B + 16.0)} text-anchor="middle">{ xfmt(v) }</text>
                    </g>
                }})}
                <line class="axis" x1={px(L)} x2={px(W - R)} y1={px(H - B)} y2={px(H - B)} />
                <line class="axis" x1={px(L)} x2={px(L)} y1={px(T)} y2={px(H - B)} />
                <text class="label" x={px((L + W - R) / 2.0)} y={px(H - 6.0)} text-anchor="middle">{ xl }</text>
                <text class="label" transform={format!("translate(14 {}) rotate(-90)", px((T + H - B) / 2.0))} text-anchor="middle">{ yl }</text>
            </g>
        }
    }
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

/// Histogram (bars, left axis: requests) with the CDF (line, right axis: % of requests).
#[component]
pub fn DistChart(p: &DistProps) -> Html {
    let d = &p.dist;
    if d.total == 0 {
        return html! { <figure class="chart"><figcaption>{ &p.title }</figcaption><p class="muted">{ "No values." }</p></figure> };
    }
    let ymax_raw = d.counts.iter().copied().max().unwrap_or(1) as f64;
    let yt = ticks(ymax_raw, 4);
    let xt = ticks(d.hi(), 6);
    let f = Frame { x_max: *xt.last().unwrap_or(&1.0), y_max: *yt.last().unwrap_or(&1.0), x_log: false, x_min: 0.0 };
    let percent = p.percent;
    let xfmt = move |v: f64| if percent { format!("{:.0}%", v * 100.0) } else { compact(v) };
    let range = |lo: f64, hi: f64| {
        if percent { format!("{:.0}–{:.0} %", lo * 100.0, hi * 100.0) } else { format!("{}–{}", int(lo), int(hi)) }
    };
    let bars = d.counts.iter().enumerate().map(|(i, &c)| {
        let lo = d.lo + d.step * i as f64;
        let hi = lo + d.step;
        let (x0, x1) = (f.x(lo), f.x(hi));
        let y = f.y(c as f64);
        let tip = format!("{}: {} requests ({})", range(lo, hi), int(c as f64), pct(c as f64 / d.total as f64));
        html! {
            <rect class="bar" x={px(x0 + 0.5)} y={px(y)} width={px((x1 - x0 - 1.0).max(0.5))} height={px(H - B - y)}>
                <title>{ tip }</title>
            </rect>
        }
    });
    let cdf: String =
        d.cdf.iter().map(|&(x, q)| format!("{},{}", px(f.x(x)), px(f.y_frac(q)))).collect::<Vec<_>>().join(" ");
    let right = [0.0, 0.25, 0.5, 0.75, 1.0];
    let note = if d.overflow > 0 {
        format!(
            "{} requests ({}) above {} are not drawn.",
            int(d.overflow as f64),
            pct(d.overflow as f64 / d.total as f64),
            xfmt(d.hi())
        )
    } else {
        String::new()
    };
    html! {
        <figure class="chart">
            <figcaption>{ &p.title }</figcaption>
            <svg viewBox={format!("0 0 {W} {H}")} role="img" aria-label={format!("{}: histogram and cumulative distribution", p.title)}>
                { f.axes(&xt, &yt, &xfmt, &|v| compact(v), &p.x_label, "requests") }
                { for bars }
                <polyline class="cdf" points={cdf} />
                { for right.iter().map(|&q| html! {
                    <text class="tick cdf-tick" x={px(W - R + 6.0)} y={px(f.y_frac(q))} dy="0.32em">{ format!("{:.0}%", q * 100.0) }</text>
                })}
                <text class="label cdf-tick" transform={format!("translate({} {}) rotate(90)", px(W - 8.0), px((T + H - B) / 2.0))} text-anchor="middle">{ "cumulative %" }</text>
            </svg>
            <p class="legend"><span class="key bar-key"></span>{ "requests per bin" }<span class="key cdf-key"></span>{ "cumulative share" }{ if note.is_empty() { html!{} } else { html!{ <span class="muted">{ format!(" · {note}") }</span> } } }</p>
        </figure>
    }
}

#[derive(Properties, PartialEq)]
pub struct SeriesProps {
    pub series: Rc<Series>,
}

/// Requests per second over time.
#[component]
pub fn ArrivalsChart(p: &SeriesProps) -> Html {
    let s = &p.series;
    if s.points.is_empty() {
        return html! { <figure class="chart"><figcaption>{ "Arrivals over time" }</figcaption><p class="muted">{ "The trace has no timestamps." }</p></figure> };
    }
    let end = s.points.last().map_or(1.0, |p| p.0 + s.window_s);
    let minutes = end > 600.0;
    let unit = if minutes { 60.0 } else { 1.0 };
    let xt = ticks(end / unit, 6);
    let ymax = s.points.iter().map(|p| p.1).fold(0.0, f64::max);
    let yt = ticks(ymax, 4);
    let f = Frame { x_max: *xt.last().unwrap_or(&1.0), y_max: *yt.last().unwrap_or(&1.0), x_log: false, x_min: 0.0 };
    let mut path = format!("M{},{}", px(f.x(0.0)), px(f.y(0.0)));
    for &(x, y) in &s.points {
        path += &format!(" L{},{} L{},{}", px(f.x(x / unit)), px(f.y(y)), px(f.x((x + s.window_s) / unit)), px(f.y(y)));
    }
    path += &format!(" L{},{} Z", px(f.x(end / unit)), px(f.y(0.0)));
    let cols = s.points.iter().map(|&(x, y)| {
        let (x0, x1) = (f.x(x / unit), f.x((x + s.window_s) / unit));
        let tip = format!("{}–{} s: {} requests/s", int(x), int(x + s.window_s), compact(y));
        html! { <rect class="hover" x={px(x0)} y={px(T)} width={px((x1 - x0).max(0.5))} height={px(H - T - B)}><title>{ tip }</title></rect> }
    });
    let xl = if minutes { "time since the first request (min)" } else { "time since the first request (s)" };
    html! {
        <figure class="chart">
            <figcaption>{ "Arrivals over time" }</figcaption>
            <svg viewBox={format!("0 0 {W} {H}")} role="img" aria-label="request rate over time">
                { f.axes(&xt, &yt, &|v| compact(v), &|v| compact(v), xl, "requests / s") }
                <path class="area" d={path} />
                { for cols }
            </svg>
            <p class="legend muted">{ format!("Mean rate per {} window.", if s.window_s >= 60.0 { format!("{} min", compact(s.window_s / 60.0)) } else { format!("{} s", compact(s.window_s)) }) }</p>
        </figure>
    }
}

#[derive(Properties, PartialEq)]
pub struct CacheProps {
    /// Its `lru_hit_rate_curve` and `block_size` are drawn.
    pub analysis: Rc<Analysis>,
}

/// Hit rate of a finite LRU prefix cache by capacity (log axis), with the unbounded cache.
#[component]
pub fn CacheChart(p: &CacheProps) -> Html {
    let points = &p.analysis.lru_hit_rate_curve;
    let finite: Vec<(f64, f64)> =
        points.iter().filter_map(|c| c.capacity_blocks.map(|b| (b as f64, c.hit_rate))).collect();
    let unbounded = points.iter().find(|c| c.capacity_blocks.is_none()).map(|c| c.hit_rate);
    if finite.is_empty() {
        return html! { <figure class="chart"><figcaption>{ "Finite-cache hit rate" }</figcaption><p class="muted">{ "No hash ids in this trace." }</p></figure> };
    }
    let hi = finite.last().map_or(10.0, |p| p.0).max(10.0);
    let xt = log_ticks(1.0, hi);
    let yt = [0.0, 0.25, 0.5, 0.75, 1.0];
    let f = Frame { x_max: *xt.last().unwrap_or(&10.0), y_max: 1.0, x_log: true, x_min: 1.0 };
    let line: String =
        finite.iter().map(|&(x, y)| format!("{},{}", px(f.x(x)), px(f.y(y)))).collect::<Vec<_>>().join(" ");
    let bs = f64::from(p.analysis.block_size);
    let dots = finite.iter().map(|&(x, y)| {
        let tip = format!("{} blocks (≈ {} tokens): {}", int(x), compact(x * bs), pct(y));
        html! { <circle class="dot" cx={px(f.x(x))} cy={px(f.y(y))} r="3.5"><title>{ tip }</title></circle> }
    });
    html! {
        <figure class="chart">
            <figcaption>{ "Finite-cache hit rate (LRU prefix cache)" }</figcaption>
            <svg viewBox={format!("0 0 {W} {H}")} role="img" aria-label="hit rate by cache capacity">
                { f.axes(&xt, &yt, &|v| compact(v), &|v| format!("{:.0}%", v * 100.0), "cache capacity (blocks, log scale)", "hit rate") }
                { unbounded.map(|u| html! {
                    <g>
                        <line class="ref" x1={px(L)} x2={px(W - R)} y1={px(f.y(u))} y2={px(f.y(u))} />
                        <text class="tick" x={px(W - R + 4.0)} y={px(f.y(u))} dy="0.32em">{ format!("{:.1}%", u * 100.0) }</text>
                    </g>
                }).unwrap_or_default() }
                <polyline class="line" points={line} />
                { for dots }
            </svg>
            <p class="legend muted">{ format!("Dashed: unbounded cache ({}). One block = {} tokens.", unbounded.map(pct).unwrap_or_default(), int(bs)) }</p>
        </figure>
    }
}

#[derive(Properties, PartialEq)]
pub struct GroupsProps {
    /// Its `top_prefix_groups` are drawn, as shares of `total_requests`.
    pub analysis: Rc<Analysis>,
}

/// The largest prefix groups as horizontal bars.
#[component]
pub fn GroupsChart(p: &GroupsProps) -> Html {
    let (groups, total) = (&p.analysis.top_prefix_groups, p.analysis.total_requests);
    if groups.is_empty() {
        return html! { <figure class="chart"><figcaption>{ "Top prefix branches" }</figcaption><p class="muted">{ "No two requests share a first block." }</p></figure> };
    }
    let max = groups.iter().map(|g| g.requests).max().unwrap_or(1) as f64;
    let row_h = 22.0;
    let h = row_h * groups.len() as f64 + 8.0;
    let (l, r) = (110.0, 215.0);
    let rows = groups.iter().enumerate().map(|(i, g)| {
        let y = 4.0 + row_h * i as f64;
        let w = (g.requests as f64 / max) * (W - l - r);
        let tip = format!(
            "root block {}: {} requests ({}), sharing {:.1} blocks on average, up to {}",
            g.root_id, int(g.requests as f64), pct(g.requests as f64 / total.max(1) as f64), g.mean_shared_blocks, g.max_shared_blocks
        );
        html! {
            <g>
                <text class="tick" x={px(l - 8.0)} y={px(y + row_h / 2.0)} dy="0.32em" text-anchor="end">{ format!("root {}", g.root_id) }</text>
                <rect class="bar" x={px(l)} y={px(y + 3.0)} width={px(w.max(1.0))} height={px(row_h - 6.0)}><title>{ tip }</title></rect>
                <text class="tick" x={px(l + w + 6.0)} y={px(y + row_h / 2.0)} dy="0.32em">{ format!("{} requests · {:.1} blocks shared", int(g.requests as f64), g.mean_shared_blocks) }</text>
            </g>
        }
    });
    html! {
        <figure class="chart">
            <figcaption>{ "Top prefix branches (requests sharing a first block)" }</figcaption>
            <svg viewBox={format!("0 0 {W} {h}")} role="img" aria-label="largest prefix groups">{ for rows }</svg>
        </figure>
    }
}

#[derive(Properties, PartialEq)]
pub struct CdfCompareProps {
    pub title: AttrValue,
    pub x_label: AttrValue,
    pub original: Rc<Dist>,
    pub synthesized: Rc<Dist>,
}

/// Cumulative distributions of the original and the synthesized trace on one axis.
#[component]
pub fn CdfCompare(p: &CdfCompareProps) -> Html {
    let hi = p.original.hi().max(p.synthesized.hi());
    let xt = ticks(hi, 6);
    let f = Frame { x_max: *xt.last().unwrap_or(&1.0), y_max: 1.0, x_log: false, x_min: 0.0 };
    let yt = [0.0, 0.25, 0.5, 0.75, 1.0];
    let line = |d: &Dist| {
        d.cdf.iter().map(|&(x, q)| format!("{},{}", px(f.x(x)), px(f.y_frac(q)))).collect::<Vec<_>>().join(" ")
    };
    let median = |d: &Dist| d.cdf.iter().find(|p| p.1 >= 0.5).map(|p| compact(p.0)).unwrap_or_else(|| "–".into());
    html! {
        <figure class="chart">
            <figcaption>{ &p.title }</figcaption>
            <svg viewBox={format!("0 0 {W} {H}")} role="img" aria-label={format!("{}: cumulative distributions, original and synthesized", p.title)}>
                { f.axes(&xt, &yt, &|v| compact(v), &|v| format!("{:.0}%", v * 100.0), &p.x_label, "share of requests ≤ x") }
                <polyline class="cdf-original" points={line(&p.original)}><title>{ format!("original, median ≈ {}", median(&p.original)) }</title></polyline>
                <polyline class="cdf-synth" points={line(&p.synthesized)}><title>{ format!("synthesized, median ≈ {}", median(&p.synthesized)) }</title></polyline>
            </svg>
            <p class="legend"><span class="key orig-key"></span>{ "original" }<span class="key synth-key"></span>{ "synthesized" }</p>
        </figure>
    }
}
