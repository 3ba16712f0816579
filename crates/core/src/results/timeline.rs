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

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::results::metrics::{Metric, RequestMetrics};
use crate::results::record::RequestRecord;

mod weighted;

use weighted::Weighted;

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
    /// Chunks after the first, kept in [`Timeline::chunks`] in order of the spans: each time,
    /// or (with [`EVENLY`]) one stride when they follow the first evenly.
    later_chunks: u32,
}

/// The flag of [`Span::later_chunks`] saying that the span's later chunks are `first + k ×
/// stride` for k = 1, 2, …, kept as the one stride.
const EVENLY: u32 = 1 << 31;

impl Span {
    /// The number of chunks after the first.
    fn later_count(&self) -> usize {
        (self.later_chunks & !EVENLY) as usize
    }

    /// The entries a span with these `later_chunks` holds in [`Timeline::chunks`].
    fn kept_of(later_chunks: u32) -> usize {
        if later_chunks & EVENLY != 0 { 1 } else { (later_chunks & !EVENLY) as usize }
    }

    /// The span's chunks after the first, from its `kept` entries of [`Timeline::chunks`]
    /// (written into `buf` when kept as a stride).
    fn later<'a>(&self, kept: &'a [u64], buf: &'a mut Vec<u64>) -> &'a [u64] {
        if self.later_chunks & EVENLY == 0 {
            return kept;
        }
        let stride = kept.first().copied().unwrap_or(0);
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

/// A [`Span`] in 32 bytes: its first token and end as offsets from its send, its counts as
/// whole numbers; a span that does not fit is kept whole in [`Timeline::wide`].
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
    /// Arrival of every chunk after the first, span after span.
    chunks: Vec<u64>,
    /// The earliest scheduled (or sent) time: where the run's window starts.
    origin: Option<u64>,
}

/// A time-weighted metric of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimelineMetric {
    EffectiveConcurrency,
    EffectiveDecodeThroughput,
    EffectivePrefillThroughput,
    EffectiveDecodeConcurrency,
    EffectivePrefillConcurrency,
    EffectiveTotalThroughput,
    EffectiveDecodeThroughputPerUser,
    EffectivePrefillThroughputPerUser,
    TokensInFlight,
    ActiveDecodeThroughput,
    ActivePrefillThroughput,
    ActiveDecodeThroughputPerUser,
    ActivePrefillThroughputPerUser,
    ActiveTotalThroughput,
}

impl TimelineMetric {
    /// AIPerf's tag.
    pub fn tag(self) -> &'static str {
        match self {
            TimelineMetric::EffectiveConcurrency => "effective_concurrency",
            TimelineMetric::EffectiveDecodeThroughput => "effective_decode_throughput",
            TimelineMetric::EffectivePrefillThroughput => "effective_prefill_throughput",
            TimelineMetric::EffectiveDecodeConcurrency => "effective_decode_concurrency",
            TimelineMetric::EffectivePrefillConcurrency => "effective_prefill_concurrency",
            TimelineMetric::EffectiveTotalThroughput => "effective_total_throughput",
            TimelineMetric::EffectiveDecodeThroughputPerUser => "effective_decode_throughput_per_user",
            TimelineMetric::EffectivePrefillThroughputPerUser => "effective_prefill_throughput_per_user",
            TimelineMetric::TokensInFlight => "tokens_in_flight",
            TimelineMetric::ActiveDecodeThroughput => "active_decode_throughput",
            TimelineMetric::ActivePrefillThroughput => "active_prefill_throughput",
            TimelineMetric::ActiveDecodeThroughputPerUser => "active_decode_throughput_per_user",
            TimelineMetric::ActivePrefillThroughputPerUser => "active_prefill_throughput_per_user",
            TimelineMetric::ActiveTotalThroughput => "active_total_throughput",
        }
    }

    /// AIPerf's header.
    pub fn header(self) -> &'static str {
        match self {
            TimelineMetric::EffectiveConcurrency => "Effective Concurrency",
            TimelineMetric::EffectiveDecodeThroughput => "Effective Decode Throughput",
            TimelineMetric::EffectivePrefillThroughput => "Effective Prefill Throughput",
            TimelineMetric::EffectiveDecodeConcurrency => "Effective Decode Concurrency",
            TimelineMetric::EffectivePrefillConcurrency => "Effective Prefill Concurrency",
            TimelineMetric::EffectiveTotalThroughput => "Effective Total Throughput",
            TimelineMetric::EffectiveDecodeThroughputPerUser => "Effective Decode Throughput Per User",
            TimelineMetric::EffectivePrefillThroughputPerUser => "Effective Prefill Throughput Per User",
            TimelineMetric::TokensInFlight => "Tokens In Flight",
            TimelineMetric::ActiveDecodeThroughput => "Active Decode Throughput",
            TimelineMetric::ActivePrefillThroughput => "Active Prefill Throughput",
            TimelineMetric::ActiveDecodeThroughputPerUser => "Active Decode Throughput Per User",
            TimelineMetric::ActivePrefillThroughputPerUser => "Active Prefill Throughput Per User",
            TimelineMetric::ActiveTotalThroughput => "Active Total Throughput",
        }
    }

    /// AIPerf's unit.
    pub fn unit(self) -> &'static str {
        use TimelineMetric as T;
        match self {
            T::EffectiveConcurrency | T::EffectiveDecodeConcurrency | T::EffectivePrefillConcurrency => "requests",
            T::TokensInFlight => "tokens",
            T::EffectiveDecodeThroughputPerUser
            | T::EffectivePrefillThroughputPerUser
            | T::ActiveDecodeThroughputPerUser
            | T::ActivePrefillThroughputPerUser => "tokens/sec/user",
            _ => "tokens/sec",
        }
    }
}

/// Time-weighted statistics of a step function (AIPerf's `SweepLineStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeWeighted {
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub std: f64,
}

impl TimeWeighted {
    /// The statistics as (AIPerf's key, value), in the order AIPerf writes them.
    pub fn stats(&self) -> [(&'static str, f64); 8] {
        [
            ("avg", self.avg),
            ("p50", self.p50),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("min", self.min),
            ("max", self.max),
            ("std", self.std),
        ]
    }
}

/// A step function: from each time on, the value until the next (sorted, distinct times; 0
/// before the first).
type Steps = Vec<(u64, f64)>;

/// From its time on, the curve's level changes by its delta.
type Event = (u64, f64);

/// The order in which events are summed: by time, then by delta.
fn event_order(a: &Event, b: &Event) -> Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// One span's events not summed yet: `events[next..]`, in [`event_order`].
#[derive(Default)]
struct Pending {
    events: Vec<Event>,
    next: usize,
}

/// The next event of the [`Pending`] list `slot`; the earliest event is the greatest, so that
/// [`BinaryHeap`] yields them earliest first.
struct Head {
    event: Event,
    slot: usize,
}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> Ordering {
        event_order(&other.event, &self.event)
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

/// Sums events in [`event_order`] into a step function (AIPerf's cumulated sweep: a value
/// smaller than 1e-9 of the largest is rounding and counts as 0).
struct Summer {
    steps: Steps,
    level: f64,
    largest: f64,
}

impl Summer {
    fn new() -> Summer {
        Summer { steps: Steps::new(), level: 0.0, largest: 0.0 }
    }

    fn add(&mut self, (t, d): Event) {
        self.level += d;
        self.largest = self.largest.max(self.level.abs());
        match self.steps.last_mut() {
            Some(last) if last.0 == t => last.1 = self.level,
            _ => self.steps.push((t, self.level)),
        }
    }

    fn finish(mut self) -> Steps {
        let floor = 1e-9 * self.largest;
        for s in &mut self.steps {
            if s.1.abs() < floor {
                s.1 = 0.0;
            }
        }
        self.steps
    }
}

/// The value of `steps` at `t`.
fn at(steps: &[(u64, f64)], t: u64) -> f64 {
    match steps.partition_point(|s| s.0 <= t) {
        0 => 0.0,
        i => steps[i - 1].1,
    }
}

/// Calls `each(time, a, b)` at every time of `a` or `b` (each sorted, with distinct times), in
/// order, with the values both hold from that time on (`va`, `vb` before their first).
fn merged(a: &[(u64, f64)], b: &[(u64, f64)], mut va: f64, mut vb: f64, mut each: impl FnMut(u64, f64, f64)) {
    let (mut i, mut j) = (0, 0);
    loop {
        let t = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => return,
        };
        if let Some(x) = a.get(i)
            && x.0 == t
        {
            va = x.1;
            i += 1;
        }
        if let Some(y) = b.get(j)
            && y.0 == t
        {
            vb = y.1;
            j += 1;
        }
        each(t, va, vb);
    }
}

/// Calls `each(duration, a, b)` for the segments of `[from, to)` on which both step functions
/// hold, in order.
fn segments(a: &Steps, b: &Steps, from: u64, to: u64, mut each: impl FnMut(u64, f64, f64)) {
    fn inside(s: &Steps, from: u64, to: u64) -> &[(u64, f64)] {
        let lo = s.partition_point(|x| x.0 <= from);
        let hi = s.partition_point(|x| x.0 < to);
        &s[lo..hi.max(lo)]
    }
    let (mut t, mut va, mut vb) = (from, at(a, from), at(b, from));
    merged(inside(a, from, to), inside(b, from, to), va, vb, |next, na, nb| {
        each(next - t, va, vb);
        (t, va, vb) = (next, na, nb);
    });
    each(to - t, va, vb);
}

/// The (duration, value × `scale`) pairs `steps` holds over `[from, to)`: the value at `from`,
/// then each step inside the window, each held until the next.
fn window_pairs(steps: &[(u64, f64)], from: u64, to: u64, scale: f64, mut each: impl FnMut(u64, f64)) {
    let lo = steps.partition_point(|x| x.0 <= from);
    let hi = steps.partition_point(|x| x.0 < to).max(lo);
    let mut t = from;
    let mut v = at(steps, from);
    for &(next, value) in &steps[lo..hi] {
        each(next - t, v * scale);
        (t, v) = (next, value);
    }
    each(to - t, v * scale);
}

/// Time-weighted statistics of `steps` over `[from, to)`.
fn over_window(steps: &Steps, from: u64, to: u64, scale: f64) -> TimeWeighted {
    if steps.is_empty() || to <= from {
        return TimeWeighted::default();
    }
    let upto = steps.len() as u64 + 1;
    Weighted::of_pairs(|w| window_pairs(steps, from, to, scale, |d, v| w.add(d, v)), Some((to - from) as f64), upto)
}

/// Time-weighted statistics of `rate` over the time of `[from, to)` when `mask` is above 0.
fn while_active(rate: &Steps, mask: &Steps, from: u64, to: u64, scale: f64) -> TimeWeighted {
    if rate.is_empty() || mask.is_empty() || to <= from {
        return TimeWeighted::default();
    }
    let upto = (rate.len() + mask.len()) as u64 + 1;
    let pairs = |w: &mut Weighted| {
        segments(rate, mask, from, to, |d, v, m| {
            if m > 0.0 {
                w.add(d, v * scale);
            }
        })
    };
    Weighted::of_pairs(pairs, None, upto)
}

/// `num / den` where `den` is above 0, else 0.
fn divide(num: &Steps, den: &Steps) -> Steps {
    if num.is_empty() || den.is_empty() {
        return Steps::new();
    }
    let mut out = Steps::with_capacity(num.len().max(den.len()));
    merged(num, den, 0.0, 0.0, |t, n, d| out.push((t, if d > 0.0 { n / d } else { 0.0 })));
    out
}

const PER_SECOND: f64 = 1e9;

/// Above this many chunks after the first in a run, the per-chunk curves' statistics over a
/// single window are taken in passes over their sweep instead of over a kept curve.
const STREAM_ABOVE: u64 = 1 << 24;

/// Above this many chunks after the first in a run, evenly spaced chunks are taken in closed
/// form ([`Timeline::metrics_over`]).
const CLOSED_ABOVE: u64 = 1 << 24;

/// The (duration, value) pairs a step function holds over `[from, to)` ([`window_pairs`]), from
/// its steps given one at a time.
struct Feed<V> {
    from: u64,
    to: u64,
    /// The time of the value held.
    t: u64,
    v: V,
    closed: bool,
}

impl<V: Copy> Feed<V> {
    /// `v`: the value before the first step.
    fn new(from: u64, to: u64, v: V) -> Feed<V> {
        Feed { from, to, t: from, v, closed: false }
    }

    fn step(&mut self, t: u64, v: V, out: impl FnOnce(u64, V)) {
        if self.closed {
            return;
        }
        if t <= self.from {
            self.v = v;
        } else if t >= self.to {
            self.finish(out);
        } else {
            out(t - self.t, self.v);
            (self.t, self.v) = (t, v);
        }
    }

    /// The last value, held to the window's end.
    fn finish(&mut self, out: impl FnOnce(u64, V)) {
        if !self.closed {
            self.closed = true;
            out(self.to - self.t, self.v);
        }
    }
}

/// One pass of [`Timeline::decode_streamed`]: the statistics and where each stands in the window.
struct DecodePass {
    /// The rate over the window (on its own steps).
    rate: Weighted,
    /// The rate while the concurrency is above 0.
    active: Weighted,
    /// The rate per request while the concurrency is above 0.
    per_user: Weighted,
    /// The rate per request over the window.
    per_user_window: Weighted,
    /// The rate's own steps.
    own: Feed<f64>,
    /// The steps of the rate and the concurrency merged: (rate, concurrency).
    both: Feed<(f64, f64)>,
    with_conc: bool,
}

impl DecodePass {
    fn done(&self) -> bool {
        self.rate.done()
            && (!self.with_conc || (self.active.done() && self.per_user.done() && self.per_user_window.done()))
    }

    fn own(&mut self, t: u64, r: f64) {
        let w = &mut self.rate;
        self.own.step(t, r, |d, r| w.add(d, r * PER_SECOND));
    }

    fn both(&mut self, t: u64, r: f64, c: f64) {
        if !self.with_conc {
            return;
        }
        let (active, per_user, per_user_window) = (&mut self.active, &mut self.per_user, &mut self.per_user_window);
        self.both.step(t, (r, c), |d, (r, c)| Self::held(active, per_user, per_user_window, d, r, c));
    }

    fn held(active: &mut Weighted, per_user: &mut Weighted, per_user_window: &mut Weighted, d: u64, r: f64, c: f64) {
        let u = if c > 0.0 { r / c } else { 0.0 };
        if c > 0.0 {
            active.add(d, r * PER_SECOND);
            per_user.add(d, u * PER_SECOND);
        }
        per_user_window.add(d, u * PER_SECOND);
    }

    fn end_pass(&mut self) {
        let w = &mut self.rate;
        self.own.finish(|d, r| w.add(d, r * PER_SECOND));
        w.end_pass();
        if self.with_conc {
            let (active, per_user, per_user_window) = (&mut self.active, &mut self.per_user, &mut self.per_user_window);
            self.both.finish(|d, (r, c)| Self::held(active, per_user, per_user_window, d, r, c));
            active.end_pass();
            per_user.end_pass();
            per_user_window.end_pass();
        }
    }
}

impl Timeline {
    /// Adds one request (`m`: its metrics when it succeeded).
    pub fn add(&mut self, r: &RequestRecord, m: Option<&RequestMetrics>) {
        let get = |k: Metric| m.and_then(|m| m.get(k)).unwrap_or(f64::NAN);
        let mut span = Span {
            start: r.sent_ns,
            first: NO_TIME,
            end: r.end_ns,
            isl: get(Metric::InputSequenceLength),
            osl: get(Metric::OutputSequenceLength),
            later_chunks: 0,
        };
        if m.is_some()
            && r.streaming
            && let Some((&first, later)) = r.chunk_ns.split_first()
        {
            span.first = first;
            if let Some(stride) = even_stride(first, later) {
                span.later_chunks = later.len() as u32 | EVENLY;
                self.chunks.push(stride);
            } else {
                span.later_chunks = later.len() as u32;
                self.chunks.extend_from_slice(later);
            }
        }
        self.push(span);
        let origin = r.scheduled_ns.min(r.sent_ns);
        self.origin = Some(self.origin.map_or(origin, |o| o.min(origin)));
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
            let concurrency = self.sweep(|s, _, e| e.extend([(s.start, 1.0), (s.end, -1.0)]));
            put(&mut out, windows, T::EffectiveConcurrency, &tw(&concurrency, 1.0));
            let total = self.sweep(|s, _, e| {
                prefill_rate(s, e);
                even_decode_rate(s, e);
            });
            put(&mut out, windows, T::ActiveTotalThroughput, &act(&total, &concurrency));
            put(&mut out, windows, T::EffectiveTotalThroughput, &tw(&total, PER_SECOND));
        }
        {
            let conc = self.sweep(|s, _, e| {
                if s.first != NO_TIME {
                    e.extend([(s.first, 1.0), (s.end, -1.0)]);
                }
            });
            let chunked = !self.chunks.is_empty();
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
            let conc = self.sweep(|s, _, e| {
                if s.first != NO_TIME {
                    e.extend([(s.start, 1.0), (s.first, -1.0)]);
                }
            });
            let rate = self.sweep(|s, _, e| prefill_rate(s, e));
            put(&mut out, windows, T::EffectivePrefillThroughput, &tw(&rate, PER_SECOND));
            put(&mut out, windows, T::EffectivePrefillConcurrency, &tw(&conc, 1.0));
            put(&mut out, windows, T::ActivePrefillThroughput, &act(&rate, &conc));
            let per_user = divide(&rate, &conc);
            drop(rate);
            put(&mut out, windows, T::ActivePrefillThroughputPerUser, &act(&per_user, &conc));
            put(&mut out, windows, T::EffectivePrefillThroughputPerUser, &tw(&per_user, PER_SECOND));
        }
        let per_chunk = !self.chunks.is_empty();
        let in_flight = |s: &Span, later: &[u64], e: &mut Vec<Event>| tokens_in_flight(s, later, per_chunk, e);
        if closed && even > 0 {
            let ramps = self.in_flight_ramps();
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
    fn in_flight_ramps(&self) -> Ramps {
        let per_chunk = !self.chunks.is_empty();
        let mut bends = Vec::with_capacity(4 * self.spans.len());
        let mut steps = Vec::new();
        let mut buf = Vec::new();
        self.each_span(|s, kept| {
            let stride = kept.first().copied().unwrap_or(0);
            if s.later_chunks & EVENLY != 0 && ramp_in_flight(s, stride, &mut bends).is_some() {
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

    /// The sweep's rounding floor and whether it has any step.
    fn floor(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>), raw: bool) -> (f64, bool) {
        let mut any = false;
        let largest = self.sweep_steps(each, raw, 0.0, |_, _| any = true);
        (1e-9 * largest, any)
    }

    /// [`over_window`] of the sweep of `each`, in passes over the sweep made again for each.
    fn streamed(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>) + Copy, from: u64, to: u64) -> TimeWeighted {
        let (floor, any) = self.floor(each, false);
        if !any || to <= from {
            return TimeWeighted::default();
        }
        let mut w = Weighted::new(Some((to - from) as f64), u64::MAX);
        while !w.done() {
            let mut feed = Feed::new(from, to, 0.0);
            self.sweep_steps(each, false, floor, |t, v| feed.step(t, v, |d, v| w.add(d, v)));
            feed.finish(|d, v| w.add(d, v));
            w.end_pass();
        }
        w.result()
    }

    /// The four decode-rate metrics over `[from, to)` in passes over the decode rate's sweep
    /// (made again for each) merged with the decode concurrency `conc`: the rate over the
    /// window, while `conc` is above 0, and the rate per request (`divide`) both ways.
    fn decode_streamed(
        &self,
        rate: impl Fn(&Span, &[u64], &mut Vec<Event>) + Copy,
        raw: bool,
        conc: &Steps,
        from: u64,
        to: u64,
    ) -> [(TimelineMetric, TimeWeighted); 4] {
        use TimelineMetric as T;
        let (floor, any) = self.floor(rate, raw);
        let tags = [
            T::EffectiveDecodeThroughput,
            T::ActiveDecodeThroughput,
            T::ActiveDecodeThroughputPerUser,
            T::EffectiveDecodeThroughputPerUser,
        ];
        if !any || to <= from {
            return tags.map(|t| (t, TimeWeighted::default()));
        }
        let window = Some((to - from) as f64);
        let mut pass = DecodePass {
            rate: Weighted::new(window, u64::MAX),
            active: Weighted::new(None, u64::MAX),
            per_user: Weighted::new(None, u64::MAX),
            per_user_window: Weighted::new(window, u64::MAX),
            own: Feed::new(from, to, 0.0),
            both: Feed::new(from, to, (0.0, 0.0)),
            with_conc: !conc.is_empty(),
        };
        while !pass.done() {
            pass.own = Feed::new(from, to, 0.0);
            pass.both = Feed::new(from, to, (0.0, 0.0));
            let (mut j, mut r, mut c) = (0, 0.0, 0.0);
            self.sweep_steps(rate, raw, floor, |t, v| {
                while let Some(&(tc, vc)) = conc.get(j)
                    && tc < t
                {
                    c = vc;
                    j += 1;
                    pass.both(tc, r, c);
                }
                if let Some(&(tc, vc)) = conc.get(j)
                    && tc == t
                {
                    c = vc;
                    j += 1;
                }
                r = v;
                pass.own(t, r);
                pass.both(t, r, c);
            });
            for &(tc, vc) in conc.get(j..).unwrap_or(&[]) {
                c = vc;
                pass.both(tc, r, c);
            }
            pass.end_pass();
        }
        let results = [&pass.rate, &pass.active, &pass.per_user, &pass.per_user_window];
        let mut i = 0;
        tags.map(|t| {
            let r = results[i];
            i += 1;
            (t, if r.done() && (i == 1 || pass.with_conc) { r.result() } else { TimeWeighted::default() })
        })
    }

    /// The step function of the events `each` makes of every span (given its chunks after the
    /// first), summed in [`event_order`].
    /// `each` reads no chunk: a span's later chunks are given as kept (a stride for evenly
    /// spaced ones), not written out.
    fn sweep(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>)) -> Steps {
        self.sweep_with(each, true)
    }

    /// [`sweep`](Self::sweep) of an `each` that reads the chunks: given the stride of evenly
    /// spaced chunks with `raw`, else every chunk.
    fn sweep_with(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>), raw: bool) -> Steps {
        let mut sum = Summer::new();
        self.sweep_events(each, raw, |e| sum.add(e));
        sum.finish()
    }

    /// The steps of [`sweep`](Self::sweep) given one at a time, in order, without keeping them:
    /// `step(time, level)`, a level smaller than `floor` in magnitude given as 0. Returns the
    /// largest magnitude the level reached (whose 1e-9 is the sweep's rounding floor).
    fn sweep_steps(
        &self,
        each: impl Fn(&Span, &[u64], &mut Vec<Event>),
        raw: bool,
        floor: f64,
        mut step: impl FnMut(u64, f64),
    ) -> f64 {
        let floored = |v: f64| if v.abs() < floor { 0.0 } else { v };
        let (mut at, mut level, mut largest) = (None, 0.0, 0.0f64);
        self.sweep_events(each, raw, |(t, d)| {
            if let Some(a) = at
                && a != t
            {
                step(a, floored(level));
            }
            level += d;
            largest = largest.max(level.abs());
            at = Some(t);
        });
        if let Some(a) = at {
            step(a, floored(level));
        }
        largest
    }

    /// Gives `sink` the events `each` makes of every span, in [`event_order`] (with `raw`, a span
    /// whose later chunks are kept as a stride is given that one stride). Spans are taken
    /// up in the order of their earliest event and their events merged through a heap holding
    /// the next event of each span under way, so no list of every event is made or sorted.
    fn sweep_events(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>), raw: bool, mut sink: impl FnMut(Event)) {
        // Where each span's later chunks start in `chunks`, when any span has some.
        let offsets: Vec<usize> = if self.chunks.is_empty() {
            Vec::new()
        } else {
            let mut at = 0;
            self.spans
                .iter()
                .map(|s| {
                    let o = at;
                    at += Span::kept_of(s.later_chunks);
                    o
                })
                .collect()
        };
        let kept = |i: usize| match offsets.get(i) {
            Some(&o) => self.chunks.get(o..o + Span::kept_of(self.spans[i].later_chunks)).unwrap_or(&[]),
            None => &[],
        };
        let mut buf = Vec::new();
        // (earliest event, span) of every span with events, earliest first.
        let mut scratch = Vec::new();
        let mut order: Vec<(u64, u32)> = Vec::with_capacity(self.spans.len());
        for i in 0..self.spans.len() {
            let s = self.span(i);
            scratch.clear();
            each(&s, if raw { kept(i) } else { s.later(kept(i), &mut buf) }, &mut scratch);
            if let Some(t) = scratch.iter().map(|e| e.0).min() {
                order.push((t, i as u32));
            }
        }
        if !order.is_sorted() {
            order.sort_unstable();
        }
        drop(scratch);
        let mut pending: Vec<Pending> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut heap: BinaryHeap<Head> = BinaryHeap::new();
        let mut taken = order.iter().peekable();
        loop {
            // Every span whose earliest event is not after the next event to sum joins the
            // heap: the events of the spans still waiting are all later.
            while let Some(&&(t, i)) = taken.peek()
                && heap.peek().is_none_or(|h| t <= h.event.0)
            {
                taken.next();
                let slot = free.pop().unwrap_or_else(|| {
                    pending.push(Pending::default());
                    pending.len() - 1
                });
                let p = &mut pending[slot];
                p.events.clear();
                let i = i as usize;
                let s = self.span(i);
                each(&s, if raw { kept(i) } else { s.later(kept(i), &mut buf) }, &mut p.events);
                p.events.sort_unstable_by(event_order);
                p.next = 1;
                heap.push(Head { event: p.events[0], slot });
            }
            let Some(mut head) = heap.peek_mut() else { break };
            sink(head.event);
            let p = &mut pending[head.slot];
            match p.events.get(p.next) {
                Some(&e) => {
                    p.next += 1;
                    head.event = e;
                }
                None => {
                    free.push(head.slot);
                    std::collections::binary_heap::PeekMut::pop(head);
                }
            }
        }
    }
}

/// A span's input tokens spread evenly from its send to its first token.
fn prefill_rate(s: &Span, e: &mut Vec<Event>) {
    if s.first != NO_TIME && !s.isl.is_nan() && s.first > s.start {
        let rate = s.isl / (s.first - s.start) as f64;
        e.extend([(s.start, rate), (s.first, -rate)]);
    }
}

/// A span's output tokens after the first spread evenly from its first token to its end.
fn even_decode_rate(s: &Span, e: &mut Vec<Event>) {
    if s.first != NO_TIME && s.osl >= 1.0 && s.end > s.first {
        let rate = (s.osl - 1.0) / (s.end - s.first) as f64;
        e.extend([(s.first, rate), (s.end, -rate)]);
    }
}

/// A span's decode rate chunk by chunk: each gap above zero carries `(osl − 1) / gaps` tokens.
fn chunk_decode(s: &Span, later: &[u64], e: &mut Vec<Event>) {
    if later.is_empty() || s.osl.is_nan() || s.osl < 1.0 {
        return;
    }
    let mut prev = s.first;
    let gaps = later
        .iter()
        .filter(|&&t| {
            let g = t > prev;
            prev = prev.max(t);
            g
        })
        .count();
    if gaps == 0 {
        return;
    }
    let tokens = (s.osl - 1.0) / gaps as f64;
    let mut prev = s.first;
    for &t in later {
        if t > prev {
            let rate = tokens / (t - prev) as f64;
            e.extend([(prev, rate), (t, -rate)]);
        }
        prev = prev.max(t);
    }
}

/// [`chunk_decode`] with the stride of a span whose later chunks follow its first evenly: the
/// one rate every gap carries, from its first token to its last chunk.
fn closed_decode(s: &Span, later: &[u64], e: &mut Vec<Event>) {
    if s.later_chunks & EVENLY == 0 {
        return chunk_decode(s, later, e);
    }
    let (n, stride) = (s.later_count() as u64, later.first().copied().unwrap_or(0));
    if n == 0 || stride == 0 || s.osl.is_nan() || s.osl < 1.0 {
        return;
    }
    let rate = (s.osl - 1.0) / n as f64 / stride as f64;
    e.extend([(s.first, rate), (s.first.saturating_add(n.saturating_mul(stride)), -rate)]);
}

/// A change of a piecewise-linear curve: at its time, the level changes by the first and the
/// slope (per ns) by the second.
type Bend = (u64, f64, f64);

/// The tokens in flight of a span whose later chunks follow its first evenly, its output as a
/// ramp: one token at the first chunk, then rising by a chunk's share each stride to the last
/// chunk, all freed at the end. The steps of [`tokens_in_flight`] lie within one chunk's share
/// below the ramp (above it only where chunks at or after the end are counted just before it,
/// for the last nanosecond). `None` where the span is none such.
fn ramp_in_flight(s: &Span, stride: u64, e: &mut Vec<Bend>) -> Option<()> {
    let n = s.later_count() as u64;
    let even = s.later_chunks & EVENLY != 0 && n > 0 && stride > 0 && s.first != NO_TIME && s.first < s.end;
    if !even || s.osl.is_nan() || s.osl < 1.0 {
        return None;
    }
    let prefilled = !s.isl.is_nan() && s.first > s.start;
    let held = if prefilled {
        e.push((s.start, s.isl, 0.0));
        s.isl
    } else {
        0.0
    };
    let each = (s.osl - 1.0) / n as f64;
    let slope = each / stride as f64;
    e.push((s.first, 1.0, slope));
    let last = s.first.saturating_add(n.saturating_mul(stride));
    if last < s.end {
        e.push((last, 0.0, -slope));
        e.push((s.end, -(held + s.osl), 0.0));
    } else {
        e.push((s.end, -(held + 1.0 + slope * (s.end - s.first) as f64), -slope));
    }
    Some(())
}

/// A piecewise-linear curve: from each time on, the level there and its slope (per ns) until
/// the next (sorted, distinct times; 0 before the first).
struct Ramps {
    bends: Vec<(u64, f64, f64)>,
    /// Levels smaller than this in magnitude are rounding and count as 0.
    floor: f64,
}

impl Ramps {
    /// The curve of `bends` summed in time order.
    fn of(mut bends: Vec<Bend>) -> Ramps {
        bends.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.total_cmp(&b.2)));
        let mut out: Vec<(u64, f64, f64)> = Vec::new();
        let (mut level, mut slope, mut largest) = (0.0f64, 0.0f64, 0.0f64);
        for (t, dl, ds) in bends {
            match out.last_mut() {
                Some(last) if last.0 == t => {
                    level += dl;
                    slope += ds;
                    (last.1, last.2) = (level, slope);
                }
                last => {
                    if let Some(&mut (at, _, _)) = last {
                        level += slope * (t - at) as f64;
                        largest = largest.max(level.abs());
                    }
                    level += dl;
                    slope += ds;
                    out.push((t, level, slope));
                }
            }
            largest = largest.max(level.abs());
        }
        Ramps { bends: out, floor: 1e-9 * largest }
    }

    /// The level of the piece starting at `i` at time `t`, rounding counted as 0.
    fn level(&self, i: usize, t: u64) -> f64 {
        let (at, level, slope) = self.bends[i];
        let v = level + slope * (t - at) as f64;
        if v.abs() < self.floor { 0.0 } else { v }
    }

    /// Time-weighted statistics over `[from, to)`: the mean and variance of the pieces
    /// integrated, a percentile the level below which the curve spends the fraction of the time.
    fn over_window(&self, from: u64, to: u64) -> TimeWeighted {
        if self.bends.is_empty() || to <= from {
            return TimeWeighted::default();
        }
        // (duration, level at its start, level at its end) of each piece inside the window.
        let mut pieces: Vec<(u64, f64, f64)> = Vec::new();
        let mut i = self.bends.partition_point(|b| b.0 <= from);
        let (mut t, mut piece) = (from, i.checked_sub(1));
        let level = |piece: Option<usize>, t: u64| piece.map_or(0.0, |p| self.level(p, t));
        loop {
            let next = self.bends.get(i).map_or(to, |b| b.0.min(to));
            if next > t {
                pieces.push((next - t, level(piece, t), level(piece, next)));
            }
            if next >= to {
                break;
            }
            (t, piece) = (next, Some(i));
            i += 1;
        }
        let total = (to - from) as f64;
        let avg = pieces.iter().fold(-0.0, |sum, &(d, a, b)| sum + d as f64 * (a + b) / 2.0) / total;
        let var = pieces.iter().fold(-0.0, |sum, &(d, a, b)| {
            let (a, b) = (a - avg, b - avg);
            sum + d as f64 * (a * a + a * b + b * b) / 3.0
        }) / total;
        let min = pieces.iter().map(|p| p.1.min(p.2)).fold(f64::INFINITY, f64::min);
        let max = pieces.iter().map(|p| p.1.max(p.2)).fold(f64::NEG_INFINITY, f64::max);
        let [p50, p90, p95, p99] = spread_percentiles(&pieces, total);
        TimeWeighted { avg, min, max, p50, p90, p95, p99, std: var.sqrt() }
    }
}

/// The percentiles of the levels of pieces each going evenly from one level to another over its
/// duration: the least level below which (or at which) the fraction of `total` is spent.
fn spread_percentiles(pieces: &[(u64, f64, f64)], total: f64) -> [f64; 4] {
    // (level, time held at exactly it, density of the time per level from it on (+) or up to it (−)).
    let mut marks: Vec<(f64, f64, f64)> = Vec::with_capacity(2 * pieces.len());
    for &(d, a, b) in pieces {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        if hi > lo {
            let density = d as f64 / (hi - lo);
            marks.extend([(lo, 0.0, density), (hi, 0.0, -density)]);
        } else {
            marks.push((lo, d as f64, 0.0));
        }
    }
    marks.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let fractions = [0.50, 0.90, 0.95, 0.99];
    let top = marks.last().map_or(0.0, |m| m.0);
    let mut out = [top; 4];
    let (mut next, mut below, mut density, mut x) = (0, 0.0f64, 0.0f64, marks.first().map_or(0.0, |m| m.0));
    let mut i = 0;
    while i < marks.len() && next < fractions.len() {
        let v = marks[i].0;
        // From `x` up to `v` the time below rises by the density.
        let gain = density.max(0.0) * (v - x);
        while next < fractions.len() && (below + gain) / total >= fractions[next] {
            let want = fractions[next] * total - below;
            out[next] = (x + want / density).clamp(x, v);
            next += 1;
        }
        below += gain;
        x = v;
        while i < marks.len() && marks[i].0 == v {
            below += marks[i].1;
            density += marks[i].2;
            i += 1;
        }
        while next < fractions.len() && below / total >= fractions[next] {
            out[next] = v;
            next += 1;
        }
    }
    out
}

/// Tokens a span holds: its input from the send, its output from the first token (one token
/// then, the rest spread over its later chunks when the run has chunks), freed at its end.
fn tokens_in_flight(s: &Span, later: &[u64], per_chunk: bool, e: &mut Vec<Event>) {
    let has_first = s.first != NO_TIME;
    let prefilled = !s.isl.is_nan() && has_first && s.first > s.start;
    if prefilled {
        e.push((s.start, s.isl));
    }
    let output = if per_chunk {
        let has = has_first && !later.is_empty() && s.osl >= 1.0;
        if has {
            e.push((s.first, 1.0));
            let each = (s.osl - 1.0) / later.len() as f64;
            // A chunk stamped at or after the end is counted just before it.
            e.extend(later.iter().map(|&t| (t.min(s.end.saturating_sub(1)), each)));
        }
        has
    } else {
        let has = has_first && !s.osl.is_nan() && s.end > s.first;
        if has {
            e.push((s.first, s.osl));
        }
        has
    };
    let freed = if prefilled { s.isl } else { 0.0 } + if output { s.osl } else { 0.0 };
    if prefilled || output {
        e.push((s.end, -freed));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn get(m: &[(TimelineMetric, TimeWeighted)], t: TimelineMetric) -> TimeWeighted {
        m.iter().find(|x| x.0 == t).unwrap().1
    }

    #[test]
    fn two_overlapping_requests_weigh_each_level_by_its_time() {
        let mut tl = Timeline::default();
        // 0–10 ms and 5–20 ms: one request, then two for 5 ms, then one.
        for (start, first, end) in [(0, 4_000_000, 10_000_000), (5_000_000, 8_000_000, 20_000_000)] {
            let r = RequestRecord {
                sent_ns: start,
                chunk_ns: vec![first, end],
                end_ns: end,
                streaming: true,
                input_tokens: Some(40),
                output_tokens: Some(3),
                ..Default::default()
            };
            let m = RequestMetrics::of(&r, false);
            tl.add(&r, Some(&m));
        }
        let m = tl.metrics(0, 20_000_000);
        let c = get(&m, TimelineMetric::EffectiveConcurrency);
        assert_eq!((c.avg, c.min, c.max, c.p50, c.p99), (1.25, 1.0, 2.0, 1.0, 2.0));
        // Prefill: 40 tokens in 4 ms, then 40 in 3 ms.
        let p = get(&m, TimelineMetric::ActivePrefillThroughput);
        assert!((p.max - 40.0 / 0.003).abs() < 1e-6, "{p:?}");
        // Just before the first request ends: its 40 + 3 tokens and the second's 40 + 1.
        let k = get(&m, TimelineMetric::TokensInFlight);
        assert_eq!(k.max, 40.0 + 3.0 + 40.0 + 1.0);
        // Nothing in the run: no metric.
        assert!(Timeline::default().metrics(0, 1).is_empty());
    }

    #[test]
    fn many_windows_at_once_weigh_as_each_alone() {
        let mut tl = Timeline::default();
        for i in 0..30u64 {
            let start = i * 7_000_000 % 90_000_000;
            let r = RequestRecord {
                sent_ns: start,
                chunk_ns: vec![start + 3_000_000, start + 5_000_000 + i * 100_000, start + 9_000_000],
                end_ns: start + 9_500_000,
                streaming: true,
                input_tokens: Some(20 + i),
                output_tokens: Some(1 + i % 4),
                ..Default::default()
            };
            let m = RequestMetrics::of(&r, false);
            tl.add(&r, (i % 11 != 5).then_some(&m));
        }
        let windows = [(0, 10_000_000), (50_000_000, 20_000_000), (5_000_000, 95_000_000), (40_000_000, 40_000_001)];
        let together = tl.metrics_over(&windows);
        assert_eq!(together.len(), windows.len());
        for (w, m) in windows.iter().zip(&together) {
            assert_eq!(*m, tl.metrics(w.0, w.1), "{w:?}");
            assert_eq!(m.len(), 14);
        }
        assert_ne!(together[0], together[2]);
        assert_eq!(Timeline::default().metrics_over(&windows), vec![Vec::new(); 4]);
    }

    #[test]
    fn merged_timelines_give_the_whole_runs_metrics() {
        let recs: Vec<RequestRecord> = (0..6u64)
            .map(|i| RequestRecord {
                sent_ns: i * 3_000_000,
                chunk_ns: vec![i * 3_000_000 + 2_000_000, i * 3_000_000 + 4_000_000, i * 3_000_000 + 7_000_000],
                end_ns: i * 3_000_000 + 7_500_000,
                streaming: true,
                input_tokens: Some(10 + i),
                output_tokens: Some(5),
                ..Default::default()
            })
            .collect();
        let (mut whole, mut a, mut b) = (Timeline::default(), Timeline::default(), Timeline::default());
        for (i, r) in recs.iter().enumerate() {
            let m = RequestMetrics::of(r, false);
            whole.add(r, Some(&m));
            if i < 2 { a.add(r, Some(&m)) } else { b.add(r, Some(&m)) }
        }
        a.merge(&b);
        let (from, to) = whole.window().unwrap();
        assert_eq!(whole.metrics(from, to), a.metrics(from, to));
    }

    /// What makes one span's events (given its later chunks).
    type Curve<'a> = &'a dyn Fn(&Span, &[u64], &mut Vec<Event>);

    /// The sweep by sorting every event at once.
    fn sorted_sweep(mut events: Vec<Event>) -> Steps {
        events.sort_unstable_by(event_order);
        let mut sum = Summer::new();
        for e in events {
            sum.add(e);
        }
        sum.finish()
    }

    fn bits(steps: &Steps) -> Vec<(u64, u64)> {
        steps.iter().map(|&(t, v)| (t, v.to_bits())).collect()
    }

    /// The statistics of a copy of the pairs sorted by value: what the passes must give.
    fn sorted_copy(mut held: Vec<(u64, f64)>, total: f64) -> TimeWeighted {
        held.retain(|h| h.0 > 0);
        if held.is_empty() || total <= 0.0 {
            return TimeWeighted::default();
        }
        let avg = held.iter().map(|&(d, v)| v * d as f64).sum::<f64>() / total;
        let var = held.iter().map(|&(d, v)| d as f64 * (v - avg) * (v - avg)).sum::<f64>() / total;
        held.sort_unstable_by(|a, b| a.1.total_cmp(&b.1));
        let whole: f64 = held.iter().map(|h| h.0 as f64).sum();
        let fractions = [0.50, 0.90, 0.95, 0.99];
        let mut q = [held[held.len() - 1].1; 4];
        let (mut next, mut c) = (0, 0.0);
        for h in &held {
            c += h.0 as f64;
            while next < fractions.len() && c / whole >= fractions[next] {
                q[next] = h.1;
                next += 1;
            }
        }
        TimeWeighted {
            avg,
            min: held[0].1,
            max: held[held.len() - 1].1,
            p50: q[0],
            p90: q[1],
            p95: q[2],
            p99: q[3],
            std: var.sqrt(),
        }
    }

    fn stat_bits(w: TimeWeighted) -> [u64; 8] {
        w.stats().map(|(_, v)| v.to_bits())
    }

    /// NaN-free values: small, huge, tiny, signed zeros and a few repeated ones (ties).
    fn any_value() -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        prop_oneof![
            -5.0f64..5.0,
            proptest::num::f64::NORMAL
                | proptest::num::f64::SUBNORMAL
                | proptest::num::f64::ZERO
                | proptest::num::f64::INFINITE,
            prop::sample::select(vec![0.0, -0.0, 1.0, 2.5, -3.0, 1e300, f64::MIN_POSITIVE]),
        ]
    }

    proptest::proptest! {
        /// Statistics taken in passes (histograms of the values' bits down to every level, or
        /// the one bucket kept) equal those of a sorted copy, to the bit.
        #[test]
        fn passes_give_the_statistics_of_a_sorted_copy(
            held in proptest::collection::vec((proptest::prop_oneof![0u64..4, 0u64..1_000_000, proptest::strategy::Just(1u64 << 52)], any_value()), 0..60),
            window in proptest::option::of(1u64..3_000_000),
            keep in proptest::sample::select(vec![0u64, 1, 3, 1 << 20]),
        ) {
            let active: u64 = held.iter().map(|h| h.0).sum();
            let total = window.map(|w| w as f64);
            let want = sorted_copy(held.clone(), total.unwrap_or(active as f64));
            for upto in [held.len() as u64, u64::MAX] {
                let mut w = weighted::Weighted::with_keep(total, upto, keep);
                let mut passes = 0;
                while !w.done() {
                    for &(d, v) in &held {
                        w.add(d, v);
                    }
                    w.end_pass();
                    passes += 1;
                    proptest::prop_assert!(passes <= 6);
                }
                proptest::prop_assert_eq!(stat_bits(w.result()), stat_bits(want), "upto {} keep {}", upto, keep);
            }
        }
    }

    #[test]
    fn durations_past_2_pow_53_are_sorted_whole() {
        let held = vec![(1u64 << 60, 1.0), (3, 2.0), ((1 << 60) + 1, 0.5), (7, -1.0), (1 << 54, 2.0)];
        let total: u64 = held.iter().map(|h| h.0).sum();
        let want = sorted_copy(held.clone(), total as f64);
        let got = Weighted::of_pairs(
            |w| {
                for &(d, v) in &held {
                    w.add(d, v);
                }
            },
            None,
            u64::MAX,
        );
        assert_eq!(stat_bits(got), stat_bits(want));
    }

    proptest::proptest! {
        /// Over one window, the metrics with the per-chunk curves taken in passes over their
        /// sweep equal those over the kept curves, to the bit, whatever the window.
        #[test]
        fn streamed_curves_give_the_kept_curves_metrics(
            reqs in proptest::collection::vec(
                (0u64..40, 0u64..30, proptest::collection::vec(0u64..40, 0..6), proptest::prop_oneof![0u64..20, proptest::strategy::Just(5_000_000_000u64)], 0u64..300, 0u64..9, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY),
                1..30,
            ),
            from in 0u64..80,
            len in 0u64..120,
        ) {
            let mut tl = Timeline::default();
            for (start, ttft, mut gaps, tail, isl, osl, ok, even, streaming) in reqs {
                let first = start + ttft;
                if even && let Some(&g) = gaps.first() {
                    gaps = (1..=gaps.len() as u64).map(|k| k * g).collect();
                }
                let mut chunks = vec![first];
                chunks.extend(gaps.iter().map(|g| first + g));
                let r = RequestRecord {
                    sent_ns: start,
                    chunk_ns: chunks,
                    end_ns: first + gaps.iter().max().copied().unwrap_or(0) + tail,
                    streaming,
                    input_tokens: Some(isl),
                    output_tokens: Some(osl),
                    ..Default::default()
                };
                let m = RequestMetrics::of(&r, false);
                tl.add(&r, ok.then_some(&m));
            }
            let w = [(from, from + len)];
            let kept = tl.metrics_over_with(&w, u64::MAX, u64::MAX);
            let streamed = tl.metrics_over_with(&w, 0, u64::MAX);
            let bits = |m: &[Vec<(TimelineMetric, TimeWeighted)>]| -> Vec<(TimelineMetric, [u64; 8])> {
                m[0].iter().map(|&(t, v)| (t, stat_bits(v))).collect()
            };
            proptest::prop_assert_eq!(bits(&streamed), bits(&kept));
        }
    }

    proptest::proptest! {
        /// Requests in any order, overlapping, with chunks in any order (some at or after the
        /// end) or evenly spaced (kept as a stride), some failed: every curve's merged sweep
        /// equals the sort of all its events, made from the chunks as recorded.
        #[test]
        fn the_merged_sweep_equals_the_sorted_one(
            reqs in proptest::collection::vec(
                (0u64..40, 0u64..30, proptest::collection::vec(0u64..40, 0..5), proptest::prop_oneof![0u64..20, proptest::strategy::Just(5_000_000_000u64)], 0u64..300, 0u64..9, proptest::bool::ANY, proptest::bool::ANY),
                1..40,
            )
        ) {
            let mut tl = Timeline::default();
            // Each request's span (from a timeline of its own) and its later chunks as recorded.
            let mut recorded: Vec<(Span, Vec<u64>)> = Vec::new();
            for (start, ttft, mut gaps, tail, isl, osl, ok, even) in reqs {
                let first = start + ttft;
                if even && let Some(&g) = gaps.first() {
                    gaps = (1..=gaps.len() as u64).map(|k| k * g).collect();
                }
                let mut chunks = vec![first];
                chunks.extend(gaps.iter().map(|g| first + g));
                let end = first + gaps.iter().max().copied().unwrap_or(0) + tail;
                let r = RequestRecord {
                    sent_ns: start,
                    chunk_ns: chunks,
                    end_ns: end,
                    streaming: true,
                    input_tokens: Some(isl),
                    output_tokens: Some(osl),
                    ..Default::default()
                };
                let m = RequestMetrics::of(&r, false);
                tl.add(&r, ok.then_some(&m));
                let mut one = Timeline::default();
                one.add(&r, ok.then_some(&m));
                let span = one.span(0);
                proptest::prop_assert_eq!((span.start, span.end, one.wide.len()), (start, end, usize::from(tail > u64::from(u32::MAX))));
                recorded.push((span, if ok { gaps.iter().map(|g| first + g).collect() } else { Vec::new() }));
            }
            let all = |each: Curve| {
                let mut e = Vec::new();
                for (s, later) in &recorded {
                    each(s, later, &mut e);
                }
                sorted_sweep(e)
            };
            let curves: [Curve; 6] = [
                &|s, _, e| e.extend([(s.start, 1.0), (s.end, -1.0)]),
                &|s, _, e| {
                    prefill_rate(s, e);
                    even_decode_rate(s, e);
                },
                &chunk_decode,
                &|s, _, e| prefill_rate(s, e),
                &|s, later, e| tokens_in_flight(s, later, true, e),
                &|s, later, e| tokens_in_flight(s, later, false, e),
            ];
            for each in curves {
                proptest::prop_assert_eq!(bits(&tl.sweep_with(each, false)), bits(&all(each)));
            }
        }
    }

    #[test]
    fn an_evenly_chunked_requests_tokens_in_flight_ramp_through_its_chunks() {
        // Sent at 0, first token at 10 ns, 3 more chunks every 10 ns, the last at its end: 6
        // input tokens from 0, then its 4 output tokens rising from 1 at 10 ns to 4 at 40 ns.
        let r = RequestRecord {
            sent_ns: 0,
            chunk_ns: vec![10, 20, 30, 40],
            end_ns: 40,
            streaming: true,
            input_tokens: Some(6),
            output_tokens: Some(4),
            ..Default::default()
        };
        let mut tl = Timeline::default();
        tl.add(&r, Some(&RequestMetrics::of(&r, false)));
        let closed = &tl.metrics_over_with(&[(0, 40)], u64::MAX, 0)[0];
        let k = get(closed, TimelineMetric::TokensInFlight);
        let avg: f64 = (10.0 * 6.0 + 30.0 * (7.0 + 10.0) / 2.0) / 40.0;
        let (a, b) = (7.0 - avg, 10.0 - avg);
        let var = (10.0 * (6.0 - avg) * (6.0 - avg) + 30.0 * (a * a + a * b + b * b) / 3.0) / 40.0;
        // 10 ns at 6, then 10 ns per token from 7 to 10: half the time by 8, 90% by 9.6.
        let want = [avg, 6.0, 10.0, 8.0, 9.6, 9.8, 9.96, var.sqrt()];
        let got = [k.avg, k.min, k.max, k.p50, k.p90, k.p95, k.p99, k.std];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-9, "{got:?} against {want:?}");
        }
        // One rate from the first token to the last chunk: 3 tokens in 30 ns.
        let d = get(closed, TimelineMetric::EffectiveDecodeThroughput);
        assert_eq!((d.max, d.p50), (0.1 * PER_SECOND, 0.1 * PER_SECOND));
        // The steps: 7, 8, 9 for 10, 10, 9 ns, 10 for the last nanosecond.
        let steps = get(&tl.metrics_over_with(&[(0, 40)], u64::MAX, u64::MAX)[0], TimelineMetric::TokensInFlight);
        assert_eq!((steps.p50, steps.max, steps.avg), (7.0, 10.0, (60.0 + 70.0 + 80.0 + 81.0 + 10.0) / 40.0));
    }

    proptest::proptest! {
        /// Evenly spaced chunks in closed form: the decode-rate metrics are those of the
        /// per-chunk sweep (the same function, summed in other additions: within rounding);
        /// the tokens in flight within the sum over evenly spaced requests of a chunk's share
        /// times one more than its chunks at or after its end.
        #[test]
        fn closed_form_stays_within_a_chunk_of_the_steps(
            reqs in proptest::collection::vec(
                (0u64..4000, 0u64..300, 2u64..40, 0u64..200, 0u64..3, 0u64..5000, 1u64..600, proptest::bool::ANY, proptest::bool::ANY),
                1..25,
            ),
            from in 0u64..2000,
            len in 1u64..20000,
        ) {
            let mut tl = Timeline::default();
            let mut bound = 0.0;
            for (start, ttft, n, stride, before_end, isl, osl, ok, even) in reqs {
                let first = start + ttft;
                let mut chunks: Vec<u64> = (0..=n).map(|k| first + k * stride).collect();
                if !even {
                    chunks[1] += 1;
                    chunks.sort_unstable();
                }
                let end = chunks[chunks.len() - 1].saturating_sub(before_end).max(first);
                let r = RequestRecord {
                    sent_ns: start,
                    chunk_ns: chunks.clone(),
                    end_ns: end,
                    streaming: true,
                    input_tokens: Some(isl),
                    output_tokens: Some(osl),
                    ..Default::default()
                };
                let m = RequestMetrics::of(&r, false);
                tl.add(&r, ok.then_some(&m));
                if ok && even {
                    let clipped = chunks[1..].iter().filter(|&&t| t >= end).count();
                    bound += (osl as f64 - 1.0) / n as f64 * (1 + clipped) as f64;
                }
            }
            let w = [(from, from + len)];
            let steps = &tl.metrics_over_with(&w, u64::MAX, u64::MAX)[0];
            let closed = &tl.metrics_over_with(&w, u64::MAX, 0)[0];
            for (&(t, a), &(u, b)) in steps.iter().zip(closed) {
                proptest::prop_assert_eq!(t, u);
                let (a, b) = (a.stats(), b.stats());
                let scale = a.iter().chain(&b).map(|x| x.1.abs()).fold(1.0, f64::max);
                let allowed = if t == TimelineMetric::TokensInFlight { bound + 1e-6 * scale } else { 1e-6 * scale };
                for (x, y) in a.iter().zip(&b) {
                    proptest::prop_assert!((x.1 - y.1).abs() <= allowed, "{:?} {}: {} against {} (bound {})", t, x.0, x.1, y.1, allowed);
                }
            }
        }
    }
}
