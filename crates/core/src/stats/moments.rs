//! Sums, means and population standard deviations, added in numpy's order.

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
pub(super) fn mean_of_sum(values: &[f64], total: f64) -> Option<f64> {
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
pub(super) fn std_dev_about(values: &[f64], m: f64) -> Option<f64> {
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
pub(super) const OVERFLOW_SCALE: f64 = 2.409919865102884e-181;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    proptest! {
        #[test]
        fn pairwise_sum_is_close_to_naive(v in proptest::collection::vec(-1e6f64..1e6, 0..600)) {
            let naive: f64 = v.iter().sum();
            prop_assert!((sum(&v) - naive).abs() <= 1e-6 * (1.0 + naive.abs()));
        }

    }
}
