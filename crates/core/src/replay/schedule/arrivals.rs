//! How generated session runs arrive: the rate (ramped, following a series), the gaps' pattern
//! and the seeded generator that draws them.

use crate::replay::sampling::Sampling;

/// A request-rate series: (µs from its start, requests per second) points in time order.
pub type RateSeries = std::sync::Arc<[(u64, f64)]>;

/// How generated runs arrive.
#[derive(Clone, Debug, PartialEq)]
pub struct Generator {
    /// Sessions per second; `None` = as soon as the concurrency limit allows.
    pub rate: Option<(f64, ArrivalPattern)>,
    pub seed: u64,
    /// Requests to send in all; `None` = without end (a benchmark duration ends the run), or
    /// each session once when `once` is set.
    pub request_limit: Option<u64>,
    /// Without a request limit: every session once.
    pub once: bool,
    /// AIPerf's `--request-rate-ramp-duration` in microseconds: the rate rises from a small
    /// start to its target over this long ([`ramped_rate`]).
    pub ramp_us: Option<u64>,
    /// The shape of [`ArrivalPattern::Gamma`] gaps (`None`: 1, Poisson's).
    pub smoothness: Option<f64>,
    /// AIPerf's `--request-rate-series`: (µs from the series' start, rate) points, in time
    /// order; the series starts once the rate ramp ends ([`Generator::rate_at`]).
    pub series: Option<RateSeries>,
    /// AIPerf's user-centric rate (`--user-centric-rate` with `--num-users`): this many users
    /// share the rate ([`user_centric`](super::user_centric)).
    pub users: Option<u32>,
    /// Which session each run starts (AIPerf's `--dataset-sampling-strategy`).
    pub sampling: Sampling,
    /// The run's `--random-seed`, from which the sampler's seed is derived.
    pub sampling_seed: u64,
    /// Sessions the sampler drew before the first run (the warm-up's, see
    /// [`Schedule::after_warmup`](super::Schedule::after_warmup)): the runs take the sessions
    /// that follow them.
    pub sampling_skip: u64,
}

impl Generator {
    /// The rate at `t_us` of a run whose rate is `per_second`: ramped ([`ramped_rate`]), then
    /// following the rate series as AIPerf does (updated every 0.1 s to the straight line
    /// between the points around that time, the last point's rate after it).
    pub fn rate_at(&self, per_second: f64, t_us: f64) -> f64 {
        let ramp = self.ramp_us.unwrap_or(0);
        if t_us < ramp as f64 {
            return ramped_rate(per_second, ramp, t_us);
        }
        let Some(points) = self.series.as_deref().filter(|p| !p.is_empty()) else { return per_second };
        let step = RATE_RAMP_UPDATE_US as f64;
        let at = ((t_us - ramp as f64) / step).floor() * step;
        series_rate(points, at)
    }
}

/// The piecewise-linear rate of `points` (µs, rate) at `t_us`: the first rate before the first
/// point, the last after the last.
pub fn series_rate(points: &[(u64, f64)], t_us: f64) -> f64 {
    let (Some(&(t0, q0)), Some(&(tn, qn))) = (points.first(), points.last()) else { return 0.0 };
    if t_us <= t0 as f64 {
        return q0;
    }
    if t_us >= tn as f64 {
        return qn;
    }
    let right = points.partition_point(|&(t, _)| t as f64 <= t_us);
    let ((lt, lq), (rt, rq)) = (points[right - 1], points[right]);
    lq + (rq - lq) * (t_us - lt as f64) / (rt - lt) as f64
}

/// How often AIPerf updates a ramping request rate (its `RATE_RAMP_UPDATE_INTERVAL`, 0.1 s).
pub const RATE_RAMP_UPDATE_US: u64 = 100_000;

/// The request rate at `t_us` of a run whose rate ramps to `target` over `ramp_us`, as AIPerf
/// ramps it: it starts at `target × 0.1 s / ramp` and is raised every 0.1 s along the straight
/// line to `target` (the value the line has at that update), reaching `target` at the ramp's end.
pub fn ramped_rate(target: f64, ramp_us: u64, t_us: f64) -> f64 {
    let (d, step) = (ramp_us as f64, RATE_RAMP_UPDATE_US as f64);
    if ramp_us == 0 || t_us >= d {
        return target;
    }
    let start = target * step / d;
    let updated = (t_us / step).floor() * step;
    if updated >= d { target } else { start + (target - start) * updated / d }
}

/// Gaps between request-rate arrivals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ArrivalPattern {
    Poisson,
    Constant,
    /// Gamma-distributed gaps of shape `smoothness` (AIPerf's `--arrival-smoothness`, vLLM's
    /// burstiness: 1 is Poisson, below 1 burstier, above 1 more regular), mean 1 / rate.
    Gamma,
}

/// A small seeded generator (SplitMix64): deterministic across platforms, no OS entropy.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Exponentially distributed with mean 1.
    pub fn exponential(&mut self) -> f64 {
        -(1.0 - self.uniform()).ln()
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (1.0 - self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Gamma distributed with shape `k` (> 0) and scale 1, so mean `k` (Marsaglia and Tsang;
    /// a shape below 1 is drawn at `k + 1` and scaled by `U^(1/k)`).
    pub fn gamma(&mut self, k: f64) -> f64 {
        if !(k > 0.0 && k.is_finite()) {
            return 0.0;
        }
        if k < 1.0 {
            let u = 1.0 - self.uniform();
            return self.gamma(k + 1.0) * u.powf(1.0 / k);
        }
        let d = k - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = 1.0 - self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_series_is_followed_after_the_ramp_on_tenth_second_updates() {
        let points: std::sync::Arc<[(u64, f64)]> = vec![(0, 10.0), (1_000_000, 20.0), (2_000_000, 5.0)].into();
        assert_eq!(series_rate(&points, 500_000.0), 15.0);
        assert_eq!(series_rate(&points, 1_500_000.0), 12.5);
        assert_eq!(series_rate(&points, 9e9), 5.0);
        let g = Generator {
            rate: Some((10.0, ArrivalPattern::Constant)),
            seed: 0,
            request_limit: None,
            once: false,
            ramp_us: Some(1_000_000),
            smoothness: None,
            series: Some(points),
            users: None,
            sampling: Sampling::Sequential,
            sampling_seed: 0,
            sampling_skip: 0,
        };
        assert_eq!(g.rate_at(10.0, 0.0), 1.0);
        assert_eq!(g.rate_at(10.0, 1_000_000.0), 10.0);
        // 0.55 s into the series: the update at 0.5 s set 15 per second.
        assert_eq!(g.rate_at(10.0, 1_550_000.0), 15.0);
        assert_eq!(g.rate_at(10.0, 5_000_000.0), 5.0);
    }
}
