//! The replay schedule as data: when each session starts and how its later turns follow.
//!
//! A [`Schedule`] is a list of [`Start`]s sorted by offset (microseconds from the start of the
//! benchmark), each naming a [`Session`]: the rows it sends in order and, for every later turn,
//! what it waits for after the previous turn completed ([`TurnTiming`]). A dispatcher paces the
//! starts by absolute deadlines; nothing here reads a clock. Poisson arrivals take a seeded RNG.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::hashing::FastMap;

use crate::duration;
use crate::replay::sampling::{Sampler, Sampling};
use crate::trace::{Number, Trace};

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
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// The trace's `session_id`, `None` for a single-turn row without one.
    pub id: Option<Box<str>>,
    pub turns: Vec<Turn>,
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

/// A deterministic part of a schedule: shard `index` of `count` sends the session runs of the
/// sessions whose index is `index` modulo `count`, at the times of the whole run. A session's
/// turns never cross shards (prefix reuse and turn order are kept), the shards are disjoint and
/// together they are the whole run; nothing is re-timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 0-based, below `count` (Kubernetes numbers the pods of an Indexed Job so).
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

/// An impossible shard.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    #[error("'{0}' is not of the form K/N (e.g. 0/4)")]
    Syntax(String),
    #[error("shard {index}/{count}: K must be from 0 to N-1 and N at least 1")]
    OutOfRange { index: u64, count: u64 },
}

impl Shard {
    /// The whole run (shard 0 of 1).
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// A shard, checked: `index < count`.
    pub fn new(index: u64, count: u64) -> Result<Shard, ShardError> {
        match (u32::try_from(index), u32::try_from(count)) {
            (Ok(i), Ok(c)) if c >= 1 && i < c => Ok(Shard { index: i, count: c }),
            _ => Err(ShardError::OutOfRange { index, count }),
        }
    }

    /// Parses `K/N`.
    pub fn parse(s: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (k, n) = s.trim().split_once('/').ok_or_else(syntax)?;
        let k: u64 = k.trim().parse().map_err(|_| syntax())?;
        let n: u64 = n.trim().parse().map_err(|_| syntax())?;
        Shard::new(k, n)
    }

    /// Whether this is the whole run.
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether session `session` (an index into [`Schedule::sessions`]) belongs to this shard.
    pub fn has(self, session: u32) -> bool {
        session % self.count == self.index
    }

    /// This shard's part of a total (a concurrency ceiling, a warm-up count) divided as evenly
    /// as possible: the first `total % count` shards get one more.
    pub fn part_of(self, total: u64) -> u64 {
        let (n, k) = (u64::from(self.count), u64::from(self.index));
        total / n + u64::from(k < total % n)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
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
    /// share the rate ([`user_centric`]).
    pub users: Option<u32>,
    /// Which session each run starts (AIPerf's `--dataset-sampling-strategy`).
    pub sampling: Sampling,
    /// The run's `--random-seed`, from which the sampler's seed is derived.
    pub sampling_seed: u64,
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

impl Schedule {
    /// The same schedule restricted to `shard`.
    pub fn sharded(self, shard: Shard) -> Schedule {
        Schedule { shard, ..self }
    }

    /// The same schedule with its generated rate following `series` ([`Generator::rate_at`]).
    pub fn with_rate_series(mut self, series: Option<RateSeries>) -> Schedule {
        if let Starts::Generated(g) = &mut self.starts
            && g.rate.is_some()
        {
            g.series = series;
        }
        self
    }

    /// The same schedule with gamma gaps of shape `smoothness` ([`ArrivalPattern::Gamma`]).
    pub fn with_smoothness(mut self, smoothness: Option<f64>) -> Schedule {
        if let Starts::Generated(g) = &mut self.starts {
            g.smoothness = smoothness;
        }
        self
    }

    /// The same schedule with its generated rate ramping over `ramp_us` ([`ramped_rate`]); a
    /// schedule without a generated rate is returned as it is.
    pub fn with_rate_ramp(mut self, ramp_us: Option<u64>) -> Schedule {
        if let Starts::Generated(g) = &mut self.starts
            && g.rate.is_some()
        {
            g.ramp_us = ramp_us;
        }
        self
    }

    /// The same schedule with its generated runs taking sessions by `sampling`, seeded from the
    /// run's `seed` ([`Sampler`]); a fixed schedule is returned as it is.
    pub fn with_sampling(mut self, sampling: Sampling, seed: u64) -> Schedule {
        if let Starts::Generated(g) = &mut self.starts {
            g.sampling = sampling;
            g.sampling_seed = seed;
        }
        self
    }

    /// The same schedule shared by `users` users ([`user_centric`]) when it has a generated
    /// rate; otherwise it is returned as it is.
    pub fn with_users(mut self, users: Option<u32>) -> Schedule {
        if let Starts::Generated(g) = &mut self.starts
            && g.rate.is_some()
        {
            g.users = users;
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

/// Iterator over a schedule's session runs (see [`Schedule::starts`]).
#[derive(Clone, Debug)]
pub struct StartIter<'a> {
    schedule: &'a Schedule,
    cursor: StartCursor,
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
            Starts::Generated(g) => (g.seed, g.request_limit, Sampler::new(g.sampling, g.sampling_seed)),
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

/// How arrivals are produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// The trace's timestamps.
    Fixed {
        /// Keep first turns with `timestamp ≥ start` (ms).
        start_offset_ms: Option<f64>,
        /// Keep first turns with `timestamp ≤ end` (ms).
        end_offset_ms: Option<f64>,
        /// Time zero = the smallest kept timestamp (otherwise the start offset, or 0).
        auto_offset: bool,
    },
    /// Sessions arrive at this many per second.
    Rate { per_second: f64, pattern: ArrivalPattern, seed: u64 },
    /// Sessions start as soon as the concurrency limit allows.
    AsFastAsAllowed,
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

/// A trace that cannot be scheduled as asked.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A row that cannot be replayed, at its 1-based line of the trace file.
    #[error("line {line}: {problem}")]
    Row { line: u32, problem: RowProblem },
    #[error("the request rate must be a positive number, got {0}")]
    BadRate(f64),
    #[error("no rows left to send (offset filters or an empty trace)")]
    Empty,
}

/// Why a row cannot be replayed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RowProblem {
    #[error("the first turn of a session has no timestamp, which a fixed schedule needs")]
    MissingTimestamp,
    #[error("field '{field}' is negative or not finite")]
    BadTime { field: &'static str },
    /// A `delay` longer than a replay may wait ([`duration::MAX_MS`]).
    #[error("field 'delay' {value} ms: accepted is at most {} ms ({})", duration::MAX_MS, duration::MAX_WORDS)]
    DelayTooLong { value: String },
    /// A `timestamp` more than [`duration::MAX_MS`] after the replay's time zero.
    #[error(
        "field 'timestamp' {value} ms: accepted is at most {limit_ms} ms, {} after time zero ({zero_ms} ms)",
        duration::MAX_WORDS
    )]
    TimestampTooLate { value: String, limit_ms: f64, zero_ms: f64 },
}

impl RowProblem {
    fn at(self, line: u32) -> ScheduleError {
        ScheduleError::Row { line, problem: self }
    }
}

/// Groups rows into sessions: rows sharing a `session_id` form one session in file order; rows
/// without one are single-turn sessions. Sessions are ordered by their first row.
pub fn sessions(trace: &Trace) -> Result<Vec<Session>, ScheduleError> {
    let mut out: Vec<Session> = Vec::new();
    let mut by_id: FastMap<&str, usize> = FastMap::default();
    for (i, row) in trace.rows().iter().enumerate() {
        let ts = ms_to_us(row.timestamp.map(|n| n.as_f64()), row.line, "timestamp")?;
        let delay = ms_to_us(row.delay.map(|n| n.as_f64()), row.line, "delay")?;
        if let Some(d) = row.delay
            && delay.is_some_and(|us| us > MAX_US)
        {
            return Err(RowProblem::DelayTooLong { value: number(d) }.at(row.line));
        }
        let timing = match (ts, delay) {
            (Some(t), _) => TurnTiming::At(t),
            (None, Some(d)) => TurnTiming::After(d),
            (None, None) => TurnTiming::Immediately,
        };
        let turn = Turn { row: i as u32, timing };
        match row.session_id.as_deref() {
            Some(id) => match by_id.get(id) {
                Some(&s) => out[s].turns.push(turn),
                None => {
                    by_id.insert(id, out.len());
                    out.push(Session { id: Some(id.into()), turns: vec![turn] });
                }
            },
            None => out.push(Session { id: None, turns: vec![turn] }),
        }
    }
    Ok(out)
}

/// [`duration::MAX_MS`] in microseconds, the unit of offsets and delays here.
const MAX_US: u64 = duration::MAX_MS * 1000;

/// A trace number as written (`1e308`, not its 309 digits).
fn number(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Float(f) => format!("{f:?}"),
    }
}

fn ms_to_us(v: Option<f64>, line: u32, field: &'static str) -> Result<Option<u64>, ScheduleError> {
    match v {
        None => Ok(None),
        Some(ms) if ms.is_finite() && ms >= 0.0 => Ok(Some((ms * 1000.0).round() as u64)),
        Some(_) => Err(RowProblem::BadTime { field }.at(line)),
    }
}

/// Builds the schedule of a trace. `request_count` caps the number of requests; with rate or
/// concurrency timing the sessions are reused in order when it exceeds the trace.
pub fn build(trace: &Trace, timing: Timing, request_count: Option<u64>) -> Result<Schedule, ScheduleError> {
    let mut sessions = sessions(trace)?;
    let mut starts = Vec::new();
    match timing {
        Timing::Fixed { start_offset_ms, end_offset_ms, auto_offset } => {
            let start_us = start_offset_ms.map(|ms| (ms * 1000.0).round() as i128);
            let end_us = end_offset_ms.map(|ms| (ms * 1000.0).round() as i128);
            let mut firsts = Vec::new();
            for (i, s) in sessions.iter().enumerate() {
                let line = trace.rows()[s.turns[0].row as usize].line;
                let TurnTiming::At(t) = s.turns[0].timing else {
                    return Err(RowProblem::MissingTimestamp.at(line));
                };
                let ti = t as i128;
                if start_us.is_some_and(|s| ti < s) || end_us.is_some_and(|e| ti > e) {
                    continue;
                }
                firsts.push((t, i));
            }
            let zero = match (auto_offset, start_us) {
                (false, Some(s)) => s.max(0) as u64,
                _ => firsts.iter().map(|f| f.0).min().unwrap_or(0),
            };
            // Later turns carry absolute timestamps: shift them by the same zero.
            for s in &mut sessions {
                for t in &mut s.turns {
                    if let TurnTiming::At(x) = t.timing {
                        t.timing = TurnTiming::At(x.saturating_sub(zero));
                    }
                }
            }
            for (t, i) in firsts {
                starts.push(Start { offset_us: Some(t.saturating_sub(zero)), session: i as u32, turns: 0 });
            }
            starts.sort_by_key(|s| s.offset_us);
            fill_turns(&sessions, &mut starts, request_count);
            // Every timestamp that will be waited for lies within the longest span after zero.
            for st in &starts {
                for turn in &sessions[st.session as usize].turns[..st.turns as usize] {
                    if let TurnTiming::At(offset) = turn.timing
                        && offset > MAX_US
                    {
                        let row = &trace.rows()[turn.row as usize];
                        return Err(RowProblem::TimestampTooLate {
                            value: row.timestamp.map_or_else(String::new, number),
                            limit_ms: (zero as f64 + MAX_US as f64) / 1000.0,
                            zero_ms: zero as f64 / 1000.0,
                        }
                        .at(row.line));
                    }
                }
            }
        }
        Timing::Rate { per_second, pattern, seed } => {
            if !(per_second.is_finite() && per_second > 0.0) {
                return Err(ScheduleError::BadRate(per_second));
            }
            strip_absolute_times(&mut sessions);
            return generated(sessions, Some((per_second, pattern)), seed, request_count);
        }
        Timing::AsFastAsAllowed => {
            strip_absolute_times(&mut sessions);
            return generated(sessions, None, 0, request_count);
        }
    }
    starts.retain(|s| s.turns > 0);
    if starts.is_empty() {
        return Err(ScheduleError::Empty);
    }
    Ok(Schedule { sessions, starts: Starts::Listed(starts), shard: Shard::WHOLE })
}

/// Rate and as-fast-as-allowed schedules: each session once, or `request_count` requests.
fn generated(
    sessions: Vec<Session>,
    rate: Option<(f64, ArrivalPattern)>,
    seed: u64,
    request_count: Option<u64>,
) -> Result<Schedule, ScheduleError> {
    if sessions.is_empty() || request_count == Some(0) {
        return Err(ScheduleError::Empty);
    }
    Ok(Schedule {
        sessions,
        starts: Starts::Generated(Generator {
            rate,
            seed,
            request_limit: request_count,
            once: true,
            ramp_us: None,
            smoothness: None,
            series: None,
            users: None,
            sampling: Sampling::Sequential,
            sampling_seed: 0,
        }),
        shard: Shard::WHOLE,
    })
}

/// A schedule that reuses its sessions without end (a benchmark duration will stop it).
pub fn endless(mut schedule: Schedule) -> Schedule {
    if let Starts::Generated(g) = &mut schedule.starts
        && g.request_limit.is_none()
    {
        g.once = false;
    }
    schedule
}

/// Without a fixed schedule, later turns keep their `delay` but not their absolute timestamp.
fn strip_absolute_times(sessions: &mut [Session]) {
    for s in sessions {
        for t in &mut s.turns {
            if let TurnTiming::At(_) = t.timing {
                t.timing = TurnTiming::Immediately;
            }
        }
    }
}

fn fill_turns(sessions: &[Session], starts: &mut [Start], request_count: Option<u64>) {
    let mut left = request_count.unwrap_or(u64::MAX);
    for s in starts {
        let n = (sessions[s.session as usize].turns.len() as u64).min(left);
        s.turns = n as u32;
        left -= n;
    }
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
    use crate::trace::{Input, Number, Row};
    use proptest::prelude::*;

    #[test]
    fn user_centric_starts_in_aiperfs_steady_state() {
        // AIPerf's own example: 15 users, sessions of 20 turns (a fresh user first, then the
        // users it shows at 1 s, 2 s, … with the turns they have left).
        let got = user_centric(15, 20);
        let mut got = got.clone();
        got.sort_unstable();
        let left: Vec<u32> = got.iter().map(|&(_, t)| t).collect();
        assert_eq!(left, [u32::MAX, 6, 11, 16, 2, 7, 12, 17, 3, 8, 13, 18, 4, 9, 14]);
        assert_eq!(got.iter().map(|&(o, _)| o).collect::<Vec<_>>(), (0..15).collect::<Vec<u64>>());
        // Two users of three-turn sessions at 10 per second: a turn gap of 200 ms, a stagger of
        // 100 ms; the user with one turn left is replaced 200 ms after it started, the fresh
        // one 600 ms after.
        let turns = (0..3).map(|row| Turn { row, timing: TurnTiming::Immediately }).collect();
        let schedule = Schedule {
            sessions: vec![Session { id: None, turns }],
            starts: Starts::Generated(Generator {
                rate: Some((10.0, ArrivalPattern::Constant)),
                seed: 0,
                request_limit: Some(10),
                once: false,
                ramp_us: None,
                smoothness: None,
                series: None,
                users: None,
                sampling: Sampling::Sequential,
                sampling_seed: 0,
            }),
            shard: Shard::WHOLE,
        }
        .with_users(Some(2));
        assert_eq!(schedule.user_turn_gap_ns(), Some(200_000_000));
        let starts: Vec<(Option<u64>, u32)> =
            schedule.starts().map(|s| (s.offset_us.map(|us| us / 1000), s.turns)).collect();
        assert_eq!(starts, [(Some(0), 3), (Some(100), 1), (Some(300), 3), (Some(600), 3)]);
    }

    #[test]
    fn gamma_gaps_have_the_rates_mean_and_the_smoothness_spread() {
        for k in [0.25f64, 1.0, 4.0] {
            let mut rng = super::Rng::new(11);
            let n = 200_000;
            let x: Vec<f64> = (0..n).map(|_| rng.gamma(k) / k).collect();
            let mean = x.iter().sum::<f64>() / n as f64;
            let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            // Mean 1, coefficient of variation 1/√k (vLLM's burstiness).
            assert!((mean - 1.0).abs() < 0.02, "k {k}: mean {mean}");
            assert!((var.sqrt() / mean - 1.0 / k.sqrt()).abs() < 0.05, "k {k}: cv {}", var.sqrt() / mean);
        }
        let sessions = vec![Session { id: None, turns: vec![Turn { row: 0, timing: TurnTiming::Immediately }] }];
        let s = generated(sessions, Some((100.0, ArrivalPattern::Gamma)), 3, Some(20_000)).unwrap();
        let spread = |s: &Schedule| {
            let t: Vec<f64> = s.starts().map(|s| s.offset_us.unwrap() as f64).collect();
            let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
            let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
            (m, (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt() / m)
        };
        let (smooth_mean, smooth_cv) = spread(&s.clone().with_smoothness(Some(16.0)));
        let (bursty_mean, bursty_cv) = spread(&s.with_smoothness(Some(0.25)));
        assert!((smooth_mean / 10_000.0 - 1.0).abs() < 0.03 && (bursty_mean / 10_000.0 - 1.0).abs() < 0.05);
        assert!(smooth_cv < 0.3 && bursty_cv > 1.7, "{smooth_cv} {bursty_cv}");
    }

    #[test]
    fn generated_runs_take_their_sessions_by_the_sampling() {
        let sessions: Vec<Session> = (0..4)
            .map(|row| Session {
                id: None,
                turns: vec![Turn { row, timing: TurnTiming::Immediately }; row as usize + 1],
            })
            .collect();
        let s = generated(sessions, None, 0, None).unwrap();
        let order = |s: &Schedule| s.starts().map(|st| st.session).collect::<Vec<_>>();
        assert_eq!(order(&s), [0, 1, 2, 3]);
        let shuffled = s.clone().with_sampling(Sampling::Shuffle, 0);
        let mut seen = order(&shuffled);
        assert_ne!(seen, [0, 1, 2, 3]);
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3]);
        assert_eq!(shuffled.request_count(), Some(10));
        // With replacement: the count is the turns of the sessions drawn.
        let random = s.with_sampling(Sampling::Random, 5);
        let drawn: u64 = random.starts().map(|st| u64::from(st.turns)).sum();
        assert_eq!(random.request_count(), Some(drawn));
        assert_eq!(random.starts().count(), 4);
    }

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
        };
        assert_eq!(g.rate_at(10.0, 0.0), 1.0);
        assert_eq!(g.rate_at(10.0, 1_000_000.0), 10.0);
        // 0.55 s into the series: the update at 0.5 s set 15 per second.
        assert_eq!(g.rate_at(10.0, 1_550_000.0), 15.0);
        assert_eq!(g.rate_at(10.0, 5_000_000.0), 5.0);
    }

    #[test]
    fn a_rate_ramp_rises_every_tenth_of_a_second_to_its_target() {
        // 10 per second over 1 s: 1/s at the start, raised along the line every 0.1 s.
        let r = |ms: f64| ramped_rate(10.0, 1_000_000, ms * 1000.0);
        assert_eq!(r(0.0), 1.0);
        assert_eq!(r(99.0), 1.0);
        assert!((r(150.0) - 1.9).abs() < 1e-9);
        assert!((r(950.0) - 9.1).abs() < 1e-9);
        assert_eq!(r(1000.0), 10.0);
        // The schedule's gaps follow it: constant arrivals shrink from 1 s to 0.1 s.
        let sessions = vec![Session { id: None, turns: vec![Turn { row: 0, timing: TurnTiming::Immediately }] }];
        let s = generated(sessions, Some((10.0, ArrivalPattern::Constant)), 0, Some(40))
            .unwrap()
            .with_rate_ramp(Some(1_000_000));
        let offsets: Vec<u64> = s.starts().map(|s| s.offset_us.unwrap()).collect();
        assert_eq!(offsets[..2], [0, 1_000_000]);
        let gaps: Vec<u64> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.windows(2).all(|w| w[1] <= w[0]), "{gaps:?}");
        assert_eq!(gaps.last(), Some(&100_000));
    }

    fn row(ts: Option<i64>, sid: Option<&str>, delay: Option<i64>) -> Row {
        let mut r = Row::new(Input::Length(10));
        r.timestamp = ts.map(Number::Int);
        r.session_id = sid.map(Into::into);
        r.delay = delay.map(Number::Int);
        r
    }

    fn trace(rows: Vec<Row>) -> Trace {
        rows.into_iter().map(|r| (r, vec![])).collect()
    }

    const FIXED: Timing = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };

    #[test]
    fn fixed_schedule_auto_offset_and_sessions() {
        let t = trace(vec![
            row(Some(1000), Some("a"), None),
            row(Some(1500), None, None),
            row(Some(1800), Some("a"), None),
            row(None, Some("a"), Some(40)),
            row(None, Some("a"), None),
        ]);
        let s = build(&t, FIXED, None).unwrap();
        assert_eq!(
            s.starts().collect::<Vec<_>>(),
            vec![
                Start { offset_us: Some(0), session: 0, turns: 4 },
                Start { offset_us: Some(500_000), session: 1, turns: 1 }
            ]
        );
        let timings: Vec<_> = s.sessions[0].turns.iter().map(|t| t.timing).collect();
        assert_eq!(
            timings,
            vec![TurnTiming::At(0), TurnTiming::At(800_000), TurnTiming::After(40_000), TurnTiming::Immediately]
        );
        assert_eq!(s.request_count(), Some(5));
    }

    #[test]
    fn fixed_schedule_offsets_filter_inclusively() {
        let t = trace((0..10).map(|i| row(Some(i * 100), None, None)).collect());
        let timing = Timing::Fixed { start_offset_ms: Some(200.0), end_offset_ms: Some(500.0), auto_offset: false };
        let s = build(&t, timing, None).unwrap();
        let offs: Vec<_> = s.starts().map(|s| s.offset_us.unwrap()).collect();
        assert_eq!(offs, vec![0, 100_000, 200_000, 300_000]);
        assert!(matches!(
            build(&trace(vec![row(None, None, None)]), FIXED, None),
            Err(ScheduleError::Row { line: 0, problem: RowProblem::MissingTimestamp })
        ));
    }

    #[test]
    fn a_wait_past_thirty_days_is_refused_naming_the_row_the_value_and_the_limit() {
        let line = |mut r: Row, n: u32| {
            r.line = n;
            r
        };
        let float = |v: f64| Some(Number::Float(v));
        // Timestamps 0 and 1e308: the second would be waited for for ever.
        let mut far = line(row(None, None, None), 2);
        far.timestamp = float(1e308);
        let t = trace(vec![line(row(Some(0), None, None), 1), far]);
        let e = build(&t, FIXED, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: field 'timestamp' 1e308 ms: accepted is at most 2592000000 ms, 30 days after time zero (0 ms)"
        );
        // A later turn's timestamp counts from the same zero; exactly 30 days after it is fine.
        let days = |d: i64| d * 24 * 3600 * 1000;
        let t = |last: i64| {
            trace(vec![
                line(row(Some(5000), Some("a"), None), 1),
                line(row(Some(5000 + last), Some("a"), None), 2),
                line(row(Some(7000), None, None), 3),
            ])
        };
        assert!(build(&t(days(30)), FIXED, None).is_ok());
        assert!(matches!(
            build(&t(days(30) + 1), FIXED, None),
            Err(ScheduleError::Row {
                line: 2,
                problem: RowProblem::TimestampTooLate { limit_ms: 2_592_005_000.0, zero_ms: 5000.0, .. }
            })
        ));
        // Rows not replayed do not count: cut by a request count, or past an end offset.
        assert!(build(&t(days(40)), FIXED, Some(1)).is_ok());
        let before = Timing::Fixed { start_offset_ms: None, end_offset_ms: Some(6000.0), auto_offset: true };
        assert!(build(&trace(vec![row(Some(0), None, None), row(Some(days(40)), None, None)]), before, None).is_ok());
        // Rate runs ignore timestamps.
        let rate = Timing::Rate { per_second: 1.0, pattern: ArrivalPattern::Constant, seed: 1 };
        assert!(build(&t(days(40)), rate, None).is_ok());
        // A delay of 1e300 ms, whatever the timing.
        let mut slow = line(row(None, Some("a"), None), 2);
        slow.delay = float(1e300);
        let t = trace(vec![line(row(Some(0), Some("a"), None), 1), slow]);
        for timing in [FIXED, rate, Timing::AsFastAsAllowed] {
            let e = build(&t, timing, None).unwrap_err();
            assert_eq!(e.to_string(), "line 2: field 'delay' 1e300 ms: accepted is at most 2592000000 ms (30 days)");
        }
        let delayed = |d: i64| trace(vec![row(Some(0), Some("a"), None), row(None, Some("a"), Some(d))]);
        assert!(build(&delayed(days(30)), FIXED, None).is_ok());
        assert!(matches!(
            build(&delayed(days(30) + 1), FIXED, None),
            Err(ScheduleError::Row { problem: RowProblem::DelayTooLong { .. }, .. })
        ));
    }

    #[test]
    fn request_count_cuts_and_reuses() {
        let t = trace(vec![row(None, Some("a"), None), row(None, Some("a"), None), row(None, None, None)]);
        let s = build(&t, Timing::AsFastAsAllowed, Some(4)).unwrap();
        let runs: Vec<_> = s.starts().map(|s| (s.session, s.turns)).collect();
        assert_eq!(runs, vec![(0, 2), (1, 1), (0, 1)]);
        let s = build(&t, Timing::AsFastAsAllowed, Some(1)).unwrap();
        assert_eq!(s.request_count(), Some(1));
    }

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let t = trace((0..5).map(|_| row(None, None, None)).collect());
        let s = build(&t, Timing::Rate { per_second: 4.0, pattern: ArrivalPattern::Constant, seed: 1 }, None).unwrap();
        let offs: Vec<_> = s.starts().map(|s| s.offset_us.unwrap()).collect();
        assert_eq!(offs, vec![0, 250_000, 500_000, 750_000, 1_000_000]);
    }

    #[test]
    fn poisson_rate_has_the_right_mean_and_is_seeded() {
        let t = trace((0..20_000).map(|_| row(None, None, None)).collect());
        let timing = Timing::Rate { per_second: 100.0, pattern: ArrivalPattern::Poisson, seed: 7 };
        let a = build(&t, timing, None).unwrap();
        let b = build(&t, timing, None).unwrap();
        assert_eq!(a, b);
        let last = a.starts().last().unwrap().offset_us.unwrap() as f64 / 1e6;
        assert!((last / 20_000.0 - 0.01).abs() < 0.0005, "mean gap {}", last / 20_000.0);
    }

    #[test]
    fn generated_schedules_are_lazy_and_endless_only_when_asked() {
        let t = trace(vec![row(None, Some("a"), None), row(None, Some("a"), None), row(None, None, None)]);
        let s = build(&t, Timing::AsFastAsAllowed, Some(u64::MAX)).unwrap();
        assert_eq!(s.request_count(), Some(u64::MAX));
        assert_eq!(s.starts().take(1000).count(), 1000);
        let once = build(&t, Timing::AsFastAsAllowed, None).unwrap();
        assert_eq!(once.starts().count(), 2);
        let endless = endless(once);
        assert_eq!(endless.request_count(), None);
        assert_eq!(endless.starts().take(5000).count(), 5000);
        let slow =
            build(&t, Timing::Rate { per_second: 1e-300, pattern: ArrivalPattern::Constant, seed: 0 }, None).unwrap();
        let offs: Vec<_> = slow.starts().map(|s| s.offset_us.unwrap()).collect();
        assert_eq!(offs, vec![0, u64::MAX]);
        assert!(matches!(build(&t, Timing::AsFastAsAllowed, Some(0)), Err(ScheduleError::Empty)));
    }

    #[test]
    fn shards_parse_and_divide_totals() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(Shard::parse(" 0 / 1 "), Ok(Shard::WHOLE));
        assert_eq!(Shard::parse("3/3"), Err(ShardError::OutOfRange { index: 3, count: 3 }));
        assert_eq!(Shard::parse("0/0"), Err(ShardError::OutOfRange { index: 0, count: 0 }));
        assert!(matches!(Shard::parse("1-3"), Err(ShardError::Syntax(_))));
        assert!(matches!(Shard::parse("-1/3"), Err(ShardError::Syntax(_))));
        assert!(matches!(Shard::parse("1/99999999999"), Err(ShardError::OutOfRange { .. })));
        let parts: Vec<u64> = (0..4).map(|k| Shard { index: k, count: 4 }.part_of(10)).collect();
        assert_eq!(parts, vec![3, 3, 2, 2]);
        assert_eq!(Shard { index: 3, count: 4 }.to_string(), "3/4");
    }

    #[test]
    fn a_shard_without_sessions_ends_even_when_endless() {
        let t = trace(vec![row(None, Some("a"), None), row(None, Some("b"), None)]);
        let s = endless(build(&t, Timing::AsFastAsAllowed, None).unwrap());
        assert_eq!(s.clone().sharded(Shard { index: 2, count: 3 }).starts().count(), 0);
        let one = s.sharded(Shard { index: 1, count: 3 });
        assert!(one.starts().take(100).all(|st| st.session == 1));
        assert_eq!(one.request_count(), None);
    }

    /// Every run of the whole schedule with its index, offset and turns.
    fn runs(s: &Schedule, limit: usize) -> Vec<(u64, Start)> {
        let mut c = StartCursor::new(s);
        std::iter::from_fn(|| c.next(s).map(|st| (c.index(), st))).take(limit).collect()
    }

    proptest! {
        #[test]
        fn shards_are_disjoint_keep_sessions_whole_and_together_are_the_whole_run(
            rows in proptest::collection::vec((0i64..100_000, 0u8..6), 1..120),
            n in 1u32..6,
            mode in 0u8..3,
            count in proptest::option::of(1u64..300),
        ) {
            let rows: Vec<Row> = rows.iter().map(|&(t, s)| row(Some(t), (s > 0).then(|| ["a", "b", "c", "d", "e"][s as usize - 1]), None)).collect();
            let t = trace(rows);
            let timing = match mode {
                0 => FIXED,
                1 => Timing::Rate { per_second: 50.0, pattern: ArrivalPattern::Poisson, seed: 7 },
                _ => Timing::AsFastAsAllowed,
            };
            let whole = build(&t, timing, count).unwrap();
            let all = runs(&whole, 10_000);
            let mut union = Vec::new();
            for k in 0..n {
                let part = whole.clone().sharded(Shard { index: k, count: n });
                let mine = runs(&part, 10_000);
                // Sessions intact: every run of a session is in the shard that has the session.
                prop_assert!(mine.iter().all(|(_, st)| st.session % n == k));
                prop_assert_eq!(part.request_count(), Some(mine.iter().map(|(_, st)| u64::from(st.turns)).sum::<u64>()));
                union.extend(mine);
            }
            // Disjoint and complete, with the same indices, offsets and turn counts.
            union.sort_by_key(|(i, _)| *i);
            prop_assert_eq!(union, all);
        }

        #[test]
        fn schedules_are_sorted_and_complete(ts in proptest::collection::vec((0i64..100_000, 0u8..4), 1..200)) {
            let rows: Vec<Row> = ts.iter().map(|&(t, s)| row(Some(t), (s > 0).then(|| ["a", "b", "c"][s as usize - 1]), None)).collect();
            let t = trace(rows);
            let s = build(&t, FIXED, None).unwrap();
            let starts: Vec<Start> = s.starts().collect();
            prop_assert!(starts.windows(2).all(|w| w[0].offset_us <= w[1].offset_us));
            prop_assert_eq!(s.request_count(), Some(ts.len() as u64));
            let mut rows: Vec<u32> = starts.iter().flat_map(|st| s.sessions[st.session as usize].turns.iter().map(|t| t.row)).collect();
            rows.sort_unstable();
            prop_assert_eq!(rows, (0..ts.len() as u32).collect::<Vec<_>>());
        }
    }
}
