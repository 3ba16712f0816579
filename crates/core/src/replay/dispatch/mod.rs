//! Which request goes next, and when: the dispatcher's decisions as a state machine.
//!
//! [`Dispatch`] walks a [`Schedule`]: session starts in schedule order, and each later turn once
//! the previous turn of its session run has completed ([`Dispatch::complete`]), timed by its
//! [`TurnTiming`]. It never reads a clock: the caller passes the current time in nanoseconds
//! from the benchmark start, sleeps until [`Peek::Due`] says, and takes the job. A driver with a
//! real clock sends requests over HTTP; the tests below drive it with a virtual clock and an
//! in-memory server, so pacing, delays, the concurrency ceiling and stopping are checked exactly.
//!
//! `--concurrency` is a ceiling on concurrent *session runs*, as in AIPerf: a run holds its slot
//! from its first request until its last one completes (delays between turns included), and a
//! start leaves at the later of its scheduled time and a free slot. A single-turn run is a
//! request, so for single-turn traces this is the familiar request concurrency.
//!
//! `--prefill-concurrency` is a second ceiling, on requests in prefill: a request holds a prefill
//! slot from the moment it is taken until its first token arrives ([`Dispatch::first_token`]) or
//! it ends without one ([`Dispatch::complete`]); every turn needs one, as in AIPerf.
//!
//! AIPerf's `--system-idle-gap-cap-seconds` bounds how long the replay stays idle: when no
//! request is in flight and the next one is due more than the cap after the last one ended (or
//! after time zero), every pending time — later turns queued and starts not yet taken — moves
//! earlier by the same amount, so the next request leaves the cap after the idle began. Each
//! session's own spacing and the order of everything pending are kept.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

use crate::hashing::FastMap;
use crate::replay::cancel::Cancellation;
#[cfg(doc)]
use crate::replay::schedule::Session;
use crate::replay::schedule::{Schedule, Start, StartCursor, TurnTiming};

pub use crate::replay::expected_cache::PrefixCache;

/// One request to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Job {
    /// Index of the session run, in start order of the whole run (unique across shards).
    pub run: u64,
    /// Index of the session (into the schedule's sessions).
    pub session: u32,
    /// 0-based turn within the session.
    pub turn: u32,
    /// How many requests this session run sends: a chain's first `run_turns` turns, or the
    /// first `run_turns` turns taken of a run with sub-agents.
    pub run_turns: u32,
    /// Index of the trace row.
    pub row: u32,
    /// When it is due, in nanoseconds from the benchmark start.
    pub deadline_ns: u64,
    /// No deadline of its own: due when a slot is free; its scheduled time is its send time.
    pub asap: bool,
    /// Cancel it this long after it is sent ([`Cancellation`]); `None`: let it finish.
    pub cancel_after_ns: Option<u64>,
}

/// What the dispatcher should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peek {
    /// The next job is due at this time; [`Dispatch::take`] returns it.
    Due { deadline_ns: u64, asap: bool },
    /// Nothing can be sent until a request in flight completes.
    AwaitCompletion,
    /// Nothing is left to send (schedule exhausted, duration over, or stopped); requests still
    /// in flight may complete.
    Finished,
}

/// The dispatcher's state over one schedule.
#[derive(Debug)]
pub struct Dispatch {
    schedule: Arc<Schedule>,
    cursor: StartCursor,
    /// The next session run, already drawn from the cursor, and its index in the whole run.
    next_start: Option<(u64, Start)>,
    /// Later turns whose previous turn completed, by deadline then arrival order.
    later: BinaryHeap<Reverse<(u64, u64, Job)>>,
    seq: u64,
    /// Session runs started and not finished (their slots).
    active_runs: usize,
    in_flight: usize,
    concurrency: Option<usize>,
    end_ns: Option<u64>,
    stopped: bool,
    /// When a request last ended a session run while every slot was taken: a start due before
    /// then waited for a slot.
    slot_freed_ns: Option<u64>,
    /// The deadline of the last session run started.
    last_start_ns: u64,
    ceiling: Ceiling,
    /// Which requests are cancelled on purpose.
    cancellation: Option<Cancellation>,
    /// AIPerf's `--concurrency-ramp-duration` (ns): the ceiling rises from 1 to `concurrency`.
    concurrency_ramp_ns: Option<u64>,
    /// AIPerf's `--prefill-concurrency` and its ramp (ns).
    prefill: Option<(usize, Option<u64>)>,
    /// The requests in prefill, by (run, turn), while `prefill` is set.
    prefilling: HashSet<(u64, u32)>,
    /// A user-centric run's gap between a user's turns ([`Schedule::user_turn_gap_ns`]).
    user_gap_ns: Option<u64>,
    /// AIPerf's `--system-idle-gap-cap-seconds` (ns).
    idle_cap_ns: Option<u64>,
    /// How far every pending time has moved earlier: a start's offset and a queued turn's
    /// deadline (kept as `deadline + shift` at queueing) are due this much sooner.
    shift_ns: u64,
    /// When the last request in flight ended (0 before any).
    idle_since_ns: u64,
    /// The idle cap's moves: how many, and the time they skipped.
    idle_skips: (u64, u64),
    /// Session runs with sub-agents in progress, by run.
    graphs: FastMap<u64, RunGraph>,
    /// AIPerf's phase counts ([`Dispatch::with_counts`]) and what they count.
    counts: Counts,
}

/// A phase's request and session counts, as AIPerf's stop conditions apply them while it sends.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Nothing is taken once this many requests were.
    requests: Option<u64>,
    /// No session run starts once this many did.
    sessions: Option<u64>,
    /// Requests taken.
    taken: u64,
    /// Session runs started.
    started: u64,
    /// The turns of the runs started.
    planned: u64,
    /// The request that reached a count was a run's first turn.
    ended_by_a_start: bool,
}

/// The next job as [`Dispatch::take`] takes it.
#[derive(Clone, Copy, Debug)]
struct Due {
    deadline_ns: u64,
    asap: bool,
    /// A later turn (else the next start).
    later: bool,
    /// Its deadline before waiting for a prefill slot.
    slot_ns: u64,
}

/// What the concurrency ceiling did to a run's starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ceiling {
    /// Session runs that were due while every slot was taken, so started late.
    pub held_starts: u64,
    /// Most session runs holding a slot at once.
    pub peak_runs: usize,
}

impl Dispatch {
    /// A dispatcher over `schedule`; at most `concurrency` session runs at once; nothing is
    /// sent at or after `end_ns` (the benchmark duration).
    pub fn new(schedule: Arc<Schedule>, concurrency: Option<usize>, end_ns: Option<u64>) -> Dispatch {
        let mut cursor = StartCursor::new(&schedule);
        let next_start = cursor.next(&schedule).map(|s| (cursor.index(), s));
        let user_gap_ns = schedule.user_turn_gap_ns();
        Dispatch {
            user_gap_ns,
            schedule,
            cursor,
            next_start,
            later: BinaryHeap::new(),
            seq: 0,
            active_runs: 0,
            in_flight: 0,
            concurrency: concurrency.map(|c| c.max(1)),
            end_ns,
            stopped: false,
            slot_freed_ns: None,
            last_start_ns: 0,
            ceiling: Ceiling::default(),
            cancellation: None,
            concurrency_ramp_ns: None,
            prefill: None,
            prefilling: HashSet::new(),
            idle_cap_ns: None,
            shift_ns: 0,
            idle_since_ns: 0,
            idle_skips: (0, 0),
            graphs: FastMap::default(),
            counts: Counts::default(),
        }
    }

    /// The same dispatcher bounded as AIPerf bounds a phase by counts while it sends: nothing
    /// is taken once `requests` requests were (a session run in progress sends no more turns),
    /// and no session run starts once `sessions` did (those started send all their turns).
    pub fn with_counts(self, requests: Option<u64>, sessions: Option<u64>) -> Dispatch {
        let mut d = Dispatch { counts: Counts { requests, sessions, ..Counts::default() }, ..self };
        if requests == Some(0) || sessions == Some(0) {
            d.next_start = None;
            d.stop();
        }
        d
    }

    /// Session runs started so far.
    pub fn runs_started(&self) -> u64 {
        self.counts.started
    }

    /// Whether a count of [`Dispatch::with_counts`] ended the sending and the request that
    /// reached it was a session run's first turn (AIPerf's final credit a session start: the
    /// session its sampler drew after the previous start is the last it drew).
    pub fn ended_by_a_start(&self) -> bool {
        self.counts.ended_by_a_start
    }

    /// The same dispatcher keeping the replay idle at most `cap_ns` at a time (AIPerf's
    /// `--system-idle-gap-cap-seconds`; see the module's documentation).
    pub fn with_system_idle_cap(self, cap_ns: Option<u64>) -> Dispatch {
        Dispatch { idle_cap_ns: cap_ns, ..self }
    }

    /// How often the idle cap moved the pending times earlier, and the nanoseconds it skipped.
    pub fn idle_skips(&self) -> (u64, u64) {
        self.idle_skips
    }

    /// The same dispatcher with at most `limit` requests in prefill at once, the limit ramping
    /// from 1 over `ramp_ns` ([`ramped_limit`]).
    pub fn with_prefill_limit(self, limit: Option<usize>, ramp_ns: Option<u64>) -> Dispatch {
        Dispatch { prefill: limit.map(|l| (l.max(1), ramp_ns)), ..self }
    }

    /// The same dispatcher with its concurrency ceiling ramping over `ramp_ns` ([`ramped_limit`]).
    pub fn with_concurrency_ramp(self, ramp_ns: Option<u64>) -> Dispatch {
        Dispatch { concurrency_ramp_ns: ramp_ns, ..self }
    }

    /// The same dispatcher marking the jobs `cancellation` chooses ([`Job::cancel_after_ns`]).
    pub fn with_cancellation(self, cancellation: Option<Cancellation>) -> Dispatch {
        Dispatch { cancellation, ..self }
    }

    /// How often the concurrency ceiling held a due start back, and the most runs at once.
    pub fn ceiling(&self) -> Ceiling {
        self.ceiling
    }

    /// The schedule being dispatched.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Requests sent and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Session runs holding a slot.
    pub fn active_runs(&self) -> usize {
        self.active_runs
    }

    /// Requests sent whose first token has not arrived, while prefill is limited.
    pub fn in_prefill(&self) -> usize {
        self.prefilling.len()
    }

    /// The first token of `job` arrived: its prefill slot is free. Idempotent.
    pub fn first_token(&mut self, job: &Job) {
        self.prefilling.remove(&(job.run, job.turn));
    }

    /// From when the next request may enter prefill, seen at `now_ns`: `Some(0)` when a prefill
    /// slot is free (or prefill is not limited), the time a ramping limit rises above the
    /// requests in prefill, or `None` until a first token frees a slot.
    fn prefill_opens(&self, now_ns: u64) -> Option<u64> {
        let Some((target, ramp)) = self.prefill else { return Some(0) };
        let held = self.prefilling.len();
        let limit = ramp.map_or(target, |d| ramped_limit(target, d, now_ns));
        if held < limit {
            return Some(0);
        }
        let d = ramp?;
        (held < target).then(|| ramp_reaches(target, d, held + 1))
    }

    /// Whether sending has stopped for good.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Stops sending: nothing more is due; completions are still accepted.
    pub fn stop(&mut self) {
        self.stopped = true;
        self.later.clear();
    }

    /// The concurrency ceiling at `now_ns`.
    fn limit(&self, now_ns: u64) -> Option<usize> {
        let c = self.concurrency?;
        Some(self.concurrency_ramp_ns.map_or(c, |d| ramped_limit(c, d, now_ns)))
    }

    fn slot_free(&self, now_ns: u64) -> bool {
        self.limit(now_ns).is_none_or(|c| self.active_runs < c)
    }

    /// When a ramping ceiling next rises above the runs now holding a slot (a start held only
    /// by the ramp leaves then), if it is below the full concurrency.
    fn ramp_opens(&self) -> Option<u64> {
        let (c, d) = (self.concurrency?, self.concurrency_ramp_ns?);
        (self.active_runs < c).then(|| ramp_reaches(c, d, self.active_runs + 1))
    }

    /// An as-soon-as-possible start whose slot the ramping ceiling opened after the last start
    /// and the last slot freed by a run's end is due at the ramp's step, however late the
    /// caller looks, so a late wake-up shows as lateness instead of moving the schedule.
    fn ramp_step(&self, deadline_ns: u64, asap: bool) -> (u64, bool) {
        match self.ramp_opens() {
            Some(at)
                if asap
                    && at > self.last_start_ns
                    && at <= deadline_ns
                    && self.slot_freed_ns.is_none_or(|freed| at > freed) =>
            {
                (at, false)
            }
            _ => (deadline_ns, asap),
        }
    }

    /// The next start's deadline: its offset, or `now` when it has none.
    fn start_deadline(&self, now_ns: u64) -> Option<(u64, bool)> {
        let (_, s) = self.next_start?;
        Some(match s.offset_us {
            Some(us) => (us.saturating_mul(1000).saturating_sub(self.shift_ns), false),
            None => (now_ns, true),
        })
    }

    /// Which job is next and when, at time `now_ns`. Later turns due no later than the next start
    /// go first; a start waits for a free slot, and every request for a prefill slot.
    pub fn peek(&mut self, now_ns: u64) -> Peek {
        match self.next_due(now_ns) {
            Ok(due) => Peek::Due { deadline_ns: due.deadline_ns, asap: due.asap },
            Err(p) => p,
        }
    }

    /// The next job's source and time, or what to do instead.
    fn next_due(&mut self, now_ns: u64) -> Result<Due, Peek> {
        if self.stopped {
            return Err(Peek::Finished);
        }
        let later = self.later.peek().map(|Reverse((d, _, j))| (d.saturating_sub(self.shift_ns), j.asap, true));
        let start = if self.slot_free(now_ns) {
            self.start_deadline(now_ns).map(|(d, asap)| self.ramp_step(d, asap))
        } else {
            // Held by a ramping ceiling only: due when the ceiling rises.
            self.ramp_opens().and_then(|at| {
                let (d, asap) = self.start_deadline(now_ns)?;
                Some((d.max(at), asap && at <= d))
            })
        }
        .map(|(d, asap)| (d, asap, false));
        let next = match (later, start) {
            (Some(l), Some(s)) => Some(if l.0 <= s.0 { l } else { s }),
            (l, s) => l.or(s),
        };
        let Some((mut deadline_ns, asap, later)) = next else {
            if self.next_start.is_none() && self.active_runs == 0 {
                self.stopped = true;
                return Err(Peek::Finished);
            }
            return Err(Peek::AwaitCompletion);
        };
        if let Some(cap) = self.idle_cap_ns
            && self.in_flight == 0
            && !asap
        {
            let latest = self.idle_since_ns.saturating_add(cap);
            if deadline_ns > latest {
                let by = deadline_ns - latest;
                self.shift_ns = self.shift_ns.saturating_add(by);
                self.idle_skips = (self.idle_skips.0 + 1, self.idle_skips.1.saturating_add(by));
                deadline_ns = latest;
            }
        }
        if self.end_ns.is_some_and(|end| deadline_ns.max(now_ns) >= end) {
            self.stop();
            return Err(Peek::Finished);
        }
        // Every request, first turn or later, waits for a prefill slot.
        let at = self.prefill_opens(now_ns).ok_or(Peek::AwaitCompletion)?;
        Ok(Due { deadline_ns: deadline_ns.max(at), asap: asap && at <= deadline_ns, later, slot_ns: deadline_ns })
    }

    /// Takes the job [`Dispatch::peek`] announced (whatever the time: the caller decides when);
    /// `None` when nothing is due.
    pub fn take(&mut self, now_ns: u64) -> Option<Job> {
        let Due { deadline_ns, asap, later, slot_ns } = self.next_due(now_ns).ok()?;
        let job = if later {
            // A turn held for a prefill slot is due when the slot opens.
            let job = self.later.pop().map(|Reverse((_, _, j))| Job { deadline_ns, asap, ..j })?;
            if let Some(g) = self.graphs.get_mut(&job.run) {
                g.open += 1;
                g.queued = g.queued.saturating_sub(1);
                g.budget = g.budget.saturating_sub(1);
                // The run's last request: the turns it queued beside it are not sent.
                if g.budget == 0 && g.queued > 0 {
                    g.queued = 0;
                    self.later.retain(|Reverse((_, _, j))| j.run != job.run);
                }
            }
            job
        } else {
            let (index, s) = self.next_start?;
            let session = self.schedule.sessions.get(s.session as usize)?;
            let first = session.turns.first()?.row;
            if session.graph.is_some() && s.turns > 1 {
                let n = session.turns.len();
                let waiting = (0..n as u32).map(|t| session.waits_for(t)).collect();
                let ends = vec![u64::MAX; n];
                self.graphs.insert(index, RunGraph { waiting, ends, open: 1, queued: 0, budget: s.turns - 1 });
            }
            self.next_start = self.cursor.next(&self.schedule).map(|s| (self.cursor.index(), s));
            // The next run's session read now, a run ahead of its use: its memory is fetched
            // while this run's request is routed and started (the result is only a value to
            // keep).
            if let Some((_, next)) = self.next_start {
                std::hint::black_box(self.schedule.sessions.get(next.session as usize).map(|s| s.turns.len()));
            }
            self.active_runs += 1;
            self.last_start_ns = deadline_ns;
            self.ceiling.peak_runs = self.ceiling.peak_runs.max(self.active_runs);
            if s.offset_us.is_some() && self.slot_freed_ns.is_some_and(|freed| slot_ns <= freed) {
                self.ceiling.held_starts += 1;
            }
            Job {
                run: index,
                session: s.session,
                turn: 0,
                run_turns: s.turns,
                row: first,
                // A start held by a ramping ceiling has the ramp's time as its deadline.
                deadline_ns,
                asap,
                cancel_after_ns: None,
            }
        };
        self.in_flight += 1;
        if self.prefill.is_some() {
            self.prefilling.insert((job.run, job.turn));
        }
        self.count(&job, !later);
        let cancel_after_ns = self.cancellation.and_then(|c| c.delay_for(job.run, job.turn));
        Some(Job { cancel_after_ns, ..job })
    }

    /// Counts a request taken (`start`: a session run's first turn) and ends the sending when
    /// it reaches a count: the request count, or the session count once every turn of the runs
    /// started was taken (AIPerf's final credit).
    fn count(&mut self, job: &Job, start: bool) {
        let c = &mut self.counts;
        c.taken = c.taken.saturating_add(1);
        if start {
            c.started = c.started.saturating_add(1);
            c.planned = c.planned.saturating_add(u64::from(job.run_turns));
        }
        let sessions_reached = c.sessions.is_some_and(|n| c.started >= n);
        if sessions_reached {
            self.next_start = None;
        }
        if c.requests.is_some_and(|n| c.taken >= n) || (sessions_reached && c.taken >= c.planned) {
            c.ended_by_a_start = start;
            self.next_start = None;
            self.stop();
        }
    }

    /// A request finished at `end_ns` (its prefill slot, if it still held one, is free);
    /// returns the session run's turns now queued, those for which this was the last turn they
    /// waited for (so that their bodies can be prepared before they are due).
    ///
    /// A turn is timed from the turn it follows ([`Session::timed_after`]) by its
    /// [`TurnTiming`]; a turn whose joined sub-agents end after the turn it follows is due when
    /// the last of them ends, without its delay, as AIPerf dispatches a join it held back.
    pub fn complete(&mut self, job: &Job, end_ns: u64) -> Vec<Job> {
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.in_flight == 0 {
            self.idle_since_ns = end_ns;
        }
        self.first_token(job);
        let mut queued = Vec::new();
        let graph = match self.graphs.get_mut(&job.run) {
            Some(g) => {
                if let Some(e) = g.ends.get_mut(job.turn as usize) {
                    *e = end_ns;
                }
                true
            }
            None => false,
        };
        // A chain run sends its first `run_turns` turns (its session is not read after the last
        // one); a run with sub-agents sends its first `run_turns` requests in the order they are
        // taken, as AIPerf stops after a request count.
        let follows = graph || job.turn.saturating_add(1) < job.run_turns;
        let schedule = (follows && !self.stopped).then(|| Arc::clone(&self.schedule));
        if let Some(session) = schedule.as_ref().and_then(|s| s.sessions.get(job.session as usize)) {
            for next in session.next_turns(job.turn).filter(|&n| graph || n < job.run_turns) {
                // Whether a joined sub-agent ended after the turn this one follows.
                let mut joined_later = false;
                if let Some(g) = self.graphs.get_mut(&job.run)
                    && let Some(w) = g.waiting.get_mut(next as usize)
                {
                    *w = w.saturating_sub(1);
                    if *w > 0 || g.budget == 0 {
                        continue;
                    }
                    g.queued += 1;
                    let after = session.timed_after(next).and_then(|a| g.ends.get(a as usize));
                    joined_later = after.is_some_and(|&a| a < end_ns);
                }
                let Some(turn) = session.turns.get(next as usize) else { continue };
                let (deadline_ns, asap) = match (self.user_gap_ns, turn.timing) {
                    // It waited for its sub-agents after the turn it follows ended: due at once.
                    _ if joined_later => (end_ns, job.asap),
                    // A user's next turn: one gap after its last one was due, or at once when late.
                    (Some(gap), _) => (job.deadline_ns.saturating_add(gap).max(end_ns), false),
                    (None, TurnTiming::At(us)) => {
                        (us.saturating_mul(1000).saturating_sub(self.shift_ns).max(end_ns), false)
                    }
                    (None, TurnTiming::After(us)) => (end_ns.saturating_add(us.saturating_mul(1000)), false),
                    (None, TurnTiming::Immediately) => (end_ns, job.asap),
                };
                let j = Job { turn: next, row: turn.row, deadline_ns, asap, ..*job };
                self.seq += 1;
                // Queued in the unmoved frame, so that a later move of the idle cap moves it too.
                self.later.push(Reverse((deadline_ns.saturating_add(self.shift_ns), self.seq, j)));
                queued.push(j);
            }
        }
        let run_ended = match self.graphs.get_mut(&job.run) {
            Some(g) => {
                g.open = g.open.saturating_sub(1);
                // Stopping dropped every queued turn.
                g.open == 0 && (g.queued == 0 || self.stopped)
            }
            None => queued.is_empty(),
        };
        if run_ended {
            self.graphs.remove(&job.run);
            if !self.slot_free(end_ns) {
                self.slot_freed_ns = Some(self.slot_freed_ns.map_or(end_ns, |t| t.max(end_ns)));
            }
            self.active_runs = self.active_runs.saturating_sub(1);
        }
        queued
    }
}

/// A session run with sub-agents in progress: what each of its turns still waits for.
#[derive(Debug)]
struct RunGraph {
    /// For every turn of the run, how many of the turns it waits for have not ended.
    waiting: Vec<u32>,
    /// When each turn ended (`u64::MAX`: not yet).
    ends: Vec<u64>,
    /// Turns sent and not ended.
    open: u32,
    /// Turns queued and not sent.
    queued: u32,
    /// Requests the run may still send.
    budget: u32,
}

/// The concurrency ceiling at `now_ns` of a run whose ceiling ramps to `target` over
/// `ramp_ns`, as AIPerf's linear ramp in whole steps: 1 at the start, each next value `v` from
/// `ramp × (v − 1) / (target − 1)` on, `target` at the ramp's end.
pub fn ramped_limit(target: usize, ramp_ns: u64, now_ns: u64) -> usize {
    if target <= 1 || now_ns >= ramp_ns {
        return target;
    }
    let steps = (target - 1) as u128 * u128::from(now_ns) / u128::from(ramp_ns);
    1 + steps as usize
}

/// When [`ramped_limit`] first reaches `value` (at most `target`).
fn ramp_reaches(target: usize, ramp_ns: u64, value: usize) -> u64 {
    if value <= 1 || target <= 1 {
        return 0;
    }
    let (num, den) = ((value - 1) as u128 * u128::from(ramp_ns), (target - 1) as u128);
    u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX)
}
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
