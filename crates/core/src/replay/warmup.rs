//! The warm-up phase before a run, as AIPerf's (`--warmup-request-count`,
//! `--num-warmup-sessions`, `--warmup-duration`, `--warmup-concurrency`,
//! `--warmup-request-rate`, `--warmup-arrival-pattern`): requests that warm the server's
//! connections and caches and are never measured.
//!
//! A warm-up sends the first turn of the run's sessions, each as a session of its own, taken
//! by the run's sampling (AIPerf's `--dataset-sampling-strategy`; a fixed schedule's in trace
//! order) from the start of its walk, as AIPerf's warm-up takes them from the sampler its
//! profiling phase then continues ([`Warmup::draws`], [`Schedule::after_warmup`]). It stops at whichever of its
//! bounds comes first: a number of requests, of sessions (the same here, a session being one
//! request), or a duration. Its load is a rate (with its arrival pattern; a concurrency, when
//! given, caps it) or, without a rate, a concurrency (1 unless given), as AIPerf's.
//!
//! A user-centric warm-up (AIPerf's `type: user_centric` warm-up phase of a config file) sends
//! whole sessions instead: its users share its rate as the run's users do
//! ([`user_centric`](crate::replay::schedule::user_centric)), each user's turns one turn gap
//! apart, the sessions taken in the run's sampling order. Its users are its own: none carries
//! on into the run, whose users start afresh at time zero, as AIPerf's phases do.

use std::sync::Arc;

use crate::replay::dispatch::Dispatch;
use crate::replay::schedule::{ArrivalPattern, Generator, Schedule, Session, Starts, Turn, TurnTiming};

/// Stream of the seed of warm-up arrivals (apart from the run's own).
const STREAM: u64 = 0x7761_726d_7570_0000;

/// What the warm-up sends and how fast.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Warmup {
    /// At most this many requests.
    pub requests: Option<u64>,
    /// At most this many sessions.
    pub sessions: Option<u64>,
    /// Nothing is sent after this long (nanoseconds from the warm-up's start).
    pub duration_ns: Option<u64>,
    /// Sessions per second, and their gaps; `None`: as fast as the concurrency allows.
    pub rate: Option<(f64, ArrivalPattern)>,
    /// At most this many requests in flight; `None`: no cap (a rate warm-up only).
    pub concurrency: Option<usize>,
    /// Seed of Poisson gaps.
    pub seed: u64,
    /// The concurrency ramps from 1 over this long (ns), as the run's can.
    pub concurrency_ramp_ns: Option<u64>,
    /// The rate ramps over this long (µs), as the run's can.
    pub rate_ramp_us: Option<u64>,
    /// The shape of gamma gaps ([`ArrivalPattern::Gamma`]).
    pub smoothness: Option<f64>,
    /// At most this many requests in prefill ([`Dispatch::with_prefill_limit`]), and its ramp (ns).
    pub prefill: Option<usize>,
    pub prefill_ramp_ns: Option<u64>,
    /// A user-centric warm-up: this many users share `rate` (its pattern is then unused).
    pub users: Option<u32>,
}

impl Warmup {
    /// Whether anything bounds the warm-up (without a bound there is no warm-up).
    pub fn is_bounded(&self) -> bool {
        self.requests.is_some() || self.sessions.is_some() || self.duration_ns.is_some()
    }

    /// Requests sent at most: the least of the request and session bounds (`None`: only the
    /// duration ends it).
    pub fn request_limit(&self) -> Option<u64> {
        match (self.requests, self.sessions) {
            (Some(r), Some(s)) => Some(r.min(s)),
            (r, s) => r.or(s),
        }
    }

    /// The warm-up's schedule over `main`'s sessions: their first turns, each a single-turn
    /// session at the index of its session in `main`, taken by `main`'s sampling from the start
    /// of its walk (reused past the end as `main`'s runs are).
    pub fn schedule(&self, main: &Schedule) -> Schedule {
        if let (Some(users), Some((per_second, _))) = (self.users, self.rate) {
            return self.users_schedule(main, users, per_second);
        }
        // Every session of a schedule has a first turn (`build` keeps no empty session).
        let sessions: Vec<Session> = main
            .sessions
            .iter()
            .map(|s| {
                Session::chain(
                    None,
                    s.turns.first().map(|t| Turn { row: t.row, timing: TurnTiming::Immediately }).into_iter().collect(),
                )
            })
            .collect();
        let (sampling, sampling_seed) = sampling_of(main);
        Schedule {
            sessions,
            starts: Starts::Generated(Generator {
                rate: self.rate,
                seed: self.seed ^ STREAM,
                request_limit: self.request_limit(),
                once: false,
                ramp_us: self.rate_ramp_us.filter(|_| self.rate.is_some()),
                smoothness: self.smoothness,
                series: None,
                users: None,
                sampling,
                sampling_seed,
                sampling_skip: 0,
            }),
            shard: Default::default(),
        }
    }

    /// The sessions a warm-up that started `started` session runs drew from the sampler it
    /// shares with the run: AIPerf's request-rate warm-up (every warm-up but a user-centric one)
    /// draws the session it sends next before that send is due, so when it ends one more was
    /// drawn than sent and the run begins one session further on; a user-centric warm-up draws
    /// a session as each user starts.
    pub fn draws(&self, started: u64) -> u64 {
        if self.users.is_some() && self.rate.is_some() { started } else { started.saturating_add(1) }
    }

    /// A user-centric warm-up's schedule: `main`'s whole sessions, taken by `main`'s sampling,
    /// shared by `users` users at `per_second`.
    fn users_schedule(&self, main: &Schedule, users: u32, per_second: f64) -> Schedule {
        let (sampling, sampling_seed) = sampling_of(main);
        Schedule {
            sessions: main.sessions.clone(),
            starts: Starts::Generated(Generator {
                rate: Some((per_second, ArrivalPattern::Constant)),
                seed: self.seed ^ STREAM,
                request_limit: self.request_limit(),
                once: false,
                ramp_us: None,
                smoothness: None,
                series: None,
                users: Some(users),
                sampling,
                sampling_seed,
                sampling_skip: 0,
            }),
            shard: Default::default(),
        }
    }

    /// The dispatcher of the warm-up over `main`: its schedule, its concurrency, its duration.
    pub fn dispatch(&self, main: &Schedule) -> Dispatch {
        Dispatch::new(Arc::new(self.schedule(main)), self.concurrency, self.duration_ns)
            .with_concurrency_ramp(self.concurrency_ramp_ns)
            .with_prefill_limit(self.prefill, self.prefill_ramp_ns)
    }
}

/// How `main` takes its sessions: its generated runs' sampling, a fixed schedule's trace order.
fn sampling_of(main: &Schedule) -> (crate::replay::sampling::Sampling, u64) {
    match &main.starts {
        Starts::Generated(g) => (g.sampling, g.sampling_seed),
        Starts::Listed(_) => (Default::default(), 0),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::replay::dispatch::Peek;
    use crate::replay::schedule::{Start, Starts, generated};

    /// A fixed schedule of `n` two-turn sessions whose starts run in reverse session order.
    fn main(n: u32) -> Schedule {
        let sessions = (0..n)
            .map(|i| Session {
                id: None,
                turns: vec![
                    Turn { row: 2 * i, timing: TurnTiming::Immediately },
                    Turn { row: 2 * i + 1, timing: TurnTiming::After(5) },
                ],
                graph: None,
            })
            .collect();
        let starts =
            (0..n).map(|k| Start { offset_us: Some(u64::from(k) * 10), session: n - 1 - k, turns: 2 }).collect();
        Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() }
    }

    /// Sends everything the warm-up dispatcher gives, every request taking `service_ns`;
    /// returns (send time, row) in send order and the most in flight.
    fn drive(w: &Warmup, main: &Schedule, service_ns: u64) -> (Vec<(u64, u32)>, usize) {
        let mut d = w.dispatch(main);
        let (mut now, mut in_flight, mut sent, mut peak) = (0u64, Vec::<(u64, _)>::new(), Vec::new(), 0);
        for _ in 0..100_000 {
            let next_done = in_flight.iter().map(|(t, _)| *t).min();
            match d.peek(now) {
                Peek::Due { deadline_ns, .. } if next_done.is_none_or(|t| deadline_ns <= t) => {
                    now = now.max(deadline_ns);
                    let Some(job) = d.take(now) else { continue };
                    sent.push((now, job.row));
                    in_flight.push((now + service_ns, job));
                    peak = peak.max(in_flight.len());
                }
                Peek::Finished if in_flight.is_empty() => return (sent, peak),
                _ => {
                    let t = next_done.unwrap();
                    now = now.max(t);
                    let i = in_flight.iter().position(|(e, _)| *e == t).unwrap();
                    let (_, job) = in_flight.remove(i);
                    d.complete(&job, t);
                }
            }
        }
        panic!("the warm-up did not end");
    }

    #[test]
    fn first_turns_in_trace_order_reused_past_the_end() {
        // A fixed schedule's warm-up takes its sessions in trace order, not in start order.
        let w = Warmup { requests: Some(5), concurrency: Some(1), ..Warmup::default() };
        let (sent, peak) = drive(&w, &main(3), 1_000);
        assert_eq!(sent.iter().map(|s| s.1).collect::<Vec<_>>(), [0, 2, 4, 0, 2]);
        assert_eq!(peak, 1);
    }

    /// The warm-up takes the run's first sessions by the run's sampling; the run continues the
    /// same walk after the warm-up's draws (its sends and the one drawn ahead).
    #[test]
    fn the_run_continues_the_sampling_walk_after_the_warmups_sessions() {
        use crate::replay::sampling::{Sampler, Sampling};
        for sampling in [Sampling::Sequential, Sampling::Shuffle, Sampling::Random] {
            let rows: Vec<u32> = (0..7).collect();
            let sessions = rows
                .iter()
                .map(|&r| Session::chain(None, vec![Turn { row: r, timing: TurnTiming::Immediately }]))
                .collect();
            let run = generated(sessions, None, 1, Some(9)).unwrap().with_sampling(sampling, 5);
            let w = Warmup { requests: Some(3), concurrency: Some(1), ..Warmup::default() };
            let (sent, _) = drive(&w, &run, 1_000);
            let mut walk = Sampler::new(sampling, 5);
            let order: Vec<u32> = (0..13).map(|_| walk.next(7) as u32).collect();
            assert_eq!(sent.iter().map(|s| s.1).collect::<Vec<_>>(), order[..3], "{sampling:?}");
            assert_eq!(w.draws(3), 4);
            let after = run.after_warmup(w.draws(3));
            let measured: Vec<u32> = after.starts().map(|s| s.session).collect();
            assert_eq!(measured, order[4..13], "{sampling:?}");
        }
        // A fixed schedule replays every session whatever the warm-up sent.
        assert_eq!(main(3).after_warmup(4), main(3));
    }

    #[test]
    fn the_first_bound_reached_ends_it() {
        let w = Warmup { requests: Some(9), sessions: Some(4), concurrency: Some(2), ..Warmup::default() };
        assert_eq!(drive(&w, &main(10), 1_000).0.len(), 4);
        // 100 per second, constant, for 95 ms: sends at 0, 10, …, 90 ms.
        let w = Warmup {
            requests: Some(1000),
            duration_ns: Some(95_000_000),
            rate: Some((100.0, ArrivalPattern::Constant)),
            ..Warmup::default()
        };
        let (sent, _) = drive(&w, &main(3), 1_000);
        assert_eq!(
            sent.iter().map(|s| s.0 / 1_000_000).collect::<Vec<_>>(),
            (0..10).map(|k| k * 10).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_concurrency_caps_a_rate_and_paces_alone() {
        let rate = Some((1000.0, ArrivalPattern::Constant));
        let capped = Warmup { requests: Some(20), rate, concurrency: Some(3), ..Warmup::default() };
        assert_eq!(drive(&capped, &main(5), 50_000_000).1, 3);
        let free = Warmup { requests: Some(20), rate, ..Warmup::default() };
        assert!(drive(&free, &main(5), 50_000_000).1 > 3);
        let closed = Warmup { duration_ns: Some(1_000_000_000), concurrency: Some(2), ..Warmup::default() };
        let (sent, peak) = drive(&closed, &main(5), 100_000_000);
        assert_eq!((sent.len(), peak), (20, 2));
    }

    /// `users` users at 10 per second on sessions of three turns (rows `3 i + j`), for 1.05 s:
    /// AIPerf's steady state (a fresh user at 0, one with a turn left at 100 ms), each user's
    /// turns 200 ms apart, users replaced on schedule: a request every 100 ms, whole sessions.
    #[test]
    fn a_user_centric_warmup_sends_whole_sessions_at_the_users_schedule() {
        let sessions = (0..8)
            .map(|i| Session {
                id: None,
                turns: (0..3).map(|j| Turn { row: 3 * i + j, timing: TurnTiming::After(5) }).collect(),
                graph: None,
            })
            .collect();
        let main = Schedule { sessions, starts: Starts::Listed(Vec::new()), shard: Default::default() };
        let w = Warmup {
            duration_ns: Some(1_050_000_000),
            rate: Some((10.0, ArrivalPattern::Poisson)),
            users: Some(2),
            ..Warmup::default()
        };
        assert_eq!(w.schedule(&main).user_turn_gap_ns(), Some(200_000_000));
        let (sent, _) = drive(&w, &main, 1_000_000);
        let ms: Vec<(u64, u32)> = sent.iter().map(|&(t, row)| (t / 1_000_000, row)).collect();
        let rows = [0, 3, 1, 6, 2, 7, 9, 8, 10, 12, 11];
        assert_eq!(ms, (0..11).map(|k| (k * 100, rows[k as usize])).collect::<Vec<_>>());
        // A request bound counts requests, not sessions.
        let w = Warmup { requests: Some(4), duration_ns: None, ..w };
        assert_eq!(drive(&w, &main, 1_000_000).0.len(), 4);
    }

    #[test]
    fn without_a_bound_there_is_no_warmup() {
        assert!(!Warmup { concurrency: Some(4), ..Warmup::default() }.is_bounded());
        assert!(Warmup { duration_ns: Some(1), ..Warmup::default() }.is_bounded());
    }
}
