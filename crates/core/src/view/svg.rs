//! Inline SVG charts drawn as text: [`line_chart`], [`scatter_chart`] and [`bar_chart`] on a
//! fixed frame with round axis ticks, escaped for HTML ([`esc`]), no script or style of their own.

use std::fmt::Write as _;

use super::charts::{Hist, Scatter, nice_step};

/// One colour per run (and per percentile line of one run).
pub const COLOURS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

const W: f64 = 460.0;
const H: f64 = 260.0;
const ML: f64 = 60.0;
const MR: f64 = 14.0;
const MT: f64 = 26.0;
const MB: f64 = 40.0;

/// Text safe inside HTML elements and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A tick label (and a slice width in a title): few digits.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[derive(Clone, Copy)]
struct Range {
    lo: f64,
    hi: f64,
}

impl Range {
    fn of(values: impl Iterator<Item = f64>, from_zero: bool) -> Range {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            return Range { lo: 0.0, hi: 1.0 };
        }
        if from_zero && lo > 0.0 {
            lo = 0.0;
        }
        if hi <= lo {
            hi = lo + 1.0;
        }
        Range { lo, hi }
    }
}

/// Pixel mapping of a chart.
struct Frame {
    x: Range,
    y: Range,
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        ML + (x - self.x.lo) / (self.x.hi - self.x.lo) * (W - ML - MR)
    }
    fn py(&self, y: f64) -> f64 {
        H - MB - (y - self.y.lo) / (self.y.hi - self.y.lo) * (H - MT - MB)
    }

    /// Axes, ticks, grid and labels.
    fn axes(&self, out: &mut String, x_label: &str, y_label: &str) {
        let _ = write!(
            out,
            r##"<line x1="{ML}" y1="{b}" x2="{r}" y2="{b}" stroke="#444"/><line x1="{ML}" y1="{MT}" x2="{ML}" y2="{b}" stroke="#444"/>"##,
            b = H - MB,
            r = W - MR
        );
        for (r, is_x) in [(self.x, true), (self.y, false)] {
            let step = nice_step((r.hi - r.lo) / 5.0);
            let mut t = (r.lo / step).ceil() * step;
            let mut n = 0;
            while t <= r.hi + step * 1e-9 && n < 12 {
                if is_x {
                    let x = self.px(t);
                    let _ = write!(
                        out,
                        r##"<line x1="{x:.1}" y1="{a}" x2="{x:.1}" y2="{b}" stroke="#ddd"/><text x="{x:.1}" y="{ty}" text-anchor="middle">{}</text>"##,
                        tick(t),
                        a = MT,
                        b = H - MB,
                        ty = H - MB + 14.0
                    );
                } else {
                    let y = self.py(t);
                    let _ = write!(
                        out,
                        r##"<line x1="{ML}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{}</text>"##,
                        tick(t),
                        r = W - MR,
                        tx = ML - 4.0,
                        ty = y + 4.0
                    );
                }
                t += step;
                n += 1;
            }
        }
        let _ = write!(
            out,
            r#"<text x="{cx}" y="{by}" text-anchor="middle" class="axis">{}</text><text transform="translate(12 {cy}) rotate(-90)" text-anchor="middle" class="axis">{}</text>"#,
            esc(x_label),
            esc(y_label),
            cx = (ML + W - MR) / 2.0,
            by = H - 6.0,
            cy = (MT + H - MB) / 2.0
        );
    }
}

fn open(out: &mut String, id: &str, title: &str) {
    let _ = write!(
        out,
        r#"<figure class="chart" data-chart="{id}"><svg viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg"><text x="{ML}" y="16" class="title">{t}</text>"#,
        id = esc(id),
        t = esc(title)
    );
}

fn legend(out: &mut String, names: &[(String, &str)]) {
    if names.len() < 2 {
        return;
    }
    for (i, (name, colour)) in names.iter().enumerate() {
        let y = MT + 4.0 + i as f64 * 13.0;
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{ry}" width="10" height="3" fill="{colour}"/><text x="{tx}" y="{ty}" class="legend">{}</text>"#,
            esc(name),
            x = W - MR - 110.0,
            ry = y - 3.0,
            tx = W - MR - 96.0,
            ty = y + 1.0
        );
    }
}

/// One line of a line chart.
pub struct Line<'a> {
    pub name: String,
    pub colour: &'a str,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// Lines over a shared x axis; NaN values break a line.
pub fn line_chart(id: &str, title: &str, x_label: &str, y_label: &str, lines: &[Line<'_>]) -> String {
    let f = Frame {
        x: Range::of(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)), false),
        y: Range::of(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)), true),
    };
    let mut out = String::new();
    open(&mut out, id, title);
    f.axes(&mut out, x_label, y_label);
    for l in lines {
        let mut d = String::new();
        let mut pen_down = false;
        for &(x, y) in &l.points {
            if !(x.is_finite() && y.is_finite()) {
                pen_down = false;
                continue;
            }
            let _ = write!(d, "{}{:.1},{:.1}", if pen_down { " L" } else { " M" }, f.px(x), f.py(y));
            pen_down = true;
        }
        let dash = if l.dashed { r#" stroke-dasharray="4 3""# } else { "" };
        let _ = write!(out, r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.5"{dash}/>"#, l.colour);
    }
    legend(&mut out, &lines.iter().map(|l| (l.name.clone(), l.colour)).collect::<Vec<_>>());
    out.push_str("</svg></figure>");
    out
}

/// Points of one or more runs; each circle carries its run and request index for the click.
pub fn scatter_chart(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(usize, &str, &Scatter)],
) -> String {
    let f = Frame {
        x: Range::of(series.iter().flat_map(|s| s.2.x.iter().copied()), true),
        y: Range::of(series.iter().flat_map(|s| s.2.y.iter().copied()), true),
    };
    let mut out = String::new();
    open(&mut out, id, title);
    f.axes(&mut out, x_label, y_label);
    for (run, colour, s) in series {
        let _ = write!(out, r#"<g fill="{colour}" fill-opacity="0.55">"#);
        for ((x, y), i) in s.x.iter().zip(&s.y).zip(&s.index) {
            let _ = write!(
                out,
                r#"<circle class="pt" cx="{:.1}" cy="{:.1}" r="2.5" data-run="{run}" data-i="{i}"/>"#,
                f.px(*x),
                f.py(*y)
            );
        }
        out.push_str("</g>");
    }
    let shown: usize = series.iter().map(|s| s.2.x.len()).sum();
    let total: usize = series.iter().map(|s| s.2.total).sum();
    if shown < total {
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="end" class="legend">{shown} of {total} shown</text>"#,
            x = W - MR,
            y = H - 6.0
        );
    }
    out.push_str("</svg></figure>");
    out
}

/// A histogram.
pub fn bar_chart(id: &str, title: &str, x_label: &str, h: &Hist) -> String {
    let hi = h.lo + h.step * h.counts.len() as f64;
    let f = Frame {
        x: Range { lo: h.lo, hi: if hi > h.lo { hi } else { h.lo + 1.0 } },
        y: Range::of(h.counts.iter().map(|&c| c as f64), true),
    };
    let mut out = String::new();
    open(&mut out, id, title);
    f.axes(&mut out, x_label, "requests");
    out.push_str(r##"<g fill="#1f77b4">"##);
    for (k, &c) in h.counts.iter().enumerate() {
        let (x0, x1) = (f.px(h.lo + k as f64 * h.step), f.px(h.lo + (k + 1) as f64 * h.step));
        let (y0, y1) = (f.py(c as f64), f.py(0.0));
        let _ = write!(
            out,
            r#"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}"/>"#,
            (x1 - x0 - 1.0).max(0.5),
            y1 - y0
        );
    }
    out.push_str("</g>");
    if h.overflow > 0 {
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="end" class="legend">{} beyond the axis</text>"#,
            h.overflow,
            x = W - MR,
            y = H - 6.0
        );
    }
    out.push_str("</svg></figure>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_break_at_gaps_and_ranges_survive_odd_data() {
        let l = Line {
            name: "x".into(),
            colour: "#000",
            dashed: false,
            points: vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0)],
        };
        let svg = line_chart("t", "T", "x", "y", &[l]);
        assert_eq!(svg.matches(" M").count(), 2);
        let empty = line_chart("t", "T", "x", "y", &[]);
        assert!(empty.contains("</svg>"));
        assert_eq!(tick(1500.0), "1500");
        assert_eq!(tick(25_000.0), "25k");
        assert_eq!(tick(0.25), "0.25");
    }
}
