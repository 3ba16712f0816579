//! A trace's rows grouped into sessions and made a schedule: fixed at the trace's timestamps,
//! at a rate, or as fast as allowed; every row's times checked against the longest wait.

use super::arrivals::{ArrivalPattern, Generator};
use super::model::{Graph, Node, Schedule, Session, Start, Starts, Turn, TurnTiming};
use super::shard::Shard;
use crate::duration;
use crate::hashing::FastMap;
use crate::replay::sampling::Sampling;
use crate::trace::{Number, Row, Trace};

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
    /// A branch names a session the trace does not have.
    #[error("a branch starts session '{id}', which is not in the trace")]
    UnknownBranch { id: String },
    /// Sessions that start each other.
    #[error("the sub-agent sessions form a cycle: {path}")]
    BranchCycle { path: String },
    /// A join on a turn that is not a later turn of the spawning session.
    #[error(
        "turn {turn} joins its sub-agents at turn {join_at}: accepted is a later turn of the same session (it has {turns})"
    )]
    BadJoin { join_at: u32, turn: u32, turns: u32 },
    #[error("{what}")]
    GraphTooLarge { what: String },
}

impl RowProblem {
    fn at(self, line: u32) -> ScheduleError {
        ScheduleError::Row { line, problem: self }
    }
}

/// Groups a trace's rows into sessions: rows sharing a `session_id` form one session in file
/// order; rows without one are single-turn sessions. Sessions are ordered by their first row.
pub fn sessions(trace: &Trace) -> Result<Vec<Session>, ScheduleError> {
    sessions_of(trace.rows())
}

/// [`sessions`] of a trace's rows.
pub(crate) fn sessions_of(rows: &[Row]) -> Result<Vec<Session>, ScheduleError> {
    let mut out: Vec<Session> = Vec::new();
    let mut by_id: FastMap<&str, usize> = FastMap::default();
    let mut branches = false;
    for (i, row) in rows.iter().enumerate() {
        branches |= !row.branches().is_empty();
        let ts = ms_to_us(row.timestamp, row.line, "timestamp")?;
        let delay = ms_to_us(row.delay, row.line, "delay")?;
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
                    out.push(Session::chain(Some(id.into()), [turn]));
                }
            },
            None => out.push(Session::chain(None, [turn])),
        }
    }
    if branches {
        return branched(rows, &out, &by_id);
    }
    Ok(out)
}

/// Most turns one session with its sub-agents may have.
pub const MAX_GRAPH_TURNS: usize = 1 << 22;
/// Deepest nesting of sub-agents.
pub const MAX_GRAPH_DEPTH: usize = 64;

/// The sessions of a trace whose turns start sub-agents ([`crate::trace::Branch`]): each session
/// no turn starts (a root) becomes one session holding its sub-agents' turns too, timed by a
/// [`Graph`]; the sub-agents' own sessions are not run on their own. A sub-agent's first turn is
/// due as soon as the turn that starts it ends (AIPerf dispatches a child at once).
fn branched(rows: &[Row], chains: &[Session], by_id: &FastMap<&str, usize>) -> Result<Vec<Session>, ScheduleError> {
    let mut started = vec![false; chains.len()];
    for s in chains {
        for t in &s.turns {
            let row = &rows[t.row as usize];
            for b in row.branches() {
                for child in &b.children {
                    let Some(&c) = by_id.get(child.as_ref()) else {
                        return Err(RowProblem::UnknownBranch { id: child.to_string() }.at(row.line));
                    };
                    started[c] = true;
                }
            }
        }
    }
    let mut out = Vec::new();
    for (i, s) in chains.iter().enumerate() {
        if started[i] {
            continue;
        }
        if s.turns.iter().all(|t| rows[t.row as usize].branches().is_empty()) {
            out.push(s.clone());
            continue;
        }
        let mut g = Expansion { rows, chains, by_id, nodes: Vec::new(), turns: Vec::new(), path: Vec::new() };
        g.expand(i, None, None)?;
        let graph = Graph::new(&g.nodes).ok_or(ScheduleError::Empty)?;
        out.push(Session { id: s.id.clone(), turns: g.turns.into(), graph: Some(Box::new(graph)) });
    }
    if out.is_empty() {
        // Every session is started by another one: the branches form a cycle.
        let line = chains.first().and_then(|s| s.turns.first()).map_or(0, |t| rows[t.row as usize].line);
        return Err(RowProblem::BranchCycle { path: "every session is a sub-agent of another".into() }.at(line));
    }
    Ok(out)
}

/// A root session and its sub-agents unrolled into the turns of one [`Graph`].
struct Expansion<'a> {
    rows: &'a [Row],
    chains: &'a [Session],
    by_id: &'a FastMap<&'a str, usize>,
    nodes: Vec<Node>,
    turns: Vec<Turn>,
    /// The sessions being unrolled, outermost first (a session met again is a cycle).
    path: Vec<usize>,
}

impl Expansion<'_> {
    /// Appends the turns of session `s`, its first one following turn `after` (`offset_us` after
    /// it ended, or at once); returns its last turn.
    fn expand(&mut self, s: usize, after: Option<u32>, offset_us: Option<u64>) -> Result<u32, ScheduleError> {
        let session = &self.chains[s];
        let line_of = |t: &Turn| self.rows[t.row as usize].line;
        let first_line = session.turns.first().map_or(0, line_of);
        if self.path.contains(&s) {
            let mut names: Vec<&str> = self.path.iter().map(|&p| self.chains[p].id.as_deref().unwrap_or("?")).collect();
            names.push(session.id.as_deref().unwrap_or("?"));
            return Err(RowProblem::BranchCycle { path: names.join(" -> ") }.at(first_line));
        }
        if self.path.len() >= MAX_GRAPH_DEPTH {
            return Err(RowProblem::GraphTooLarge { what: format!("sub-agents nested deeper than {MAX_GRAPH_DEPTH}") }
                .at(first_line));
        }
        self.path.push(s);
        let len = session.turns.len();
        let mut joins: Vec<Vec<u32>> = vec![Vec::new(); len];
        let mut prev = after;
        let mut last = 0;
        for (k, turn) in session.turns.iter().enumerate() {
            if self.turns.len() >= MAX_GRAPH_TURNS {
                return Err(RowProblem::GraphTooLarge {
                    what: format!("more than {MAX_GRAPH_TURNS} turns in one session with its sub-agents"),
                }
                .at(line_of(turn)));
            }
            let node = self.turns.len() as u32;
            // A sub-agent's first turn leaves as soon as the turn that started it ended, or its
            // offset after.
            let timing = match offset_us {
                _ if k > 0 || after.is_none() => turn.timing,
                Some(us) if us > 0 => TurnTiming::After(us),
                _ => TurnTiming::Immediately,
            };
            self.turns.push(Turn { row: turn.row, timing });
            self.nodes.push(Node { after: prev, joins: std::mem::take(&mut joins[k]) });
            prev = Some(node);
            last = node;
            let row = &self.rows[turn.row as usize];
            for b in row.branches() {
                if let Some(j) = b.join_at
                    && (j as usize <= k || j as usize >= len)
                {
                    return Err(RowProblem::BadJoin { join_at: j, turn: k as u32, turns: len as u32 }.at(row.line));
                }
                for (ci, child) in b.children.iter().enumerate() {
                    let offset =
                        b.offsets_ms.get(ci).map(|&ms| (ms.max(0.0) * 1000.0).round().min(MAX_US as f64) as u64);
                    let c = *self
                        .by_id
                        .get(child.as_ref())
                        .ok_or_else(|| RowProblem::UnknownBranch { id: child.to_string() }.at(row.line))?;
                    let end = self.expand(c, Some(node), offset)?;
                    if let Some(j) = b.join_at {
                        joins[j as usize].push(end);
                    }
                }
            }
        }
        self.path.pop();
        Ok(last)
    }
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

/// A trace's milliseconds in microseconds, rounded (a whole number of them exactly, as through
/// `f64`: below 2^53 µs every step is exact).
fn ms_to_us(v: Option<Number>, line: u32, field: &'static str) -> Result<Option<u64>, ScheduleError> {
    const EXACT_MS: i64 = (1 << 53) / 1000;
    match v {
        None => Ok(None),
        Some(Number::Int(ms)) if (0..=EXACT_MS).contains(&ms) => Ok(Some(ms as u64 * 1000)),
        Some(n) => match n.as_f64() {
            ms if ms.is_finite() && ms >= 0.0 => Ok(Some((ms * 1000.0).round() as u64)),
            _ => Err(RowProblem::BadTime { field }.at(line)),
        },
    }
}

/// Builds the schedule of a trace ([`build_of`] of its rows).
pub fn build(trace: &Trace, timing: Timing, request_count: Option<u64>) -> Result<Schedule, ScheduleError> {
    build_of(trace.rows(), timing, request_count)
}

/// Builds the schedule of a trace's rows. `request_count` caps the number of requests; with rate
/// or concurrency timing the sessions are reused in order when it exceeds the trace.
pub fn build_of(rows: &[Row], timing: Timing, request_count: Option<u64>) -> Result<Schedule, ScheduleError> {
    let mut sessions = sessions_of(rows)?;
    let mut starts = Vec::new();
    match timing {
        Timing::Fixed { start_offset_ms, end_offset_ms, auto_offset } => {
            let start_us = start_offset_ms.map(|ms| (ms * 1000.0).round() as i128);
            let end_us = end_offset_ms.map(|ms| (ms * 1000.0).round() as i128);
            // One pass over the sessions: their first turns' starts (each with its number of
            // turns) and the latest timestamp of any turn, which bounds every wait checked below.
            let (mut latest, mut earliest) = (0u64, None::<u64>);
            for (i, s) in sessions.iter().enumerate() {
                let TurnTiming::At(t) = s.turns[0].timing else {
                    return Err(RowProblem::MissingTimestamp.at(rows[s.turns[0].row as usize].line));
                };
                for turn in &s.turns {
                    if let TurnTiming::At(x) = turn.timing {
                        latest = latest.max(x);
                    }
                }
                let ti = t as i128;
                if start_us.is_some_and(|s| ti < s) || end_us.is_some_and(|e| ti > e) {
                    continue;
                }
                earliest = Some(earliest.map_or(t, |e| e.min(t)));
                starts.push(Start { offset_us: Some(t), session: i as u32, turns: s.turns.len() as u32 });
            }
            let zero = match (auto_offset, start_us) {
                (false, Some(s)) => s.max(0) as u64,
                _ => earliest.unwrap_or(0),
            };
            // Later turns carry absolute timestamps: shift them by the same zero.
            if zero > 0 {
                for s in &mut sessions {
                    for t in &mut s.turns {
                        if let TurnTiming::At(x) = t.timing {
                            t.timing = TurnTiming::At(x.saturating_sub(zero));
                        }
                    }
                }
                for st in &mut starts {
                    st.offset_us = st.offset_us.map(|t| t.saturating_sub(zero));
                }
            }
            starts.sort_by_key(|s| s.offset_us);
            cap_turns(&mut starts, request_count);
            // Every timestamp that will be waited for lies within the longest span after zero
            // (looked for turn by turn only when the latest one does not).
            if latest.saturating_sub(zero) > MAX_US {
                for st in &starts {
                    for turn in &sessions[st.session as usize].turns[..st.turns as usize] {
                        if let TurnTiming::At(offset) = turn.timing
                            && offset > MAX_US
                        {
                            let row = &rows[turn.row as usize];
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
pub(crate) fn generated(
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
pub(crate) fn strip_absolute_times(sessions: &mut [Session]) {
    for s in sessions {
        for t in &mut s.turns {
            if let TurnTiming::At(_) = t.timing {
                t.timing = TurnTiming::Immediately;
            }
        }
    }
}

/// Cuts the starts' turns (each its session's number of turns) at `request_count` requests in
/// all, in start order.
fn cap_turns(starts: &mut [Start], request_count: Option<u64>) {
    let Some(mut left) = request_count else { return };
    for s in starts {
        let n = u64::from(s.turns).min(left);
        s.turns = n as u32;
        left -= n;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Through `f64`: the rounding a timestamp of any kind takes.
    fn through_f64(n: Number) -> Option<u64> {
        let ms = n.as_f64();
        (ms.is_finite() && ms >= 0.0).then(|| (ms * 1000.0).round() as u64)
    }

    proptest::proptest! {
        /// Whole milliseconds are multiplied as integers where `f64` is exact, which gives what
        /// the rounding through `f64` gives; negative ones are refused either way.
        #[test]
        fn whole_milliseconds_convert_as_through_f64(
            ms in proptest::prop_oneof![
                -5i64..5,
                0i64..1 << 40,
                (1i64 << 53) / 1000 - 5..(1i64 << 53) / 1000 + 5,
                (1i64 << 53) / 1000..1i64 << 53,
                proptest::num::i64::ANY,
            ],
        ) {
            let n = Number::Int(ms);
            proptest::prop_assert_eq!(ms_to_us(Some(n), 1, "timestamp").ok().flatten(), through_f64(n));
        }
    }
}
