//! The replay schedule as data: when each session starts and how its later turns follow.
//!
//! A [`Schedule`] is a list of [`Start`]s sorted by offset (microseconds from the start of the
//! benchmark), each naming a [`Session`]: the rows it sends in order and, for every later turn,
//! what it waits for after the previous turn completed ([`TurnTiming`]). A dispatcher paces the
//! starts by absolute deadlines; nothing here reads a clock. Poisson arrivals take a seeded RNG.

//!
//! `build` makes a schedule of a trace, `arrivals` times its generated runs, `cursor` walks them
//! (AIPerf's user-centric users among them), `shard` keeps one part of them.

mod arrivals;
mod build;
mod cursor;
mod shard;
#[cfg(test)]
mod tests;

pub use arrivals::{ArrivalPattern, Generator, RATE_RAMP_UPDATE_US, RateSeries, Rng, ramped_rate, series_rate};
#[cfg(test)]
pub(crate) use build::generated;
pub(crate) use build::strip_absolute_times;
pub use build::{RowProblem, ScheduleError, Timing, build, endless, sessions};
pub use cursor::{StartCursor, StartIter, turn_gap_us, user_centric};
pub use shard::{Shard, ShardError};

use crate::replay::sampling::{Sampler, Sampling};

/// How a later turn of a session is timed once the previous turn has completed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TurnTiming {
    /// At this offset from the benchmark start (the row's own `timestamp`), or at once if passed.
    At(u64),
    /// This many microseconds after the previous turn completed (the row's `delay`).
    After(u64),
    /// As soon as the previous turn completed.
    Immediately,
}

/// One turn: a row of the trace and its timing (the first turn's timing is its [`Start`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Turn {
    /// Index into the trace's rows.
    pub row: u32,
    pub timing: TurnTiming,
}

/// The rows of one session, in the order they are sent.
///
/// Without a [`Graph`] the turns form a chain: each later turn waits for the one before. A
/// session that starts sub-agents (AIPerf's DAG conversations) has one: its turns are those of
/// the root and of every sub-agent it starts, in an order where every turn comes after the turns
/// it waits for.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// The trace's `session_id`, `None` for a single-turn row without one.
    pub id: Option<Box<str>>,
    pub turns: Vec<Turn>,
    /// Which turns each turn waits for, when not only the previous one.
    pub graph: Option<Box<Graph>>,
}

impl Session {
    /// A chain of turns.
    pub fn chain(id: Option<Box<str>>, turns: Vec<Turn>) -> Session {
        Session { id, turns, graph: None }
    }

    /// The turns that wait for turn `turn` (each is due once every turn it waits for ended).
    pub fn next_turns(&self, turn: u32) -> impl Iterator<Item = u32> + '_ {
        let (graph, chain) = match &self.graph {
            Some(g) => (g.next_of(turn), None),
            None => (&[][..], turn.checked_add(1).filter(|&n| (n as usize) < self.turns.len())),
        };
        graph.iter().copied().chain(chain)
    }

    /// How many turns turn `turn` waits for.
    pub fn waits_for(&self, turn: u32) -> u32 {
        match &self.graph {
            Some(g) => g.waits_for(turn),
            None => u32::from(turn > 0),
        }
    }

    /// The turn whose end the [`TurnTiming`] of turn `turn` counts from (`None` for the first).
    pub fn timed_after(&self, turn: u32) -> Option<u32> {
        match &self.graph {
            Some(g) => g.after.get(turn as usize).copied().flatten(),
            None => turn.checked_sub(1),
        }
    }
}

/// One turn of a [`Graph`]: the turn it follows and the turns it joins.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    /// The turn whose end times this one (the previous turn of its own session, or the turn that
    /// started its sub-agent); `None` only for the first turn.
    pub after: Option<u32>,
    /// Further turns it waits for: the last turns of the sub-agents it joins.
    pub joins: Vec<u32>,
}

/// The turns of a session that branches, as AIPerf's DAG replay dispatches them: a turn is due
/// by its [`TurnTiming`] from the end of the turn it follows when the sub-agents it joins ended no
/// later than that turn; otherwise when the last of them ends (AIPerf sends a join that waited
/// at once, without its delay).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    after: Vec<Option<u32>>,
    /// How many turns each turn waits for.
    waits: Vec<u32>,
    /// The turns waiting for each turn: `next[next_ends[k - 1]..next_ends[k]]` for turn `k`.
    next_ends: Vec<u32>,
    next: Vec<u32>,
}

impl Graph {
    /// The graph of `nodes`, one per turn in send order; `None` unless the first has no `after`,
    /// every other has one, and every turn waited for comes earlier.
    pub fn new(nodes: &[Node]) -> Option<Graph> {
        let n = u32::try_from(nodes.len()).ok()?;
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let mut waits = Vec::with_capacity(nodes.len());
        for (k, node) in (0..n).zip(nodes) {
            if (k == 0) != node.after.is_none() {
                return None;
            }
            let mut w = 0u32;
            for &p in node.after.iter().chain(&node.joins) {
                if p >= k {
                    return None;
                }
                edges.push((p, k));
                w += 1;
            }
            waits.push(w);
        }
        edges.sort_unstable();
        let mut next_ends = Vec::with_capacity(nodes.len());
        let mut at = 0usize;
        for k in 0..n {
            while at < edges.len() && edges[at].0 == k {
                at += 1;
            }
            next_ends.push(at as u32);
        }
        Some(Graph {
            after: nodes.iter().map(|x| x.after).collect(),
            waits,
            next_ends,
            next: edges.into_iter().map(|e| e.1).collect(),
        })
    }

    fn next_of(&self, turn: u32) -> &[u32] {
        let k = turn as usize;
        let end = self.next_ends.get(k).copied().unwrap_or(0) as usize;
        let start = if k == 0 { 0 } else { self.next_ends.get(k - 1).copied().unwrap_or(0) as usize };
        self.next.get(start..end).unwrap_or(&[])
    }

    fn waits_for(&self, turn: u32) -> u32 {
        self.waits.get(turn as usize).copied().unwrap_or(0)
    }
}

/// One session run in the schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Start {
    /// Send time of the first turn in microseconds from the benchmark start; `None` = as soon as
    /// the concurrency limit allows.
    pub offset_us: Option<u64>,
    /// Index into [`Schedule::sessions`].
    pub session: u32,
    /// How many of the session's turns this run sends (a request count can cut the last one short).
    pub turns: u32,
}

/// The whole plan of a run: the sessions and, lazily, the session runs in start order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    pub sessions: Vec<Session>,
    pub starts: Starts,
    /// The part of the runs this process sends (the whole run by default).
    pub shard: Shard,
}

/// The session runs of a schedule, in start order.
#[derive(Clone, Debug, PartialEq)]
pub enum Starts {
    /// A fixed schedule: one run per kept session, sorted by offset.
    Listed(Vec<Start>),
    /// Rate or as-fast-as-allowed runs, generated on demand (memory does not grow with the
    /// request count or the duration): sessions are taken by the generator's [`Sampling`]
    /// (in order by default, reused past the trace's end).
    Generated(Generator),
}

impl Default for Starts {
    fn default() -> Self {
        Starts::Listed(Vec::new())
    }
}

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
