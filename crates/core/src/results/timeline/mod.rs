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

mod events;
mod metric;
mod ramps;
mod settled;
mod settling;
mod spans;
mod steps;
mod streamed;
mod sweep;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
mod weighted;

use std::borrow::Cow;

use events::{
    SpanBends, chunk_decode, closed_decode, decoding, even_decode_rate, in_flight, prefill_rate, prefilling,
    tokens_in_flight,
};
use metric::PER_SECOND;
pub use metric::{TimeWeighted, TimelineMetric};
use ramps::{Bend, Ramps};
use settled::SettledCurve;
pub use spans::Timeline;
use spans::{EVENLY, Span};
use steps::{Event, Steps, over_window, per_user, while_active};

use crate::fork::{Fork, InTurn, Part};

/// Above this many chunks after the first in a run, the per-chunk curves' statistics over a
/// single window are taken in passes over their sweep instead of over a kept curve.
const STREAM_ABOVE: u64 = 1 << 24;

/// Above this many chunks after the first in a run, evenly spaced chunks are taken in closed
/// form ([`Timeline::metrics_over`]).
const CLOSED_ABOVE: u64 = 1 << 24;

impl Timeline {
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
    /// window has taken its metrics, so at most two are held at once; over a single window,
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
        self.metrics_over_on(windows, &InTurn)
    }

    /// [`metrics_over`](Self::metrics_over) with its curves' groups given to `fork` as parts:
    /// the same figures, the groups' curves held at once where `fork` runs them at once.
    pub fn metrics_over_on(
        &self,
        windows: &[(u64, u64)],
        fork: &impl Fork,
    ) -> Vec<Vec<(TimelineMetric, TimeWeighted)>> {
        Self::in_order(windows, fork.run(self.parts_over(windows)))
    }

    /// The figures of the groups of curves `groups` (indices below [`CURVE_GROUPS`] in the
    /// order of [`parts_over`](Self::parts_over)) over `windows`, one after the other: what
    /// another thread or worker computes of a report ([`crate::results::aggregate::Pending`]).
    pub fn groups_over(&self, windows: &[(u64, u64)], groups: &[usize]) -> Vec<Metrics> {
        let mut parts: Vec<Option<Part<'_, Metrics>>> = self.parts_over(windows).into_iter().map(Some).collect();
        groups.iter().filter_map(|&g| parts.get_mut(g).and_then(Option::take)).map(|p| p()).collect()
    }

    /// The parts computing [`metrics_over`](Self::metrics_over) (a group of curves each, its
    /// figures over every window; [`CURVE_GROUPS`] of them with requests), to be put in order
    /// by [`Timeline::in_order`].
    pub(crate) fn parts_over<'a>(&'a self, windows: &'a [(u64, u64)]) -> Vec<Part<'a, Metrics>> {
        self.metric_parts(windows, STREAM_ABOVE, CLOSED_ABOVE)
    }

    /// [`metrics_over`](Self::metrics_over), streaming the per-chunk curves when the run has
    /// more than `stream_above` chunks after the first taken chunk by chunk, and taking evenly
    /// spaced chunks in closed form when it has more than `closed_above`.
    #[cfg(test)]
    fn metrics_over_with(
        &self,
        windows: &[(u64, u64)],
        stream_above: u64,
        closed_above: u64,
    ) -> Vec<Vec<(TimelineMetric, TimeWeighted)>> {
        Self::in_order(windows, InTurn.run(self.metric_parts(windows, stream_above, closed_above)))
    }

    /// The metrics of every window from the groups' figures, in AIPerf's order.
    pub fn in_order(windows: &[(u64, u64)], groups: Vec<Metrics>) -> Metrics {
        let mut out: Metrics = windows.iter().map(|_| Vec::with_capacity(14)).collect();
        for group in groups {
            for (o, g) in out.iter_mut().zip(group) {
                o.extend(g);
            }
        }
        for o in &mut out {
            o.sort_by_key(|(m, _)| ORDER.iter().position(|x| x == m));
        }
        out
    }

    /// The groups of curves swept and weighed together, each a part computing its metrics over
    /// every window; the groups of a curve per chunk first. None without requests.
    fn metric_parts<'a>(
        &'a self,
        windows: &'a [(u64, u64)],
        stream_above: u64,
        closed_above: u64,
    ) -> Vec<Part<'a, Metrics>> {
        if self.spans.is_empty() {
            return Vec::new();
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
        let plan = Plan { windows, chunks, closed, even, streamed };
        vec![
            Box::new(move || self.decode_group(&plan)),
            Box::new(move || self.in_flight_group(&plan)),
            Box::new(move || self.total_group(&plan)),
            Box::new(move || self.prefill_group(&plan)),
        ]
    }

    /// The concurrency and the total throughput.
    fn total_group(&self, plan: &Plan<'_>) -> Metrics {
        use TimelineMetric as T;
        let windows = plan.windows;
        let mut out = plan.out();
        let concurrency = self
            .swept(SettledCurve::Concurrency)
            .map_or_else(|| Cow::Owned(self.sweep_split::<2>(|s, _, e| in_flight(s, e))), Cow::Borrowed);
        put(&mut out, windows, T::EffectiveConcurrency, &tw(&concurrency, 1.0));
        let total = self.swept(SettledCurve::Total).map_or_else(
            || {
                Cow::Owned(self.sweep_with(
                    |s, _, e| {
                        prefill_rate(s, e);
                        even_decode_rate(s, e);
                    },
                    true,
                ))
            },
            Cow::Borrowed,
        );
        put(&mut out, windows, T::ActiveTotalThroughput, &act(&total, &concurrency));
        put(&mut out, windows, T::EffectiveTotalThroughput, &tw(&total, PER_SECOND));
        out
    }

    /// The decode concurrency, the decode rate and its rates per request.
    fn decode_group(&self, plan: &Plan<'_>) -> Metrics {
        use TimelineMetric as T;
        let windows = plan.windows;
        let mut out = plan.out();
        let (chunked, closed) = (plan.chunks > 0, plan.closed);
        let rate_of = |s: &Span, later: &[u64], e: &mut Vec<Event>| {
            if !chunked {
                even_decode_rate(s, e);
            } else if closed {
                closed_decode(s, later, e);
            } else {
                chunk_decode(s, later, e);
            }
        };
        // Without chunks, or with the evenly spaced chunks in closed form (one step up and one
        // down a span) and at most a chunk kept a span besides, the decode rate is swept with
        // its concurrency.
        let kept = plan.chunks - if closed { plan.even } else { 0 };
        let two_steps = !chunked || (closed && kept <= self.spans.len() as u64);
        // The curves settled as the spans came: the decode rate when it is the closed form's.
        let settled_conc = self.swept(SettledCurve::DecodeConcurrency);
        let (conc, two) = if two_steps {
            match (settled_conc, self.swept(SettledCurve::ClosedDecodeRate).filter(|_| chunked && closed)) {
                (Some(conc), Some(rate)) => (Cow::Borrowed(conc), Some(Cow::Borrowed(rate))),
                _ => {
                    let [conc, rate] = self.sweep_two::<3>(|s, _, e| decoding(s, e), rate_of);
                    (Cow::Owned(conc), Some(Cow::Owned(rate)))
                }
            }
        } else {
            let conc =
                settled_conc.map_or_else(|| Cow::Owned(self.sweep_split::<2>(|s, _, e| decoding(s, e))), Cow::Borrowed);
            (conc, None)
        };
        put(&mut out, windows, T::EffectiveDecodeConcurrency, &tw(&conc, 1.0));
        if let (Some((from, to)), [o], None) = (plan.streamed, &mut out[..], &two) {
            o.extend(self.decode_streamed(rate_of, closed, &conc, from, to));
        } else {
            let rate = two.unwrap_or_else(|| Cow::Owned(self.sweep_with(rate_of, closed)));
            put(&mut out, windows, T::EffectiveDecodeThroughput, &tw(&rate, PER_SECOND));
            put_per_user(
                &mut out,
                windows,
                &rate,
                &conc,
                [T::ActiveDecodeThroughput, T::ActiveDecodeThroughputPerUser, T::EffectiveDecodeThroughputPerUser],
            );
        }
        out
    }

    /// The prefill concurrency, the prefill rate and its rates per request.
    fn prefill_group(&self, plan: &Plan<'_>) -> Metrics {
        use TimelineMetric as T;
        let windows = plan.windows;
        let mut out = plan.out();
        let [conc, rate] = match (self.swept(SettledCurve::PrefillConcurrency), self.swept(SettledCurve::PrefillRate)) {
            (Some(conc), Some(rate)) => [Cow::Borrowed(conc), Cow::Borrowed(rate)],
            _ => self.sweep_two::<2>(|s, _, e| prefilling(s, e), |s, _, e| prefill_rate(s, e)).map(Cow::Owned),
        };
        put(&mut out, windows, T::EffectivePrefillThroughput, &tw(&rate, PER_SECOND));
        put(&mut out, windows, T::EffectivePrefillConcurrency, &tw(&conc, 1.0));
        put_per_user(
            &mut out,
            windows,
            &rate,
            &conc,
            [T::ActivePrefillThroughput, T::ActivePrefillThroughputPerUser, T::EffectivePrefillThroughputPerUser],
        );
        out
    }

    /// The tokens in flight.
    fn in_flight_group(&self, plan: &Plan<'_>) -> Metrics {
        use TimelineMetric as T;
        let windows = plan.windows;
        let mut out = plan.out();
        let per_chunk = plan.chunks > 0;
        let in_flight = |s: &Span, later: &[u64], e: &mut Vec<Event>| tokens_in_flight(s, later, per_chunk, e);
        if plan.closed && plan.even > 0 {
            // Closed, the run has chunks: the ramps settled count them, as these do.
            let ramps = self.swept_ramps().map_or_else(|| Cow::Owned(self.in_flight_ramps(per_chunk)), Cow::Borrowed);
            put(&mut out, windows, T::TokensInFlight, &|from, to| ramps.over_window(from, to));
        } else if let (Some((from, to)), [o]) = (plan.streamed, &mut out[..]) {
            o.push((T::TokensInFlight, self.streamed(in_flight, from, to)));
        } else {
            let steps = self.sweep_with(in_flight, false);
            put(&mut out, windows, T::TokensInFlight, &tw(&steps, 1.0));
        }
        out
    }

    /// The tokens in flight with each evenly spaced span's output as a ramp, the other spans'
    /// steps as [`tokens_in_flight`] makes them ([`SpanBends`]).
    fn in_flight_ramps(&self, per_chunk: bool) -> Ramps {
        let mut lists: [Vec<Bend>; 4] = std::array::from_fn(|_| Vec::with_capacity(self.spans.len()));
        let mut bends = SpanBends::default();
        self.each_span(|s, kept| bends.put(s, kept, per_chunk, &mut lists));
        Ramps::of(lists)
    }
}

/// Each window's metrics.
pub type Metrics = Vec<Vec<(TimelineMetric, TimeWeighted)>>;

/// The groups of curves a timeline's metrics are computed in ([`Timeline::parts_over`]): the
/// decode rates, the tokens in flight, the total rate and concurrency, the prefill rates.
pub const CURVE_GROUPS: usize = 4;

/// AIPerf's order of the time-weighted metrics.
const ORDER: [TimelineMetric; 14] = {
    use TimelineMetric as T;
    [
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
    ]
};

/// What every group of curves reads of the run: the windows, the chunks after the first, whether
/// evenly spaced chunks are taken in closed form and how many of them there are, and the window
/// whose per-chunk curves are streamed instead of kept.
#[derive(Clone, Copy)]
struct Plan<'a> {
    windows: &'a [(u64, u64)],
    chunks: u64,
    closed: bool,
    even: u64,
    streamed: Option<(u64, u64)>,
}

impl Plan<'_> {
    fn out(&self) -> Metrics {
        self.windows.iter().map(|_| Vec::with_capacity(4)).collect()
    }
}

/// Each window's figure of `m`.
fn put(out: &mut Metrics, windows: &[(u64, u64)], m: TimelineMetric, each: &dyn Fn(u64, u64) -> TimeWeighted) {
    for (o, &(from, to)) in out.iter_mut().zip(windows) {
        o.push((m, each(from, to)));
    }
}

/// The statistics of `s` (× `scale`) over a window.
fn tw(s: &Steps, scale: f64) -> impl Fn(u64, u64) -> TimeWeighted + '_ {
    move |from, to| over_window(s, from, to, scale)
}

/// The statistics of `s` a second while `mask` is above 0 in a window.
fn act<'a>(s: &'a Steps, mask: &'a Steps) -> impl Fn(u64, u64) -> TimeWeighted + 'a {
    move |from, to| while_active(s, mask, from, to, PER_SECOND)
}

/// A rate while its phase is active, and per request while active and over the window.
fn put_per_user(out: &mut Metrics, windows: &[(u64, u64)], rate: &Steps, conc: &Steps, tags: [TimelineMetric; 3]) {
    for (o, &(from, to)) in out.iter_mut().zip(windows) {
        o.extend(tags.into_iter().zip(per_user(rate, conc, from, to, PER_SECOND)));
    }
}
