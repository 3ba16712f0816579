//! Curves swept while a run goes on: the spans are taken up as they are added, and the events
//! before a time that no span added later reaches are summed at once ([`Timeline::settle`]), so
//! that the report finds those curves made. Each curve is the one its sweep at the report makes
//! (its events summed in [`event_order`](super::steps::event_order)), to the bit.
//!
//! The curves are those whose events all fall at a span's send, first token, last chunk or end,
//! whatever the run's chunks: the concurrency, the total throughput, the prefill concurrency and
//! the prefill throughput, the decode concurrency, and the decode rate with evenly spaced chunks
//! in closed form (a span with uneven chunks leaves that one to the report).

use super::events::{SpanBends, closed_decode, even_decode_rate, prefill_rate};
#[cfg(doc)]
use super::events::{decoding, in_flight, prefilling};
use std::cmp::Ordering;

use super::ramps::{Ramps, RampsSum, bend_order};
use super::settled::{Made, Phase, Point, SETTLED, SettledCurve, Settling, Sweeping};
use super::spans::{NO_TIME, Span, Timeline};
use super::steps::{Event, Steps, Summer, merge_sorted, sort_about_sorted, sum_changes};

/// A span's points, how many of them there are, and whether its closed-form decode rate is one
/// step up at the first token and one down at the last chunk (or none).
type Points = ([Point; 4], usize, bool);

impl Point {
    /// The span's points (`kept`: its entries of the timeline's chunks): at its send, at its
    /// end, at its first token (when it has one), at its last chunk (when its closed-form decode
    /// rate ends there).
    fn of(s: &Span, kept: &[u64], e: &mut Vec<Event>) -> Points {
        let mut rate = |f: fn(&Span, &mut Vec<Event>)| {
            e.clear();
            f(s, e);
            e.first().map(|&(_, r)| r)
        };
        let (prefill, decode) = (rate(prefill_rate), rate(even_decode_rate));
        e.clear();
        closed_decode(s, kept, e);
        let (closed, last, simple) = match e[..] {
            [] => (None, NO_TIME, true),
            [(up, r), (down, _)] if up == s.first => (Some(r), down, true),
            _ => (None, NO_TIME, false),
        };
        let first = s.first != NO_TIME;
        let at = |t, phase| Point { t, phase, first, prefill, decode, closed };
        let points = [
            at(s.start, Phase::Send),
            at(s.end, Phase::End),
            at(s.first, Phase::FirstToken),
            at(last, Phase::LastChunk),
        ];
        let n = match (first, closed) {
            (false, _) => 2,
            (true, None) => 3,
            (true, Some(_)) => 4,
        };
        (points, n, simple)
    }

    /// Gives the point's change of each curve to `f` (curve, change): [`in_flight`],
    /// [`prefilling`], [`prefill_rate`] and [`even_decode_rate`], [`decoding`] and
    /// [`closed_decode`] at this time of the span.
    fn changes(&self, mut f: impl FnMut(usize, f64)) {
        use SettledCurve as C;
        match self.phase {
            Phase::Send => {
                f(C::Concurrency as usize, 1.0);
                if self.first {
                    f(C::PrefillConcurrency as usize, 1.0);
                }
                if let Some(r) = self.prefill {
                    f(C::Total as usize, r);
                    f(C::PrefillRate as usize, r);
                }
            }
            Phase::FirstToken => {
                f(C::PrefillConcurrency as usize, -1.0);
                f(C::DecodeConcurrency as usize, 1.0);
                if let Some(r) = self.prefill {
                    f(C::Total as usize, -r);
                    f(C::PrefillRate as usize, -r);
                }
                if let Some(r) = self.decode {
                    f(C::Total as usize, r);
                }
                if let Some(r) = self.closed {
                    f(C::ClosedDecodeRate as usize, r);
                }
            }
            Phase::End => {
                f(C::Concurrency as usize, -1.0);
                if self.first {
                    f(C::DecodeConcurrency as usize, -1.0);
                }
                if let Some(r) = self.decode {
                    f(C::Total as usize, -r);
                }
            }
            Phase::LastChunk => {
                if let Some(r) = self.closed {
                    f(C::ClosedDecodeRate as usize, -r);
                }
            }
        }
    }

    /// [`Point::changes`] with each curve's changes in [`f64::total_cmp`] order: the order in
    /// which [`sum_changes`] sums a time's changes when this point is the only one at its time.
    /// Only the total throughput takes two changes at one point (the prefill rate's end and the
    /// decode rate's start, at the first token).
    fn changes_in_order(&self, mut f: impl FnMut(usize, f64)) {
        let total = SettledCurve::Total as usize;
        let mut held: Option<f64> = None;
        self.changes(|c, d| match (c == total, held.take()) {
            (false, h) => {
                held = h;
                f(c, d);
            }
            (true, None) => held = Some(d),
            (true, Some(h)) => {
                let (a, b) = if h.total_cmp(&d).is_le() { (h, d) } else { (d, h) };
                f(c, a);
                f(c, b);
            }
        });
        if let Some(d) = held {
            f(total, d);
        }
    }
}

impl Timeline {
    /// Says that no span added from now on has an event before `before_ns` (`u64::MAX`: that no
    /// span is added any more): the settled curves take up the spans added since the last call and
    /// sum their events before that time. A span added later with an event before a time
    /// already settled, or any span added once every span was said to be in, leaves the curves
    /// to the report's sweeps.
    pub fn settle(&mut self, before_ns: u64) {
        let mut state = std::mem::take(&mut self.settling);
        if matches!(state, Settling::Off) {
            state = Settling::Sweeping(Box::new(Sweeping {
                fed: 0,
                fed_chunks: 0,
                closed_ok: true,
                settled: 0,
                lists: Default::default(),
                group: Vec::new(),
                // Room for every step of the spans room was made for (`Timeline::reserve`): at
                // most a step at each of a span's three times.
                sums: std::array::from_fn(|_| Summer::with_capacity(self.spans.capacity().saturating_mul(3))),
                at: Default::default(),
                bends: Default::default(),
                // A span has at most four bends but for chunks kept one by one.
                ramps: RampsSum::with_capacity(self.spans.capacity().saturating_mul(4)),
            }));
        }
        self.settling = match state {
            Settling::Sweeping(mut s) => match s.take_up(self) {
                false => Settling::Dropped,
                true if before_ns == u64::MAX => {
                    s.sum_before(u64::MAX, true);
                    let Sweeping { sums, closed_ok, ramps, fed, .. } = *s;
                    let mut curves = sums.map(|sum| Some(sum.finish()));
                    if !closed_ok {
                        curves[SettledCurve::ClosedDecodeRate as usize] = None;
                    }
                    Settling::Swept(Box::new(Made { curves, ramps: ramps.finish() }), fed)
                }
                true => {
                    s.sum_before(before_ns, false);
                    Settling::Sweeping(s)
                }
            },
            Settling::Swept(curves, fed) if fed == self.spans.len() => Settling::Swept(curves, fed),
            Settling::Off | Settling::Swept(..) | Settling::Dropped => Settling::Dropped,
        };
    }

    /// A curve swept as the spans came, once made with every span in.
    pub(super) fn swept(&self, curve: SettledCurve) -> Option<&Steps> {
        match &self.settling {
            Settling::Swept(made, fed) if *fed == self.spans.len() => made.curves.get(curve as usize)?.as_ref(),
            _ => None,
        }
    }

    /// The tokens in flight in closed form with the run's chunks counted, swept as the spans
    /// came, once made with every span in.
    pub(super) fn swept_ramps(&self) -> Option<&Ramps> {
        match &self.settling {
            Settling::Swept(made, fed) if *fed == self.spans.len() => Some(&made.ramps),
            _ => None,
        }
    }
}

impl Sweeping {
    /// Takes up the spans added since the last time; false when one has an event before the
    /// time settled.
    fn take_up(&mut self, tl: &Timeline) -> bool {
        let mut events = Vec::with_capacity(2);
        let mut bends = SpanBends::default();
        for i in self.fed..tl.spans.len() {
            let s = tl.span(i);
            let n = Span::kept_of(s.later_chunks);
            // As `Timeline::each_span` gives a span its chunks.
            let kept = if tl.chunks.is_empty() {
                &[][..]
            } else {
                tl.chunks.get(self.fed_chunks..self.fed_chunks + n).unwrap_or(&[])
            };
            self.fed_chunks += n;
            let (points, n, simple) = Point::of(&s, kept, &mut events);
            self.closed_ok &= simple;
            bends.put(&s, kept, true, &mut self.bends);
            if bends.last().iter().any(|b| b.0 < self.settled) {
                return false;
            }
            for (list, p) in self.lists.iter_mut().zip(&points[..n]) {
                if p.t < self.settled {
                    return false;
                }
                list.push(*p);
            }
        }
        self.fed = tl.spans.len();
        true
    }

    /// Sums the changes before `before` (all of them with `all`) in time order, each time's
    /// changes of a curve in [`f64::total_cmp`] order: each curve's events in
    /// [`event_order`](super::steps::event_order); and the tokens in flight's bends before it in
    /// [`bend_order`], as `Ramps::of` sums them.
    fn sum_before(&mut self, before: u64, all: bool) {
        let before = if all { None } else { Some(before) };
        let (sums, at, group) = (&mut self.sums, &mut self.at, &mut self.group);
        take_before(
            &mut self.lists,
            |x, y| x.t.cmp(&y.t),
            |p| p.t,
            before,
            |p| {
                if group.first().is_some_and(|g| g.t != p.t) {
                    sum_at(group, sums, at);
                }
                group.push(p);
            },
        );
        sum_at(group, sums, at);
        let ramps = &mut self.ramps;
        take_before(&mut self.bends, bend_order, |b| b.0, before, |b| ramps.add(b));
        self.settled = self.settled.max(before.unwrap_or(u64::MAX));
    }
}

/// Gives `f` the items of `lists` (each about in `order`, by time first) whose time is before
/// `before` (every one with `None`), merged in `order`, and takes them out of the lists.
fn take_before<T: Copy, const K: usize>(
    lists: &mut [Vec<T>; K],
    order: impl Fn(&T, &T) -> Ordering + Copy,
    time: impl Fn(&T) -> u64,
    before: Option<u64>,
    f: impl FnMut(T),
) {
    let mut cut = [0; K];
    for (list, cut) in lists.iter_mut().zip(&mut cut) {
        sort_about_sorted(list, order);
        *cut = before.map_or(list.len(), |b| list.partition_point(|x| time(x) < b));
    }
    let ready: [&[T]; K] = std::array::from_fn(|j| &lists[j][..cut[j]]);
    merge_sorted(ready, order, f);
    for (list, &cut) in lists.iter_mut().zip(&cut) {
        list.drain(..cut);
    }
}

/// Sums the changes of the points of `group` (all at one time) and empties it: each curve's in
/// [`f64::total_cmp`] order.
fn sum_at(group: &mut Vec<Point>, sums: &mut [Summer; SETTLED], at: &mut [Vec<f64>; SETTLED]) {
    let Some(t) = group.first().map(|p| p.t) else { return };
    if let [p] = group[..] {
        p.changes_in_order(|c, d| sums[c].add((t, d)));
        group.clear();
        return;
    }
    for p in group.iter() {
        p.changes(|c, d| at[c].push(d));
    }
    sum_changes(t, sums, at);
    group.clear();
}
