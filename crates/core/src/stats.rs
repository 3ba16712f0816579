//! The one statistics module: mean, population standard deviation, and percentiles.
//!
//! Percentile definition (numpy's default, "linear"): for `n` sorted values and `p` in [0, 100],
//! `k = (n − 1)·p/100`; the result interpolates linearly between `values[floor(k)]` and
//! `values[ceil(k)]`. Every percentile in the project goes through [`percentile_sorted`].
//!
//! Summation follows the reference bit for bit: the mean is `sum / n` with the values added in
//! order (numpy's pairwise summation differs only past 8 values per block, which we replicate in
//! [`sum`]), and the standard deviation is `sqrt(mean((x − mean)²))`.

use serde::{Deserialize, Serialize};

/// Sum of values in numpy's order: pairwise summation with an 8-way unrolled base case of 128.
///
/// The reference computes means with numpy, whose `add.reduce` uses this exact scheme; plain
/// left-to-right addition differs in the last bits on long lists and breaks 1e-9 agreement only
/// rarely, but matching it costs nothing.
pub fn sum(values: &[f64]) -> f64 {
    sum_by(values, |v| v)
}

/// [`sum`] of `f` of each value, added in the same order, without collecting them.
fn sum_by(values: &[f64], f: impl Fn(f64) -> f64 + Copy) -> f64 {
    const BLOCK: usize = 128;
    let n = values.len();
    if n < 8 {
        let mut s = -0.0;
        for &v in values {
            s += f(v);
        }
        return s;
    }
    if n <= BLOCK {
        let mut r = [0.0f64; 8];
        for (acc, &v) in r.iter_mut().zip(&values[..8]) {
            *acc = f(v);
        }
        let mut i = 8;
        while i + 8 <= n {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += f(values[i + j]);
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += f(values[i]);
            i += 1;
        }
        return res;
    }
    let half = (n / 2) / 8 * 8;
    sum_by(&values[..half], f) + sum_by(&values[half..], f)
}

/// Arithmetic mean, `None` for an empty list.
///
/// Finite values always give a finite mean: when their sum overflows (values near ±1e308), the
/// values are scaled down by a power of two first, which changes nothing else.
pub fn mean(values: &[f64]) -> Option<f64> {
    mean_of_sum(values, sum(values))
}

/// [`mean`] of values whose [`sum`] is `total`.
fn mean_of_sum(values: &[f64], total: f64) -> Option<f64> {
    let m = (!values.is_empty()).then(|| total / values.len() as f64)?;
    if m.is_finite() || !values.iter().all(|v| v.is_finite()) {
        return Some(m);
    }
    let scaled: Vec<f64> = values.iter().map(|v| v * OVERFLOW_SCALE).collect();
    Some(sum(&scaled) / values.len() as f64 / OVERFLOW_SCALE)
}

/// Population standard deviation (divide by n), `None` for an empty list.
///
/// Finite values always give a finite result: when the squares overflow, the values are scaled
/// down by a power of two first, and a deviation past `f64::MAX` (values spanning ±1e308)
/// saturates there.
pub fn std_dev(values: &[f64]) -> Option<f64> {
    std_dev_about(values, mean(values)?)
}

/// [`std_dev`] of values whose [`mean`] is `m`.
fn std_dev_about(values: &[f64], m: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let sd = (sum_by(values, |v| (v - m) * (v - m)) / values.len() as f64).sqrt();
    if sd.is_finite() || !m.is_finite() {
        return Some(sd);
    }
    let scaled: Vec<f64> = values.iter().map(|v| v * OVERFLOW_SCALE).collect();
    let m = mean(&scaled)?;
    Some(((sum_by(&scaled, |v| (v - m) * (v - m)) / values.len() as f64).sqrt() / OVERFLOW_SCALE).min(f64::MAX))
}

/// 2^-600: brings any finite value below 2^424, whose squares and sums stay finite; values that
/// become subnormal are negligible next to the huge ones that made the scaling necessary.
const OVERFLOW_SCALE: f64 = 2.409919865102884e-181;

/// Percentile `p` (0..=100) of values sorted ascending; `None` for an empty list.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let (lo, hi, t) = percentile_ranks(n, p);
    Some(lerp(sorted[lo], sorted[hi], t))
}

/// The two ranks (of `n > 0` sorted values) that percentile `p` lies between, and where between.
fn percentile_ranks(n: usize, p: f64) -> (usize, usize, f64) {
    // The fraction first, then the rank, as numpy and AIPerf compute it: `(n - 1) * p / 100`
    // rounds differently (23 × 95 / 100 is 21.85, 0.95 × 23 is 21.849999999999998).
    let k = p / 100.0 * (n - 1) as f64;
    let lo = k.floor() as usize;
    let hi = k.ceil() as usize;
    (lo.min(n - 1), hi.min(n - 1), k - lo as f64)
}

/// numpy's lerp: a + (b - a) * t, switched to b - (b - a) * (1 - t) for t >= 0.5.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let d = b - a;
    if t >= 0.5 { b - d * (1.0 - t) } else { a + d * t }
}

/// The rank (of `n > 0` sorted values) of percentile `p` by the nearest rank, ties to the even
/// rank: numpy's `percentile(..., method="nearest")`, which AIPerf's error-adjusted
/// percentiles use.
pub fn nearest_rank(n: usize, p: f64) -> usize {
    let k = p / 100.0 * (n.saturating_sub(1)) as f64;
    (k.round_ties_even() as usize).min(n.saturating_sub(1))
}

/// Percentiles `ps` (and the minimum and maximum) of a non-empty list: what [`percentile_sorted`]
/// gives on a sorted copy, found by selection (linear time) instead of a full sort. The values
/// in between stay unsorted; the ones at the ranks asked for are exactly those of the sorted
/// copy (total order, NaN last).
fn percentiles_selected<const N: usize>(values: &[f64], ps: [f64; N]) -> Option<(f64, [f64; N], f64)> {
    percentiles_in_place(&mut values.to_vec(), ps)
}

/// [`percentiles_selected`] of `v`, selected in place (its order is lost).
fn percentiles_in_place<const N: usize>(v: &mut [f64], ps: [f64; N]) -> Option<(f64, [f64; N], f64)> {
    let n = v.len();
    if n == 0 {
        return None;
    }
    let mut ranks: Vec<usize> = ps
        .iter()
        .flat_map(|&p| {
            let (lo, hi, _) = percentile_ranks(n, p);
            [lo, hi]
        })
        .chain([0, n - 1])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    select_ranks(v, &ranks, 0);
    let mut out = [0.0; N];
    for (slot, &p) in out.iter_mut().zip(&ps) {
        let (lo, hi, t) = percentile_ranks(n, p);
        *slot = lerp(v[lo], v[hi], t);
    }
    Some((v[0], out, v[n - 1]))
}

/// Puts at each of `ranks` (sorted, distinct, each in `offset..offset + v.len()`, counted from
/// `offset`) the value a sorted `v` has there: the middle rank first, then each side's ranks in
/// its side only, so every value is looked at about log2(ranks) times.
fn select_ranks(v: &mut [f64], ranks: &[usize], offset: usize) {
    if ranks.is_empty() {
        return;
    }
    let mid = ranks.len() / 2;
    let at = ranks[mid] - offset;
    let (left, _, right) = v.select_nth_unstable_by(at, f64::total_cmp);
    select_ranks(left, &ranks[..mid], offset);
    select_ranks(right, &ranks[mid + 1..], offset + at + 1);
}

/// Sorts a copy of the values (NaN last) for percentile queries.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    if values.len() >= RADIX_FROM {
        return radix_sorted(values);
    }
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Lists this long are sorted by [`radix_sorted`].
const RADIX_FROM: usize = 1 << 14;

/// The values in `f64::total_cmp`'s order by a least-significant-digit radix sort of their bits:
/// the order is total and equal keys are equal bits, so the result is the comparison sort's bit
/// for bit. Digits of 11 bits; a digit every value shares is skipped (the low bits of whole
/// numbers).
fn radix_sorted(values: &[f64]) -> Vec<f64> {
    const BITS: u32 = 11;
    const PASSES: usize = 64usize.div_ceil(BITS as usize);
    // Unsigned keys in total order: negative numbers' bits all flipped, the sign set on the others.
    let key = |v: f64| {
        let b = v.to_bits();
        b ^ ((((b as i64) >> 63) as u64) | (1 << 63))
    };
    let mut keys: Vec<u64> = values.iter().map(|&v| key(v)).collect();
    let mut counts = vec![[0usize; 1 << BITS]; PASSES];
    for &k in &keys {
        for (pass, count) in counts.iter_mut().enumerate() {
            count[((k >> (pass as u32 * BITS)) & ((1 << BITS) - 1)) as usize] += 1;
        }
    }
    let mut spare = vec![0u64; keys.len()];
    for (pass, count) in counts.iter_mut().enumerate() {
        if count.contains(&keys.len()) {
            continue;
        }
        let mut at = 0;
        for c in count.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        let shift = pass as u32 * BITS;
        for &k in &keys {
            let digit = &mut count[((k >> shift) & ((1 << BITS) - 1)) as usize];
            spare[*digit] = k;
            *digit += 1;
        }
        std::mem::swap(&mut keys, &mut spare);
    }
    keys.into_iter().map(|k| f64::from_bits(if k >> 63 == 1 { k ^ (1 << 63) } else { !k })).collect()
}

/// Two-sample Kolmogorov–Smirnov distance: the largest gap between the empirical CDFs of two
/// lists sorted ascending (0 = same distribution, 1 = disjoint); `None` if either is empty.
pub fn ks_distance_sorted(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        // Step both CDFs past the next value (ties move together).
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    Some(d)
}

/// The seven-number summary of the reference's trace report.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub mean: f64,
    pub std_dev: f64,
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
}

impl Summary {
    /// Summary of a list, `None` when it is empty.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let (min, [p25, median, p75], max) = percentiles_selected(values, [25.0, 50.0, 75.0])?;
        Some(Summary { mean: mean(values)?, std_dev: std_dev(values)?, min, p25, median, p75, max })
    }
}

/// The percentiles a latency report shows.
pub const REPORT_PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Mean, std, min, max and the [`REPORT_PERCENTILES`] of a list (AIPerf's metric aggregation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub count: usize,
    /// The values added up (in [`sum`]'s order).
    pub sum: f64,
    pub avg: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
    /// Values at [`REPORT_PERCENTILES`], in order.
    pub percentiles: [f64; 9],
}

impl Distribution {
    pub fn of(values: &[f64]) -> Option<Distribution> {
        let (min, percentiles, max) = percentiles_selected(values, REPORT_PERCENTILES)?;
        let total = sum(values);
        let avg = mean_of_sum(values, total)?;
        Some(Distribution {
            count: values.len(),
            sum: total,
            avg,
            std: std_dev_about(values, avg)?,
            min,
            max,
            percentiles,
        })
    }

    /// [`Distribution::of`] values no longer needed: the percentiles are selected in the list
    /// itself, not in a copy.
    pub fn of_owned(mut values: Vec<f64>) -> Option<Distribution> {
        let total = sum(&values);
        let avg = mean_of_sum(&values, total)?;
        let std = std_dev_about(&values, avg)?;
        let (min, percentiles, max) = percentiles_in_place(&mut values, REPORT_PERCENTILES)?;
        Some(Distribution { count: values.len(), sum: total, avg, std, min, max, percentiles })
    }

    /// [`Distribution::of`] borrowed values, [`Distribution::of_owned`] owned ones.
    pub fn of_cow(values: std::borrow::Cow<'_, [f64]>) -> Option<Distribution> {
        match values {
            std::borrow::Cow::Borrowed(v) => Distribution::of(v),
            std::borrow::Cow::Owned(v) => Distribution::of_owned(v),
        }
    }

    /// [`Distribution::of`] `values`, given them sorted ascending as well (`sorted`, by
    /// `f64::total_cmp`): the same numbers, bit for bit, without selecting the percentiles again.
    pub fn of_sorted(values: &[f64], sorted: &[f64]) -> Option<Distribution> {
        debug_assert_eq!(values.len(), sorted.len());
        let n = sorted.len();
        if n == 0 {
            return None;
        }
        let percentiles = REPORT_PERCENTILES.map(|p| {
            let (lo, hi, t) = percentile_ranks(n, p);
            lerp(sorted[lo], sorted[hi], t)
        });
        Some(Distribution {
            count: n,
            sum: sum(values),
            avg: mean(values)?,
            std: std_dev(values)?,
            min: sorted[0],
            max: sorted[n - 1],
            percentiles,
        })
    }

    /// The value at percentile `p` if it is one of [`REPORT_PERCENTILES`].
    pub fn percentile(&self, p: f64) -> Option<f64> {
        REPORT_PERCENTILES.iter().position(|&q| q == p).map(|i| self.percentiles[i])
    }
}

/// Sample standard deviation (divide by n − 1), `None` for fewer than two values: the spread of
/// repeated runs, from which their confidence interval is drawn.
pub fn sample_std_dev(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let m = mean(values)?;
    let sq: Vec<f64> = values.iter().map(|v| (v - m) * (v - m)).collect();
    Some((sum(&sq) / (n - 1) as f64).sqrt())
}

/// Quantile `p` (in (0, 1)) of Student's t distribution with `df` degrees of freedom (> 0):
/// the value t with P(T ≤ t) = p, found by bisection on the distribution function (which is
/// the regularized incomplete beta function); accurate to about 1e-9.
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0 && df > 0.0 && df.is_finite()) {
        return None;
    }
    if p < 0.5 {
        return t_quantile(1.0 - p, df).map(|t| -t);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return Some(hi);
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// Half-width of the two-sided Student t confidence interval of the mean of `values` at
/// `confidence` (e.g. 0.95); `None` for fewer than two values.
pub fn t_interval_half_width(values: &[f64], confidence: f64) -> Option<f64> {
    let n = values.len();
    let sd = sample_std_dev(values)?;
    let t = t_quantile(0.5 + confidence / 2.0, (n - 1) as f64)?;
    Some(t * sd / (n as f64).sqrt())
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom, t ≥ 0.
fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    1.0 - 0.5 * incomplete_beta(x, df / 2.0, 0.5)
}

/// The regularized incomplete beta function I_x(a, b) by its continued fraction (Lentz's method).
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(1.0 - x, b, a);
    }
    const TINY: f64 = 1e-300;
    let (mut c, mut d) = (1.0f64, 1.0 - (a + b) * x / (a + 1.0));
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut f = d;
    for m in 1..500 {
        let m = f64::from(m);
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + num / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            f *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * f / a
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, n = 9; relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

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
        self.runs().flat_map(|(v, n)| std::iter::repeat_n(v, n as usize)).collect()
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

    fn next_value(&mut self) -> f64 {
        let v = self.peek().0;
        self.advance(1);
        v
    }
}

/// [`sum_by`] of the next `n` values under the cursor, as if they were written out: the same
/// additions in the same order. A stretch inside one run adds copies of one value, whose sum
/// depends only on their number (kept in `memo` per value).
fn sum_runs(c: &mut RunCursor, n: u64, f: impl Fn(f64) -> f64 + Copy) -> f64 {
    let (v, left) = c.peek();
    if left >= n {
        c.advance(n);
        return sum_copies(f(v), n, &mut Vec::new());
    }
    const BLOCK: u64 = 128;
    if n < 8 {
        let mut s = -0.0;
        for _ in 0..n {
            s += f(c.next_value());
        }
        return s;
    }
    if n <= BLOCK {
        let mut r = [0.0f64; 8];
        for acc in r.iter_mut() {
            *acc = f(c.next_value());
        }
        let mut i = 8;
        while i + 8 <= n {
            for acc in r.iter_mut() {
                *acc += f(c.next_value());
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += f(c.next_value());
            i += 1;
        }
        return res;
    }
    let half = (n / 2) / 8 * 8;
    sum_runs(c, half, f) + sum_runs(c, n - half, f)
}

/// [`sum_by`] of `n` copies of `x`.
fn sum_copies(x: f64, n: u64, memo: &mut Vec<(u64, f64)>) -> f64 {
    if n <= 128 {
        return sum(&[x; 128][..n as usize]);
    }
    if let Some(&(_, s)) = memo.iter().find(|m| m.0 == n) {
        return s;
    }
    let half = (n / 2) / 8 * 8;
    let s = sum_copies(x, half, memo) + sum_copies(x, n - half, memo);
    memo.push((n, s));
    s
}

/// [`sum_by`] of a list kept as runs.
fn sum_runs_by(runs: &Runs, f: impl Fn(f64) -> f64 + Copy) -> f64 {
    sum_runs(&mut RunCursor::new(runs), runs.len, f)
}

/// The values at `ranks` (sorted ascending, each below the list's length) of a list kept as
/// runs, sorted by `f64::total_cmp`.
fn ranked_runs(runs: &Runs, ranks: &[u64]) -> Vec<f64> {
    let mut pairs: Vec<(f64, u64)> = runs.runs().collect();
    pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::with_capacity(ranks.len());
    let mut below = 0u64;
    let mut pairs = pairs.into_iter();
    let mut cur = pairs.next();
    for &r in ranks {
        while let Some((_, n)) = cur
            && below + n <= r
        {
            below += n;
            cur = pairs.next();
        }
        out.push(cur.map_or(f64::NAN, |p| p.0));
    }
    out
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

    #[test]
    fn student_t_quantiles_match_the_tables() {
        for (p, df, want) in [
            (0.975, 1.0, 12.706_204_736),
            (0.975, 2.0, 4.302_652_730),
            (0.975, 5.0, 2.570_581_836),
            (0.975, 10.0, 2.228_138_852),
            (0.95, 3.0, 2.353_363_435),
            (0.995, 30.0, 2.749_995_654),
            (0.9, 1000.0, 1.282_399_357),
        ] {
            let t = t_quantile(p, df).unwrap();
            assert!((t - want).abs() < 1e-6, "t({p}, {df}) = {t}, want {want}");
        }
        assert_eq!(t_quantile(0.5, 4.0).map(|t| (t * 1e9).round()), Some(0.0));
        assert!((t_quantile(0.025, 2.0).unwrap() + 4.302_652_730).abs() < 1e-6);
        assert_eq!(t_quantile(1.0, 2.0), None);
        assert_eq!(t_quantile(0.9, 0.0), None);
    }

    #[test]
    fn confidence_interval_of_repeated_runs() {
        assert_eq!(sample_std_dev(&[1.0]), None);
        assert_eq!(sample_std_dev(&[1.0, 3.0]), Some(2f64.sqrt()));
        // Mean 2, sample std 1, n = 3: half-width t(0.975, 2) / sqrt(3).
        let h = t_interval_half_width(&[1.0, 2.0, 3.0], 0.95).unwrap();
        assert!((h - 4.302_652_730 / 3f64.sqrt()).abs() < 1e-6, "{h}");
        assert_eq!(t_interval_half_width(&[5.0], 0.95), None);
    }

    proptest! {
        #[test]
        fn a_distribution_of_sorted_values_is_the_same_bits(
            v in proptest::collection::vec(prop_oneof![-1e6..1e6f64, Just(0.0), Just(-0.0), Just(7.0)], 0..300)
        ) {
            let bits = |d: Option<Distribution>| d.map(|d| {
                let mut b = vec![d.count as u64, d.sum.to_bits(), d.avg.to_bits(), d.std.to_bits()];
                b.extend([d.min, d.max].iter().chain(&d.percentiles).map(|x| x.to_bits()));
                b
            });
            prop_assert_eq!(bits(Distribution::of_sorted(&v, &sorted(&v))), bits(Distribution::of(&v)));
        }

        #[test]
        fn the_radix_sort_is_the_comparison_sort_bit_for_bit(
            v in proptest::collection::vec(prop_oneof![
                4 => -1e6..1e6f64,
                4 => (0u32..5000).prop_map(f64::from),
                1 => Just(0.0), 1 => Just(-0.0), 1 => Just(f64::NAN), 1 => Just(-f64::NAN),
                1 => Just(f64::INFINITY), 1 => Just(f64::NEG_INFINITY), 1 => Just(f64::MIN_POSITIVE / 2.0),
            ], 0..3000)
        ) {
            let mut expected = v.clone();
            expected.sort_unstable_by(f64::total_cmp);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&radix_sorted(&v)), bits(&expected));
        }
    }

    #[test]
    fn long_lists_are_sorted_as_short_ones() {
        // Whole numbers (their low digits skipped) and fractions, past the radix sort's length.
        let v: Vec<f64> = (0..RADIX_FROM as u64 * 3)
            .map(|i| {
                let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
                if i % 3 == 0 { x as f64 } else { (x as f64 / 7.0) - 1000.0 }
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable_by(f64::total_cmp);
        assert_eq!(
            sorted(&v).iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

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
    fn long_runs_sum_as_written_out() {
        let mut kept = Runs::default();
        let mut out = Vec::new();
        for (v, n) in [(0.1, 100_003u64), (0.7, 1), (0.30000000000000004, 77_777), (1e-3, 1_000_001)] {
            kept.push_n(v, n);
            out.extend(std::iter::repeat_n(v, n as usize));
        }
        assert_eq!(distribution_bits(Distribution::of_runs(&kept)), distribution_bits(Distribution::of(&out)));
    }

    #[test]
    fn empty_lists_have_no_statistics() {
        assert_eq!(mean(&[]), None);
        assert_eq!(std_dev(&[]), None);
        assert_eq!(percentile_sorted(&[], 50.0), None);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Distribution::of(&[]), None);
    }

    #[test]
    fn percentiles_interpolate_linearly() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&v, 0.0), Some(1.0));
        assert_eq!(percentile_sorted(&v, 25.0), Some(1.75));
        assert_eq!(percentile_sorted(&v, 50.0), Some(2.5));
        assert_eq!(percentile_sorted(&v, 100.0), Some(4.0));
        assert_eq!(percentile_sorted(&[7.0], 99.0), Some(7.0));
        // AIPerf's `usage_prompt_tokens_diff_pct` p95 of its gpu-telemetry fixture run: the rank
        // 0.95 × 23 falls just short of 21.85, so its CSV cell reads 22.12, not 22.13.
        let mut diffs = vec![7.5; 4];
        diffs.extend([5.0, 7.5, 10.0, 10.0, 22.5, 22.5, 20.0, 20.0]);
        diffs.extend([12.5; 4]);
        diffs.extend([15.0; 3]);
        diffs.extend([17.5; 5]);
        let p95 = percentile_sorted(&sorted(&diffs), 95.0).unwrap();
        assert_eq!((p95, format!("{p95:.2}")), (22.124999999999993, "22.12".to_owned()));
    }

    #[test]
    fn huge_finite_values_give_finite_statistics() {
        let v = [1e308, 1e308, -1e308, 0.0];
        assert_eq!(mean(&v), Some(2.5e307));
        let sd = std_dev(&v).unwrap();
        assert!(sd.is_finite() && (sd - 8.2915619758885e307).abs() < 1e295, "{sd}");
        assert_eq!(std_dev(&[f64::MAX, -f64::MAX]), Some(f64::MAX));
        assert_eq!(mean(&[f64::MAX, f64::MAX]), Some(f64::MAX));
    }

    #[test]
    fn population_standard_deviation() {
        assert_eq!(std_dev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), Some(2.0));
        assert_eq!(std_dev(&[3.0]), Some(0.0));
    }

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((s.min, s.p25, s.median, s.p75, s.max, s.mean), (1.0, 2.0, 3.0, 4.0, 5.0, 3.0));
    }

    #[test]
    fn ks_distance_of_known_lists() {
        assert_eq!(ks_distance_sorted(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), Some(0.0));
        assert_eq!(ks_distance_sorted(&[1.0, 2.0], &[3.0, 4.0]), Some(1.0));
        // CDFs at 1, 2, 3: (1/2, 1, 1) vs (0, 1/2, 1).
        assert_eq!(ks_distance_sorted(&[1.0, 2.0], &[2.0, 3.0]), Some(0.5));
        assert_eq!(ks_distance_sorted(&[], &[1.0]), None);
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => (0u8..12).prop_map(f64::from),
            2 => -1e6f64..1e6,
            1 => Just(f64::NAN),
            1 => Just(-0.0),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
        ]
    }

    proptest! {
        /// Selection gives, bit for bit, what percentiles of a sorted copy give.
        #[test]
        fn selected_percentiles_equal_sorted_ones(values in proptest::collection::vec(value(), 1..300)) {
            let s = sorted(&values);
            let (min, got, max) = percentiles_selected(&values, REPORT_PERCENTILES).unwrap();
            prop_assert_eq!(min.to_bits(), s[0].to_bits());
            prop_assert_eq!(max.to_bits(), s[s.len() - 1].to_bits());
            for (g, p) in got.iter().zip(REPORT_PERCENTILES) {
                let want = percentile_sorted(&s, p).unwrap();
                prop_assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "p{}: {} vs {}", p, g, want);
            }
        }

        #[test]
        fn ks_distance_is_a_symmetric_fraction(a in proptest::collection::vec(0u8..20, 1..50), b in proptest::collection::vec(0u8..20, 1..50)) {
            let (a, b) = (sorted(&a.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()), sorted(&b.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()));
            let d = ks_distance_sorted(&a, &b).unwrap_or(f64::NAN);
            prop_assert!((0.0..=1.0).contains(&d));
            prop_assert_eq!(Some(d), ks_distance_sorted(&b, &a));
            prop_assert_eq!(ks_distance_sorted(&a, &a), Some(0.0));
        }

        #[test]
        fn pairwise_sum_is_close_to_naive(v in proptest::collection::vec(-1e6f64..1e6, 0..600)) {
            let naive: f64 = v.iter().sum();
            prop_assert!((sum(&v) - naive).abs() <= 1e-6 * (1.0 + naive.abs()));
        }

        #[test]
        fn percentiles_are_monotone_and_bounded(v in proptest::collection::vec(-1e9f64..1e9, 1..200), p in 0.0f64..100.0, q in 0.0f64..100.0) {
            let s = sorted(&v);
            let (a, b) = (percentile_sorted(&s, p.min(q)).unwrap(), percentile_sorted(&s, p.max(q)).unwrap());
            prop_assert!(a <= b);
            prop_assert!(s[0] <= a && b <= s[s.len() - 1]);
        }
    }
}
