//! Which requests the client cancels on purpose (AIPerf's `--request-cancellation-rate` and
//! `--request-cancellation-delay`): a chosen request is sent whole, then abandoned `delay` after
//! it was sent, and recorded as cancelled.
//!
//! The choice is a pure function of the seed and the request's place in the run (its session
//! run and turn), so that a run repeated with the same `--random-seed` cancels the same
//! requests whatever the order requests complete in, and a shard of a run cancels the requests
//! the whole run would. Each request is chosen with probability `rate / 100`, independently.

use crate::replay::schedule::Rng;

/// Stream of the seed that chooses cancellations (apart from arrivals and prompts).
const STREAM: u64 = 0x6361_6e63_656c_6c00;

/// Cancellation of a share of the requests, as AIPerf's `RequestCancellationSimulator`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cancellation {
    /// The probability of cancelling a request, in (0, 1].
    probability: f64,
    /// How long after its send a chosen request is abandoned.
    delay_ns: u64,
    seed: u64,
}

impl Cancellation {
    /// Cancels `rate_percent` percent of the requests (0 to 100), `delay_ns` after each is
    /// sent; `None` when the rate is 0 (or not a number): nothing is cancelled.
    pub fn new(rate_percent: f64, delay_ns: u64, seed: u64) -> Option<Cancellation> {
        (rate_percent > 0.0).then(|| Cancellation { probability: (rate_percent / 100.0).min(1.0), delay_ns, seed })
    }

    /// The delay after which the request of session run `run`, turn `turn`, is cancelled, or
    /// `None` when it runs to its end.
    pub fn delay_for(&self, run: u64, turn: u32) -> Option<u64> {
        let mut rng =
            Rng::new(self.seed ^ STREAM ^ run.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ u64::from(turn).rotate_left(40));
        rng.next_u64();
        (rng.uniform() < self.probability).then_some(self.delay_ns)
    }

    /// The delay every chosen request is cancelled after.
    pub fn delay_ns(&self) -> u64 {
        self.delay_ns
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn share(c: &Cancellation, n: u64) -> f64 {
        (0..n).filter(|&r| c.delay_for(r, 0).is_some()).count() as f64 / n as f64
    }

    #[test]
    fn a_rate_of_zero_cancels_nothing_and_a_hundred_everything() {
        assert_eq!(Cancellation::new(0.0, 5, 1), None);
        assert_eq!(Cancellation::new(f64::NAN, 5, 1), None);
        let all = Cancellation::new(100.0, 7, 1).unwrap();
        assert!((0..1000).all(|r| all.delay_for(r, r as u32 % 3) == Some(7)));
    }

    #[test]
    fn the_share_cancelled_is_the_rate() {
        for rate in [0.5, 10.0, 50.0, 90.0] {
            let c = Cancellation::new(rate, 0, 42).unwrap();
            let got = share(&c, 200_000) * 100.0;
            // 200,000 draws: the standard error is at most 0.12 percentage points.
            assert!((got - rate).abs() < 0.6, "rate {rate}: cancelled {got}%");
        }
    }

    #[test]
    fn turns_of_a_session_are_chosen_apart() {
        let c = Cancellation::new(50.0, 0, 3).unwrap();
        let mixed = (0..200).filter(|&r| c.delay_for(r, 0).is_some() != c.delay_for(r, 1).is_some()).count();
        assert!(mixed > 60, "{mixed}");
    }

    proptest! {
        #[test]
        fn the_choice_depends_on_the_seed_and_the_request_only(seed in any::<u64>(), rate in 0.1f64..100.0, run in any::<u64>(), turn in any::<u32>()) {
            let a = Cancellation::new(rate, 9, seed).unwrap();
            let b = Cancellation::new(rate, 9, seed).unwrap();
            prop_assert_eq!(a.delay_for(run, turn), b.delay_for(run, turn));
        }

        #[test]
        fn other_seeds_choose_other_requests(seed in any::<u64>()) {
            let a = Cancellation::new(50.0, 0, seed).unwrap();
            let b = Cancellation::new(50.0, 0, seed.wrapping_add(1)).unwrap();
            let differ = (0..256).filter(|&r| a.delay_for(r, 0) != b.delay_for(r, 0)).count();
            prop_assert!(differ > 64, "{}", differ);
        }
    }
}
