//! The sweep: the events every span makes, merged in time order and summed into a step
//! function. Spans are taken up in the order of a time no later than any of their events, and
//! their events sorted a bucket of time at a time ([`Calendar`]): a bucket is given once the
//! spans still waiting can have no event in it, so no list of every event is made or sorted.
//! A curve of a few events a span that reads no chunk (the concurrencies, the prefill and even
//! decode rates) is summed from a list per event of a span instead ([`Timeline::sweep_split`]),
//! and two such curves whose events fall at the same times (a phase's concurrency and its rate)
//! from one list per time of a span ([`Timeline::sweep_two`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::spans::{EVENLY, NO_TIME, Span, Timeline};
use super::steps::{Event, Steps, Summer, event_order, merge_sorted, sort_about_sorted, sum_changes};

impl Timeline {
    /// The step function of the events `each` makes of every span (given its chunks after the
    /// first: with `raw`, a span's chunks as kept, none for evenly spaced ones, whose stride the
    /// span holds; else every chunk), summed in [`event_order`].
    pub(super) fn sweep_with(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>), raw: bool) -> Steps {
        let mut sum = Summer::new();
        self.sweep_events(each, raw, |e| sum.add(e));
        sum.finish()
    }

    /// [`sweep_with`](Self::sweep_with) of an `each` that makes at most `K` events of a span and
    /// reads no chunk: a span's j-th event goes to list j, each list (about in the spans' order: little
    /// to move) is sorted on its own, and the lists are merged in [`event_order`], the order
    /// of sorting them all at once. Holds every event, so only for a few events a span.
    pub(super) fn sweep_split<const K: usize>(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>)) -> Steps {
        let mut lists: [Vec<Event>; K] = std::array::from_fn(|_| Vec::with_capacity(self.spans.len()));
        let mut events = Vec::with_capacity(K);
        for i in 0..self.spans.len() {
            events.clear();
            each(&self.span(i), &[], &mut events);
            for (j, &e) in events.iter().enumerate() {
                lists[j.min(K - 1)].push(e);
            }
        }
        for list in &mut lists {
            sort_about_sorted(list, event_order);
        }
        let mut sum = Summer::with_capacity(lists.iter().map(Vec::len).sum());
        merge_sorted(lists.each_ref().map(Vec::as_slice), event_order, |e| sum.add(e));
        sum.finish()
    }

    /// [`sweep_with`](Self::sweep_with) of two curves at once, `raw` (`a`'s and `b`'s events
    /// of a span given its kept chunks; a few events a span, as every event is held): a span's
    /// events at the same time on the two curves are one point, its j-th point in list j (the
    /// last list taking the rest); the lists, each about in order, are sorted by time on their
    /// own and merged, and at each time each curve's changes are summed in [`event_order`].
    /// Each curve is the one [`sweep_split`](Self::sweep_split) or
    /// [`sweep_with`](Self::sweep_with) makes of it alone, for one sort of the times shared.
    pub(super) fn sweep_two<const K: usize>(
        &self,
        a: impl Fn(&Span, &[u64], &mut Vec<Event>),
        b: impl Fn(&Span, &[u64], &mut Vec<Event>),
    ) -> [Steps; 2] {
        let mut lists: [Vec<Point>; K] = std::array::from_fn(|_| Vec::with_capacity(self.spans.len()));
        let (mut of_a, mut of_b, mut points) = (Vec::new(), Vec::new(), Vec::<Point>::new());
        self.each_span(|span, kept| {
            of_a.clear();
            of_b.clear();
            points.clear();
            a(span, kept, &mut of_a);
            b(span, kept, &mut of_b);
            points.extend(of_a.iter().map(|&(t, d)| Point { t, d: [d, 0.0], has: [true, false] }));
            for &(t, d) in &of_b {
                match points.iter_mut().find(|p| p.t == t && !p.has[1]) {
                    Some(p) => (p.d[1], p.has[1]) = (d, true),
                    None => points.push(Point { t, d: [0.0, d], has: [false, true] }),
                }
            }
            for (j, &p) in points.iter().enumerate() {
                lists[j.min(K - 1)].push(p);
            }
        });
        let by_time = |x: &Point, y: &Point| x.t.cmp(&y.t);
        for list in &mut lists {
            sort_about_sorted(list, by_time);
        }
        let points = lists.iter().map(Vec::len).sum();
        let mut sums = [Summer::with_capacity(points), Summer::with_capacity(points)];
        // The changes of each curve at the time `at`, summed once the time moves on.
        let mut changes: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        let mut at = None;
        merge_sorted(lists.each_ref().map(Vec::as_slice), by_time, |p| {
            if at != Some(p.t) {
                if let Some(t) = at {
                    sum_changes(t, &mut sums, &mut changes);
                }
                at = Some(p.t);
            }
            for (ds, (&has, &d)) in changes.iter_mut().zip(p.has.iter().zip(&p.d)) {
                if has {
                    ds.push(d);
                }
            }
        });
        if let Some(t) = at {
            sum_changes(t, &mut sums, &mut changes);
        }
        sums.map(Summer::finish)
    }

    /// The steps of [`sweep_with`](Self::sweep_with) given one at a time, in order, without keeping them:
    /// `step(time, level)`, a level smaller than `floor` in magnitude given as 0. Returns the
    /// largest magnitude the level reached (whose 1e-9 is the sweep's rounding floor).
    pub(super) fn sweep_steps(
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
    /// whose later chunks are kept as a stride is given none).
    pub(super) fn sweep_events(
        &self,
        each: impl Fn(&Span, &[u64], &mut Vec<Event>),
        raw: bool,
        mut sink: impl FnMut(Event),
    ) {
        let Some(take) = TakeUp::of(self) else { return };
        let mut calendar = Calendar::new(&take);
        let mut buf = Vec::new();
        let mut events = Vec::new();
        take.each(self, |s, kept, earliest| {
            calendar.give_before(earliest, &mut sink);
            events.clear();
            each(s, if raw { kept } else { s.later(kept, &mut buf) }, &mut events);
            for &e in &events {
                calendar.put(e);
            }
        });
        calendar.give_rest(&mut sink);
    }
}

/// A time at which two curves change ([`Timeline::sweep_two`]): each curve's change there, if
/// it has one.
#[derive(Clone, Copy)]
struct Point {
    t: u64,
    d: [f64; 2],
    has: [bool; 2],
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

/// The order in which a sweep takes up the spans, by [`earliest`].
struct TakeUp {
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
    fn of(tl: &Timeline) -> Option<TakeUp> {
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
    ring: Vec<Vec<Event>>,
    /// Which slots of the ring hold events, a bit each.
    full: Vec<u64>,
    /// Events beyond the ring: (time, delta's bits), earliest first.
    far: BinaryHeap<Reverse<(u64, u64)>>,
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
    fn put(&mut self, e: Event) {
        debug_assert!(e.0 >= self.origin && self.bucket(e.0) >= self.next, "an event before the taken-up span's time");
        let b = self.bucket(e.0).max(self.next);
        if b - self.next <= self.mask {
            let slot = (b & self.mask) as usize;
            self.ring[slot].push(e);
            self.full[slot / 64] |= 1 << (slot % 64);
        } else {
            self.far.push(Reverse((e.0, e.1.to_bits())));
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

    /// Gives every event of the buckets before `t`'s, in [`event_order`]: no span taken up
    /// later has an event before `t`.
    fn give_before(&mut self, t: u64, sink: &mut impl FnMut(Event)) {
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
    fn give(&mut self, b: u64, sink: &mut impl FnMut(Event)) {
        self.next = b;
        let slot = (b & self.mask) as usize;
        let mut events = std::mem::take(&mut self.ring[slot]);
        while let Some(&Reverse((t, d))) = self.far.peek()
            && self.bucket(t) <= b
        {
            self.far.pop();
            events.push((t, f64::from_bits(d)));
        }
        events.sort_unstable_by(event_order);
        for &e in &events {
            sink(e);
        }
        events.clear();
        self.ring[slot] = events;
        self.full[slot / 64] &= !(1 << (slot % 64));
        self.next = b + 1;
    }

    /// Gives every event still held, in [`event_order`].
    fn give_rest(&mut self, sink: &mut impl FnMut(Event)) {
        while let Some(b) = match (self.next_in_ring(), self.far.peek().map(|Reverse(e)| self.bucket(e.0))) {
            (Some(a), Some(f)) => Some(a.min(f)),
            (a, f) => a.or(f),
        } {
            self.give(b, sink);
        }
    }
}
