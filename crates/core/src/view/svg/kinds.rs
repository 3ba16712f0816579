//! The kit's charts: lines, plots of bars, lines and a share, scatters, histograms, labelled
//! horizontal bars and swim-lanes, each drawn on a [`Frame`].

use std::fmt::Write as _;

use super::frame::{
    Axis, COLOURS, Frame, H, Line, MB, ML, MR, MR_AXIS, MT, Range, Scale, W, close_with_tip, corner, esc, legend, open,
    tick,
};
use crate::view::charts::{Hist, Scatter};

/// Lines over a shared x axis; NaN values break a line.
pub fn line_chart(id: &str, title: &str, x_label: &str, y_label: &str, lines: &[Line<'_>]) -> String {
    plot(
        id,
        title,
        &Plot {
            x: Axis { label: x_label, ..Axis::default() },
            y: Axis { label: y_label, ..Axis::default() },
            lines: lines.to_vec(),
            ..Plot::default()
        },
    )
}

/// A bar from `x0` to `x1`, `y` high.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bar {
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    /// Shown on hover (empty: none).
    pub tip: String,
}

/// What [`plot`] draws: bars, lines over them, and a line of shares against a right-hand axis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plot<'a> {
    pub x: Axis<'a>,
    pub y: Axis<'a>,
    pub bars: Vec<Bar>,
    /// The bars' name in the legend.
    pub bar_name: &'a str,
    /// The bars' colour (empty: the first of [`COLOURS`]).
    pub bar_colour: &'a str,
    pub lines: Vec<Line<'a>>,
    /// Fractions (0..=1) against a right-hand axis from 0 to 100 %, such as a cumulative share.
    pub share: Option<Line<'a>>,
    /// The right-hand axis' label.
    pub share_label: &'a str,
    /// A short text in the bottom-right corner (empty: none).
    pub corner: String,
    /// A sentence under the chart (empty: none).
    pub caption: String,
}

/// Bars, then lines, then the line of shares on its own axis, with a legend when more than one
/// thing is named. The x range covers every bar and point; the y range the bars and the lines.
pub fn plot(id: &str, title: &str, p: &Plot<'_>) -> String {
    let line_points = p.lines.iter().flat_map(|l| l.points.iter());
    let xs = line_points
        .clone()
        .map(|q| q.0)
        .chain(p.bars.iter().flat_map(|b| [b.x0, b.x1]))
        .chain(p.share.iter().flat_map(|l| l.points.iter().map(|q| q.0)));
    let ys = line_points.map(|q| q.1).chain(p.bars.iter().map(|b| b.y));
    let f = Frame {
        x: Range::for_axis(&p.x, xs, false),
        y: Range::for_axis(&p.y, ys, true),
        x_scale: p.x.scale,
        y_scale: p.y.scale,
        mr: if p.share.is_some() { MR_AXIS } else { MR },
    };
    let mut out = String::new();
    open(&mut out, id, title, H);
    f.axes(&mut out, p.x.label, p.y.label);
    let bar_colour = if p.bar_colour.is_empty() { COLOURS[0] } else { p.bar_colour };
    let mut names: Vec<(String, &str)> = Vec::new();
    if !p.bars.is_empty() {
        let _ = write!(out, r#"<g fill="{bar_colour}">"#);
        for b in &p.bars {
            let (x0, x1) = (f.px(b.x0), f.px(b.x1));
            let (y0, y1) = (f.py(b.y), f.py(0.0));
            // A pixel between bars wide enough to spare it; narrow bars touch, like an area.
            let w = if x1 - x0 >= 3.0 { x1 - x0 - 1.0 } else { (x1 - x0).max(0.5) };
            let _ = write!(out, r#"<rect x="{x0:.1}" y="{y0:.1}" width="{w:.1}" height="{:.1}""#, y1 - y0);
            close_with_tip(&mut out, "rect", &b.tip);
        }
        out.push_str("</g>");
        if !p.bar_name.is_empty() {
            names.push((p.bar_name.to_owned(), bar_colour));
        }
    }
    for l in &p.lines {
        f.line(&mut out, l, false, "");
        names.push((l.name.clone(), l.colour));
    }
    if let Some(l) = &p.share {
        f.share_axis(&mut out, p.share_label, l.colour);
        f.line(&mut out, l, true, "share");
        names.push((l.name.clone(), l.colour));
    }
    legend(&mut out, &names, f.mr);
    corner(&mut out, &f, &p.corner);
    out.push_str("</svg>");
    if !p.caption.is_empty() {
        let _ = write!(out, r#"<figcaption class="note">{}</figcaption>"#, esc(&p.caption));
    }
    out.push_str("</figure>");
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
    let f = Frame::linear(
        Range::of(series.iter().flat_map(|s| s.2.x.iter().copied()), true),
        Range::of(series.iter().flat_map(|s| s.2.y.iter().copied()), true),
    );
    let mut out = String::new();
    open(&mut out, id, title, H);
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
        corner(&mut out, &f, &format!("{shown} of {total} shown"));
    }
    out.push_str("</svg></figure>");
    out
}

/// A histogram.
pub fn bar_chart(id: &str, title: &str, x_label: &str, h: &Hist) -> String {
    let hi = h.lo + h.step * h.counts.len() as f64;
    let bars = h
        .counts
        .iter()
        .enumerate()
        .map(|(k, &c)| Bar {
            x0: h.lo + k as f64 * h.step,
            x1: h.lo + (k + 1) as f64 * h.step,
            y: c as f64,
            tip: String::new(),
        })
        .collect();
    let corner = if h.overflow > 0 { format!("{} beyond the axis", h.overflow) } else { String::new() };
    plot(
        id,
        title,
        &Plot {
            x: Axis {
                label: x_label,
                scale: Scale::Linear,
                range: Some((h.lo, if hi > h.lo { hi } else { h.lo + 1.0 })),
            },
            y: Axis { label: "requests", ..Axis::default() },
            bars,
            corner,
            ..Plot::default()
        },
    )
}

/// One row of [`hbar_chart`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HBar {
    /// Left of the bar.
    pub label: String,
    /// The bar's length, against the largest of the chart.
    pub value: f64,
    /// Right of the bar.
    pub text: String,
    /// Shown on hover (empty: none).
    pub tip: String,
}

/// Labelled horizontal bars, one row each, as high as its rows need.
pub fn hbar_chart(id: &str, title: &str, rows: &[HBar]) -> String {
    const ROW: f64 = 22.0;
    const LABEL: f64 = 110.0;
    const TEXT: f64 = 200.0;
    let max = rows.iter().map(|r| r.value).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let mut out = String::new();
    open(&mut out, id, title, MT + ROW * rows.len() as f64 + 8.0);
    for (i, r) in rows.iter().enumerate() {
        let y = MT + ROW * i as f64;
        let w = if max > 0.0 && r.value.is_finite() { r.value.max(0.0) / max * (W - LABEL - TEXT) } else { 0.0 };
        let w = w.max(1.0);
        let _ = write!(
            out,
            r#"<text x="{lx}" y="{ty:.1}" text-anchor="end">{}</text><rect x="{LABEL}" y="{ry:.1}" width="{w:.1}" height="{rh:.1}" fill="{}""#,
            esc(&r.label),
            COLOURS[0],
            lx = LABEL - 6.0,
            ty = y + ROW / 2.0 + 4.0,
            ry = y + 3.0,
            rh = ROW - 6.0
        );
        close_with_tip(&mut out, "rect", &r.tip);
        let _ = write!(
            out,
            r#"<text x="{tx:.1}" y="{ty:.1}">{}</text>"#,
            esc(&r.text),
            tx = LABEL + w + 6.0,
            ty = y + ROW / 2.0 + 4.0
        );
    }
    out.push_str("</svg></figure>");
    out
}

/// A bar of [`lanes_chart`]: on row `row`, from `x0` to `x1`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowBar {
    pub row: usize,
    pub x0: f64,
    pub x1: f64,
    /// Drawn light (a pause rather than work).
    pub light: bool,
    /// Shown on hover (empty: none).
    pub tip: String,
}

/// What [`lanes_chart`] draws: rows of bars over a shared x axis, and marks on rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lanes<'a> {
    pub x: Axis<'a>,
    /// The rows' name (the y axis' label).
    pub row_label: &'a str,
    pub rows: usize,
    pub bars: Vec<RowBar>,
    /// `(row, x)`: a tick across the row.
    pub marks: Vec<(usize, f64)>,
    /// A sentence under the chart (empty: none).
    pub caption: String,
}

/// Horizontal bars by row (row 1 at the top), as high as its rows need: a swim-lane.
pub fn lanes_chart(id: &str, title: &str, l: &Lanes<'_>) -> String {
    let rows = l.rows.max(1);
    let row_h = (200.0 / rows as f64).clamp(5.0, 14.0);
    let bottom = MT + row_h * rows as f64;
    let h = bottom + MB;
    let xs = l.bars.iter().flat_map(|b| [b.x0, b.x1]).chain(l.marks.iter().map(|m| m.1));
    let x = Range::for_axis(&l.x, xs, true);
    let px = |v: f64| ML + x.at(Scale::Linear, v).clamp(0.0, 1.0) * (W - ML - MR);
    let mut out = String::new();
    open(&mut out, id, title, h);
    let _ = write!(
        out,
        r##"<line x1="{ML}" y1="{bottom}" x2="{r}" y2="{bottom}" stroke="#444"/><line x1="{ML}" y1="{MT}" x2="{ML}" y2="{bottom}" stroke="#444"/>"##,
        r = W - MR
    );
    for t in x.ticks(Scale::Linear) {
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{MT}" x2="{x:.1}" y2="{bottom}" stroke="#ddd"/><text x="{x:.1}" y="{ty}" text-anchor="middle">{}</text>"##,
            tick(t),
            x = px(t),
            ty = bottom + 14.0
        );
    }
    let every = rows.div_ceil(10);
    for r in (0..rows).filter(|r| r % every == 0) {
        let _ = write!(
            out,
            r#"<text x="{tx}" y="{ty:.1}" text-anchor="end">{}</text>"#,
            r + 1,
            tx = ML - 4.0,
            ty = MT + row_h * (r as f64 + 0.5) + 4.0
        );
    }
    let _ = write!(
        out,
        r#"<text x="{cx}" y="{by}" text-anchor="middle" class="axis">{}</text><text transform="translate(12 {cy}) rotate(-90)" text-anchor="middle" class="axis">{}</text>"#,
        esc(l.x.label),
        esc(l.row_label),
        cx = (ML + W - MR) / 2.0,
        by = h - 6.0,
        cy = (MT + bottom) / 2.0
    );
    let _ = write!(out, r#"<g fill="{}">"#, COLOURS[0]);
    for b in &l.bars {
        let (x0, x1) = (px(b.x0), px(b.x1));
        let y = MT + row_h * b.row as f64 + 1.0;
        let light = if b.light { r#" fill-opacity="0.25""# } else { "" };
        let _ = write!(
            out,
            r#"<rect x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{bh:.1}"{light}"#,
            w = (x1 - x0).max(0.5),
            bh = row_h - 2.0
        );
        close_with_tip(&mut out, "rect", &b.tip);
    }
    out.push_str(r##"</g><g stroke="#222" stroke-width="1.5">"##);
    for &(r, v) in &l.marks {
        let x = px(v);
        let y = MT + row_h * r as f64;
        let _ = write!(out, r#"<line x1="{x:.1}" y1="{y:.1}" x2="{x:.1}" y2="{:.1}"/>"#, y + row_h);
    }
    out.push_str("</g></svg>");
    if !l.caption.is_empty() {
        let _ = write!(out, r#"<figcaption class="note">{}</figcaption>"#, esc(&l.caption));
    }
    out.push_str("</figure>");
    out
}

#[cfg(test)]
mod tests {
    use super::super::frame::TITLE_W;
    use super::*;

    #[test]
    fn lines_break_at_gaps_and_ranges_survive_odd_data() {
        let l = Line {
            name: "x".into(),
            colour: "#000",
            dashed: false,
            points: vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0)],
            ..Line::default()
        };
        let svg = line_chart("t", "T", "x", "y", &[l]);
        assert_eq!(svg.matches(" M").count(), 2);
        let empty = line_chart("t", "T", "x", "y", &[]);
        assert!(empty.contains("</svg>"));
        assert_eq!(tick(1500.0), "1500");
        assert_eq!(tick(25_000.0), "25k");
        assert_eq!(tick(0.25), "0.25");
    }

    #[test]
    fn a_lone_point_is_drawn_as_a_marker() {
        let line = |points: Vec<(f64, f64)>| Line { name: "p50".into(), colour: "#123456", points, ..Line::default() };
        // Only the first and the last value have no neighbour to join.
        let svg = line_chart(
            "t",
            "T",
            "x",
            "y",
            &[line(vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0), (3.0, 4.0), (4.0, f64::NAN), (5.0, 2.0)])],
        );
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        assert_eq!(svg.matches(r##"r="2.5" fill="#123456"/>"##).count(), 2);
        // A single value: one marker where an invisible one-point path is.
        let one = line_chart("t", "T", "x", "y", &[line(vec![(0.0, f64::NAN), (1.0, 7.0), (2.0, f64::NAN)])]);
        assert_eq!(one.matches("<circle").count(), 1);
        let d = &one[one.find(r#"<path d=""#).unwrap() + 9..];
        let (x, y) = d[2..d.find('"').unwrap()].split_once(',').unwrap();
        assert!(one.contains(&format!(r#"<circle cx="{x}" cy="{y}""#)), "{one}");
        // Joined points get none.
        assert!(!line_chart("t", "T", "x", "y", &[line(vec![(0.0, 1.0), (1.0, 2.0)])]).contains("<circle"));
    }

    #[test]
    fn plots_escape_every_text_and_draw_log_percent_and_share_axes() {
        let p = Plot {
            x: Axis { label: "x <b>", scale: Scale::Log, range: Some((1.0, 1000.0)) },
            y: Axis { label: "y & z", scale: Scale::Percent, range: Some((0.0, 1.0)) },
            bars: vec![Bar { x0: 1.0, x1: 10.0, y: 0.5, tip: "1–10: \"half\"".into() }],
            bar_name: "bars'",
            lines: vec![Line {
                name: "a".into(),
                colour: COLOURS[0],
                points: vec![(1.0, 0.1), (100.0, 0.2)],
                point_tips: vec!["<one>".into(), "two".into()],
                tip: "line".into(),
                ..Line::default()
            }],
            share: Some(Line {
                name: "share".into(),
                colour: COLOURS[1],
                points: vec![(1.0, 0.0), (1000.0, 1.0)],
                ..Line::default()
            }),
            share_label: "cumulative %",
            corner: "3 > axis".into(),
            caption: "note <i>".into(),
            ..Plot::default()
        };
        let svg = plot("id\"", "title <script>", &p);
        assert!(!svg.contains("<b>") && !svg.contains("<script>") && !svg.contains("<i>") && !svg.contains("<one>"));
        for t in [
            "x &lt;b&gt;",
            "y &amp; z",
            "&quot;half&quot;",
            "bars&#39;",
            "&lt;one&gt;",
            "3 &gt; axis",
            "note &lt;i&gt;",
            r#"data-chart="id&quot;""#,
        ] {
            assert!(svg.contains(t), "{t} in {svg}");
        }
        // Log x ticks at the powers of ten, percent y ticks, and the share axis from 0 to 100 %.
        for t in [">1<", ">10<", ">100<", ">1000<", ">0%<", ">20%<", ">100%<", ">25%<", ">75%<"] {
            assert!(svg.contains(t), "{t} in {svg}");
        }
        assert_eq!(svg.matches("<title>").count(), 4, "one bar, one line, its two points");
        assert!(svg.contains(r#"<path class="share""#));
        assert!(svg.ends_with(r#"<figcaption class="note">note &lt;i&gt;</figcaption></figure>"#));
        // Bars, line and share are named in the legend.
        assert_eq!(svg.matches(r#"class="legend">"#).count(), 4);
        let rows = [HBar { label: "root <7>".into(), value: 3.0, text: "3 requests".into(), tip: "tip".into() }];
        let h = hbar_chart("g", "Groups", &rows);
        assert!(h.contains("root &lt;7&gt;") && h.contains(r#"viewBox="0 0 460 56""#), "{h}");
    }

    #[test]
    fn lanes_draw_each_bar_on_its_row_with_its_text() {
        let bar = |row, x0, x1, light| RowBar { row, x0, x1, light, tip: format!("<r{row}> {x0}") };
        let l = Lanes {
            x: Axis { label: "time (s)", range: Some((0.0, 10.0)), ..Axis::default() },
            row_label: "slot",
            rows: 2,
            bars: vec![bar(0, 0.0, 2.0, false), bar(0, 2.0, 3.0, true), bar(1, 1.0, 10.0, false)],
            marks: vec![(0, 5.0)],
            caption: "a & b".into(),
        };
        let svg = lanes_chart("swim", "Lanes", &l);
        assert_eq!(svg.matches("<rect").count(), 3);
        assert_eq!(svg.matches(r#"fill-opacity="0.25""#).count(), 1);
        assert!(svg.contains("&lt;r1&gt; 1") && !svg.contains("<r1>"));
        // Rows 14 px high from the top margin; the mark spans row 1.
        assert!(svg.contains(r#"<rect x="60.0" y="27.0""#) && svg.contains(r#"y="41.0""#), "{svg}");
        assert!(svg.contains(r#"y1="26.0" x2="253.0" y2="40.0""#), "{svg}");
        assert!(svg.ends_with(r#"<figcaption class="note">a &amp; b</figcaption></figure>"#));
        assert!(lanes_chart("e", "E", &Lanes::default()).contains("</svg>"));
    }

    #[test]
    fn a_long_title_is_drawn_whole_within_the_chart() {
        let lines = [Line {
            name: "p50".into(),
            colour: COLOURS[0],
            dashed: false,
            points: vec![(0.0, 1.0), (1.0, 2.0)],
            tip: String::new(),
            point_tips: Vec::new(),
        }];
        let short = line_chart("a", "TTFT", "t", "ms", &lines);
        assert!(!short.contains("textLength"), "{short}");
        let title = "Request latency per 0.25 s slice (--slice-duration) (p50, p90, p99)";
        let long = line_chart("b", title, "t", "ms", &lines);
        assert!(
            long.contains(&format!(r#"textLength="{TITLE_W}" lengthAdjust="spacingAndGlyphs">{}</text>"#, esc(title))),
            "{long}"
        );
    }
}
