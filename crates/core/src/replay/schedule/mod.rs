//! The replay schedule as data: when each session starts and how its later turns follow.
//!
//! A [`Schedule`] is a list of [`Start`]s sorted by offset (microseconds from the start of the
//! benchmark), each naming a [`Session`]: the rows it sends in order and, for every later turn,
//! what it waits for after the previous turn completed ([`TurnTiming`]). A dispatcher paces the
//! starts by absolute deadlines; nothing here reads a clock. Poisson arrivals take a seeded RNG.
//!
//! `model` holds the schedule's data, `build` makes a schedule of a trace, `arrivals` times its
//! generated runs, `cursor` walks them (AIPerf's user-centric users among them), `shard` keeps one
//! part of them.

mod arrivals;
mod build;
mod cursor;
mod model;
mod shard;
#[cfg(test)]
mod tests;

pub use arrivals::{ArrivalPattern, Generator, RATE_RAMP_UPDATE_US, RateSeries, Rng, ramped_rate, series_rate};
#[cfg(test)]
pub(crate) use build::generated;
pub(crate) use build::strip_absolute_times;
pub use build::{RowProblem, ScheduleError, Timing, build, build_of, endless, sessions};
pub use cursor::{StartCursor, StartIter, turn_gap_us, user_centric};
pub use model::{Graph, Node, Schedule, Session, Start, Starts, Turn, TurnTiming, Turns};
pub use shard::{Shard, ShardError};

use crate::replay::sampling::{Sampler, Sampling};

impl Schedule {
    /// The same schedule restricted to `shard`.
    pub fn sharded(self, shard: Shard) -> Schedule {
        Schedule { shard, ..self }
    }

    /// The same schedule with its generated rate following `series` ([`Generator::rate_at`]).
    pub fn with_rate_series(self, series: Option<RateSeries>) -> Schedule {
        self.with_rated(|g| g.series = series)
    }

    /// The same schedule with gamma gaps of shape `smoothness` ([`ArrivalPattern::Gamma`]).
    pub fn with_smoothness(self, smoothness: Option<f64>) -> Schedule {
        self.with_generated(|g| g.smoothness = smoothness)
    }

    /// The same schedule with its generated rate ramping over `ramp_us` ([`ramped_rate`]); a
    /// schedule without a generated rate is returned as it is.
    pub fn with_rate_ramp(self, ramp_us: Option<u64>) -> Schedule {
        self.with_rated(|g| g.ramp_us = ramp_us)
    }

    /// The same schedule with its generated runs taking sessions by `sampling`, seeded from the
    /// run's `seed` ([`Sampler`]); a fixed schedule is returned as it is.
    pub fn with_sampling(self, sampling: Sampling, seed: u64) -> Schedule {
        self.with_generated(|g| {
            g.sampling = sampling;
            g.sampling_seed = seed;
        })
    }

    /// The same schedule after a warm-up that drew `draws` sessions from the same sampler
    /// ([`warmup::draws`](crate::replay::warmup::draws)): generated runs take the sessions that
    /// follow them, as AIPerf's profiling phase continues its warm-up's sampler. A fixed
    /// schedule is returned as it is: AIPerf replays every conversation of a trace at its
    /// timestamps whatever its warm-up sent.
    pub fn after_warmup(self, draws: u64) -> Schedule {
        self.with_generated(|g| g.sampling_skip = draws)
    }

    /// The same schedule shared by `users` users ([`user_centric`]) when it has a generated
    /// rate; otherwise it is returned as it is.
    pub fn with_users(self, users: Option<u32>) -> Schedule {
        self.with_rated(|g| g.users = users)
    }

    /// The same schedule with `set` applied to its generator, if it has one.
    fn with_generated(mut self, set: impl FnOnce(&mut Generator)) -> Schedule {
        if let Starts::Generated(g) = &mut self.starts {
            set(g);
        }
        self
    }

    /// The same schedule with `set` applied to its generator, if it has one with a rate.
    fn with_rated(mut self, set: impl FnOnce(&mut Generator)) -> Schedule {
        if let Starts::Generated(g) = &mut self.starts
            && g.rate.is_some()
        {
            set(g);
        }
        self
    }

    /// A user-centric run's gap between a user's turns, in nanoseconds.
    pub fn user_turn_gap_ns(&self) -> Option<u64> {
        match &self.starts {
            Starts::Generated(Generator { users: Some(u), rate: Some((r, _)), .. }) => {
                Some((turn_gap_us(*u, *r) * 1000.0).round() as u64)
            }
            _ => None,
        }
    }

    /// The session runs, in start order.
    pub fn starts(&self) -> StartIter<'_> {
        StartIter { schedule: self, cursor: StartCursor::new(self) }
    }

    /// Total number of requests the schedule sends; `None` when only a duration ends it (or,
    /// for a shard of a generated run of more than [`COUNTED_SHARD_RUNS`] session runs, when
    /// counting its part would take too long).
    pub fn request_count(&self) -> Option<u64> {
        if !self.shard.is_whole() {
            let limited = match &self.starts {
                Starts::Listed(v) => v.len() as u64,
                Starts::Generated(g) => match (g.request_limit, g.once) {
                    (Some(n), _) => n,
                    (None, true) => self.sessions.len() as u64,
                    (None, false) => return None,
                },
            };
            return (limited <= COUNTED_SHARD_RUNS).then(|| self.starts().map(|s| u64::from(s.turns)).sum());
        }
        match &self.starts {
            Starts::Listed(v) => Some(v.iter().map(|s| s.turns as u64).sum()),
            Starts::Generated(g) => match (g.request_limit, g.once) {
                (Some(n), _) => Some(n),
                (None, true) if g.sampling == Sampling::Random => {
                    let n = self.sessions.len();
                    let mut sampler = Sampler::new(g.sampling, g.sampling_seed);
                    sampler.skip(n, g.sampling_skip);
                    Some((0..n).map(|_| self.sessions[sampler.next(n)].turns.len() as u64).sum())
                }
                (None, true) => Some(self.sessions.iter().map(|s| s.turns.len() as u64).sum()),
                (None, false) => None,
            },
        }
    }
}

/// Most session runs walked to count a shard's requests (see [`Schedule::request_count`]).
pub const COUNTED_SHARD_RUNS: u64 = 1 << 24;
