//! AIPerf's time-weighted metrics of a run (`effective_*`, `active_*`, `tokens_in_flight`): each
//! request's phases on the run's clock (prefill from its send to its first token, decode from
//! there to its end, each chunk of the answer) are summed into step functions over time, and
//! their statistics are weighted by how long each value held.
//!
//! AIPerf's definitions (`aiperf.analysis.sweepline*`):
//! - concurrency: requests between send and end (failed ones included); decode concurrency
//!   between first token and end; prefill concurrency between send and first token;
//! - decode throughput: every chunk gap of a request carries an equal share of its
//!   `output_sequence_length − 1` tokens (gaps of zero carry none); without any chunk gap in the
//!   run, a request's `osl − 1` tokens spread evenly from first token to end;
//! - prefill throughput: `input_sequence_length` spread evenly from send to first token;
//! - total throughput: prefill plus the even decode spread (never per chunk);
//! - per user: throughput divided by the concurrency of its phase (0 where none);
//! - tokens in flight: input tokens from the send, output tokens as their chunks arrive (or all
//!   at the first token without chunk gaps), all freed at the end;
//! - `effective_*` weight over the whole window; `active_*` only over the time the phase had a
//!   request in it.
//!
//! Statistics: avg and std weighted by duration over the window, min and max of the values held,
//! p50/p90/p95/p99 the first value whose cumulated duration reaches the fraction.

use crate::results::metrics::{Metric, RequestMetrics};
use crate::results::record::{ChunkTimes, RequestRecord};

mod events;
mod metric;
mod ramps;
mod steps;
mod streamed;
mod sweep;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
mod weighted;

use events::{
    chunk_decode, closed_decode, decoding, even_decode_rate, in_flight, prefill_rate, prefilling, ramp_in_flight,
    tokens_in_flight,
};
pub use metric::{TimeWeighted, TimelineMetric};
use ramps::Ramps;
use steps::{Event, Steps, divide, over_window, while_active};

/// No time (a request without a first token).
const NO_TIME: u64 = u64::MAX;

/// One request's phases and token counts.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    start: u64,
    /// First token ([`NO_TIME`] without one).
    first: u64,
    end: u64,
    /// NaN when the request has no such count (failed requests have neither).
    isl: f64,
    osl: f64,
    /// Chunks after the first, kept in [`Timeline::chunks`] in order of the spans, each time,
    /// unless (with [`EVENLY`]) they follow the first evenly: then kept as `stride`.
    later_chunks: u32,
    /// With [`EVENLY`], the time between two chunks (0 otherwise).
    stride: u64,
}

/// The flag of [`Span::later_chunks`] saying that the span's later chunks are `first + k ×
/// stride` for k = 1, 2, …, kept as [`Span::stride`] with no entry in [`Timeline::chunks`].
const EVENLY: u32 = 1 << 31;

impl Span {
    /// The number of chunks after the first.
    fn later_count(&self) -> usize {
        (self.later_chunks & !EVENLY) as usize
    }

    /// The entries a span with these `later_chunks` holds in [`Timeline::chunks`].
    fn kept_of(later_chunks: u32) -> usize {
        if later_chunks & EVENLY != 0 { 0 } else { (later_chunks & !EVENLY) as usize }
    }

    /// The span's chunks after the first, from its `kept` entries of [`Timeline::chunks`]
    /// (written into `buf` when kept as a stride).
    fn later<'a>(&self, kept: &'a [u64], buf: &'a mut Vec<u64>) -> &'a [u64] {
        if self.later_chunks & EVENLY == 0 {
            return kept;
        }
        let stride = self.stride;
        buf.clear();
        let mut t = self.first;
        buf.extend((0..self.later_count()).map(|_| {
            t += stride;
            t
        }));
        buf
    }
}

/// The stride of `later` when they follow `first` evenly (two or more of them), their time
/// made exact by adding it.
fn even_stride(first: u64, later: &[u64]) -> Option<u64> {
    if later.len() < 2 || later.len() >= EVENLY as usize {
        return None;
    }
    let stride = later[0].checked_sub(first)?;
    let mut t = first;
    later
        .iter()
        .all(|&c| {
            t.checked_add(stride).is_some_and(|next| {
                t = next;
                next == c
            })
        })
        .then_some(stride)
}

/// A [`Span`] in 32 bytes: its first token and end as offsets from its send, its counts and
/// stride as whole numbers; a span that does not fit is kept whole in [`Timeline::wide`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct Packed {
    /// The send, or (with `first` = [`WIDE`]) the index in [`Timeline::wide`].
    start: u64,
    /// After the send (ns); [`NO_FIRST`] without a first token.
    first: u32,
    end: u32,
    /// [`NO_COUNT`] for NaN.
    isl: u32,
    osl: u32,
    later_chunks: u32,
    stride: u32,
}

const NO_FIRST: u32 = u32::MAX;
const WIDE: u32 = u32::MAX - 1;
const NO_COUNT: u32 = u32::MAX;

/// A count as kept in a [`Packed`] span, when it is one exactly.
fn pack_count(x: f64) -> Option<u32> {
    if x.is_nan() {
        return Some(NO_COUNT);
    }
    let n = x as u32;
    (n != NO_COUNT && f64::from(n).to_bits() == x.to_bits()).then_some(n)
}

fn unpack_count(n: u32) -> f64 {
    if n == NO_COUNT { f64::NAN } else { f64::from(n) }
}

impl Packed {
    fn of(s: &Span) -> Option<Packed> {
        let first = if s.first == NO_TIME {
            NO_FIRST
        } else {
            u32::try_from(s.first.checked_sub(s.start)?).ok().filter(|&f| f < WIDE)?
        };
        Some(Packed {
            start: s.start,
            first,
            end: u32::try_from(s.end.checked_sub(s.start)?).ok()?,
            isl: pack_count(s.isl)?,
            osl: pack_count(s.osl)?,
            later_chunks: s.later_chunks,
            stride: u32::try_from(s.stride).ok()?,
        })
    }
}

/// The phases of every request, collected as they end; mergeable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Every request's span in the order added.
    spans: Vec<Packed>,
    /// The spans that do not fit in 32 bytes.
    wide: Vec<Span>,
    /// Arrival of every chunk after the first, span after span, but those kept as a stride.
    chunks: Vec<u64>,
    /// The earliest scheduled (or sent) time: where the run's window starts.
    origin: Option<u64>,
}

const PER_SECOND: f64 = 1e9;

/// Above this many chunks after the first in a run, the per-chunk curves' statistics over a
/// single window are taken in passes over their sweep instead of over a kept curve.
const STREAM_ABOVE: u64 = 1 << 24;

/// Above this many chunks after the first in a run, evenly spaced chunks are taken in closed
/// form ([`Timeline::metrics_over`]).
const CLOSED_ABOVE: u64 = 1 << 24;

impl Timeline {
    /// Makes room for `requests` more requests' spans.
    pub fn reserve(&mut self, requests: usize) {
        self.spans.reserve(requests);
    }

    /// Adds one request (`m`: its metrics when it succeeded).
    pub fn add(&mut self, r: &RequestRecord, m: Option<&RequestMetrics>) {
        self.add_chunks(r, r.chunks(), m);
    }

    /// [`Timeline::add`] of a record whose chunks are `chunks` (its `chunk_ns` not read).
    pub fn add_chunks(&mut self, r: &RequestRecord, chunks: ChunkTimes<'_>, m: Option<&RequestMetrics>) {
        let get = |k: Metric| m.and_then(|m| m.get(k)).unwrap_or(f64::NAN);
        let mut span = Span {
            start: r.sent_ns,
            first: NO_TIME,
            end: r.end_ns,
            isl: get(Metric::InputSequenceLength),
            osl: get(Metric::OutputSequenceLength),
            later_chunks: 0,
            stride: 0,
        };
        if m.is_some()
            && r.streaming
            && let Some(first) = chunks.first()
        {
            span.first = first;
            let later_count = chunks.len() - 1;
            if let Some(gap) = chunks.even_gap() {
                if (2..u64::from(EVENLY)).contains(&later_count) {
                    span.later_chunks = later_count as u32 | EVENLY;
                    span.stride = gap;
                } else {
                    span.later_chunks = later_count as u32;
                    self.chunks.extend((1..=later_count).filter_map(|k| chunks.get(k)));
                }
            } else if let ChunkTimes::Listed(listed) = chunks {
                self.add_listed(&mut span, listed);
            } else {
                self.add_listed(&mut span, &chunks.to_vec());
            }
        }
        self.push(span);
        let origin = r.scheduled_ns.min(r.sent_ns);
        self.origin = Some(self.origin.map_or(origin, |o| o.min(origin)));
    }

    /// Keeps the later chunks of `listed` (all the chunks, the first one's time in `span`) for
    /// `span`: as a stride when they follow the first evenly.
    fn add_listed(&mut self, span: &mut Span, listed: &[u64]) {
        if let Some((&first, later)) = listed.split_first() {
            if let Some(stride) = even_stride(first, later) {
                span.later_chunks = later.len() as u32 | EVENLY;
                span.stride = stride;
            } else {
                span.later_chunks = later.len() as u32;
                self.chunks.extend_from_slice(later);
            }
        }
    }

    fn push(&mut self, span: Span) {
        let packed = Packed::of(&span).unwrap_or_else(|| {
            self.wide.push(span);
            Packed {
                start: (self.wide.len() - 1) as u64,
                first: WIDE,
                end: 0,
                isl: 0,
                osl: 0,
                later_chunks: span.later_chunks,
                stride: 0,
            }
        });
        self.spans.push(packed);
    }

    /// The span at `i` (in the order added).
    fn span(&self, i: usize) -> Span {
        let p = self.spans[i];
        if p.first == WIDE {
            return self.wide[p.start as usize];
        }
        Span {
            start: p.start,
            first: if p.first == NO_FIRST { NO_TIME } else { p.start + u64::from(p.first) },
            end: p.start + u64::from(p.end),
            isl: unpack_count(p.isl),
            osl: unpack_count(p.osl),
            later_chunks: p.later_chunks,
            stride: u64::from(p.stride),
        }
    }

    /// Adds another timeline's requests.
    pub fn merge(&mut self, other: &Timeline) {
        for i in 0..other.spans.len() {
            self.push(other.span(i));
        }
        self.chunks.extend_from_slice(&other.chunks);
        self.origin = match (self.origin, other.origin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The run's window as its records tell it: from the earliest scheduled (or sent) time, the
    /// start of the run's schedule, to the latest end.
    pub fn window(&self) -> Option<(u64, u64)> {
        Some((self.origin?, (0..self.spans.len()).map(|i| self.span(i).end).max()?))
    }

    /// [`Timeline::metrics`] over `window`, else over [`Timeline::window`]; empty without
    /// requests.
    pub fn window_metrics(&self, window: Option<(u64, u64)>) -> Vec<(TimelineMetric, TimeWeighted)> {
        window.or_else(|| self.window()).map_or_else(Vec::new, |(a, b)| self.metrics(a, b))
    }

    /// Every time-weighted metric over `[from, to)` (ns on the records' clock), in AIPerf's
    /// order; empty without requests.
    pub fn metrics(&self, from: u64, to: u64) -> Vec<(TimelineMetric, TimeWeighted)> {
        self.metrics_over(&[(from, to)]).pop().unwrap_or_default()
    }

    /// [`metrics`](Self::metrics) over each of `windows`, in their order, from one sweep of the
    /// requests per curve: the time slices' windows cost a look-up and the steps inside each, not
    /// a pass over the run each. The curves are built a group at a time and dropped once every
    /// window has taken its metrics, so at most three are held at once; over a single window,
    /// the curves with a step per chunk (decode rate, tokens in flight) are not kept at all when
    /// the run has more than [`STREAM_ABOVE`] chunks: their statistics are taken in passes, the
    /// curve swept again for each.
    ///
    /// A run with more than [`CLOSED_ABOVE`] chunks after the first takes the chunks of each
    /// request whose chunks follow its first evenly in closed form: its decode rate as the one
    /// rate from its first token to its last chunk (the per-chunk curve's function, summed in
    /// fewer additions), its output tokens in flight as a ramp through its chunks instead of a
    /// step per chunk (within one chunk's tokens of the steps, per request decoding).
    pub fn metrics_over(&self, windows: &[(u64, u64)]) -> Vec<Vec<(TimelineMetric, TimeWeighted)>> {
        self.metrics_over_with(windows, STREAM_ABOVE, CLOSED_ABOVE)
    }

    /// [`metrics_over`](Self::metrics_over), streaming the per-chunk curves when the run has
    /// more than `stream_above` chunks after the first taken chunk by chunk, and taking evenly
    /// spaced chunks in closed form when it has more than `closed_above`.
    fn metrics_over_with(
        &self,
        windows: &[(u64, u64)],
        stream_above: u64,
        closed_above: u64,
    ) -> Vec<Vec<(TimelineMetric, TimeWeighted)>> {
        use TimelineMetric as T;
        if self.spans.is_empty() {
            return vec![Vec::new(); windows.len()];
        }
        type Out = Vec<Vec<(TimelineMetric, TimeWeighted)>>;
        fn put(out: &mut Out, windows: &[(u64, u64)], m: TimelineMetric, each: &dyn Fn(u64, u64) -> TimeWeighted) {
            for (o, &(from, to)) in out.iter_mut().zip(windows) {
                o.push((m, each(from, to)));
            }
        }
        let mut out: Out = windows.iter().map(|_| Vec::with_capacity(14)).collect();
        fn tw(s: &Steps, scale: f64) -> impl Fn(u64, u64) -> TimeWeighted + '_ {
            move |from, to| over_window(s, from, to, scale)
        }
        fn act<'a>(s: &'a Steps, mask: &'a Steps) -> impl Fn(u64, u64) -> TimeWeighted + 'a {
            move |from, to| while_active(s, mask, from, to, PER_SECOND)
        }
        let chunks: u64 = self.spans.iter().map(|p| u64::from(p.later_chunks & !EVENLY)).sum();
        let closed = chunks > closed_above;
        let even: u64 = self
            .spans
            .iter()
            .filter(|p| p.later_chunks & EVENLY != 0)
            .map(|p| u64::from(p.later_chunks & !EVENLY))
            .sum();
        let per_chunk_left = if closed { chunks - even } else { chunks };
        let streamed = match windows {
            [w] if per_chunk_left > stream_above => Some(*w),
            _ => None,
        };
        {
            let concurrency = self.sweep_split::<2>(|s, _, e| in_flight(s, e));
            put(&mut out, windows, T::EffectiveConcurrency, &tw(&concurrency, 1.0));
            let total = self.sweep_with(
                |s, _, e| {
                    prefill_rate(s, e);
                    even_decode_rate(s, e);
                },
                true,
            );
            put(&mut out, windows, T::ActiveTotalThroughput, &act(&total, &concurrency));
            put(&mut out, windows, T::EffectiveTotalThroughput, &tw(&total, PER_SECOND));
        }
        {
            let conc = self.sweep_split::<2>(|s, _, e| decoding(s, e));
            let chunked = chunks > 0;
            let rate_of = |s: &Span, later: &[u64], e: &mut Vec<Event>| {
                if !chunked {
                    even_decode_rate(s, e);
                } else if closed {
                    closed_decode(s, later, e);
                } else {
                    chunk_decode(s, later, e);
                }
            };
            put(&mut out, windows, T::EffectiveDecodeConcurrency, &tw(&conc, 1.0));
            if let (Some((from, to)), [o]) = (streamed, &mut out[..]) {
                o.extend(self.decode_streamed(rate_of, closed, &conc, from, to));
            } else {
                let rate = self.sweep_with(rate_of, closed);
                put(&mut out, windows, T::EffectiveDecodeThroughput, &tw(&rate, PER_SECOND));
                put(&mut out, windows, T::ActiveDecodeThroughput, &act(&rate, &conc));
                let per_user = divide(&rate, &conc);
                drop(rate);
                put(&mut out, windows, T::ActiveDecodeThroughputPerUser, &act(&per_user, &conc));
                put(&mut out, windows, T::EffectiveDecodeThroughputPerUser, &tw(&per_user, PER_SECOND));
            }
        }
        {
            let conc = self.sweep_split::<2>(|s, _, e| prefilling(s, e));
            let rate = self.sweep_split::<2>(|s, _, e| prefill_rate(s, e));
            put(&mut out, windows, T::EffectivePrefillThroughput, &tw(&rate, PER_SECOND));
            put(&mut out, windows, T::EffectivePrefillConcurrency, &tw(&conc, 1.0));
            put(&mut out, windows, T::ActivePrefillThroughput, &act(&rate, &conc));
            let per_user = divide(&rate, &conc);
            drop(rate);
            put(&mut out, windows, T::ActivePrefillThroughputPerUser, &act(&per_user, &conc));
            put(&mut out, windows, T::EffectivePrefillThroughputPerUser, &tw(&per_user, PER_SECOND));
        }
        let per_chunk = chunks > 0;
        let in_flight = |s: &Span, later: &[u64], e: &mut Vec<Event>| tokens_in_flight(s, later, per_chunk, e);
        if closed && even > 0 {
            let ramps = self.in_flight_ramps(per_chunk);
            put(&mut out, windows, T::TokensInFlight, &|from, to| ramps.over_window(from, to));
        } else if let (Some((from, to)), [o]) = (streamed, &mut out[..]) {
            o.push((T::TokensInFlight, self.streamed(in_flight, from, to)));
        } else {
            let steps = self.sweep_with(in_flight, false);
            put(&mut out, windows, T::TokensInFlight, &tw(&steps, 1.0));
        }
        // AIPerf's order.
        let order = [
            T::EffectiveConcurrency,
            T::EffectiveDecodeThroughput,
            T::EffectivePrefillThroughput,
            T::EffectiveDecodeConcurrency,
            T::EffectivePrefillConcurrency,
            T::EffectiveTotalThroughput,
            T::EffectiveDecodeThroughputPerUser,
            T::EffectivePrefillThroughputPerUser,
            T::TokensInFlight,
            T::ActiveDecodeThroughput,
            T::ActivePrefillThroughput,
            T::ActiveDecodeThroughputPerUser,
            T::ActivePrefillThroughputPerUser,
            T::ActiveTotalThroughput,
        ];
        for o in &mut out {
            o.sort_by_key(|(m, _)| order.iter().position(|x| x == m));
        }
        out
    }

    /// The tokens in flight with each evenly spaced span's output as a ramp ([`ramp_in_flight`]),
    /// the other spans' steps as [`tokens_in_flight`] makes them.
    fn in_flight_ramps(&self, per_chunk: bool) -> Ramps {
        let mut bends = Vec::with_capacity(4 * self.spans.len());
        let mut steps = Vec::new();
        let mut buf = Vec::new();
        self.each_span(|s, kept| {
            if s.later_chunks & EVENLY != 0 && ramp_in_flight(s, s.stride, &mut bends).is_some() {
                return;
            }
            steps.clear();
            tokens_in_flight(s, s.later(kept, &mut buf), per_chunk, &mut steps);
            bends.extend(steps.iter().map(|&(t, d)| (t, d, 0.0)));
        });
        Ramps::of(bends)
    }

    /// Calls `f` with every span and its entries of [`Timeline::chunks`], in the order added.
    fn each_span(&self, mut f: impl FnMut(&Span, &[u64])) {
        let mut at = 0;
        for i in 0..self.spans.len() {
            let n = Span::kept_of(self.spans[i].later_chunks);
            let kept = if self.chunks.is_empty() { &[][..] } else { self.chunks.get(at..at + n).unwrap_or(&[]) };
            at += n;
            f(&self.span(i), kept);
        }
    }
}
