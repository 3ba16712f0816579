//! The frame every chart of the kit is drawn on: colours, sizes, ranges and round ticks, axes,
//! title, legend and lines, and the text escaping of every label.

use std::fmt::Write as _;

use crate::view::charts::nice_step;

/// One colour per run (and per percentile line of one run).
pub const COLOURS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

pub(super) const W: f64 = 460.0;
pub(super) const H: f64 = 260.0;
pub(super) const ML: f64 = 60.0;
pub(super) const MR: f64 = 14.0;
pub(super) const MT: f64 = 26.0;
pub(super) const MB: f64 = 40.0;
/// Right margin of a chart with a right-hand axis (its percent labels and title).
pub(super) const MR_AXIS: f64 = 46.0;
/// Radius of a point marker.
const DOT: f64 = 2.5;

/// One line of a line chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line<'a> {
    pub name: String,
    pub colour: &'a str,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
    /// Shown on hover over the line (empty: none).
    pub tip: String,
    /// One text per point, or none: with them every point is a marker showing its text on hover.
    pub point_tips: Vec<String>,
}

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

/// How an axis places and labels its values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Round steps (1, 2 or 5 × 10^k), labelled with [`tick`].
    #[default]
    Linear,
    /// Powers of ten, labelled with [`tick`]; a value below the axis' start sits at its start.
    Log,
    /// Round steps of fractions, labelled as percentages (`25%`).
    Percent,
}

impl Scale {
    fn label(self, v: f64) -> String {
        match self {
            Scale::Percent => format!("{:.0}%", v * 100.0),
            Scale::Linear | Scale::Log => tick(v),
        }
    }
}

/// One axis of a [`Plot`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Axis<'a> {
    pub label: &'a str,
    pub scale: Scale,
    /// Both ends; `None`: the data's range (from zero on the y axis, from a power of ten to a
    /// power of ten on a log axis).
    pub range: Option<(f64, f64)>,
}

#[derive(Clone, Copy)]
pub(super) struct Range {
    lo: f64,
    hi: f64,
}

impl Range {
    pub(super) fn of(values: impl Iterator<Item = f64>, from_zero: bool) -> Range {
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

    /// The range of an axis: its own ends, else the data's.
    pub(super) fn for_axis(a: &Axis<'_>, values: impl Iterator<Item = f64>, from_zero: bool) -> Range {
        match (a.range, a.scale) {
            (Some((lo, hi)), Scale::Log) => Range::log(lo, hi),
            (Some((lo, hi)), _) if lo.is_finite() && hi.is_finite() && hi > lo => Range { lo, hi },
            (Some((lo, _)), _) if lo.is_finite() => Range { lo, hi: lo + 1.0 },
            (Some(_), _) => Range { lo: 0.0, hi: 1.0 },
            (None, Scale::Log) => {
                let r = Range::of(values.filter(|&v| v > 0.0), false);
                Range::log(10f64.powf(r.lo.log10().floor()), 10f64.powf(r.hi.log10().ceil()))
            }
            (None, _) => Range::of(values, from_zero),
        }
    }

    /// Positive ends, at least a factor of ten apart.
    fn log(lo: f64, hi: f64) -> Range {
        let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
        let hi = if hi.is_finite() && hi >= lo * 10.0 { hi } else { lo * 10.0 };
        Range { lo, hi }
    }

    /// Where `v` falls, 0 at `lo` and 1 at `hi`.
    pub(super) fn at(self, scale: Scale, v: f64) -> f64 {
        match scale {
            Scale::Log => (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
            Scale::Linear | Scale::Percent => (v - self.lo) / (self.hi - self.lo),
        }
    }

    /// Round values inside the range, at most 12.
    pub(super) fn ticks(self, scale: Scale) -> Vec<f64> {
        if scale == Scale::Log {
            let (a, b) = (self.lo.log10().ceil() as i32, self.hi.log10().floor() as i32);
            return (a..=b).take(12).map(|e| 10f64.powi(e)).collect();
        }
        let step = nice_step((self.hi - self.lo) / 5.0);
        let mut t = (self.lo / step).ceil() * step;
        let mut out = Vec::new();
        while t <= self.hi + step * 1e-9 && out.len() < 12 {
            out.push(t);
            t += step;
        }
        out
    }
}

/// Pixel mapping of a chart.
pub(super) struct Frame {
    pub(super) x: Range,
    pub(super) y: Range,
    pub(super) x_scale: Scale,
    pub(super) y_scale: Scale,
    /// Right margin.
    pub(super) mr: f64,
}

impl Frame {
    pub(super) fn linear(x: Range, y: Range) -> Frame {
        Frame { x, y, x_scale: Scale::Linear, y_scale: Scale::Linear, mr: MR }
    }
    pub(super) fn px(&self, x: f64) -> f64 {
        ML + self.x.at(self.x_scale, x) * (W - ML - self.mr)
    }
    pub(super) fn py(&self, y: f64) -> f64 {
        H - MB - self.y.at(self.y_scale, y) * (H - MT - MB)
    }
    /// `y` of a fraction on the right-hand axis (0 at the bottom, 1 at the top).
    fn py_share(&self, f: f64) -> f64 {
        H - MB - f * (H - MT - MB)
    }

    /// Axes, ticks, grid and labels.
    pub(super) fn axes(&self, out: &mut String, x_label: &str, y_label: &str) {
        let _ = write!(
            out,
            r##"<line x1="{ML}" y1="{b}" x2="{r}" y2="{b}" stroke="#444"/><line x1="{ML}" y1="{MT}" x2="{ML}" y2="{b}" stroke="#444"/>"##,
            b = H - MB,
            r = W - self.mr
        );
        for t in self.x.ticks(self.x_scale) {
            let x = self.px(t);
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" y1="{a}" x2="{x:.1}" y2="{b}" stroke="#ddd"/><text x="{x:.1}" y="{ty}" text-anchor="middle">{}</text>"##,
                self.x_scale.label(t),
                a = MT,
                b = H - MB,
                ty = H - MB + 14.0
            );
        }
        for t in self.y.ticks(self.y_scale) {
            let y = self.py(t);
            let _ = write!(
                out,
                r##"<line x1="{ML}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{}</text>"##,
                self.y_scale.label(t),
                r = W - self.mr,
                tx = ML - 4.0,
                ty = y + 4.0
            );
        }
        let _ = write!(
            out,
            r#"<text x="{cx}" y="{by}" text-anchor="middle" class="axis">{}</text><text transform="translate(12 {cy}) rotate(-90)" text-anchor="middle" class="axis">{}</text>"#,
            esc(x_label),
            esc(y_label),
            cx = (ML + W - self.mr) / 2.0,
            by = H - 6.0,
            cy = (MT + H - MB) / 2.0
        );
    }

    /// The right-hand axis of shares, 0 to 100 %: its line in the colour of the line it measures.
    pub(super) fn share_axis(&self, out: &mut String, label: &str, colour: &str) {
        let x = W - self.mr;
        let _ = write!(out, r#"<line x1="{x}" y1="{MT}" x2="{x}" y2="{b}" stroke="{colour}"/>"#, b = H - MB);
        for f in [0.0, 0.25, 0.5, 0.75, 1.0] {
            let _ = write!(
                out,
                r#"<text x="{tx}" y="{ty:.1}">{}</text>"#,
                Scale::Percent.label(f),
                tx = x + 4.0,
                ty = self.py_share(f) + 4.0
            );
        }
        let _ = write!(
            out,
            r#"<text transform="translate({tx} {cy}) rotate(90)" text-anchor="middle" class="axis">{}</text>"#,
            esc(label),
            tx = W - 8.0,
            cy = (MT + H - MB) / 2.0
        );
    }

    /// A line as one path (NaN values break it) and markers: on each point when the line has
    /// point texts, else on each point with no neighbour to join. `share`: against the
    /// right-hand axis.
    pub(super) fn line(&self, out: &mut String, l: &Line<'_>, share: bool, class: &str) {
        let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
        let mut d = String::new();
        let mut dots: Vec<(f64, f64, &str)> = Vec::new();
        let mut pen_down = false;
        for (i, p) in l.points.iter().enumerate() {
            if !finite(p) {
                pen_down = false;
                continue;
            }
            let (x, y) = (self.px(p.0), if share { self.py_share(p.1) } else { self.py(p.1) });
            let _ = write!(d, "{}{x:.1},{y:.1}", if pen_down { " L" } else { " M" });
            if !l.point_tips.is_empty() {
                dots.push((x, y, l.point_tips.get(i).map_or("", String::as_str)));
            } else if !pen_down && !l.points.get(i + 1).is_some_and(finite) {
                dots.push((x, y, ""));
            }
            pen_down = true;
        }
        let dash = if l.dashed { r#" stroke-dasharray="4 3""# } else { "" };
        let class = if class.is_empty() { String::new() } else { format!(r#" class="{class}""#) };
        let _ = write!(out, r#"<path{class} d="{d}" fill="none" stroke="{}" stroke-width="1.5"{dash}"#, l.colour);
        close_with_tip(out, "path", &l.tip);
        for (x, y, tip) in dots {
            let _ = write!(out, r#"<circle cx="{x:.1}" cy="{y:.1}" r="{DOT}" fill="{}""#, l.colour);
            close_with_tip(out, "circle", tip);
        }
    }
}

/// Ends an opened element: with its hover text as a `<title>` child, or self-closed.
pub(super) fn close_with_tip(out: &mut String, element: &str, tip: &str) {
    if tip.is_empty() {
        out.push_str("/>");
    } else {
        let _ = write!(out, "><title>{}</title></{element}>", esc(tip));
    }
}

/// Width a title may take: from the plot's left edge to the chart's right edge.
pub(super) const TITLE_W: f64 = W - ML - 4.0;
/// A generous width of one character of a title (12 px, bold).
const TITLE_CHAR_W: f64 = 6.8;

pub(super) fn open(out: &mut String, id: &str, title: &str, h: f64) {
    // A title longer than the chart is drawn narrower, whole, rather than cut at the edge.
    let fit = if title.chars().count() as f64 * TITLE_CHAR_W > TITLE_W {
        format!(r#" textLength="{TITLE_W}" lengthAdjust="spacingAndGlyphs""#)
    } else {
        String::new()
    };
    let _ = write!(
        out,
        r#"<figure class="chart" data-chart="{id}"><svg viewBox="0 0 {W} {h}" width="{W}" height="{h}" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg"><text x="{ML}" y="16" class="title"{fit}>{t}</text>"#,
        id = esc(id),
        t = esc(title)
    );
}

/// The names beside the top right corner of the plot area (`mr`: the right margin).
pub(super) fn legend(out: &mut String, names: &[(String, &str)], mr: f64) {
    if names.len() < 2 {
        return;
    }
    for (i, (name, colour)) in names.iter().enumerate() {
        let y = MT + 4.0 + i as f64 * 13.0;
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{ry}" width="10" height="3" fill="{colour}"/><text x="{tx}" y="{ty}" class="legend">{}</text>"#,
            esc(name),
            x = W - mr - 110.0,
            ry = y - 3.0,
            tx = W - mr - 96.0,
            ty = y + 1.0
        );
    }
}

/// A short text in the bottom-right corner (what is not drawn, what is sampled).
pub(super) fn corner(out: &mut String, f: &Frame, text: &str) {
    if !text.is_empty() {
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="end" class="legend">{}</text>"#,
            esc(text),
            x = W - f.mr,
            y = H - 6.0
        );
    }
}
