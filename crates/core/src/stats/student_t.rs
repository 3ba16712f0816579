//! Student's t distribution: the sample standard deviation, quantiles and the confidence interval
//! of a mean.

use super::moments::{mean, sum};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
