//! Percentiles of a list (linear interpolation, and the nearest rank), found in a sorted copy or
//! by selection, and the Kolmogorov–Smirnov distance of two sorted lists.

use super::select::at_ranks;

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
pub(super) fn percentile_ranks(n: usize, p: f64) -> (usize, usize, f64) {
    // The fraction first, then the rank, as numpy and AIPerf compute it: `(n - 1) * p / 100`
    // rounds differently (23 × 95 / 100 is 21.85, 0.95 × 23 is 21.849999999999998).
    let k = p / 100.0 * (n - 1) as f64;
    let lo = k.floor() as usize;
    let hi = k.ceil() as usize;
    (lo.min(n - 1), hi.min(n - 1), k - lo as f64)
}

/// numpy's lerp: a + (b - a) * t, switched to b - (b - a) * (1 - t) for t >= 0.5.
pub(super) fn lerp(a: f64, b: f64, t: f64) -> f64 {
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
/// gives on a sorted copy, the values at the ranks asked for selected by their bits
/// ([`at_ranks`]: linear time, no copy, total order, NaN last) instead of a full sort.
pub(super) fn percentiles_selected<const N: usize>(values: &[f64], ps: [f64; N]) -> Option<(f64, [f64; N], f64)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mut ranks: Vec<u64> = ps
        .iter()
        .flat_map(|&p| {
            let (lo, hi, _) = percentile_ranks(n, p);
            [lo as u64, hi as u64]
        })
        .chain([0, n as u64 - 1])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    let at = at_ranks(values, &ranks);
    let value_at = |r: usize| ranks.binary_search(&(r as u64)).map_or(f64::NAN, |i| at[i]);
    let mut out = [0.0; N];
    for (slot, &p) in out.iter_mut().zip(&ps) {
        let (lo, hi, t) = percentile_ranks(n, p);
        *slot = lerp(value_at(lo), value_at(hi), t);
    }
    Some((at[0], out, at[at.len() - 1]))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{REPORT_PERCENTILES, sorted};
    use proptest::prelude::*;

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
        fn percentiles_are_monotone_and_bounded(v in proptest::collection::vec(-1e9f64..1e9, 1..200), p in 0.0f64..100.0, q in 0.0f64..100.0) {
            let s = sorted(&v);
            let (a, b) = (percentile_sorted(&s, p.min(q)).unwrap(), percentile_sorted(&s, p.max(q)).unwrap());
            prop_assert!(a <= b);
            prop_assert!(s[0] <= a && b <= s[s.len() - 1]);
        }
    }
}
