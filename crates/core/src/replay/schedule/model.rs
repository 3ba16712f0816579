//! The schedule's data: sessions and their turns (a chain, or a [`Graph`] when sub-agents branch),
//! the session runs ([`Start`]s, listed or generated) and the [`Schedule`] that holds them.

use super::arrivals::Generator;
use super::shard::Shard;

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
    pub turns: Turns,
    /// Which turns each turn waits for, when not only the previous one.
    pub graph: Option<Box<Graph>>,
}

/// A session's turns: one is held in place, more on the heap.
pub type Turns = smallvec::SmallVec<[Turn; 1]>;

impl Session {
    /// A chain of turns.
    pub fn chain(id: Option<Box<str>>, turns: impl Into<Turns>) -> Session {
        Session { id, turns: turns.into(), graph: None }
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
    /// request count or the duration): sessions are taken by the generator's
    /// [`Sampling`](crate::replay::sampling::Sampling) (in order by default, reused past the
    /// trace's end).
    Generated(Generator),
}

impl Default for Starts {
    fn default() -> Self {
        Starts::Listed(Vec::new())
    }
}
