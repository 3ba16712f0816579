//! A trace's rows grouped into sessions and made a schedule: fixed at the trace's timestamps,
//! at a rate, or as fast as allowed; every row's times checked against the longest wait.

use super::{ArrivalPattern, Generator, Schedule, Session, Shard, Start, Starts, Turn, TurnTiming};
use crate::duration;
use crate::hashing::FastMap;
use crate::replay::sampling::Sampling;
use crate::trace::{Number, Trace};

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
pub(super) fn generated(
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
            sampling_skip: 0,
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
