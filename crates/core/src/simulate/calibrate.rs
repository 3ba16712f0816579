//! The [`Engine`] timing fitted from a measured run's records.
//!
//! Two least-squares lines, one per phase of the engine model:
//! - prefill: time to first token against the prompt tokens the server did not have cached
//!   (the prompt less the server's `cached_tokens`, or the tokens the replay expected cached when
//!   the server does not say), giving the fixed time and the time per uncached token. Only the
//!   requests sent while nothing else was in flight on their URL are fitted when there are
//!   [`MIN_IDLE_POINTS`] of them: the others' times include waiting in the server's queue, which
//!   the simulation models itself (`max_running`);
//! - decode: the request's inter-token latency, `(end − first token) / (output tokens − 1)`
//!   as AIPerf defines it, against the requests in flight on the same URL when it was sent (itself
//!   included), giving the fixed time between tokens and what each running request adds.
//!
//! A fitted line never goes below zero where the engine cannot: a negative slope (noise, or
//! queueing that the model does not have) is replaced by the mean, a negative intercept by the
//! line through the origin. Each fit reports its R² and mean absolute error so the user sees how
//! far the model is from the run.

use serde::{Deserialize, Serialize};

use super::Engine;
use crate::results::record::RequestRecord;

/// What one successful streamed request says about the engine.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// The URL (replica) it was sent to.
    pub url: u32,
    pub sent_ns: u64,
    pub first_token_ns: u64,
    pub end_ns: u64,
    /// Prompt tokens less those the server had cached.
    pub uncached_tokens: u64,
    pub output_tokens: u64,
}

impl Observation {
    /// A record's observation: `None` for a failed, cancelled or non-streamed request, or one
    /// without a first token or a prompt length.
    pub fn of(rec: &RequestRecord) -> Option<Observation> {
        if rec.error.is_some() || rec.was_cancelled() || !rec.streaming {
            return None;
        }
        let first = rec.chunk_ns.first().copied().or(rec.first_byte_ns)?;
        let input = rec.usage.prompt_tokens.or(rec.input_tokens)?;
        let cached = rec.usage.cached_tokens.or(rec.expected_cached_tokens).unwrap_or(0);
        let output = rec.output_tokens.or(rec.usage.completion_tokens).unwrap_or(0);
        (first >= rec.sent_ns && rec.end_ns >= first).then_some(Observation {
            url: rec.url_index.unwrap_or(0),
            sent_ns: rec.sent_ns,
            first_token_ns: first,
            end_ns: rec.end_ns,
            uncached_tokens: input.saturating_sub(cached),
            output_tokens: output,
        })
    }
}

/// A least-squares line `y = intercept + slope × x` and how well it fits.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub intercept: f64,
    pub slope: f64,
    /// Coefficient of determination (1: every point on the line; 1 too when every point has the
    /// same value and the line is that value).
    pub r2: f64,
    /// Mean absolute error, in the unit of `y`.
    pub mae: f64,
    /// Points fitted.
    pub points: u64,
}

impl Fit {
    /// The line through `points` (x, y), kept at or above zero (see the module's comment).
    pub fn of(points: &[(f64, f64)]) -> Fit {
        let n = points.len() as f64;
        if points.is_empty() {
            return Fit { intercept: 0.0, slope: 0.0, r2: 0.0, mae: 0.0, points: 0 };
        }
        let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
        let my = points.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let mut slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        let mut intercept = my - slope * mx;
        if slope < 0.0 {
            (slope, intercept) = (0.0, my);
        } else if intercept < 0.0 {
            let xx: f64 = points.iter().map(|p| p.0 * p.0).sum();
            let xy: f64 = points.iter().map(|p| p.0 * p.1).sum();
            (slope, intercept) = (if xx > 0.0 { xy / xx } else { 0.0 }, 0.0);
        }
        let residual = |p: &(f64, f64)| p.1 - (intercept + slope * p.0);
        let ss_res: f64 = points.iter().map(|p| residual(p) * residual(p)).sum();
        let ss_tot: f64 = points.iter().map(|p| (p.1 - my) * (p.1 - my)).sum();
        let r2 = if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else if ss_res == 0.0 {
            1.0
        } else {
            0.0
        };
        let mae = points.iter().map(|p| residual(p).abs()).sum::<f64>() / n;
        Fit { intercept, slope, r2, mae, points: points.len() as u64 }
    }
}

/// The engine fitted from a run, with both fits (microseconds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub engine: Engine,
    /// Time to first token (µs) against uncached prompt tokens.
    pub prefill: Fit,
    /// Inter-token latency (µs) against requests in flight on the URL.
    pub decode: Fit,
}

/// A run that cannot be fitted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    #[error(
        "no successful streamed request with a first token and a prompt length: the time to first token cannot be fitted"
    )]
    NoPrefill,
    #[error("no successful streamed request with 2 or more output tokens: the time between tokens cannot be fitted")]
    NoDecode,
}

/// Fewest requests sent to an idle URL that the prefill fit is made of (else it takes every
/// request).
pub const MIN_IDLE_POINTS: usize = 3;

/// Fits the engine from a run's observations.
pub fn calibrate(obs: &[Observation]) -> Result<Calibration, CalibrateError> {
    let running = in_flight_at_send(obs);
    let ttft = |o: &Observation| (o.uncached_tokens as f64, (o.first_token_ns - o.sent_ns) as f64 / 1e3);
    let mut prefill: Vec<(f64, f64)> =
        obs.iter().zip(&running).filter(|(_, n)| **n == 1).map(|(o, _)| ttft(o)).collect();
    if prefill.len() < MIN_IDLE_POINTS {
        prefill = obs.iter().map(ttft).collect();
    }
    if prefill.is_empty() {
        return Err(CalibrateError::NoPrefill);
    }
    let decode: Vec<(f64, f64)> = obs
        .iter()
        .zip(&running)
        .filter(|(o, _)| o.output_tokens >= 2)
        .map(|(o, &n)| (n as f64, (o.end_ns - o.first_token_ns) as f64 / 1e3 / (o.output_tokens - 1) as f64))
        .collect();
    if decode.is_empty() {
        return Err(CalibrateError::NoDecode);
    }
    let (prefill, decode) = (Fit::of(&prefill), Fit::of(&decode));
    let engine = Engine {
        prefill_fixed_us: prefill.intercept,
        prefill_per_token_us: prefill.slope,
        decode_fixed_us: decode.intercept,
        decode_per_running_us: decode.slope,
    };
    Ok(Calibration { engine, prefill, decode })
}

/// For each observation, the requests of its URL in flight when it was sent, itself included:
/// those sent at or before that instant and not ended by then.
fn in_flight_at_send(obs: &[Observation]) -> Vec<u64> {
    let mut by_url: std::collections::BTreeMap<u32, (Vec<u64>, Vec<u64>)> = Default::default();
    for o in obs {
        let (sent, ends) = by_url.entry(o.url).or_default();
        sent.push(o.sent_ns);
        ends.push(o.end_ns);
    }
    for (sent, ends) in by_url.values_mut() {
        sent.sort_unstable();
        ends.sort_unstable();
    }
    obs.iter()
        .map(|o| {
            let (sent, ends) = &by_url[&o.url];
            let started = sent.partition_point(|&t| t <= o.sent_ns) as u64;
            let ended = ends.partition_point(|&t| t <= o.sent_ns) as u64;
            started.saturating_sub(ended).max(1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests timed exactly by `engine`, `conc` at a time on one URL.
    fn run(engine: &Engine, conc: u64) -> Vec<Observation> {
        let mut obs = Vec::new();
        let mut t = 0;
        for wave in 0..20u64 {
            for k in 0..conc {
                let uncached = 100 + 37 * ((wave * conc + k) % 11);
                let ttft = engine.prefill_fixed_us + engine.prefill_per_token_us * uncached as f64;
                let itl = engine.decode_fixed_us + engine.decode_per_running_us * conc as f64;
                let first = t + (ttft * 1e3) as u64;
                obs.push(Observation {
                    url: 0,
                    sent_ns: t,
                    first_token_ns: first,
                    end_ns: first + (itl * 1e3) as u64 * 9,
                    uncached_tokens: uncached,
                    output_tokens: 10,
                });
            }
            t += 10_000_000_000;
        }
        obs
    }

    #[test]
    fn a_run_timed_by_the_model_gives_the_model_back() {
        let engine = Engine::default();
        let mut obs = run(&engine, 1);
        let later = 500_000_000_000;
        obs.extend(run(&engine, 4).into_iter().map(|o| Observation {
            sent_ns: o.sent_ns + later,
            first_token_ns: o.first_token_ns + later,
            end_ns: o.end_ns + later,
            ..o
        }));
        let c = calibrate(&obs).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.max(1.0);
        assert!(close(c.engine.prefill_fixed_us, engine.prefill_fixed_us), "{c:?}");
        assert!(close(c.engine.prefill_per_token_us, engine.prefill_per_token_us), "{c:?}");
        assert!(close(c.engine.decode_fixed_us, engine.decode_fixed_us), "{c:?}");
        assert!(close(c.engine.decode_per_running_us, engine.decode_per_running_us), "{c:?}");
        assert!(c.prefill.r2 > 0.999_999 && c.decode.r2 > 0.999_999 && c.prefill.mae < 1.0, "{c:?}");
        // The prefill is fitted on the 20 requests sent to an idle server.
        assert_eq!((c.prefill.points, c.decode.points), (20, 100));
    }

    #[test]
    fn requests_that_waited_in_the_server_queue_are_left_out_of_the_prefill_fit() {
        let engine = Engine::default();
        let mut obs = run(&engine, 1);
        // A burst served one at a time: each first token also waits for the prefills before it.
        let (t0, mut wait) = (500_000_000_000u64, 0u64);
        for k in 0..6u64 {
            let uncached = 200 + 50 * k;
            let ttft = ((engine.prefill_fixed_us + engine.prefill_per_token_us * uncached as f64) * 1e3) as u64;
            wait += ttft;
            let first = t0 + wait;
            let end = first + 9 * 20_000_000;
            obs.push(Observation {
                url: 0,
                sent_ns: t0,
                first_token_ns: first,
                end_ns: end,
                uncached_tokens: uncached,
                output_tokens: 10,
            });
        }
        let c = calibrate(&obs).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.max(1.0);
        assert!(close(c.engine.prefill_fixed_us, engine.prefill_fixed_us), "{c:?}");
        assert!(close(c.engine.prefill_per_token_us, engine.prefill_per_token_us), "{c:?}");
        // Too few idle sends: every request is fitted.
        let burst = &obs[20..];
        assert_eq!(calibrate(burst).unwrap().prefill.points, 6);
    }

    #[test]
    fn lines_stay_at_or_above_zero() {
        // Falling points: the mean.
        let f = Fit::of(&[(0.0, 3.0), (1.0, 2.0), (2.0, 1.0)]);
        assert_eq!((f.intercept, f.slope, f.r2), (2.0, 0.0, 0.0));
        // A negative intercept: through the origin.
        let f = Fit::of(&[(1.0, 0.0), (2.0, 2.0), (3.0, 4.0)]);
        assert_eq!(f.intercept, 0.0);
        assert!((f.slope - 16.0 / 14.0).abs() < 1e-12);
        // One value: exact.
        assert_eq!(Fit::of(&[(5.0, 7.0), (5.0, 7.0)]).r2, 1.0);
    }

    #[test]
    fn in_flight_counts_the_requests_of_the_same_url() {
        let o = |url, sent_ns, end_ns| Observation {
            url,
            sent_ns,
            first_token_ns: sent_ns,
            end_ns,
            uncached_tokens: 0,
            output_tokens: 2,
        };
        let obs = [o(0, 0, 10), o(0, 5, 20), o(1, 6, 30), o(0, 10, 15), o(0, 20, 25)];
        assert_eq!(in_flight_at_send(&obs), [1, 2, 1, 2, 1]);
    }

    #[test]
    fn a_run_without_streamed_tokens_is_refused() {
        assert_eq!(calibrate(&[]).unwrap_err(), CalibrateError::NoPrefill);
        let one =
            Observation { url: 0, sent_ns: 0, first_token_ns: 5, end_ns: 5, uncached_tokens: 1, output_tokens: 1 };
        assert_eq!(calibrate(&[one]).unwrap_err(), CalibrateError::NoDecode);
    }
}
