//! Tokens in flight in closed form: a piecewise-linear curve of ramps and its statistics.

use std::cmp::Ordering;

use super::metric::{FRACTIONS, TimeWeighted};
use super::steps::{merge_sorted, sort_about_sorted};

/// A change of a piecewise-linear curve: at its time, the level changes by the first and the
/// slope (per ns) by the second.
pub(super) type Bend = (u64, f64, f64);

/// A piecewise-linear curve: from each time on, the level there and its slope (per ns) until
/// the next (sorted, distinct times; 0 before the first).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Ramps {
    bends: Vec<(u64, f64, f64)>,
    /// Levels smaller than this in magnitude are rounding and count as 0.
    floor: f64,
}

/// A [`Ramps`] being summed, bend after bend in [`bend_order`].
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct RampsSum {
    bends: Vec<(u64, f64, f64)>,
    level: f64,
    slope: f64,
    largest: f64,
}

impl RampsSum {
    /// A sum with room for `bends` bends.
    pub(super) fn with_capacity(bends: usize) -> RampsSum {
        RampsSum { bends: Vec::with_capacity(bends), ..RampsSum::default() }
    }

    /// The next bend: at the time of the last one, or later.
    pub(super) fn add(&mut self, (t, dl, ds): Bend) {
        match self.bends.last_mut() {
            Some(last) if last.0 == t => {
                self.level += dl;
                self.slope += ds;
                (last.1, last.2) = (self.level, self.slope);
            }
            last => {
                if let Some(&mut (at, _, _)) = last {
                    self.level += self.slope * (t - at) as f64;
                    self.largest = self.largest.max(self.level.abs());
                }
                self.level += dl;
                self.slope += ds;
                self.bends.push((t, self.level, self.slope));
            }
        }
        self.largest = self.largest.max(self.level.abs());
    }

    pub(super) fn finish(self) -> Ramps {
        Ramps { bends: self.bends, floor: 1e-9 * self.largest }
    }
}

/// The order in which bends are summed: by time, then by level change, then by slope change.
pub(super) fn bend_order(a: &Bend, b: &Bend) -> Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.total_cmp(&b.2))
}

impl Ramps {
    /// The curve of the bends of `lists` summed in [`bend_order`], as if they were one list
    /// sorted. A request's j-th bend in list j (its send, first token, last chunk, end: each
    /// list about in order already) keeps the sorting short.
    pub(super) fn of<const K: usize>(mut lists: [Vec<Bend>; K]) -> Ramps {
        for list in &mut lists {
            sort_about_sorted(list, bend_order);
        }
        let mut sum = RampsSum::with_capacity(lists.iter().map(Vec::len).sum());
        merge_sorted(lists.each_ref().map(Vec::as_slice), bend_order, |b| sum.add(b));
        sum.finish()
    }

    /// The level of the piece starting at `i` at time `t`, rounding counted as 0.
    fn level(&self, i: usize, t: u64) -> f64 {
        let (at, level, slope) = self.bends[i];
        let v = level + slope * (t - at) as f64;
        if v.abs() < self.floor { 0.0 } else { v }
    }

    /// The pieces inside `[from, to)`, in time order: (duration, level at its start, level at
    /// its end).
    fn pieces(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, f64, f64)> + '_ {
        let mut i = self.bends.partition_point(|b| b.0 <= from);
        let (mut t, mut piece) = (from, i.checked_sub(1));
        let level = move |piece: Option<usize>, t: u64| piece.map_or(0.0, |p| self.level(p, t));
        let mut done = false;
        std::iter::from_fn(move || {
            while !done {
                let next = self.bends.get(i).map_or(to, |b| b.0.min(to));
                let held = (next > t).then(|| (next - t, level(piece, t), level(piece, next)));
                if next >= to {
                    done = true;
                } else {
                    (t, piece) = (next, Some(i));
                    i += 1;
                }
                if held.is_some() {
                    return held;
                }
            }
            None
        })
    }

    /// Time-weighted statistics over `[from, to)`: the mean and variance of the pieces
    /// integrated, a percentile the level below which the curve spends the fraction of the time.
    /// The pieces are made again for each pass over them, not kept.
    pub(super) fn over_window(&self, from: u64, to: u64) -> TimeWeighted {
        if self.bends.is_empty() || to <= from {
            return TimeWeighted::default();
        }
        let total = (to - from) as f64;
        let (mut n, mut sum, mut min, mut max) = (0, -0.0, f64::INFINITY, f64::NEG_INFINITY);
        let mut bounds = MarkBounds::new();
        for (d, a, b) in self.pieces(from, to) {
            n += 1;
            sum += d as f64 * (a + b) / 2.0;
            min = f64::min(min, a.min(b));
            max = f64::max(max, a.max(b));
            bounds.take_marks_of((d, a, b));
        }
        let avg = sum / total;
        let var = self.pieces(from, to).fold(-0.0, |sum, (d, a, b)| {
            let (a, b) = (a - avg, b - avg);
            sum + d as f64 * (a * a + a * b + b * b) / 3.0
        }) / total;
        let [p50, p90, p95, p99] = spread_percentiles(n, || self.pieces(from, to), total, bounds);
        TimeWeighted { avg, min, max, p50, p90, p95, p99, std: var.sqrt() }
    }
}

/// Pieces that can be given again, the same ones in the same order each time: (duration, level
/// at its start, level at its end).
trait Pieces: Fn() -> Self::Each {
    type Each: Iterator<Item = (u64, f64, f64)>;
}

impl<F: Fn() -> I, I: Iterator<Item = (u64, f64, f64)>> Pieces for F {
    type Each = I;
}

/// A level where a piece's time starts or stops being spread (level, time held at exactly it,
/// density of the time per level from it on (+) or up to it (−)).
type Mark = (f64, f64, f64);

/// Calls `f` with the marks of each piece: its two ends when it slopes, its level when flat. A
/// piece whose ends differ by less than a billionth of their level (a flat piece's rounding) is
/// flat: its time spread over so narrow a range would be a density too large for the walk's
/// sums to take back exactly, and the time below every later level would be off.
fn each_mark(pieces: &impl Pieces, mut f: impl FnMut(Mark)) {
    for piece in pieces() {
        let (first, second) = marks_of(piece);
        f(first);
        if let Some(m) = second {
            f(m);
        }
    }
}

/// A piece's marks ([`each_mark`]): its lower end, and its upper end when it slopes.
#[inline]
fn marks_of((d, a, b): (u64, f64, f64)) -> (Mark, Option<Mark>) {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    if hi - lo > 1e-9 * lo.abs().max(hi.abs()) {
        let density = d as f64 / (hi - lo);
        ((lo, 0.0, density), Some((hi, 0.0, -density)))
    } else {
        ((lo, d as f64, 0.0), None)
    }
}

/// The lowest and the highest level marked, in [`f64::total_cmp`] order: the sorted walk's first
/// and last marks.
#[derive(Clone, Copy, Debug)]
struct MarkBounds {
    lo: f64,
    hi: f64,
}

impl MarkBounds {
    fn new() -> MarkBounds {
        MarkBounds { lo: f64::INFINITY, hi: f64::NEG_INFINITY }
    }

    fn take(&mut self, v: f64) {
        if v.total_cmp(&self.lo).is_lt() {
            self.lo = v;
        }
        if v.total_cmp(&self.hi).is_gt() {
            self.hi = v;
        }
    }

    /// Takes the marks of a piece ([`marks_of`]).
    fn take_marks_of(&mut self, piece: (u64, f64, f64)) {
        let (first, second) = marks_of(piece);
        self.take(first.0);
        if let Some(m) = second {
            self.take(m.0);
        }
    }

    /// Those of every mark of `pieces`.
    #[cfg(test)]
    fn of(pieces: &impl Pieces) -> MarkBounds {
        let mut b = MarkBounds::new();
        for piece in pieces() {
            b.take_marks_of(piece);
        }
        b
    }
}

/// Whether the time below a level reaches the fraction `f` of `total`. The time below a level is
/// a sum of products in floating point: a fraction reached exactly (a level where the time below
/// is the fraction to the nanosecond) must not be missed by the rounding of that sum, so it
/// counts as reached within a billionth of the window.
fn reached(time: f64, f: f64, total: f64) -> bool {
    time >= (f - 1e-9) * total
}

/// The walk up the levels: the level `x` reached, the time spent below it, the density of the
/// time per level just above it.
#[derive(Clone, Copy, Debug)]
struct Walk {
    x: f64,
    below: f64,
    density: f64,
}

impl Walk {
    /// Walks up through `marks` (sorted by level, all at `x` or above) while the fractions
    /// from `next` on are reached, putting each one's level in `out`; returns the next fraction
    /// not reached.
    fn through(&mut self, marks: &[Mark], mut next: usize, total: f64, out: &mut [f64; 4]) -> usize {
        let mut i = 0;
        while i < marks.len() && next < FRACTIONS.len() {
            let v = marks[i].0;
            // From `x` up to `v` the time below rises by the density.
            let gain = self.density.max(0.0) * (v - self.x);
            while next < FRACTIONS.len() && reached(self.below + gain, FRACTIONS[next], total) {
                let want = FRACTIONS[next] * total - self.below;
                out[next] = (self.x + want / self.density).clamp(self.x, v);
                next += 1;
            }
            self.below += gain;
            self.x = v;
            while i < marks.len() && marks[i].0 == v {
                self.below += marks[i].1;
                self.density += marks[i].2;
                i += 1;
            }
            while next < FRACTIONS.len() && reached(self.below, FRACTIONS[next], total) {
                out[next] = v;
                next += 1;
            }
        }
        next
    }
}

/// The percentiles of the levels of pieces each going evenly from one level to another over its
/// duration: the least level below which (or at which) the fraction of `total` is spent, by a
/// walk up every mark sorted ([`Walk::through`]).
fn sorted_percentiles(n: usize, pieces: &impl Pieces, total: f64) -> [f64; 4] {
    let mut marks: Vec<Mark> = Vec::with_capacity(2 * n);
    each_mark(pieces, |m| marks.push(m));
    marks.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = [marks.last().map_or(0.0, |m| m.0); 4];
    let mut walk = Walk { x: marks.first().map_or(0.0, |m| m.0), below: 0.0, density: 0.0 };
    walk.through(&marks, 0, total, &mut out);
    out
}

/// Buckets of levels at most, of [`spread_percentiles`].
const BUCKETS: usize = 1 << 16;

/// The sums of the marks of a bucket of levels.
#[derive(Clone, Copy)]
struct Bucket {
    /// The lowest level marked in it (∞ when none is).
    low: f64,
    held: f64,
    density: f64,
    /// Density × level.
    moment: f64,
}

/// [`sorted_percentiles`] without sorting every mark: the marks are summed into buckets of
/// levels (evenly spaced from the lowest level to the highest), the time below each bucket's
/// lowest mark is had from the buckets below (held time, plus density × level less the
/// density's moment), and the walk is taken from the bucket in which a fraction is reached,
/// through the marks of that bucket and the next, sorted. The same levels up to the rounding of
/// the sums; the walk through every mark when the levels are not all finite or the bucket's
/// walk ends short of its fraction. `n`: how many pieces there are; `bounds`: their marks'.
fn spread_percentiles(n: usize, pieces: impl Pieces, total: f64, bounds: MarkBounds) -> [f64; 4] {
    match n / 4 {
        // A few marks are sorted at once.
        ..64 => sorted_percentiles(n, &pieces, total),
        b => bucketed_within(n, &pieces, total, b.min(BUCKETS), bounds),
    }
}

/// [`spread_percentiles`] in `buckets` buckets.
#[cfg(test)]
fn bucketed_percentiles(n: usize, pieces: &impl Pieces, total: f64, buckets: usize) -> [f64; 4] {
    bucketed_within(n, pieces, total, buckets, MarkBounds::of(pieces))
}

/// [`spread_percentiles`] in `buckets` buckets of the levels between the marks' `bounds` (a NaN
/// is not finite: the sorted walk then).
fn bucketed_within(n: usize, pieces: &impl Pieces, total: f64, buckets: usize, bounds: MarkBounds) -> [f64; 4] {
    let MarkBounds { lo, hi } = bounds;
    if !(lo.is_finite() && hi.is_finite() && hi > lo) || buckets == 0 {
        return sorted_percentiles(n, pieces, total);
    }
    let scale = buckets as f64 / (hi - lo);
    let bucket_of = |v: f64| (((v - lo) * scale) as usize).min(buckets - 1);
    let empty = Bucket { low: f64::INFINITY, held: 0.0, density: 0.0, moment: 0.0 };
    let mut sums = vec![empty; buckets];
    each_mark(pieces, |(v, held, density)| {
        let b = &mut sums[bucket_of(v)];
        b.low = b.low.min(v);
        b.held += held;
        b.density += density;
        b.moment += density * v;
    });
    // Each bucket holding marks with the walk at its lowest mark, before its marks are taken.
    let mut starts: Vec<(usize, Walk)> = Vec::new();
    let (mut held, mut density, mut moment) = (0.0f64, 0.0f64, 0.0f64);
    for (j, b) in sums.iter().enumerate().filter(|(_, b)| b.low.is_finite()) {
        let below = (held + (density * b.low - moment)).max(0.0);
        starts.push((j, Walk { x: b.low, below, density }));
        held += b.held;
        density += b.density;
        moment += b.moment;
    }
    drop(sums);
    // The fraction is reached in the bucket before the first whose start reaches it.
    let first_of = |f: f64| {
        starts.iter().position(|(_, w)| reached(w.below, f, total)).map_or(starts.len() - 1, |k| k.saturating_sub(1))
    };
    let walked: Vec<usize> = FRACTIONS.iter().map(|&f| first_of(f)).collect();
    let mut wanted: Vec<usize> = walked.iter().flat_map(|&k| [k, k + 1]).filter(|&k| k < starts.len()).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut marks: Vec<Vec<Mark>> = vec![Vec::new(); wanted.len()];
    each_mark(pieces, |m| {
        let b = bucket_of(m.0);
        if let Ok(i) = wanted.binary_search_by(|&k| starts[k].0.cmp(&b)) {
            marks[i].push(m);
        }
    });
    for list in &mut marks {
        list.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut out = [hi; 4];
    for (next, &k) in walked.iter().enumerate() {
        let mut walk = starts[k].1;
        let mut one = [0.0; 4];
        let mut reached_it = false;
        for j in [k, k + 1] {
            let Ok(i) = wanted.binary_search(&j) else { break };
            if walk.through(&marks[i], next, total, &mut one) > next {
                reached_it = true;
                break;
            }
        }
        if reached_it {
            out[next] = one[next];
        } else if k + 1 < starts.len() {
            return sorted_percentiles(n, pieces, total);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Level and slope changes whose sums depend on their order in floating point.
    const CHANGES: [f64; 6] = [1e16, -1e16, 1.0, 0.1, -0.0, 0.0];

    proptest::proptest! {
        /// Pieces whose sums are exact in floating point (whole durations, whole levels, slopes
        /// over a power of two), many ending on the buckets' bounds: the percentiles of the
        /// buckets' walk are those of the walk through every mark sorted, bit for bit, in any
        /// number of buckets.
        #[test]
        fn the_buckets_walk_gives_the_sorted_walks_percentiles(
            pieces in proptest::collection::vec((0u64..1000, 0u32..64, 0usize..6, proptest::bool::ANY), 1..400),
            buckets in proptest::prop_oneof![1usize..8, proptest::strategy::Just(64), proptest::strategy::Just(1 << 16)],
        ) {
            let pieces: Vec<(u64, f64, f64)> = pieces
                .into_iter()
                .map(|(d, a, rise, up)| {
                    let a = f64::from(a);
                    let b = a + [0.0, 1.0, 2.0, 4.0, 8.0, 16.0][rise];
                    if up { (d, a, b) } else { (d, b, a) }
                })
                .collect();
            let total = pieces.iter().map(|p| p.0 as f64).sum::<f64>().max(1.0);
            let bits = |q: [f64; 4]| q.map(f64::to_bits);
            let (n, each) = (pieces.len(), || pieces.iter().copied());
            proptest::prop_assert_eq!(
                bits(bucketed_percentiles(n, &each, total, buckets)),
                bits(sorted_percentiles(n, &each, total))
            );
        }

        /// Bends dealt into four lists, each list in any order (about sorted or not), give the
        /// curve of all of them sorted at once, bit for bit.
        #[test]
        fn bends_in_lists_give_the_curve_of_all_sorted(
            bends in proptest::collection::vec((0u64..50, 0usize..6, 0usize..6, 0usize..4), 0..300),
            about_sorted in proptest::bool::ANY,
        ) {
            let mut lists: [Vec<Bend>; 4] = std::array::from_fn(|_| Vec::new());
            let mut all = Vec::new();
            for &(t, dl, ds, list) in &bends {
                let b = (t, CHANGES[dl], CHANGES[ds]);
                lists[list].push(b);
                all.push(b);
            }
            if about_sorted {
                for list in &mut lists {
                    list.sort_by_key(|b| b.0 / 8);
                }
            }
            all.sort_unstable_by(bend_order);
            let (split, whole) = (Ramps::of(lists), Ramps::of([all]));
            let bits = |r: &Ramps| r.bends.iter().map(|&(t, l, s)| (t, l.to_bits(), s.to_bits())).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&split), bits(&whole));
            proptest::prop_assert_eq!(split.floor.to_bits(), whole.floor.to_bits());
        }
    }
}
