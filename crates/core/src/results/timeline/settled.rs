//! What a timeline keeps of the curves it sweeps as its spans come
//! ([`Timeline::settle`](super::Timeline::settle)):
//! the points not summed yet and the sums, then the curves made.

use super::ramps::{Bend, Ramps, RampsSum};
use super::steps::{Steps, Summer};

/// How many curves are swept as the spans come.
pub(super) const SETTLED: usize = 6;

/// A curve swept as the spans come: its index in [`Settling::Swept`].
#[derive(Clone, Copy, Debug)]
pub(super) enum SettledCurve {
    Concurrency = 0,
    Total = 1,
    PrefillConcurrency = 2,
    PrefillRate = 3,
    DecodeConcurrency = 4,
    /// The decode rate with evenly spaced chunks in closed form (the events of `closed_decode`).
    ClosedDecodeRate = 5,
}

/// Where a span's changes of the settled curves fall.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Phase {
    Send,
    FirstToken,
    End,
    /// The span's last chunk, where its closed-form decode rate ends.
    LastChunk,
}

/// A span's changes of the settled curves at one of its times: its rates of prefill and of
/// decode as the events' `prefill_rate` and `even_decode_rate` make them, when it has them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Point {
    pub(super) t: u64,
    pub(super) phase: Phase,
    /// Whether the span has a first token.
    pub(super) first: bool,
    pub(super) prefill: Option<f64>,
    pub(super) decode: Option<f64>,
    /// The decode rate in closed form (`closed_decode`'s), from the first token to the last chunk.
    pub(super) closed: Option<f64>,
}

/// Where the curves swept as a timeline's spans come stand.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) enum Settling {
    /// Never settled: the curves are swept at the report.
    #[default]
    Off,
    Sweeping(Box<Sweeping>),
    /// Every span was in: the curves made, and how many spans they hold (a span added since
    /// leaves them out of date).
    Swept(Box<Made>, usize),
    /// A span came with an event before a time already settled: the curves are swept at the
    /// report.
    Dropped,
}

/// The curves settled with every span in.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Made {
    /// By [`SettledCurve`]; `None`: one a span could not be settled in.
    pub(super) curves: [Option<Steps>; SETTLED],
    /// The tokens in flight in closed form, the run's chunks counted (as the report weighs them
    /// when it takes evenly spaced chunks in closed form).
    pub(super) ramps: Ramps,
}

/// The settled curves being swept.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Sweeping {
    /// Spans taken up, and their entries of the timeline's chunks.
    pub(super) fed: usize,
    pub(super) fed_chunks: usize,
    /// Whether the closed-form decode rate is still settled: a span whose rate takes more than
    /// one step up and one down (uneven chunks) leaves it to the report.
    pub(super) closed_ok: bool,
    /// Every change before this time is summed.
    pub(super) settled: u64,
    /// The points not summed yet: at a span's send, at its end, at its first token, at its last
    /// chunk (the spans come about in the order of their ends).
    pub(super) lists: [Vec<Point>; 4],
    /// The points at the time being summed.
    pub(super) group: Vec<Point>,
    pub(super) sums: [Summer; SETTLED],
    /// The changes of each curve at the time being summed.
    pub(super) at: [Vec<f64>; SETTLED],
    /// The tokens in flight's bends not summed yet: a span's j-th in list j, the last list
    /// taking the rest (about in order), and their sum.
    pub(super) bends: [Vec<Bend>; 4],
    pub(super) ramps: RampsSum,
}
