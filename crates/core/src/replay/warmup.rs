//! The warm-up phase before a run, as AIPerf's (`--warmup-request-count`,
//! `--num-warmup-sessions`, `--warmup-duration`, `--warmup-concurrency`,
//! `--warmup-request-rate`, `--warmup-arrival-pattern`): requests that warm the server's
//! connections and caches and are never measured.
//!
//! A warm-up sends the run's sessions whole, as AIPerf 0.13.0's does: each later turn after
//! the answer to the one before and its `delay` (a fixed schedule's timestamps unused, AIPerf's
//! warm-up being a rate phase). The sessions are taken by the run's sampling (AIPerf's
//! `--dataset-sampling-strategy`; a fixed schedule's in trace order) from the start of its walk,
//! as AIPerf's warm-up takes them from the sampler its profiling phase then continues
//! ([`Warmup::draws`], [`Schedule::after_warmup`]). It stops at whichever of its bounds comes
//! first, as AIPerf's stop conditions apply them while it sends: a number of requests (turns:
//! a session in progress when it is reached sends no more), of sessions (no session starts
//! after that many started; those started send all their turns), or a duration (nothing is
//! sent after it). Its load is a rate of session starts (with its arrival pattern; a
//! concurrency, when given, caps the sessions in progress) or, without a rate, a concurrency
//! of sessions (1 unless given), as AIPerf's.
//!
//! A user-centric warm-up (AIPerf's `type: user_centric` warm-up phase of a config file) sends
//! whole sessions too: its users share its rate as the run's users do
//! ([`user_centric`](crate::replay::schedule::user_centric)), each user's turns one turn gap
//! apart, the sessions taken in the run's sampling order. Its users are its own: none carries
//! on into the run, whose users start afresh at time zero, as AIPerf's phases do.

use std::sync::Arc;

use crate::replay::dispatch::Dispatch;
use crate::replay::schedule::{ArrivalPattern, Generator, Schedule, Starts, strip_absolute_times};

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

    /// Whether a count bounds the warm-up at nothing (it sends no request).
    pub fn sends_nothing(&self) -> bool {
        self.requests == Some(0) || self.sessions == Some(0)
    }

    /// The warm-up's schedule over `main`'s sessions: whole sessions, each later turn after the
    /// previous one's answer and its delay, taken by `main`'s sampling from the start of its
    /// walk (reused past the end as `main`'s runs are); the dispatcher ([`Warmup::dispatch`])
    /// applies the counts as they are reached.
    pub fn schedule(&self, main: &Schedule) -> Schedule {
        if let (Some(users), Some((per_second, _))) = (self.users, self.rate) {
            return self.users_schedule(main, users, per_second);
        }
        let mut sessions = main.sessions.clone();
        strip_absolute_times(&mut sessions);
        let (sampling, sampling_seed) = sampling_of(main);
        Schedule {
            sessions,
            starts: Starts::Generated(Generator {
                rate: self.rate,
                seed: self.seed ^ STREAM,
                request_limit: None,
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

    /// The sessions the warm-up that `dispatch` ran drew from the sampler it shares with the
    /// run. AIPerf's request-rate warm-up (every warm-up but a user-centric one) draws the
    /// session it starts next as soon as it started the one before, so when it ends one more
    /// was drawn than started and the run begins one session further on; unless the request
    /// that reached a count was a session's first turn (AIPerf's final credit a start: it stops
    /// before drawing again). A user-centric warm-up draws a session as each user starts.
    pub fn draws(&self, dispatch: &Dispatch) -> u64 {
        let started = dispatch.runs_started();
        if self.users.is_some() && self.rate.is_some() || dispatch.ended_by_a_start() {
            started
        } else {
            started.saturating_add(1)
        }
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
                request_limit: self.requests,
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

    /// The dispatcher of the warm-up over `main`: its schedule, its concurrency, its duration
    /// and counts (a user-centric warm-up's request count is its schedule's).
    pub fn dispatch(&self, main: &Schedule) -> Dispatch {
        let counts =
            if self.users.is_some() && self.rate.is_some() { (None, None) } else { (self.requests, self.sessions) };
        Dispatch::new(Arc::new(self.schedule(main)), self.concurrency, self.duration_ns)
            .with_concurrency_ramp(self.concurrency_ramp_ns)
            .with_prefill_limit(self.prefill, self.prefill_ramp_ns)
            .with_counts(counts.0, counts.1)
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
    use crate::replay::sampling::{Sampler, Sampling};
    use crate::replay::schedule::{Session, Start, Starts, Turn, TurnTiming, generated};

    /// A fixed schedule of `n` sessions of `turns` turns (rows `turns × i + j`; a later turn
    /// 5 µs after the previous one's answer, and at the timestamp `1 s × j`, which a warm-up
    /// does not keep) whose starts run in reverse session order.
    fn main(n: u32, turns: u32) -> Schedule {
        let sessions = (0..n)
            .map(|i| {
                let turn = |j: u32| Turn {
                    row: turns * i + j,
                    timing: if j == 0 { TurnTiming::Immediately } else { TurnTiming::After(5) },
                };
                Session::chain(None, (0..turns).map(turn).collect::<Vec<_>>())
            })
            .collect();
        let starts = (0..n).map(|k| Start { offset_us: Some(u64::from(k) * 10), session: n - 1 - k, turns }).collect();
        Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() }
    }

    /// What a warm-up sent: (send time, row) in send order, the most in flight, and its
    /// dispatcher at the end.
    struct Sent {
        sent: Vec<(u64, u32)>,
        peak: usize,
        dispatch: Dispatch,
    }

    impl Sent {
        fn rows(&self) -> Vec<u32> {
            self.sent.iter().map(|s| s.1).collect()
        }
    }

    /// Sends everything the warm-up dispatcher gives, every request taking `service_ns`.
    fn drive(w: &Warmup, main: &Schedule, service_ns: u64) -> Sent {
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
                Peek::Finished if in_flight.is_empty() => return Sent { sent, peak, dispatch: d },
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

    /// AIPerf's warm-up sends whole conversations: each later turn once the answer to the one
    /// before came and its delay passed (a fixed schedule's timestamps unused), the sessions in
    /// trace order (not the fixed schedule's start order), reused past the end; a request
    /// count ends the session in progress.
    #[test]
    fn whole_sessions_in_trace_order_each_turn_after_the_answer_and_its_delay() {
        let mut timed = main(2, 3);
        for s in &mut timed.sessions {
            for (j, t) in s.turns.iter_mut().enumerate().skip(1) {
                t.timing = TurnTiming::At(1_000_000 * j as u64);
            }
        }
        let w = Warmup { requests: Some(8), concurrency: Some(1), ..Warmup::default() };
        let out = drive(&w, &main(2, 3), 1_000);
        assert_eq!(out.rows(), [0, 1, 2, 3, 4, 5, 0, 1]);
        // 1 µs each, 5 µs between the turns of a session; a session starts as the last ends.
        let at: Vec<u64> = out.sent.iter().map(|s| s.0).collect();
        assert_eq!(at, [0, 6_000, 12_000, 13_000, 19_000, 25_000, 26_000, 32_000]);
        assert_eq!(out.peak, 1);
        let out = drive(&w, &timed, 1_000);
        assert_eq!(out.rows(), [0, 1, 2, 3, 4, 5, 0, 1]);
        assert_eq!(out.sent[1].0, 1_000, "a timestamp is not waited for");
    }

    /// A request count counts turns and stops every session in progress where it is reached:
    /// two sessions at a time, four requests, two turns of each.
    #[test]
    fn a_request_count_cuts_the_sessions_in_progress() {
        let w = Warmup { requests: Some(4), concurrency: Some(2), ..Warmup::default() };
        let out = drive(&w, &main(4, 3), 1_000);
        assert_eq!(out.rows(), [0, 3, 1, 4]);
        assert_eq!(out.dispatch.runs_started(), 2);
        // Ended on a later turn: the session drawn after the second start is drawn too.
        assert!(!out.dispatch.ended_by_a_start());
        assert_eq!(w.draws(&out.dispatch), 3);
    }

    /// A session count starts that many sessions, each sending all its turns, however many
    /// requests that takes (a request count still ends it first when smaller).
    #[test]
    fn a_session_count_lets_the_sessions_started_finish() {
        let w = Warmup { sessions: Some(2), concurrency: Some(2), ..Warmup::default() };
        let out = drive(&w, &main(4, 3), 1_000);
        assert_eq!(out.rows(), [0, 3, 1, 4, 2, 5]);
        assert_eq!(w.draws(&out.dispatch), 3);
        let w = Warmup { requests: Some(9), sessions: Some(4), concurrency: Some(2), ..Warmup::default() };
        assert_eq!(drive(&w, &main(10, 2), 1_000).sent.len(), 8);
        let w = Warmup { requests: Some(5), sessions: Some(4), concurrency: Some(2), ..Warmup::default() };
        assert_eq!(drive(&w, &main(10, 2), 1_000).sent.len(), 5);
    }

    /// The sessions the warm-up drew, where the run's sampler continues, as AIPerf 0.13.0 draws
    /// them: one ahead of the last start, unless a count was reached by a session's first turn.
    #[test]
    fn the_draws_are_aiperfs() {
        let one = Warmup { concurrency: Some(1), ..Warmup::default() };
        let cases = [
            // AIPerf at `--warmup-request-count 4 --concurrency 1` on sessions of 3 turns sends
            // s0's three and s1's first, and its run begins at s2.
            (Warmup { requests: Some(4), ..one }, 3, 4, 2),
            // `--warmup-request-count 2` on single-turn sessions: s0, s1; the run begins at s2.
            (Warmup { requests: Some(2), ..one }, 1, 2, 2),
            (Warmup { requests: Some(5), ..one }, 3, 5, 3),
            (Warmup { sessions: Some(2), ..one }, 1, 2, 2),
            (Warmup { sessions: Some(2), ..one }, 3, 6, 3),
        ];
        for (w, turns, requests, draws) in cases {
            let out = drive(&w, &main(6, turns), 1_000);
            assert_eq!((out.sent.len(), w.draws(&out.dispatch)), (requests, draws), "{w:?}, {turns} turns");
        }
        // A duration ends it after the next session was drawn.
        let w = Warmup { duration_ns: Some(20_000), ..one };
        let out = drive(&w, &main(6, 3), 1_000);
        assert_eq!((out.sent.len(), out.dispatch.runs_started(), w.draws(&out.dispatch)), (5, 2, 3));
    }

    /// The warm-up takes the run's first sessions by the run's sampling; the run continues the
    /// same walk after the warm-up's draws.
    #[test]
    fn the_run_continues_the_sampling_walk_after_the_warmups_sessions() {
        for sampling in [Sampling::Sequential, Sampling::Shuffle, Sampling::Random] {
            // A run over those sessions as fast as allowed, taken by `sampling`.
            let run = generated(main(7, 2).sessions, None, 1, Some(40)).unwrap().with_sampling(sampling, 5);
            let w = Warmup { requests: Some(5), concurrency: Some(1), ..Warmup::default() };
            let out = drive(&w, &run, 1_000);
            let mut walk = Sampler::new(sampling, 5);
            let order: Vec<u32> = (0..23).map(|_| walk.next(7) as u32).collect();
            let want: Vec<u32> = order[..3].iter().flat_map(|s| [2 * s, 2 * s + 1]).take(5).collect();
            assert_eq!(out.rows(), want, "{sampling:?}");
            assert_eq!(w.draws(&out.dispatch), 3);
            let after = run.after_warmup(w.draws(&out.dispatch));
            let measured: Vec<u32> = after.starts().map(|s| s.session).collect();
            assert_eq!(measured, order[3..23], "{sampling:?}");
        }
        // A fixed schedule replays every session whatever the warm-up sent.
        assert_eq!(main(3, 2).after_warmup(4), main(3, 2));
    }

    #[test]
    fn a_rate_paces_the_session_starts_and_a_duration_ends_it() {
        // 100 sessions per second, constant: starts at 0, 10, …, 90 ms, each session's second
        // turn 6 µs after its first (1 µs to answer, 5 µs of delay).
        let rate = Some((100.0, ArrivalPattern::Constant));
        let w = Warmup { requests: Some(20), rate, ..Warmup::default() };
        let out = drive(&w, &main(3, 2), 1_000);
        let want: Vec<u64> = (0..10).flat_map(|k| [k * 10_000_000, k * 10_000_000 + 6_000]).collect();
        assert_eq!(out.sent.iter().map(|s| s.0).collect::<Vec<_>>(), want);
        // For 95 ms: the same ten starts, nothing sent after it.
        let w = Warmup { duration_ns: Some(95_000_000), rate, ..Warmup::default() };
        let out = drive(&w, &main(3, 2), 1_000);
        assert_eq!(out.dispatch.runs_started(), 10);
        assert!(out.sent.iter().all(|s| s.0 < 95_000_000), "{:?}", out.sent);
    }

    #[test]
    fn a_concurrency_caps_the_sessions_in_progress() {
        let rate = Some((1000.0, ArrivalPattern::Constant));
        let capped = Warmup { requests: Some(20), rate, concurrency: Some(3), ..Warmup::default() };
        assert_eq!(drive(&capped, &main(5, 2), 50_000_000).peak, 3);
        let free = Warmup { requests: Some(20), rate, ..Warmup::default() };
        assert!(drive(&free, &main(5, 2), 50_000_000).peak > 3);
        // Two sessions at a time for 1 s, 100 ms a request: ten requests each.
        let closed = Warmup { duration_ns: Some(1_000_000_000), concurrency: Some(2), ..Warmup::default() };
        let out = drive(&closed, &main(5, 2), 100_000_000);
        assert_eq!((out.sent.len(), out.peak), (20, 2));
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
        let out = drive(&w, &main, 1_000_000);
        let ms: Vec<(u64, u32)> = out.sent.iter().map(|&(t, row)| (t / 1_000_000, row)).collect();
        let rows = [0, 3, 1, 6, 2, 7, 9, 8, 10, 12, 11];
        assert_eq!(ms, (0..11).map(|k| (k * 100, rows[k as usize])).collect::<Vec<_>>());
        // Each user drew its session as it started.
        assert_eq!(w.draws(&out.dispatch), out.dispatch.runs_started());
        // A request bound counts requests, not sessions.
        let w = Warmup { requests: Some(4), duration_ns: None, ..w };
        assert_eq!(drive(&w, &main, 1_000_000).sent.len(), 4);
    }

    #[test]
    fn without_a_bound_there_is_no_warmup() {
        assert!(!Warmup { concurrency: Some(4), ..Warmup::default() }.is_bounded());
        assert!(Warmup { duration_ns: Some(1), ..Warmup::default() }.is_bounded());
        assert!(Warmup { sessions: Some(0), ..Warmup::default() }.sends_nothing());
        assert!(!Warmup { requests: Some(1), ..Warmup::default() }.sends_nothing());
    }
}
