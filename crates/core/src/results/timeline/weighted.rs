//! Time-weighted statistics of values held for durations, taken in passes over the values in
//! their time order, so that a curve too large to keep can be made again for each pass instead
//! of copied and sorted.
//!
//! The figures are those of sorting a copy, to the bit: the mean and the variance add their
//! terms in time order; a percentile is the first value, in [`f64::total_cmp`] order, whose
//! cumulated duration reaches the fraction. The cumulated durations are whole numbers of
//! nanoseconds, exact in `f64` up to 2^53 (104 days), so the order in which equal values are
//! met changes no figure; the percentiles are found by a selection over the values' bits
//! (a histogram of 16 bits per pass, then a selection in the one bucket left once it is small; a
//! bucket of one key is its percentile). A window of more than 2^53 ns keeps every value and
//! sorts them.
//!
//! Pairs given as [`Pairs`] are taken in one loop per pass with the sums in registers;
//! [`Weighted::add`] takes them one at a time, for curves swept again for each pass.

use super::metric::{FRACTIONS, TimeWeighted};
use crate::stats::{keys_at_weighted_ranks, of_order_key as value, order_key as key};

/// Bits of a value's key decided per histogram pass.
const DIGIT: u32 = 16;

/// A bucket of at most this many values is kept on the next pass and its percentile selected.
const KEEP: u64 = 1 << 20;

/// The largest sum of durations whose partial sums are all exact in `f64`.
const EXACT: u64 = 1 << 53;

/// (duration, value) pairs that can be given again, the same pairs in the same order each time.
pub(super) trait Pairs {
    /// Every pair, in time order.
    fn pairs(&self) -> impl Iterator<Item = (u64, f64)> + '_;
}

impl Pairs for [(u64, f64)] {
    fn pairs(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.iter().copied()
    }
}

/// Where one percentile is looked for: the keys whose top `64 − shift` bits are `prefix`.
#[derive(Clone, Copy, Debug)]
struct Target {
    /// Bits of the key not decided yet (64 at first).
    shift: u32,
    prefix: u64,
    /// The duration of every value with a smaller key than the range.
    below: u64,
    /// Values inside the range.
    count: u64,
    /// The percentile's key, once found.
    found: Option<u64>,
}

/// One range looked into during a pass, shared by the targets in it.
#[derive(Debug)]
struct Probe {
    shift: u32,
    prefix: u64,
    /// Per digit: (duration, values); empty when the range's values are kept.
    histogram: Vec<(u64, u64)>,
    /// (key, duration) of the range's values when kept.
    kept: Vec<(u64, u64)>,
    /// The smallest and the largest key met in the range.
    lo: u64,
    hi: u64,
}

impl Probe {
    /// Takes a pair whose key is `k` when it is in the range.
    #[inline(always)]
    fn take(&mut self, k: u64, d: u64) {
        if self.shift != 64 && k >> self.shift != self.prefix {
            return;
        }
        self.lo = self.lo.min(k);
        self.hi = self.hi.max(k);
        if self.histogram.is_empty() {
            self.kept.push((k, d));
        } else {
            let digit =
                if self.shift == 64 { k >> (64 - DIGIT) } else { (k >> (self.shift - DIGIT)) & ((1 << DIGIT) - 1) };
            let h = &mut self.histogram[digit as usize];
            h.0 += d;
            h.1 += 1;
        }
    }
}

/// The sums a pass adds to, held in registers while it loops: the pairs' count, durations and
/// weighted values (first pass), their weighted squared deviations (second pass), and the least
/// and the greatest key.
#[derive(Clone, Copy, Debug)]
struct Sums {
    n: u64,
    durations: u128,
    sum: f64,
    var: f64,
    min: u64,
    max: u64,
}

impl Sums {
    /// A pair's terms of the moments in pass `pass` (`avg`: the mean, from the second on).
    #[inline(always)]
    fn moments(&mut self, pass: u32, avg: f64, d: u64, v: f64) {
        if pass == 1 {
            self.n += 1;
            self.durations += u128::from(d);
            self.sum += v * d as f64;
        } else if pass == 2 {
            self.var += d as f64 * (v - avg) * (v - avg);
        }
    }

    /// A pair of duration `d` above 0 taken in pass `pass`: its moments, its key's bounds (first
    /// pass) and its key in each probe.
    #[inline(always)]
    fn take(&mut self, pass: u32, avg: f64, d: u64, v: f64, probes: &mut [Probe]) {
        self.moments(pass, avg, d, v);
        let k = key(v);
        if pass == 1 {
            self.min = self.min.min(k);
            self.max = self.max.max(k);
        }
        for p in probes {
            p.take(k, d);
        }
    }
}

/// Statistics of (duration, value) pairs given pass after pass, each pass the same pairs in the
/// same order. `total`: the duration that the mean and variance divide by (the window), or, when
/// `None`, the sum of the durations; `upto`: at most how many pairs there are (a few are kept and
/// sorted at once, with no histogram).
#[derive(Debug)]
pub(super) struct Weighted {
    total: Option<f64>,
    pass: u32,
    done: bool,
    sums: Sums,
    avg: f64,
    targets: [Target; 4],
    /// A bucket of at most this many values is kept and its percentile selected ([`KEEP`]).
    keep: u64,
    probes: Vec<Probe>,
    /// Every pair, when the durations are too long for exact cumulated sums.
    all: Option<Vec<(u64, f64)>>,
    result: TimeWeighted,
}

impl Weighted {
    pub(super) fn new(total: Option<f64>, upto: u64) -> Weighted {
        Weighted::with_keep(total, upto, KEEP)
    }

    /// [`new`](Self::new), keeping buckets of at most `keep` values.
    pub(super) fn with_keep(total: Option<f64>, upto: u64, keep: u64) -> Weighted {
        let t = Target { shift: 64, prefix: 0, below: 0, count: upto, found: None };
        let mut w = Weighted {
            total,
            pass: 1,
            done: false,
            sums: Sums { n: 0, durations: 0, sum: -0.0, var: -0.0, min: u64::MAX, max: 0 },
            avg: 0.0,
            targets: [t; 4],
            keep,
            probes: Vec::new(),
            all: None,
            result: TimeWeighted::default(),
        };
        w.plan();
        w
    }

    /// Whether every figure is known.
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// The statistics, once [`done`](Self::done).
    pub(super) fn result(&self) -> TimeWeighted {
        self.result
    }

    /// The probes of the next pass, one per distinct range of the targets not found.
    fn plan(&mut self) {
        self.probes.clear();
        for t in self.targets.iter().filter(|t| t.found.is_none()) {
            if self.probes.iter().any(|p| p.shift == t.shift && p.prefix == t.prefix) {
                continue;
            }
            // A range kept is given room for the values counted in it (at most `keep`).
            let (histogram, kept) = if t.count <= self.keep {
                (Vec::new(), Vec::with_capacity(t.count as usize))
            } else {
                (vec![(0, 0); 1 << DIGIT], Vec::new())
            };
            self.probes.push(Probe { shift: t.shift, prefix: t.prefix, histogram, kept, lo: u64::MAX, hi: 0 });
        }
    }

    /// One pair of the current pass.
    #[inline]
    pub(super) fn add(&mut self, d: u64, v: f64) {
        if d == 0 || self.done {
            return;
        }
        if let Some(all) = &mut self.all {
            self.sums.moments(self.pass, self.avg, d, v);
            all.push((d, v));
            return;
        }
        self.sums.take(self.pass, self.avg, d, v, &mut self.probes);
    }

    /// One pass over `pairs`: [`add`](Self::add) of each, in one loop with the sums held in
    /// registers.
    pub(super) fn pass_over(&mut self, pairs: &(impl Pairs + ?Sized)) {
        Weighted::pass_over_each([self], pairs.pairs().map(|(d, v)| (d, [Some(v)])));
    }

    /// One pass of each of `ws` over `pairs` in one loop, the sums held in registers: each pair
    /// a duration and, for each statistic, its value or `None` when the pair is not one of its
    /// ([`add`](Self::add) of each value given).
    pub(super) fn pass_over_each<const K: usize>(
        mut ws: [&mut Weighted; K],
        pairs: impl Iterator<Item = (u64, [Option<f64>; K])>,
    ) {
        if ws.iter().all(|w| w.done) {
            return;
        }
        if ws.iter().any(|w| w.all.is_some()) {
            for (d, vs) in pairs {
                for (w, v) in ws.iter_mut().zip(vs) {
                    if let Some(v) = v {
                        w.add(d, v);
                    }
                }
            }
            return;
        }
        let live = ws.each_ref().map(|w| !w.done);
        let (pass, avg) = (ws.each_ref().map(|w| w.pass), ws.each_ref().map(|w| w.avg));
        let mut sums = ws.each_ref().map(|w| w.sums);
        let mut probes = ws.each_mut().map(|w| std::mem::take(&mut w.probes));
        for (d, vs) in pairs {
            if d == 0 {
                continue;
            }
            for j in 0..K {
                if let Some(v) = vs[j]
                    && live[j]
                {
                    sums[j].take(pass[j], avg[j], d, v, &mut probes[j]);
                }
            }
        }
        for ((w, s), p) in ws.iter_mut().zip(sums).zip(probes) {
            w.sums = s;
            w.probes = p;
        }
    }

    /// Ends a pass; afterwards [`done`](Self::done) says whether another is needed.
    pub(super) fn end_pass(&mut self) {
        if self.done {
            return;
        }
        if self.pass == 1 {
            let total = self.total.unwrap_or(self.sums.durations as f64);
            if self.sums.n == 0 || total <= 0.0 {
                self.done = true;
                return;
            }
            self.avg = self.sums.sum / total;
            if self.sums.durations > u128::from(EXACT) {
                self.probes.clear();
                self.all = Some(Vec::new());
                self.pass = 2;
                return;
            }
        } else if self.pass == 2 {
            let total = self.total.unwrap_or(self.sums.durations as f64);
            self.result.avg = self.avg;
            self.result.std = (self.sums.var / total).sqrt();
            if let Some(mut all) = self.all.take() {
                all.sort_unstable_by(|a, b| a.1.total_cmp(&b.1));
                self.result.min = all[0].1;
                self.result.max = all[all.len() - 1].1;
                let whole: f64 = all.iter().map(|h| h.0 as f64).sum();
                let mut q = [all[all.len() - 1].1; 4];
                let (mut next, mut c) = (0, 0.0);
                for h in &all {
                    c += h.0 as f64;
                    while next < FRACTIONS.len() && c / whole >= FRACTIONS[next] {
                        q[next] = h.1;
                        next += 1;
                    }
                }
                [self.result.p50, self.result.p90, self.result.p95, self.result.p99] = q;
                self.done = true;
                return;
            }
        }
        let whole = self.sums.durations as f64;
        let reaches = |c: u64, f: f64| c as f64 / whole >= f;
        for (t, &f) in self.targets.iter_mut().zip(&FRACTIONS) {
            if t.found.is_some() {
                continue;
            }
            let Some(p) = self.probes.iter_mut().find(|p| p.shift == t.shift && p.prefix == t.prefix) else {
                continue;
            };
            let mut c = t.below;
            if p.histogram.is_empty() {
                t.found = Some(first_reaching(&p.kept, c, |c| reaches(c, f)).unwrap_or(self.sums.max));
                continue;
            }
            let mut chosen = None;
            for (digit, &(d, n)) in p.histogram.iter().enumerate() {
                if reaches(c + d, f) {
                    chosen = Some((digit as u64, d, n));
                    break;
                }
                c += d;
            }
            let Some((digit, _, n)) = chosen else {
                t.found = Some(self.sums.max);
                continue;
            };
            if p.lo == p.hi {
                // The range holds one key: the chosen digit is its.
                t.found = Some(p.lo);
                continue;
            }
            t.shift -= DIGIT;
            t.prefix = if p.shift == 64 { digit } else { p.prefix << DIGIT | digit };
            t.below = c;
            t.count = n;
            if t.shift == 0 {
                t.found = Some(t.prefix);
            }
        }
        self.pass += 1;
        if self.pass > 2 && self.targets.iter().all(|t| t.found.is_some()) {
            self.finish();
        } else {
            self.plan();
        }
    }

    fn finish(&mut self) {
        let q = self.targets.map(|t| value(t.found.unwrap_or(self.sums.max)));
        [self.result.p50, self.result.p90, self.result.p95, self.result.p99] = q;
        self.result.min = value(self.sums.min);
        self.result.max = value(self.sums.max);
        self.probes = Vec::new();
        self.done = true;
    }

    /// The statistics of `pairs`, taken in passes over them.
    pub(super) fn of_pairs(pairs: &(impl Pairs + ?Sized), total: Option<f64>, upto: u64) -> TimeWeighted {
        let mut w = Weighted::new(total, upto);
        while !w.done() {
            w.pass_over(pairs);
            w.end_pass();
        }
        w.result()
    }
}

/// The least key of `kept` (key, duration) at which `below` plus the durations of the keys up
/// to it `reaches`, as a walk over them sorted by key finds it (`reaches` rising with the
/// duration); `None` when even all of them do not. The least duration that reaches is found by
/// bisection, and the key holding it selected over the keys' bits
/// ([`crate::stats::keys_at_weighted_ranks`]); in time linear in the length of `kept`.
fn first_reaching(kept: &[(u64, u64)], below: u64, reaches: impl Fn(u64) -> bool) -> Option<u64> {
    let total: u64 = kept.iter().map(|e| e.1).sum();
    if kept.is_empty() || !reaches(below + total) {
        return None;
    }
    if reaches(below) {
        // Reached before the first key: the walk's first step, whatever its duration.
        return kept.iter().map(|e| e.0).min();
    }
    // `reaches` fails at `lo` and holds at `hi`.
    let (mut lo, mut hi) = (below, below + total);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) { hi = mid } else { lo = mid }
    }
    // The key whose durations hold the `hi - below`th unit of the sorted walk.
    keys_at_weighted_ranks(kept, &[hi - below - 1], |&e| e).first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Just;

    proptest::proptest! {
        /// The selection finds the key a walk over the keys sorted finds, over keys repeated
        /// many times, durations of zero, and keys that differ in low bits only, in bits more
        /// than 16 apart, or anywhere (each digit of a selection, and several in turn).
        #[test]
        fn the_selection_finds_the_key_of_the_sorted_walk(
            kept in proptest::collection::vec((0u64..40, 0u64..5), 0..1200),
            spread in proptest::prop_oneof![Just(0u32), 1u32..64],
            high in proptest::bool::ANY,
            below in 0u64..10,
            fraction in 0.0f64..1.2,
        ) {
            // Keys spread by rotating their bits, some with the top bit set.
            let kept: Vec<(u64, u64)> = kept
                .into_iter()
                .map(|(k, d)| ((k * 0x9E37_79B9).rotate_left(spread) | u64::from(high && k % 3 == 0) << 63, d))
                .collect();
            let whole = (below + kept.iter().map(|e| e.1).sum::<u64>()).max(1) as f64;
            let reaches = |c: u64| c as f64 / whole >= fraction;
            let mut sorted = kept.clone();
            sorted.sort_unstable_by_key(|e| e.0);
            let mut c = below;
            let walked = sorted.iter().find_map(|&(k, d)| {
                c += d;
                reaches(c).then_some(k)
            });
            proptest::prop_assert_eq!(first_reaching(&kept, below, reaches), walked);
        }
    }

    /// A fraction already reached below the bucket is its least key, found by the walk's first
    /// step, whatever the durations (of zero here) of the keys partitioned about.
    #[test]
    fn a_fraction_reached_before_the_bucket_is_its_least_key() {
        let kept: Vec<(u64, u64)> = (0..40).map(|k| (40 - k, 0)).collect();
        assert_eq!(first_reaching(&kept, 3, |c| c >= 1), Some(1));
        assert_eq!(first_reaching(&kept, 0, |c| c >= 1), None);
        // Most keys the least one: the fraction reached in its digit.
        let kept: Vec<(u64, u64)> = (0..40).map(|k| (if k < 30 { 5 } else { 9 }, 0)).collect();
        assert_eq!(first_reaching(&kept, 3, |c| c >= 1), Some(5));
    }
}
