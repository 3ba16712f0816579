//! The one chart kit of the report file and of the web app: inline SVG written as text from
//! numbers and labels, every text escaped ([`esc`]), no script or style of its own. Each chart is
//! a `<figure class="chart" data-chart="…">` on one frame with round axis ticks: [`line_chart`],
//! [`scatter_chart`] and [`bar_chart`] draw a run's charts, [`plot`] any mix of bars, lines and a
//! share on a right-hand axis (linear, log or percent axes; hover texts as `<title>`),
//! [`hbar_chart`] labelled horizontal bars, and [`lanes_chart`] bars on rows over time (a
//! swim-lane). A point of a line with no neighbour to join is drawn as a marker, so a line of
//! isolated values still shows.
//!
//! `frame`: the frame every chart is drawn on (ranges, axes, title, legend, lines); `kinds`: the
//! charts.

mod frame;
mod kinds;

pub use frame::{Axis, COLOURS, Line, Scale, esc, tick};
pub use kinds::{Bar, HBar, Lanes, Plot, RowBar, bar_chart, hbar_chart, lanes_chart, line_chart, plot, scatter_chart};
