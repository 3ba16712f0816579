//! Walking a schedule's session runs lazily, AIPerf's user-centric users among them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::arrivals::{ArrivalPattern, Rng};
use super::model::{Schedule, Session, Start, Starts};
use crate::replay::sampling::{Sampler, Sampling};

/// Iterator over a schedule's session runs (see [`Schedule::starts`]).
#[derive(Clone, Debug)]
pub struct StartIter<'a> {
    pub(super) schedule: &'a Schedule,
    pub(super) cursor: StartCursor,
}

impl Iterator for StartIter<'_> {
    type Item = Start;

    fn next(&mut self) -> Option<Start> {
        self.cursor.next(self.schedule)
    }
}

/// The position in a schedule's session runs, kept apart from the schedule so that an owner of
/// the schedule can walk it lazily.
#[derive(Clone, Debug)]
pub struct StartCursor {
    next: usize,
    t_us: f64,
    rng: Rng,
    left: Option<u64>,
    /// User-centric runs: the users due, as (offset µs as `f64` bits, order, turns).
    users: Option<BinaryHeap<Reverse<(u64, u64, u32)>>>,
    /// Which session the next generated run starts.
    sampler: Sampler,
}

impl StartCursor {
    /// A cursor at the first run of `schedule`.
    pub fn new(schedule: &Schedule) -> StartCursor {
        let (seed, left, sampler) = match &schedule.starts {
            Starts::Generated(g) => {
                let mut sampler = Sampler::new(g.sampling, g.sampling_seed);
                sampler.skip(schedule.sessions.len(), g.sampling_skip);
                (g.seed, g.request_limit, sampler)
            }
            Starts::Listed(_) => (0, None, Sampler::new(Sampling::Sequential, 0)),
        };
        StartCursor { next: 0, t_us: 0.0, rng: Rng::new(seed), left, users: None, sampler }
    }

    /// The next run of `schedule` (the schedule this cursor was made for) in its shard.
    pub fn next(&mut self, schedule: &Schedule) -> Option<Start> {
        let shard = schedule.shard;
        // Sessions are dealt round-robin: a shard past the last session has none (and an
        // endless generator would otherwise never yield).
        if shard.index as usize >= schedule.sessions.len() {
            return None;
        }
        loop {
            let s = self.next_of_whole(schedule)?;
            if shard.has(s.session) {
                return Some(s);
            }
        }
    }

    /// The index of the run last returned by [`StartCursor::next`] among the runs of the whole
    /// (unsharded) schedule: the same run has the same index in every shard.
    pub fn index(&self) -> u64 {
        self.next.saturating_sub(1) as u64
    }

    /// The next run of the whole schedule.
    fn next_of_whole(&mut self, schedule: &Schedule) -> Option<Start> {
        let g = match &schedule.starts {
            Starts::Listed(v) => {
                let s = v.get(self.next).copied();
                self.next += 1;
                return s;
            }
            Starts::Generated(g) => g,
        };
        let sessions = &schedule.sessions;
        if sessions.is_empty() || self.left == Some(0) || (g.once && self.left.is_none() && self.next >= sessions.len())
        {
            return None;
        }
        let k = self.next;
        let session = self.sampler.next(sessions.len());
        let len = sessions[session].turns.len() as u64;
        if let (Some(users), Some((per_second, _))) = (g.users, g.rate) {
            return self.next_user(sessions, users, per_second, session, len);
        }
        let turns = self.left.map_or(len, |l| l.min(len));
        if let Some(l) = &mut self.left {
            *l -= turns;
        }
        let offset_us = g.rate.map(|(per_second, pattern)| {
            if k > 0 {
                // The gap after an arrival follows the rate at that arrival.
                let per_second = g.rate_at(per_second, self.t_us);
                self.t_us += match pattern {
                    ArrivalPattern::Constant => 1e6 / per_second,
                    ArrivalPattern::Poisson => self.rng.exponential() * 1e6 / per_second,
                    ArrivalPattern::Gamma => {
                        let k = g.smoothness.unwrap_or(1.0);
                        self.rng.gamma(k) / k * 1e6 / per_second
                    }
                };
            }
            // `as` saturates: an offset past u64::MAX µs is never reached anyway.
            self.t_us.round() as u64
        });
        self.next += 1;
        Some(Start { offset_us, session: session as u32, turns: turns.min(u64::from(u32::MAX)) as u32 })
    }
}

impl StartCursor {
    /// The next user of a user-centric run ([`user_centric`]): its session is the next one in
    /// order; the initial users first, then each user's replacement, due when the user it
    /// replaces would have sent its last turn plus one turn gap.
    fn next_user(
        &mut self,
        sessions: &[Session],
        users: u32,
        per_second: f64,
        session: usize,
        len: u64,
    ) -> Option<Start> {
        let gap_us = turn_gap_us(users, per_second);
        let heap = self.users.get_or_insert_with(|| {
            let mean = sessions.iter().map(|s| s.turns.len() as f64).sum::<f64>() / sessions.len() as f64;
            let initial = user_centric(users, mean.round() as u64);
            let stagger_us = 1e6 / per_second;
            initial
                .into_iter()
                .map(|(order, turns)| Reverse(((order as f64 * stagger_us).to_bits(), order, turns)))
                .collect()
        });
        let Reverse((at, order, limit)) = heap.pop()?;
        let at_us = f64::from_bits(at);
        let planned = len.min(u64::from(limit));
        let turns = self.left.map_or(planned, |l| l.min(planned));
        if let Some(l) = &mut self.left {
            *l -= turns;
        }
        // Non-negative `f64`s order as their bits do.
        heap.push(Reverse(((at_us + planned.max(1) as f64 * gap_us).to_bits(), order, u32::MAX)));
        self.next += 1;
        Some(Start {
            offset_us: Some(at_us.round() as u64),
            session: session as u32,
            turns: turns.min(u64::from(u32::MAX)) as u32,
        })
    }
}

/// A user-centric run's gap between a user's turns (µs): `users` users sending once per gap
/// make `per_second` requests per second.
pub fn turn_gap_us(users: u32, per_second: f64) -> f64 {
    f64::from(users) * 1e6 / per_second
}

/// AIPerf's user-centric start (its `UserCentricStrategy`): the run begins in a steady state, as
/// if `users` users had been sending sessions of `session_turns` turns (the dataset's mean)
/// for ever. User `i` of `0..users` is `(users − i) × lifetime / users` gaps into its session
/// (lifetime = `session_turns − 1`, at least 1) and sends the `lifetime − that` turns it has
/// left (the oldest, done, sends none), in a staggered order one `1 / rate` apart; a fresh user
/// with all its turns goes first. Returns (order, turns), turns `u32::MAX` for the whole session.
pub fn user_centric(users: u32, session_turns: u64) -> Vec<(u64, u32)> {
    let n = u64::from(users.max(1));
    let lifetime = session_turns.saturating_sub(1).max(1);
    // When the user count and the lifetime share a factor the positions repeat: step through
    // the slots by the smallest step coprime with the user count instead.
    let step = (gcd(n, lifetime) > 1).then(|| (2..n).find(|&s| gcd(n, s) == 1).unwrap_or(1));
    let mut out = vec![(0, u32::MAX)];
    for i in 0..n {
        let age = (n - i) * lifetime;
        let left = lifetime - age / n;
        if left == 0 {
            continue;
        }
        let slot = step.map_or(age % n, |s| (i * s) % n);
        out.push((n - slot, u32::try_from(left).unwrap_or(u32::MAX)));
    }
    out
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}
