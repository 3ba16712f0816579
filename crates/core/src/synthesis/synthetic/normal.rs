//! CPython's normal draws (`random.gauss`) on the generator AIPerf derives for each component.

use std::f64::consts::TAU;

use crate::rng::{PyRandom, derive_seed};

/// CPython's `random.Random` with its `gauss` (and the pair it keeps for the next call).
pub(super) struct Normal {
    pub(super) rng: PyRandom,
    next: Option<f64>,
}

impl Normal {
    /// The generator AIPerf derives for `component` from `seed`.
    pub(super) fn new(seed: u64, component: &str) -> Normal {
        Normal { rng: PyRandom::new(derive_seed(seed, component)), next: None }
    }

    pub(super) fn gauss(&mut self, mu: f64, sigma: f64) -> f64 {
        let z = match self.next.take() {
            Some(z) => z,
            None => {
                let x2pi = self.rng.random() * TAU;
                let g2rad = (-2.0 * (1.0 - self.rng.random()).ln()).sqrt();
                self.next = Some(x2pi.sin() * g2rad);
                x2pi.cos() * g2rad
            }
        };
        mu + z * sigma
    }

    /// AIPerf's `sample_positive_normal_integer`: a normal draw rejected below 0 (10,000 tries,
    /// then the mean), rounded up, at least 1; the rounded mean when `stddev` is 0.
    pub(super) fn positive_int(&mut self, mean: f64, stddev: f64) -> u64 {
        if stddev <= 0.0 {
            return (mean.round_ties_even() as u64).max(1);
        }
        (self.positive(mean, stddev).ceil() as u64).max(1)
    }

    /// AIPerf's `sample_positive_normal`: a normal draw rejected below 0 (10,000 tries, then the
    /// mean, at least 0).
    pub(super) fn positive(&mut self, mean: f64, stddev: f64) -> f64 {
        (0..10_000).map(|_| self.gauss(mean, stddev)).find(|&n| n >= 0.0).unwrap_or(mean.max(0.0))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn normal_draws_are_cpython_gauss() {
        // CPython: r = random.Random(42); [r.gauss(0, 1) for _ in range(3)].
        let mut n = Normal { rng: PyRandom::new(42), next: None };
        let got: Vec<f64> = (0..3).map(|_| n.gauss(0.0, 1.0)).collect();
        let want = [-0.14409032957792836, -0.1729036003315193, -0.11131586156766246];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
    }
}
