//! Tokens in flight in closed form: a piecewise-linear curve of ramps and its statistics.

use std::cmp::Ordering;

use super::events::Bend;
use super::metric::TimeWeighted;
use super::steps::{merge_sorted, sort_about_sorted};

/// A piecewise-linear curve: from each time on, the level there and its slope (per ns) until
/// the next (sorted, distinct times; 0 before the first).
pub(super) struct Ramps {
    bends: Vec<(u64, f64, f64)>,
    /// Levels smaller than this in magnitude are rounding and count as 0.
    floor: f64,
}

/// The order in which bends are summed: by time, then by level change, then by slope change.
fn bend_order(a: &Bend, b: &Bend) -> Ordering {
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
        let mut out: Vec<(u64, f64, f64)> = Vec::new();
        let (mut level, mut slope, mut largest) = (0.0f64, 0.0f64, 0.0f64);
        merge_sorted(lists.each_ref().map(Vec::as_slice), bend_order, |(t, dl, ds)| {
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
        });
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
    pub(super) fn over_window(&self, from: u64, to: u64) -> TimeWeighted {
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
    // The time below a level is a sum of products in floating point: a fraction reached exactly
    // (a level where the time below is the fraction to the nanosecond) must not be missed by the
    // rounding of that sum, so it counts as reached within a billionth of the window.
    let reached = |time: f64, f: f64| time >= (f - 1e-9) * total;
    while i < marks.len() && next < fractions.len() {
        let v = marks[i].0;
        // From `x` up to `v` the time below rises by the density.
        let gain = density.max(0.0) * (v - x);
        while next < fractions.len() && reached(below + gain, fractions[next]) {
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
        while next < fractions.len() && reached(below, fractions[next]) {
            out[next] = v;
            next += 1;
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
