//! [`Runs`]: a list kept as runs of equal values, and its [`Distribution`], bit for bit that of
//! the list written out.

use super::moments::OVERFLOW_SCALE;
use super::percentile::{lerp, percentile_ranks};
use super::select::at_weighted_ranks;
use super::summary::{Distribution, REPORT_PERCENTILES};

/// A list of values kept as runs: each value once, with how many times it occurs in a row (bit
/// for bit). [`Distribution::of_runs`] gives the statistics of the list written out, bit for
/// bit, without writing it out: a simulated request's equal inter-token gaps are one entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Runs {
    /// Each run's value, in order.
    values: Vec<f64>,
    /// The runs longer than one: (index in `values`, length ≥ 2), by index.
    repeats: Vec<(usize, u64)>,
    /// Values written out.
    len: u64,
}

impl Runs {
    /// Values written out.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `n` copies of `value` at the end.
    pub fn push_n(&mut self, value: f64, n: u64) {
        if n == 0 {
            return;
        }
        self.len += n;
        let last = self.values.len().wrapping_sub(1);
        let n = match self.values.last() {
            Some(v) if v.to_bits() == value.to_bits() => match self.repeats.last_mut() {
                Some((i, k)) if *i == last => {
                    *k += n;
                    return;
                }
                _ => n + 1,
            },
            _ => {
                self.values.push(value);
                n
            }
        };
        if n > 1 {
            self.repeats.push((self.values.len() - 1, n));
        }
    }

    /// `value` at the end.
    pub fn push(&mut self, value: f64) {
        self.push_n(value, 1);
    }

    /// `values` at the end, in order.
    pub fn extend_from_slice(&mut self, values: &[f64]) {
        let mut rest = values;
        while let Some(&v) = rest.first() {
            let n = rest.iter().take_while(|x| x.to_bits() == v.to_bits()).count();
            self.push_n(v, n as u64);
            rest = &rest[n..];
        }
    }

    /// Another list's values at the end, in order.
    pub fn extend_runs(&mut self, other: &Runs) {
        for (v, n) in other.runs() {
            self.push_n(v, n);
        }
    }

    /// (value, times in a row), in order.
    pub fn runs(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let mut repeats = self.repeats.iter().peekable();
        self.values.iter().enumerate().map(move |(i, &v)| match repeats.next_if(|r| r.0 == i) {
            Some(&(_, n)) => (v, n),
            None => (v, 1),
        })
    }

    /// The values as one slice, when none repeats in a row.
    pub fn as_slice(&self) -> Option<&[f64]> {
        self.repeats.is_empty().then_some(self.values.as_slice())
    }

    /// The list written out.
    pub fn expanded(&self) -> Vec<f64> {
        self.values().collect()
    }

    /// The values written out, in order.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.runs().flat_map(|(v, n)| std::iter::repeat_n(v, n as usize))
    }

    /// [`mean`](super::moments::mean) of the list written out, bit for bit; `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        if let Some(values) = self.as_slice() {
            return super::moments::mean(values);
        }
        let n = self.len;
        if n == 0 {
            return None;
        }
        let m = sum_runs_by(self, |v| v) / n as f64;
        if m.is_finite() || !self.values.iter().all(|v| v.is_finite()) {
            return Some(m);
        }
        Some(sum_runs_by(self, |v| v * OVERFLOW_SCALE) / n as f64 / OVERFLOW_SCALE)
    }
}

impl serde::Serialize for Runs {
    /// As the list written out.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.values())
    }
}

impl From<&[f64]> for Runs {
    fn from(values: &[f64]) -> Runs {
        let mut r = Runs::default();
        r.extend_from_slice(values);
        r
    }
}

/// Reads a [`Runs`] value by value, or a stretch of one run at once.
struct RunCursor<'a> {
    runs: &'a Runs,
    /// The run under the cursor, the next long run, and how many of the run's values are left.
    at: usize,
    repeat: usize,
    left: u64,
}

impl<'a> RunCursor<'a> {
    fn new(runs: &'a Runs) -> RunCursor<'a> {
        let mut c = RunCursor { runs, at: 0, repeat: 0, left: 0 };
        c.enter();
        c
    }

    /// Sets `left` for the run at `at`.
    fn enter(&mut self) {
        self.left = match self.runs.repeats.get(self.repeat) {
            Some(&(i, n)) if i == self.at => {
                self.repeat += 1;
                n
            }
            _ => 1,
        };
    }

    /// The value under the cursor and how many of it follow in a row.
    fn peek(&self) -> (f64, u64) {
        (self.runs.values.get(self.at).copied().unwrap_or(f64::NAN), self.left)
    }

    fn advance(&mut self, n: u64) {
        self.left -= n;
        if self.left == 0 {
            self.at += 1;
            self.enter();
        }
    }
}

/// [`sum_by`](super::moments::sum_by) of the next `n` values under the cursor, as if they were
/// written out: the same additions in the same order. A stretch inside one run adds copies of one
/// value, whose sum depends only on their number ([`sum_copies`]); a block that crosses runs
/// adds each run's stretch of it in a row.
fn sum_runs(c: &mut RunCursor, n: u64, f: impl Fn(f64) -> f64 + Copy, memo: &mut Copies) -> f64 {
    let (v, left) = c.peek();
    if left >= n {
        c.advance(n);
        let x = f(v);
        if memo.0 != x.to_bits() {
            memo.0 = x.to_bits();
            memo.1.clear();
        }
        return sum_copies(x, n, &mut memo.1);
    }
    const BLOCK: u64 = 128;
    if n > BLOCK {
        let half = (n / 2) / 8 * 8;
        return sum_runs(c, half, f, memo) + sum_runs(c, n - half, f, memo);
    }
    // `sum_by`'s base cases: below 8 values one by one from -0.0; else 8 sums, value k going to
    // sum k mod 8 (the first 8 set, not added), the sums combined, then the last n mod 8 values
    // one by one.
    let (main, mut res) = if n < 8 { (0, -0.0) } else { (n / 8 * 8, 0.0) };
    let mut r = [0.0f64; 8];
    let mut k = 0u64;
    while k < n {
        let (v, left) = c.peek();
        let take = left.min(if k < main { main - k } else { n - k });
        let x = f(v);
        if k < main {
            let end = k + take;
            let mut i = k;
            // The first 8 set one by one; then 8 values in a row give each sum one `x` (the
            // additions one by one, in lanes); then the rest one by one.
            while i < end && i < 8 {
                r[i as usize] = x;
                i += 1;
            }
            while i + 8 <= end {
                for acc in &mut r {
                    *acc += x;
                }
                i += 8;
            }
            while i < end {
                r[(i % 8) as usize] += x;
                i += 1;
            }
            if k + take == main {
                res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            }
        } else {
            for _ in 0..take {
                res += x;
            }
        }
        c.advance(take);
        k += take;
    }
    res
}

/// A value's bits and the sums of its copies made so far: (copies, sum).
type Copies = (u64, Vec<(u64, f64)>);

/// [`sum_by`](super::moments::sum_by) of `n` copies of `x`; `memo` holds sums of copies of `x`
/// already made (a run's stretches are of a few lengths: each is summed once).
fn sum_copies(x: f64, n: u64, memo: &mut Vec<(u64, f64)>) -> f64 {
    if n < 8 {
        let mut s = -0.0;
        for _ in 0..n {
            s += x;
        }
        return s;
    }
    if let Some(&(_, s)) = memo.iter().find(|m| m.0 == n) {
        return s;
    }
    let s = if n <= 128 {
        // Each of the 8 sums holds n / 8 copies, added one by one.
        let mut a = x;
        for _ in 1..n / 8 {
            a += x;
        }
        let mut res = ((a + a) + (a + a)) + ((a + a) + (a + a));
        for _ in 0..n % 8 {
            res += x;
        }
        res
    } else {
        let half = (n / 2) / 8 * 8;
        sum_copies(x, half, memo) + sum_copies(x, n - half, memo)
    };
    memo.push((n, s));
    s
}

/// [`sum_by`](super::moments::sum_by) of a list kept as runs.
fn sum_runs_by(runs: &Runs, f: impl Fn(f64) -> f64 + Copy) -> f64 {
    sum_runs(&mut RunCursor::new(runs), runs.len, f, &mut (f64::NAN.to_bits(), Vec::new()))
}

/// The values at `ranks` (sorted ascending, each below the list's length) of a list kept as
/// runs, sorted by `f64::total_cmp`.
fn ranked_runs(runs: &Runs, ranks: &[u64]) -> Vec<f64> {
    let pairs: Vec<(f64, u64)> = runs.runs().collect();
    at_weighted_ranks(&pairs, ranks, |&p| p)
}

impl Distribution {
    /// [`Distribution::of`] the list `runs` keeps, bit for bit.
    pub fn of_runs(runs: &Runs) -> Option<Distribution> {
        if let Some(values) = runs.as_slice() {
            return Distribution::of(values);
        }
        let n = runs.len;
        if n == 0 {
            return None;
        }
        let count = usize::try_from(n).ok()?;
        let mut ranks: Vec<u64> = REPORT_PERCENTILES
            .iter()
            .flat_map(|&p| {
                let (lo, hi, _) = percentile_ranks(count, p);
                [lo as u64, hi as u64]
            })
            .chain([0, n - 1])
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        let at_ranks = ranked_runs(runs, &ranks);
        let value_at = |r: usize| ranks.binary_search(&(r as u64)).map_or(f64::NAN, |i| at_ranks[i]);
        let percentiles = REPORT_PERCENTILES.map(|p| {
            let (lo, hi, t) = percentile_ranks(count, p);
            lerp(value_at(lo), value_at(hi), t)
        });
        let total = sum_runs_by(runs, |v| v);
        let all_finite = || runs.values.iter().all(|v| v.is_finite());
        let mut avg = total / n as f64;
        if !avg.is_finite() && all_finite() {
            avg = sum_runs_by(runs, |v| v * OVERFLOW_SCALE) / n as f64 / OVERFLOW_SCALE;
        }
        let mut std = (sum_runs_by(runs, |v| (v - avg) * (v - avg)) / n as f64).sqrt();
        if !std.is_finite() && avg.is_finite() {
            let m = sum_runs_by(runs, |v| v * OVERFLOW_SCALE) / n as f64;
            std = ((sum_runs_by(runs, |v| (v * OVERFLOW_SCALE - m) * (v * OVERFLOW_SCALE - m)) / n as f64).sqrt()
                / OVERFLOW_SCALE)
                .min(f64::MAX);
        }
        Some(Distribution {
            count,
            sum: total,
            avg,
            std,
            min: at_ranks[0],
            max: at_ranks[at_ranks.len() - 1],
            percentiles,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run_values() -> impl Strategy<Value = Vec<(f64, u64)>> {
        let v = prop_oneof![
            4 => (0u8..6).prop_map(|x| f64::from(x) * 0.1),
            2 => -1e6f64..1e6,
            1 => Just(f64::NAN),
            1 => Just(-0.0),
            1 => Just(1e308),
            1 => Just(f64::INFINITY),
        ];
        proptest::collection::vec((v, prop_oneof![4 => 1u64..4, 2 => 1u64..300, 1 => 300u64..3000]), 0..40)
    }

    fn distribution_bits(d: Option<Distribution>) -> Option<Vec<u64>> {
        d.map(|d| {
            let mut b = vec![d.count as u64, d.sum.to_bits(), d.avg.to_bits(), d.std.to_bits()];
            b.extend([d.min, d.max].iter().chain(&d.percentiles).map(|x| x.to_bits()));
            b
        })
    }

    proptest! {
        /// A list kept as runs has the statistics of the list written out, bit for bit.
        #[test]
        fn a_distribution_of_runs_is_that_of_the_values_written_out(runs in run_values()) {
            let mut kept = Runs::default();
            let mut out = Vec::new();
            for &(v, n) in &runs {
                kept.push_n(v, n);
                out.extend(std::iter::repeat_n(v, n as usize));
            }
            prop_assert_eq!(kept.len(), out.len() as u64);
            prop_assert_eq!(kept.expanded().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), out.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            prop_assert_eq!(distribution_bits(Distribution::of_runs(&kept)), distribution_bits(Distribution::of(&out)));
            prop_assert_eq!(kept.mean().map(f64::to_bits), crate::stats::mean(&out).map(f64::to_bits));
            let mut joined = Runs::from(&out[..out.len() / 2]);
            joined.extend_runs(&Runs::from(&out[out.len() / 2..]));
            prop_assert_eq!(joined.expanded().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), out.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            prop_assert_eq!(joined.runs().count(), kept.runs().count());
            // Slices of equal values taken at once keep what one push at a time keeps.
            let mut one_by_one = Runs::default();
            for &v in &out {
                one_by_one.push(v);
            }
            let mut sliced = Runs::default();
            for part in out.chunks(7) {
                sliced.extend_from_slice(part);
            }
            prop_assert_eq!(format!("{sliced:?}"), format!("{one_by_one:?}"));
        }
    }

    #[test]
    fn copies_sum_as_written_out() {
        for x in [0.1, -0.0, 0.0, 1e-3, 0.30000000000000004, 1e308, -7.25, f64::NAN] {
            let mut memo = Vec::new();
            for n in 0..1100u64 {
                let out = vec![x; n as usize];
                assert_eq!(sum_copies(x, n, &mut memo).to_bits(), crate::stats::sum(&out).to_bits(), "{x} × {n}");
            }
        }
    }

    #[test]
    fn long_runs_sum_as_written_out() {
        let mut kept = Runs::default();
        let mut out = Vec::new();
        for (v, n) in [(0.1, 100_003u64), (0.7, 1), (0.30000000000000004, 77_777), (1e-3, 1_000_001)] {
            kept.push_n(v, n);
            out.extend(std::iter::repeat_n(v, n as usize));
        }
        assert_eq!(distribution_bits(Distribution::of_runs(&kept)), distribution_bits(Distribution::of(&out)));
    }
}
