//! The sweep: the events every span makes, merged in time order and summed into a step
//! function. Spans are taken up in the order of a time no later than any of their events (made
//! once for every sweep of a timeline: [`TakeUp`]), and their events sorted a bucket of time at a
//! time ([`Calendar`]): a bucket is given once the spans still waiting can have no event in it,
//! so no list of every event is made or sorted. Curves swept together share the pass over the
//! spans and the buckets, their events tagged with their curve.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::steps::{Event, Steps, Summer, event_order};
use super::{EVENLY, NO_TIME, Span, Timeline};

/// A curve's event tagged with the curve's place in a sweep of several: (time, curve, delta).
type Tagged = (u64, u32, f64);

/// The order in which a sweep of several curves gives their events: [`event_order`], then by
/// curve, so each curve's events come in [`event_order`].
fn tagged_order(a: &Tagged, b: &Tagged) -> std::cmp::Ordering {
    event_order(&(a.0, a.2), &(b.0, b.2)).then(a.1.cmp(&b.1))
}

/// The events one curve makes of a span, given its chunks after the first.
pub(super) type Curve<'a> = &'a dyn Fn(&Span, &[u64], &mut Vec<Event>);

impl Timeline {
    /// The step function of the events `each` makes of every span (given its chunks after the
    /// first), summed in [`event_order`].
    /// `each` reads no chunk: a span's later chunks are given as kept (none for evenly spaced
    /// ones, whose stride the span holds), not written out.
    pub(super) fn sweep(&self, take: &TakeUp, each: impl Fn(&Span, &[u64], &mut Vec<Event>)) -> Steps {
        self.sweep_with(take, each, true)
    }

    /// [`sweep`](Self::sweep) of an `each` that reads the chunks: evenly spaced chunks given as
    /// the span's stride alone with `raw`, else every chunk.
    pub(super) fn sweep_with(&self, take: &TakeUp, each: impl Fn(&Span, &[u64], &mut Vec<Event>), raw: bool) -> Steps {
        let [steps] = self.sweep_curves(take, [&each], raw);
        steps
    }

    /// The step functions of several curves from one pass over the spans, their events sorted
    /// together (each curve's sums those of its own sweep): `raw` as in
    /// [`sweep_with`](Self::sweep_with), for every curve.
    pub(super) fn sweep_curves<const N: usize>(&self, take: &TakeUp, curves: [Curve; N], raw: bool) -> [Steps; N] {
        let mut sums: [Summer; N] = std::array::from_fn(|_| Summer::new());
        self.sweep_events(take, &curves, raw, |c, e| sums[c as usize].add(e));
        sums.map(Summer::finish)
    }

    /// The steps of [`sweep`](Self::sweep) given one at a time, in order, without keeping them:
    /// `step(time, level)`, a level smaller than `floor` in magnitude given as 0. Returns the
    /// largest magnitude the level reached (whose 1e-9 is the sweep's rounding floor).
    pub(super) fn sweep_steps(
        &self,
        take: &TakeUp,
        each: impl Fn(&Span, &[u64], &mut Vec<Event>),
        raw: bool,
        floor: f64,
        mut step: impl FnMut(u64, f64),
    ) -> f64 {
        let floored = |v: f64| if v.abs() < floor { 0.0 } else { v };
        let (mut at, mut level, mut largest) = (None, 0.0, 0.0f64);
        self.sweep_events(take, &[&each], raw, |_, (t, d)| {
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

    /// Gives `sink(curve, event)` the events each of `curves` makes of every span, each curve's
    /// in [`event_order`] (with `raw`, a span whose later chunks are kept as a stride is given
    /// none).
    fn sweep_events(&self, take: &TakeUp, curves: &[Curve], raw: bool, mut sink: impl FnMut(u32, Event)) {
        let mut calendar = Calendar::new(take);
        let mut buf = Vec::new();
        let mut events = Vec::new();
        let mut give = |(t, c, d): Tagged| sink(c, (t, d));
        take.each(self, |s, kept, earliest| {
            calendar.give_before(earliest, &mut give);
            let later = if raw { kept } else { s.later(kept, &mut buf) };
            for (c, each) in curves.iter().enumerate() {
                events.clear();
                each(s, later, &mut events);
                for &(t, d) in &events {
                    calendar.put((t, c as u32, d));
                }
            }
        });
        calendar.give_rest(&mut give);
    }
}

/// A time no later than any event a curve makes of `s` (given its kept chunks): its send, its
/// first token, a nanosecond before its end (where late chunks are counted), its chunks.
fn earliest(s: &Span, kept: &[u64]) -> u64 {
    let mut t = s.start.min(s.end.saturating_sub(1));
    if s.first != NO_TIME {
        // Evenly spaced chunks follow the first token.
        t = t.min(s.first);
    }
    if s.later_chunks & EVENLY == 0 {
        t = kept.iter().fold(t, |t, &c| t.min(c));
    }
    t
}

/// The order in which a sweep takes up the spans, by [`earliest`]: made once for every sweep
/// of a timeline.
pub(super) struct TakeUp {
    /// (earliest, span) in that order, when the spans as added are not.
    order: Option<Vec<(u64, u32)>>,
    /// Where each span's kept chunks start in [`Timeline::chunks`], with `order`.
    offsets: Vec<usize>,
    /// The earliest time of all.
    origin: u64,
    /// The bucket width's power of two: about the time between two spans' take-ups.
    shift: u32,
    /// The power of two of the buckets ahead that are held: enough for the longest span, at
    /// most [`MAX_RING`].
    ring: u32,
}

/// The most buckets of a [`Calendar`] held ahead (2^this); events further ahead wait in a heap.
const MAX_RING: u32 = 12;

impl TakeUp {
    pub(super) fn of(tl: &Timeline) -> Option<TakeUp> {
        let n = tl.spans.len();
        // The bulk of the take-ups (nine in ten) spread over their time: about one span's
        // take-up a bucket, whatever a few outliers far ahead.
        let bulk = n.saturating_sub(1) * 9 / 10;
        let (mut sorted, mut last, mut i) = (true, 0, 0);
        let (mut origin, mut at_bulk, mut longest) = (0, 0, 0u64);
        tl.each_span(|s, kept| {
            let e = earliest(s, kept);
            if i == 0 {
                origin = e;
            }
            if i == bulk {
                at_bulk = e;
            }
            sorted &= e >= last;
            last = e;
            longest = longest.max(s.end.saturating_sub(e));
            i += 1;
        });
        if n == 0 {
            return None;
        }
        let (order, offsets) = if sorted {
            (None, Vec::new())
        } else {
            let mut order = Vec::with_capacity(n);
            let mut offsets = Vec::with_capacity(n);
            let (mut at, mut i) = (0, 0u32);
            tl.each_span(|s, kept| {
                order.push((earliest(s, kept), i));
                offsets.push(at);
                at += kept.len();
                i += 1;
            });
            order.sort_unstable();
            origin = order[0].0;
            at_bulk = order[bulk].0;
            (Some(order), offsets)
        };
        let spread = (at_bulk - origin) / (bulk as u64).max(1);
        let shift = 63 - spread.max(1).leading_zeros();
        let ahead = (longest >> shift).saturating_add(2);
        let ring = (64 - ahead.leading_zeros()).clamp(6, MAX_RING);
        Some(TakeUp { order, offsets, origin, shift, ring })
    }

    /// Calls `f(span, its kept chunks, its earliest time)` for every span in take-up order.
    fn each(&self, tl: &Timeline, mut f: impl FnMut(&Span, &[u64], u64)) {
        match &self.order {
            None => tl.each_span(|s, kept| f(s, kept, earliest(s, kept))),
            Some(order) => {
                for &(t, i) in order {
                    let i = i as usize;
                    let n = Span::kept_of(tl.spans[i].later_chunks);
                    let kept = match self.offsets.get(i) {
                        Some(&o) if !tl.chunks.is_empty() => tl.chunks.get(o..o + n).unwrap_or(&[]),
                        _ => &[],
                    };
                    f(&tl.span(i), kept, t);
                }
            }
        }
    }
}

/// Events sorted a bucket of time at a time: a ring of the buckets ahead of the next one to be
/// given, and a heap of the events beyond the ring.
struct Calendar {
    origin: u64,
    shift: u32,
    /// The ring's mask (its length less one).
    mask: u64,
    /// The next bucket to be given; every event held is in it or after it.
    next: u64,
    ring: Vec<Vec<Tagged>>,
    /// Which slots of the ring hold events, a bit each.
    full: Vec<u64>,
    /// Events beyond the ring: (time, curve, delta's bits), earliest first.
    far: BinaryHeap<Reverse<(u64, u32, u64)>>,
}

impl Calendar {
    fn new(take: &TakeUp) -> Calendar {
        let len = 1usize << take.ring;
        Calendar {
            origin: take.origin,
            shift: take.shift,
            mask: len as u64 - 1,
            next: 0,
            ring: (0..len).map(|_| Vec::new()).collect(),
            full: vec![0; len.div_ceil(64)],
            far: BinaryHeap::new(),
        }
    }

    fn bucket(&self, t: u64) -> u64 {
        t.saturating_sub(self.origin) >> self.shift
    }

    /// Holds an event at or after the next bucket's start.
    fn put(&mut self, e: Tagged) {
        debug_assert!(e.0 >= self.origin && self.bucket(e.0) >= self.next, "an event before the taken-up span's time");
        let b = self.bucket(e.0).max(self.next);
        if b - self.next <= self.mask {
            let slot = (b & self.mask) as usize;
            self.ring[slot].push(e);
            self.full[slot / 64] |= 1 << (slot % 64);
        } else {
            self.far.push(Reverse((e.0, e.1, e.2.to_bits())));
        }
    }

    /// The first bucket holding events in the ring.
    fn next_in_ring(&self) -> Option<u64> {
        let len = self.mask + 1;
        let from = self.next & self.mask;
        let words = self.full.len();
        let (w0, b0) = ((from / 64) as usize, from % 64);
        // The slots from `from` on, then those before it (the ring wrapped).
        for k in 0..=words {
            let w = (w0 + k) % words;
            let mut bits = self.full[w];
            if k == 0 {
                bits &= u64::MAX << b0;
            } else if k == words {
                bits &= !(u64::MAX << b0);
            }
            if bits != 0 {
                let slot = (w as u64) * 64 + u64::from(bits.trailing_zeros());
                return Some(self.next + ((slot + len - from) & self.mask));
            }
        }
        None
    }

    /// Gives every event of the buckets before `t`'s, in [`tagged_order`]: no span taken up
    /// later has an event before `t`.
    fn give_before(&mut self, t: u64, sink: &mut impl FnMut(Tagged)) {
        let until = self.bucket(t);
        loop {
            let far = self.far.peek().map(|Reverse(e)| self.bucket(e.0));
            let b = match (self.next_in_ring(), far) {
                (Some(a), Some(f)) => a.min(f),
                (a, f) => match a.or(f) {
                    Some(b) => b,
                    None => return,
                },
            };
            if b >= until {
                return;
            }
            self.give(b, sink);
        }
    }

    /// Gives bucket `b`, the first holding events, and moves past it.
    fn give(&mut self, b: u64, sink: &mut impl FnMut(Tagged)) {
        self.next = b;
        let slot = (b & self.mask) as usize;
        let mut events = std::mem::take(&mut self.ring[slot]);
        while let Some(&Reverse((t, c, d))) = self.far.peek()
            && self.bucket(t) <= b
        {
            self.far.pop();
            events.push((t, c, f64::from_bits(d)));
        }
        events.sort_unstable_by(tagged_order);
        for &e in &events {
            sink(e);
        }
        events.clear();
        self.ring[slot] = events;
        self.full[slot / 64] &= !(1 << (slot % 64));
        self.next = b + 1;
    }

    /// Gives every event still held, in [`tagged_order`].
    fn give_rest(&mut self, sink: &mut impl FnMut(Tagged)) {
        while let Some(b) = match (self.next_in_ring(), self.far.peek().map(|Reverse(e)| self.bucket(e.0))) {
            (Some(a), Some(f)) => Some(a.min(f)),
            (a, f) => a.or(f),
        } {
            self.give(b, sink);
        }
    }
}
