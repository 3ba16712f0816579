//! The step engine ([`Steps`]) fitted from a run's records: a step takes `fixed +
//! per_prefill_token × prompt tokens + per_decode_token × decode tokens` in it.
//!
//! A run's records do not show its steps, but two kinds of window count them:
//! - a request's decoding, from its first token to its end, is `output tokens − 1` steps (it
//!   makes one token a step); over it, the requests of its URL decoding (itself included) put
//!   their tokens in those steps, on average as many as were decoding over the window's time,
//!   and the requests prefilling put their prompt tokens in, each request's uncached tokens
//!   spread evenly from its slot to its first token;
//! - a request that found its URL idle (as in [`calibrate`](super::calibrate)) computes its
//!   uncached prompt, and those of the requests prefilling beside it (counted the same way), in
//!   `⌈tokens / max_batch_tokens⌉` steps (at least one) up to its first token.
//!
//! Each window gives one point: the mean step time (its length over its steps) against the mean
//! prompt tokens and decode tokens a step. The least-squares plane through the points, kept at or
//! above zero (the best plane over the subsets of its three terms whose coefficients are all ≥ 0),
//! is the step time; its R² and mean absolute error (µs a step) say how far the model is from the
//! run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CalibrateError, Observation, running_at_start, slot_starts};
use crate::simulate::engine::{StepOrder, Steps};

/// The step engine fitted from a run, and how well its plane fits (µs a step).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCalibration {
    pub steps: Steps,
    pub r2: f64,
    pub mae_us: f64,
    /// Windows fitted: decodings, and prefills of requests that found their URL idle.
    pub decode_points: u64,
    pub prefill_points: u64,
    /// The slots per URL the waits were taken out with.
    pub slots: Option<u32>,
}

/// Fits the step engine of `max_batch_tokens` tokens a step from a run's observations, with the
/// waits for one of `slots` per URL taken out (see the module's comment).
pub fn calibrate_steps(
    obs: &[Observation],
    slots: Option<u32>,
    max_batch_tokens: u32,
) -> Result<StepCalibration, CalibrateError> {
    if slots == Some(0) {
        return Err(CalibrateError::NoSlots);
    }
    let starts = slot_starts(obs, slots);
    let running = running_at_start(obs, &starts);
    // Per URL: the changes of the prefill rate (tokens a ns) and of the requests decoding.
    type Changes = Vec<(u64, f64)>;
    let mut curves: BTreeMap<u32, (Changes, Changes)> = BTreeMap::new();
    for (o, start) in obs.iter().zip(&starts) {
        let (Some(first), Some(start)) = (o.first_token_ns, *start) else { continue };
        let (prefill, decode) = curves.entry(o.url).or_default();
        if first > start {
            let rate = o.uncached_tokens as f64 / (first - start) as f64;
            prefill.extend([(start, rate), (first, -rate)]);
        }
        if o.end_ns > first {
            decode.extend([(first, 1.0), (o.end_ns, -1.0)]);
        }
    }
    let curves: BTreeMap<u32, (Integral, Integral)> =
        curves.into_iter().map(|(url, (p, d))| (url, (Integral::new(p), Integral::new(d)))).collect();
    let (mut points, mut decode_points, mut prefill_points) = (Vec::new(), 0, 0);
    for ((o, start), &n) in obs.iter().zip(&starts).zip(&running) {
        let (Some(first), Some(start)) = (o.first_token_ns, *start) else { continue };
        let Some((prefill, decode)) = curves.get(&o.url) else { continue };
        let mut window = |from: u64, to: u64, steps: f64| {
            let len = (to - from) as f64;
            let per_step = prefill.over(from, to) / steps;
            points.push(([per_step, decode.over(from, to) / len], len / steps / 1e3));
        };
        if o.output_tokens >= 2 && o.end_ns > first {
            window(first, o.end_ns, (o.output_tokens - 1) as f64);
            decode_points += 1;
        }
        if n == 1 && first > start {
            let tokens = prefill.over(start, first).round().max(1.0) as u64;
            let steps = tokens.div_ceil(u64::from(max_batch_tokens.max(1)));
            window(start, first, steps as f64);
            prefill_points += 1;
        }
    }
    if prefill_points + decode_points == 0 {
        return Err(if obs.iter().any(|o| o.first_token_ns.is_some()) {
            CalibrateError::NoDecode
        } else {
            CalibrateError::NoPrefill
        });
    }
    let plane = Plane::of(&points);
    Ok(StepCalibration {
        steps: Steps {
            max_batch_tokens,
            fixed_us: plane.coef[0],
            per_prefill_token_us: plane.coef[1],
            per_decode_token_us: plane.coef[2],
            order: StepOrder::Vllm,
        },
        r2: plane.r2,
        mae_us: plane.mae,
        decode_points,
        prefill_points,
        slots,
    })
}

/// The integral of a rate that changes by steps: `(time, change of the rate)` points.
struct Integral {
    times: Vec<u64>,
    /// The integral up to `times[k]`, and the rate from there.
    area: Vec<f64>,
    rate: Vec<f64>,
}

impl Integral {
    fn new(mut changes: Vec<(u64, f64)>) -> Integral {
        changes.sort_by_key(|c| c.0);
        let (mut times, mut area, mut rate) = (Vec::new(), Vec::new(), Vec::new());
        let (mut a, mut r, mut t0) = (0.0, 0.0, 0u64);
        for (t, dr) in changes {
            a += r * (t - t0) as f64;
            r += dr;
            t0 = t;
            if times.last() == Some(&t) {
                *rate.last_mut().unwrap_or(&mut 0.0) = r;
            } else {
                times.push(t);
                area.push(a);
                rate.push(r);
            }
        }
        Integral { times, area, rate }
    }

    fn at(&self, t: u64) -> f64 {
        match self.times.partition_point(|&x| x <= t) {
            0 => 0.0,
            k => self.area[k - 1] + self.rate[k - 1] * (t - self.times[k - 1]) as f64,
        }
    }

    /// The integral from `from` to `to`.
    fn over(&self, from: u64, to: u64) -> f64 {
        (self.at(to) - self.at(from)).max(0.0)
    }
}

/// `y = c0 + c1 x1 + c2 x2` by least squares with every coefficient ≥ 0, and its fit.
struct Plane {
    coef: [f64; 3],
    r2: f64,
    mae: f64,
}

impl Plane {
    fn of(points: &[([f64; 2], f64)]) -> Plane {
        let row = |x: &[f64; 2]| [1.0, x[0], x[1]];
        let sse = |c: &[f64; 3]| {
            points.iter().map(|(x, y)| (y - row(x).iter().zip(c).map(|(a, b)| a * b).sum::<f64>()).powi(2)).sum()
        };
        let mut best: ([f64; 3], f64) = ([0.0; 3], sse(&[0.0; 3]));
        // Every subset of the three terms (bit k: term k), the full plane first.
        for subset in (1u8..8).rev() {
            let terms: Vec<usize> = (0..3).filter(|k| subset & (1 << k) != 0).collect();
            let Some(solved) = least_squares(points.iter().map(|(x, y)| (row(x), *y)), &terms) else { continue };
            let mut c = [0.0; 3];
            for (&k, v) in terms.iter().zip(solved) {
                c[k] = v;
            }
            if c.iter().all(|&v| v >= 0.0 && v.is_finite()) {
                let e = sse(&c);
                if e < best.1 - 1e-9 * best.1.abs() {
                    best = (c, e);
                }
            }
        }
        let n = points.len().max(1) as f64;
        let my = points.iter().map(|p| p.1).sum::<f64>() / n;
        let ss_tot: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
        let r2 = if ss_tot > 0.0 {
            1.0 - best.1 / ss_tot
        } else if best.1 == 0.0 {
            1.0
        } else {
            0.0
        };
        let c = best.0;
        let mae =
            points.iter().map(|(x, y)| (y - row(x).iter().zip(&c).map(|(a, b)| a * b).sum::<f64>()).abs()).sum::<f64>()
                / n;
        Plane { coef: c, r2, mae }
    }
}

/// The least-squares coefficients of the columns `terms` of rows `(x, y)`: `None` when they
/// do not determine them (too few or collinear points).
fn least_squares(rows: impl Iterator<Item = ([f64; 3], f64)>, terms: &[usize]) -> Option<Vec<f64>> {
    let k = terms.len();
    // The normal equations, augmented: k rows of k + 1.
    let mut m = vec![vec![0.0; k + 1]; k];
    for (x, y) in rows {
        for (i, &a) in terms.iter().enumerate() {
            for (j, &b) in terms.iter().enumerate() {
                m[i][j] += x[a] * x[b];
            }
            m[i][k] += x[a] * y;
        }
    }
    let scale = m.iter().enumerate().map(|(i, r)| r[i].abs()).fold(0.0, f64::max);
    for col in 0..k {
        let pivot = (col..k).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() <= 1e-12 * scale.max(f64::MIN_POSITIVE) {
            return None;
        }
        m.swap(col, pivot);
        for r in 0..k {
            if r != col {
                let f = m[r][col] / m[col][col];
                let pivot_row = m[col].clone();
                for (v, p) in m[r].iter_mut().zip(&pivot_row).skip(col) {
                    *v -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| m[i][k] / m[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run timed exactly by `steps`, one request at a time on one URL at first, then waves of
    /// `conc` requests decoding together: each wave's requests are sent at one instant and
    /// prefilled together in steps of the budget, then decode together.
    fn run(steps: &Steps, conc: u64) -> Vec<Observation> {
        let mut obs = Vec::new();
        let mut t = 0u64;
        let ns = |us: f64| (us * 1e3).round() as u64;
        for wave in 0..30u64 {
            let n = if wave < 10 { 1 } else { conc };
            let prompts: Vec<u64> = (0..n).map(|k| 100 + 37 * ((wave * 7 + k) % 11)).collect();
            // The wave's prompts in steps of the budget; all first tokens at the last one's end.
            let total: u64 = prompts.iter().sum();
            let mut left = total;
            let mut first = t;
            while left > 0 {
                let take = left.min(u64::from(steps.max_batch_tokens));
                first += ns(steps.step_us(take, 0));
                left -= take;
            }
            let itl = ns(steps.step_us(0, n));
            for &p in &prompts {
                obs.push(Observation {
                    url: 0,
                    sent_ns: t,
                    first_token_ns: Some(first),
                    end_ns: first + 9 * itl,
                    uncached_tokens: p,
                    output_tokens: 10,
                });
            }
            t += 10_000_000_000;
        }
        obs
    }

    #[test]
    fn a_run_timed_by_steps_gives_the_steps_back() {
        let steps = Steps {
            max_batch_tokens: 256,
            fixed_us: 4000.0,
            per_prefill_token_us: 20.0,
            per_decode_token_us: 300.0,
            order: StepOrder::Vllm,
        };
        let obs = run(&steps, 4);
        let c = calibrate_steps(&obs, None, 256).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3 * b.max(1.0);
        assert!(close(c.steps.fixed_us, steps.fixed_us), "{c:?}");
        assert!(close(c.steps.per_prefill_token_us, steps.per_prefill_token_us), "{c:?}");
        assert!(close(c.steps.per_decode_token_us, steps.per_decode_token_us), "{c:?}");
        assert!(c.r2 > 0.999_99 && c.mae_us < 1.0, "{c:?}");
        // Every request's decoding, and the 10 requests sent alone plus each wave's first.
        assert_eq!((c.decode_points, c.prefill_points), (10 + 20 * 4, 30));
    }

    #[test]
    fn coefficients_stay_at_or_above_zero() {
        // Step time falling with the prompt tokens: that term is left out.
        let points = [([0.0, 1.0], 10.0), ([10.0, 1.0], 9.0), ([20.0, 2.0], 12.0), ([30.0, 3.0], 13.0)];
        let p = Plane::of(&points);
        assert_eq!(p.coef[1], 0.0);
        assert!(p.coef.iter().all(|&c| c >= 0.0));
        assert!(least_squares(points.iter().map(|(x, y)| ([1.0, x[0], x[1]], *y)), &[0, 1, 2]).unwrap()[1] < 0.0);
    }

    #[test]
    fn integrals_of_step_rates() {
        let i = Integral::new(vec![(10, 2.0), (20, -2.0), (15, 1.0), (30, -1.0)]);
        assert_eq!(i.over(0, 10), 0.0);
        assert_eq!(i.over(10, 15), 10.0);
        assert_eq!(i.over(12, 25), 6.0 + 15.0 + 5.0);
        assert_eq!(i.over(0, 100), 20.0 + 15.0);
    }

    #[test]
    fn a_run_without_windows_is_refused() {
        assert_eq!(calibrate_steps(&[], None, 16).unwrap_err(), CalibrateError::NoPrefill);
        assert_eq!(calibrate_steps(&[], Some(0), 16).unwrap_err(), CalibrateError::NoSlots);
    }
}
