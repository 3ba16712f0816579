//! Step functions: events summed in time order into steps, two curves walked together, and the
//! (duration, value) pairs a curve holds over a window with their statistics.

use std::cmp::Ordering;

use super::metric::TimeWeighted;
use super::weighted::{Pairs, Weighted};

/// A step function: from each time on, the value until the next (sorted, distinct times; 0
/// before the first).
pub(super) type Steps = Vec<(u64, f64)>;

/// From its time on, the curve's level changes by its delta.
pub(super) type Event = (u64, f64);

/// The order in which events are summed: by time, then by delta.
pub(super) fn event_order(a: &Event, b: &Event) -> Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// Sorts `items` in `order`: by insertion while the items moved stay few (a list about in
/// order), else by `sort_unstable_by`. With a total `order` the result is the same either way.
pub(super) fn sort_about_sorted<T: Copy>(items: &mut [T], order: impl Fn(&T, &T) -> Ordering) {
    let budget = 8 * items.len();
    let mut moved = 0;
    for i in 1..items.len() {
        let e = items[i];
        let mut j = i;
        while j > 0 && order(&e, &items[j - 1]) == Ordering::Less {
            items[j] = items[j - 1];
            j -= 1;
        }
        items[j] = e;
        moved += i - j;
        if moved > budget {
            items.sort_unstable_by(order);
            return;
        }
    }
}

/// Gives the items of sorted `lists` to `f` merged in `order`: the order of sorting them all at
/// once, where `order` is total.
pub(super) fn merge_sorted<T: Copy, const K: usize>(
    lists: [&[T]; K],
    order: impl Fn(&T, &T) -> Ordering,
    mut f: impl FnMut(T),
) {
    let mut at = [0usize; K];
    loop {
        let mut first: Option<(usize, T)> = None;
        for (j, list) in lists.iter().enumerate() {
            if let Some(e) = list.get(at[j])
                && first.as_ref().is_none_or(|(_, f)| order(e, f) == Ordering::Less)
            {
                first = Some((j, *e));
            }
        }
        let Some((j, e)) = first else { break };
        f(e);
        at[j] += 1;
    }
}

/// Sums events in [`event_order`] into a step function (AIPerf's cumulated sweep: a value
/// smaller than 1e-9 of the largest is rounding and counts as 0).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Summer {
    steps: Steps,
    level: f64,
    largest: f64,
}

impl Summer {
    pub(super) fn new() -> Summer {
        Summer::with_capacity(0)
    }

    /// A sum with room for `steps` steps (made room for at once, not grown by copies).
    pub(super) fn with_capacity(steps: usize) -> Summer {
        Summer { steps: Steps::with_capacity(steps), level: 0.0, largest: 0.0 }
    }

    pub(super) fn add(&mut self, (t, d): Event) {
        self.level += d;
        self.largest = self.largest.max(self.level.abs());
        match self.steps.last_mut() {
            Some(last) if last.0 == t => last.1 = self.level,
            _ => self.steps.push((t, self.level)),
        }
    }

    pub(super) fn finish(mut self) -> Steps {
        let floor = 1e-9 * self.largest;
        for s in &mut self.steps {
            if s.1.abs() < floor {
                s.1 = 0.0;
            }
        }
        self.steps
    }
}

/// Adds each curve's changes at the time `t` to its sum in [`f64::total_cmp`] order (the order
/// of [`event_order`] at one time), and empties them.
pub(super) fn sum_changes(t: u64, sums: &mut [Summer], changes: &mut [Vec<f64>]) {
    for (sum, ds) in sums.iter_mut().zip(changes.iter_mut()) {
        ds.sort_unstable_by(f64::total_cmp);
        for &d in ds.iter() {
            sum.add((t, d));
        }
        ds.clear();
    }
}

/// The value of `steps` at `t`.
pub(super) fn at(steps: &[(u64, f64)], t: u64) -> f64 {
    match steps.partition_point(|s| s.0 <= t) {
        0 => 0.0,
        i => steps[i - 1].1,
    }
}

/// The steps of `s` inside `[from, to)`: after `from`, before `to`.
fn inside(s: &[(u64, f64)], from: u64, to: u64) -> &[(u64, f64)] {
    let lo = s.partition_point(|x| x.0 <= from);
    let hi = s.partition_point(|x| x.0 < to);
    &s[lo..hi.max(lo)]
}

/// The segments of `[from, to)` on which two step functions hold, in order: (duration, a's
/// value, b's value); b with no steps is 0 throughout.
struct Segments<'a> {
    a: &'a [(u64, f64)],
    b: &'a [(u64, f64)],
    /// The time of the values held.
    t: u64,
    va: f64,
    vb: f64,
    to: u64,
    done: bool,
}

impl<'a> Segments<'a> {
    fn new(a: &'a [(u64, f64)], b: &'a [(u64, f64)], from: u64, to: u64) -> Segments<'a> {
        let (va, vb) = (at(a, from), at(b, from));
        Segments { a: inside(a, from, to), b: inside(b, from, to), t: from, va, vb, to, done: false }
    }
}

impl Iterator for Segments<'_> {
    type Item = (u64, f64, f64);

    #[inline]
    fn next(&mut self) -> Option<(u64, f64, f64)> {
        let next = match (self.a.first(), self.b.first()) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) if self.done => return None,
            (None, None) => {
                self.done = true;
                return Some((self.to - self.t, self.va, self.vb));
            }
        };
        let held = (next - self.t, self.va, self.vb);
        if let Some((x, rest)) = self.a.split_first()
            && x.0 == next
        {
            self.va = x.1;
            self.a = rest;
        }
        if let Some((y, rest)) = self.b.split_first()
            && y.0 == next
        {
            self.vb = y.1;
            self.b = rest;
        }
        self.t = next;
        Some(held)
    }
}

/// The (duration, value × `scale`) pairs a step function holds over a window: the value at its
/// start, then each step inside it, each held until the next.
struct Window<'a> {
    steps: &'a [(u64, f64)],
    from: u64,
    to: u64,
    scale: f64,
}

impl Pairs for Window<'_> {
    #[inline]
    fn pairs(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        let scale = self.scale;
        Segments::new(self.steps, &[], self.from, self.to).map(move |(d, v, _)| (d, v * scale))
    }
}

/// The pairs of a rate over the segments of a window when its mask is above 0.
struct Active<'a> {
    rate: &'a [(u64, f64)],
    mask: &'a [(u64, f64)],
    from: u64,
    to: u64,
    scale: f64,
}

impl Pairs for Active<'_> {
    #[inline]
    fn pairs(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        let scale = self.scale;
        Segments::new(self.rate, self.mask, self.from, self.to)
            .filter(|s| s.2 > 0.0)
            .map(move |(d, v, _)| (d, v * scale))
    }
}

/// Time-weighted statistics of `steps` over `[from, to)`.
pub(super) fn over_window(steps: &Steps, from: u64, to: u64, scale: f64) -> TimeWeighted {
    if steps.is_empty() || to <= from {
        return TimeWeighted::default();
    }
    let upto = steps.len() as u64 + 1;
    Weighted::of_pairs(&Window { steps, from, to, scale }, Some((to - from) as f64), upto)
}

/// Time-weighted statistics of `rate` over the time of `[from, to)` when `mask` is above 0.
pub(super) fn while_active(rate: &Steps, mask: &Steps, from: u64, to: u64, scale: f64) -> TimeWeighted {
    if rate.is_empty() || mask.is_empty() || to <= from {
        return TimeWeighted::default();
    }
    let upto = (rate.len() + mask.len()) as u64 + 1;
    Weighted::of_pairs(&Active { rate, mask, from, to, scale }, None, upto)
}

/// The statistics of a rate over `[from, to)` with the concurrency of its phase, `conc`, in one
/// loop over their segments a pass: the rate while `conc` is above 0, and the rate per request
/// (the rate divided by `conc` where `conc` is above 0, else 0) while `conc` is above 0 and over
/// the window. Each figure is that of the curve of the rate per request made on its own (a step
/// at every time of either curve) and weighed alone: the segments of the two curves are its
/// steps.
pub(super) fn per_user(rate: &Steps, conc: &Steps, from: u64, to: u64, scale: f64) -> [TimeWeighted; 3] {
    if rate.is_empty() || conc.is_empty() || to <= from {
        return [TimeWeighted::default(); 3];
    }
    let upto = (rate.len() + conc.len()) as u64 + 1;
    let mut active = Weighted::new(None, upto);
    let mut active_per_user = Weighted::new(None, upto);
    let mut window_per_user = Weighted::new(Some((to - from) as f64), upto);
    while !(active.done() && active_per_user.done() && window_per_user.done()) {
        let pairs = Segments::new(rate, conc, from, to).map(|(d, r, c)| {
            let u = if c > 0.0 { r / c } else { 0.0 };
            let active = (c > 0.0).then_some(r * scale);
            (d, [active, active.map(|_| u * scale), Some(u * scale)])
        });
        Weighted::pass_over_each([&mut active, &mut active_per_user, &mut window_per_user], pairs);
        for w in [&mut active, &mut active_per_user, &mut window_per_user] {
            w.end_pass();
        }
    }
    [active.result(), active_per_user.result(), window_per_user.result()]
}

/// The (duration, value) pairs a step function holds over `[from, to)` ([`window_pairs`]), from
/// its steps given one at a time.
pub(super) struct Feed<V> {
    from: u64,
    to: u64,
    /// The time of the value held.
    t: u64,
    v: V,
    closed: bool,
}

impl<V: Copy> Feed<V> {
    /// `v`: the value before the first step.
    pub(super) fn new(from: u64, to: u64, v: V) -> Feed<V> {
        Feed { from, to, t: from, v, closed: false }
    }

    pub(super) fn step(&mut self, t: u64, v: V, out: impl FnOnce(u64, V)) {
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
    pub(super) fn finish(&mut self, out: impl FnOnce(u64, V)) {
        if !self.closed {
            self.closed = true;
            out(self.to - self.t, self.v);
        }
    }
}
