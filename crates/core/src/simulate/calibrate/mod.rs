//! The [`Engine`] timing fitted from a measured run's records.
//!
//! Two least-squares lines, one per phase of the engine model:
//! - prefill: the time from getting a slot to the first token against the prompt tokens the
//!   server did not have cached (the prompt less the server's `cached_tokens`, or the tokens the
//!   replay expected cached when the server does not say), giving the fixed time and the time per
//!   uncached token;
//! - decode: the request's inter-token latency, `(end − first token) / (output tokens − 1)`
//!   as AIPerf defines it, against the requests running on the same URL when it got its slot
//!   (itself included), giving the fixed time between tokens and what each running request adds.
//!
//! A server that runs at most `slots` requests at once queues the others, and their time to first
//! token holds that wait. With the slot count, the fit takes the wait out: requests get a slot in
//! the order they were sent, each the earliest one freed by the end of a request that held one
//! (every request holds a slot from its start to its end, failed and cancelled ones included; one
//! that ended before a slot was free never held one), and no request gets its slot after its
//! first token. Without it, every request is taken to start when it was sent, and the prefill is
//! fitted on the requests that found nothing else running on their URL when there are
//! [`MIN_IDLE_POINTS`] of them (the others may have waited in the server's queue).
//!
//! A fitted line never goes below zero where the engine cannot: a negative slope (noise, or
//! queueing that the model does not have) is replaced by the mean, a negative intercept by the
//! line through the origin. Each fit reports its R² and mean absolute error so the user sees how
//! far the model is from the run.
//!
//! [`steps`] fits the step engine ([`Steps`](super::Steps)) from the same slots and windows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::timing::Engine;
use crate::results::record::RequestRecord;

pub mod steps;

/// What one request says about the engine: when it was sent and ended (it held a slot in between
/// unless it waited all along) and, for a successful streamed request, its first token.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// The URL (replica) it was sent to.
    pub url: u32,
    pub sent_ns: u64,
    /// The first token of a successful streamed request; `None` for a request that is not fitted
    /// (failed, cancelled, not streamed, or without a first token or a prompt length).
    pub first_token_ns: Option<u64>,
    pub end_ns: u64,
    /// Prompt tokens less those the server had cached.
    pub uncached_tokens: u64,
    pub output_tokens: u64,
}

impl Observation {
    /// A record's observation: `None` only for a record that ends before it was sent.
    pub fn of(rec: &RequestRecord) -> Option<Observation> {
        if rec.end_ns < rec.sent_ns {
            return None;
        }
        let fitted = rec.error.is_none() && !rec.was_cancelled() && rec.streaming;
        let first = rec
            .chunk_ns
            .first()
            .copied()
            .or(rec.first_byte_ns)
            .filter(|&f| fitted && f >= rec.sent_ns && rec.end_ns >= f);
        let input = rec.usage.prompt_tokens.or(rec.input_tokens);
        let cached = rec.usage.cached_tokens.or(rec.expected_cached_tokens).unwrap_or(0);
        let output = rec.output_tokens.or(rec.usage.completion_tokens).unwrap_or(0);
        Some(Observation {
            url: rec.url_index.unwrap_or(0),
            sent_ns: rec.sent_ns,
            first_token_ns: first.filter(|_| input.is_some()),
            end_ns: rec.end_ns,
            uncached_tokens: input.unwrap_or(0).saturating_sub(cached),
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
    /// Time from a slot to the first token (µs) against uncached prompt tokens.
    pub prefill: Fit,
    /// Inter-token latency (µs) against requests running on the URL.
    pub decode: Fit,
    /// The slots per URL the waits were taken out with (`None`: every request started when sent).
    pub slots: Option<u32>,
    /// Mean wait for a slot of the fitted requests (µs).
    pub mean_wait_us: f64,
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
    #[error("the server's slots must be at least 1 (0 given)")]
    NoSlots,
}

/// Fewest requests sent to an idle URL that a prefill fit without a slot count is made of (else
/// it takes every request).
pub const MIN_IDLE_POINTS: usize = 3;

/// Fits the engine from a run's observations, with the waits for one of `slots` per URL taken
/// out of the times to first token (see the module's comment).
pub fn calibrate(obs: &[Observation], slots: Option<u32>) -> Result<Calibration, CalibrateError> {
    if slots == Some(0) {
        return Err(CalibrateError::NoSlots);
    }
    let starts = slot_starts(obs, slots);
    let running = running_at_start(obs, &starts);
    let (mut prefill, mut idle, mut decode, mut wait_us) = (Vec::new(), Vec::new(), Vec::new(), 0.0);
    for ((o, start), &n) in obs.iter().zip(&starts).zip(&running) {
        let (Some(first), Some(start)) = (o.first_token_ns, *start) else { continue };
        let point = (o.uncached_tokens as f64, (first - start) as f64 / 1e3);
        prefill.push(point);
        if n == 1 {
            idle.push(point);
        }
        wait_us += (start - o.sent_ns) as f64 / 1e3;
        if o.output_tokens >= 2 {
            decode.push((n as f64, (o.end_ns - first) as f64 / 1e3 / (o.output_tokens - 1) as f64));
        }
    }
    if prefill.is_empty() {
        return Err(CalibrateError::NoPrefill);
    }
    let mean_wait_us = wait_us / prefill.len() as f64;
    if slots.is_none() && idle.len() >= MIN_IDLE_POINTS {
        prefill = idle;
    }
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
    Ok(Calibration { engine, prefill, decode, slots, mean_wait_us })
}

/// When each request got its slot: `None` for one that ended before a slot was free. Without a
/// slot count, when it was sent. A fitted request never gets its slot after its first token.
fn slot_starts(obs: &[Observation], slots: Option<u32>) -> Vec<Option<u64>> {
    let Some(slots) = slots else { return obs.iter().map(|o| Some(o.sent_ns)).collect() };
    let mut order: Vec<usize> = (0..obs.len()).collect();
    order.sort_by_key(|&i| (obs[i].url, obs[i].sent_ns, i));
    let mut starts = vec![None; obs.len()];
    let mut free: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
    let mut url = None;
    for i in order {
        let o = &obs[i];
        if url != Some(o.url) {
            url = Some(o.url);
            free.clear();
        }
        let slot_free = if free.len() < slots as usize { 0 } else { free.peek().map_or(0, |r| r.0) };
        let mut start = o.sent_ns.max(slot_free);
        if let Some(first) = o.first_token_ns {
            start = start.min(first);
        } else if o.end_ns <= start {
            continue;
        }
        if free.len() >= slots as usize {
            free.pop();
        }
        free.push(Reverse(o.end_ns.max(start)));
        starts[i] = Some(start);
    }
    starts
}

/// For each request that got a slot, the requests of its URL running when it did, itself
/// included: those that got theirs before it (at the same instant, sent before it) and had not
/// ended by then. 0 for a request that never got a slot.
fn running_at_start(obs: &[Observation], starts: &[Option<u64>]) -> Vec<u64> {
    let mut order: Vec<(u32, u64, u64, usize)> =
        obs.iter().zip(starts).enumerate().filter_map(|(i, (o, s))| Some((o.url, (*s)?, o.sent_ns, i))).collect();
    order.sort_unstable();
    let mut running = vec![0; obs.len()];
    let mut ends: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
    let mut url = None;
    for (u, start, _, i) in order {
        if url != Some(u) {
            url = Some(u);
            ends.clear();
        }
        while ends.peek().is_some_and(|e| e.0 <= start) {
            ends.pop();
        }
        running[i] = ends.len() as u64 + 1;
        ends.push(Reverse(obs[i].end_ns.max(start)));
    }
    running
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests timed exactly by `engine`, `conc` at a time on one URL, each wave sent at one
    /// instant: the k-th of a wave runs with k − 1 before it, as the simulator admits them.
    fn run(engine: &Engine, conc: u64) -> Vec<Observation> {
        let mut obs = Vec::new();
        let mut t = 0;
        for wave in 0..20u64 {
            for k in 0..conc {
                let uncached = 100 + 37 * ((wave * conc + k) % 11);
                let ttft = engine.prefill_fixed_us + engine.prefill_per_token_us * uncached as f64;
                let itl = engine.decode_fixed_us + engine.decode_per_running_us * (k + 1) as f64;
                let first = t + (ttft * 1e3) as u64;
                obs.push(Observation {
                    url: 0,
                    sent_ns: t,
                    first_token_ns: Some(first),
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
            first_token_ns: o.first_token_ns.map(|f| f + later),
            end_ns: o.end_ns + later,
            ..o
        }));
        let c = calibrate(&obs, None).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.max(1.0);
        assert!(close(c.engine.prefill_fixed_us, engine.prefill_fixed_us), "{c:?}");
        assert!(close(c.engine.prefill_per_token_us, engine.prefill_per_token_us), "{c:?}");
        assert!(close(c.engine.decode_fixed_us, engine.decode_fixed_us), "{c:?}");
        assert!(close(c.engine.decode_per_running_us, engine.decode_per_running_us), "{c:?}");
        assert!(c.prefill.r2 > 0.999_999 && c.decode.r2 > 0.999_999 && c.prefill.mae < 1.0, "{c:?}");
        // The prefill is fitted on the 40 requests that found nothing running: the 20 sent alone
        // and the first of each wave of 4.
        assert_eq!((c.prefill.points, c.decode.points), (40, 100));
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
                first_token_ns: Some(first),
                end_ns: end,
                uncached_tokens: uncached,
                output_tokens: 10,
            });
        }
        let c = calibrate(&obs, None).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.max(1.0);
        assert!(close(c.engine.prefill_fixed_us, engine.prefill_fixed_us), "{c:?}");
        assert!(close(c.engine.prefill_per_token_us, engine.prefill_per_token_us), "{c:?}");
        // Too few idle sends (the burst's first): every request is fitted.
        let burst = &obs[20..];
        assert_eq!(calibrate(burst, None).unwrap().prefill.points, 6);
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
    fn running_counts_the_requests_of_the_same_url() {
        let o = |url, sent_ns, end_ns| Observation {
            url,
            sent_ns,
            first_token_ns: Some(sent_ns),
            end_ns,
            uncached_tokens: 0,
            output_tokens: 2,
        };
        let obs = [o(0, 0, 10), o(0, 5, 20), o(1, 6, 30), o(0, 10, 15), o(0, 20, 25)];
        let starts = slot_starts(&obs, None);
        assert_eq!(running_at_start(&obs, &starts), [1, 2, 1, 2, 1]);
    }

    /// Requests timed exactly by `engine` on a server of `slots` slots, taken first come first
    /// served: bursts of 6 every 2 s, with one request cancelled while it waited in each burst.
    fn queued(engine: &Engine, slots: usize) -> Vec<Observation> {
        let mut obs = Vec::new();
        let mut free = vec![0u64; slots];
        for k in 0..60u64 {
            let sent = (k / 6) * 2_000_000_000;
            let (slot, start) =
                free.iter().copied().enumerate().min_by_key(|&(_, f)| f).map(|(i, f)| (i, f.max(sent))).unwrap();
            let running = 1 + free.iter().enumerate().filter(|&(j, &e)| j != slot && e > start).count();
            let uncached = 100 + 37 * (k % 11);
            let ttft = engine.prefill_fixed_us + engine.prefill_per_token_us * uncached as f64;
            let itl = engine.decode_fixed_us + engine.decode_per_running_us * running as f64;
            let first = start + (ttft * 1e3) as u64;
            let end = first + (itl * 1e3) as u64 * 9;
            free[slot] = end;
            let o = Observation {
                url: 0,
                sent_ns: sent,
                first_token_ns: Some(first),
                end_ns: end,
                uncached_tokens: uncached,
                output_tokens: 10,
            };
            obs.push(o);
            if k % 6 == 1 {
                obs.push(Observation { first_token_ns: None, end_ns: sent + 1_000_000, ..o });
            }
        }
        obs
    }

    #[test]
    fn the_wait_for_a_slot_is_taken_out_of_the_time_to_first_token() {
        let engine = Engine::default();
        let obs = queued(&engine, 2);
        let c = calibrate(&obs, Some(2)).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3 * b.max(1.0);
        assert!(close(c.engine.prefill_fixed_us, engine.prefill_fixed_us), "{c:?}");
        assert!(close(c.engine.prefill_per_token_us, engine.prefill_per_token_us), "{c:?}");
        assert!(close(c.engine.decode_fixed_us, engine.decode_fixed_us), "{c:?}");
        assert!(close(c.engine.decode_per_running_us, engine.decode_per_running_us), "{c:?}");
        assert!(c.mean_wait_us > engine.prefill_fixed_us, "{c:?}");
        assert_eq!((c.prefill.points, c.decode.points, c.slots), (60, 60, Some(2)));
        // Without the slot count, only the 10 requests that found the server idle are fitted.
        let idle = calibrate(&obs, None).unwrap();
        assert_eq!(idle.prefill.points, 10);
        assert!(close(idle.engine.prefill_per_token_us, engine.prefill_per_token_us), "{idle:?}");
        assert_eq!(calibrate(&obs, Some(0)).unwrap_err(), CalibrateError::NoSlots);
    }

    #[test]
    fn failed_requests_hold_their_slot_and_ones_cancelled_while_waiting_do_not() {
        let o = |sent_ns, first: Option<u64>, end_ns| Observation {
            url: 0,
            sent_ns,
            first_token_ns: first,
            end_ns,
            uncached_tokens: 1,
            output_tokens: 2,
        };
        let obs = [o(0, None, 100), o(10, Some(150), 200), o(20, None, 50), o(30, Some(210), 300)];
        assert_eq!(slot_starts(&obs, Some(1)), [Some(0), Some(100), None, Some(200)]);
        // A first token before the slot the order gives: the slot came no later than the token.
        let obs = [o(0, Some(5), 100), o(10, Some(40), 120)];
        assert_eq!(slot_starts(&obs, Some(1)), [Some(0), Some(40)]);
    }

    #[test]
    fn a_run_without_streamed_tokens_is_refused() {
        assert_eq!(calibrate(&[], None).unwrap_err(), CalibrateError::NoPrefill);
        let one = Observation {
            url: 0,
            sent_ns: 0,
            first_token_ns: Some(5),
            end_ns: 5,
            uncached_tokens: 1,
            output_tokens: 1,
        };
        assert_eq!(calibrate(&[one], None).unwrap_err(), CalibrateError::NoDecode);
        let failed = Observation { first_token_ns: None, ..one };
        assert_eq!(calibrate(&[failed], Some(1)).unwrap_err(), CalibrateError::NoPrefill);
    }
}
