use std::collections::HashMap;

use super::*;
use crate::replay::schedule::{Graph, Node, Session, Starts, Turn};

/// An in-memory server with a virtual clock: every request takes `service_ns`; the driver
/// sends each job exactly at its deadline (or at once when late) and records the send times.
struct Sim {
    d: Dispatch,
    now: u64,
    service_ns: u64,
    in_flight: Vec<(u64, Job)>,
    sent: Vec<(u64, Job)>,
    max_active: usize,
    /// First tokens arrive this long after the send (`None`: never, only the end).
    ttft_ns: Option<u64>,
    first_tokens: Vec<(u64, Job)>,
    /// (sent, first token) of every request that had one.
    prefills: Vec<(u64, u64)>,
    max_in_flight: usize,
}

impl Sim {
    fn new(schedule: Schedule, concurrency: Option<usize>, end_ns: Option<u64>, service_ns: u64) -> Sim {
        Sim {
            d: Dispatch::new(Arc::new(schedule), concurrency, end_ns),
            now: 0,
            service_ns,
            in_flight: Vec::new(),
            sent: Vec::new(),
            max_active: 0,
            ttft_ns: None,
            first_tokens: Vec::new(),
            prefills: Vec::new(),
            max_in_flight: 0,
        }
    }

    /// Runs until finished and drained, or until `stop_at` (then stops sending).
    fn run(&mut self, stop_at: Option<u64>) {
        for _ in 0..100_000 {
            if stop_at.is_some_and(|t| self.now >= t) && !self.d.is_stopped() {
                self.d.stop();
            }
            let next_first = self.first_tokens.iter().map(|(t, _)| *t).min();
            if let Some(t) = next_first
                && self.in_flight.iter().all(|(e, _)| *e >= t)
                && !matches!(self.d.peek(self.now), Peek::Due { deadline_ns, .. } if deadline_ns < t)
            {
                self.now = self.now.max(t);
                let i = self.first_tokens.iter().position(|(e, _)| *e == t).unwrap();
                let (_, job) = self.first_tokens.remove(i);
                self.prefills.push((t - self.ttft_ns.unwrap(), t));
                self.d.first_token(&job);
                continue;
            }
            let next_done = self.in_flight.iter().map(|(t, _)| *t).min();
            match self.d.peek(self.now) {
                Peek::Due { deadline_ns, .. } if next_done.is_none_or(|t| deadline_ns <= t) => {
                    self.now = self.now.max(deadline_ns);
                    if stop_at.is_some_and(|t| self.now >= t) {
                        self.d.stop();
                        continue;
                    }
                    let job = self.d.take(self.now).unwrap();
                    assert!(self.now >= job.deadline_ns || job.asap, "sent early: {job:?} at {}", self.now);
                    self.sent.push((self.now, job));
                    self.in_flight.push((self.now + self.service_ns, job));
                    if let Some(ttft) = self.ttft_ns {
                        self.first_tokens.push((self.now + ttft, job));
                    }
                    self.max_active = self.max_active.max(self.d.active_runs());
                    self.max_in_flight = self.max_in_flight.max(self.d.in_flight());
                }
                Peek::Finished if self.in_flight.is_empty() => return,
                _ => {
                    let Some(t) = next_done else { panic!("waiting with nothing in flight") };
                    self.now = self.now.max(t);
                    let i = self.in_flight.iter().position(|(e, _)| *e == t).unwrap();
                    let (_, job) = self.in_flight.remove(i);
                    self.d.complete(&job, t);
                }
            }
        }
        panic!("the simulation did not end");
    }
}

fn session(rows: &[(u32, TurnTiming)]) -> Session {
    Session::chain(None, rows.iter().map(|&(row, timing)| Turn { row, timing }).collect::<Vec<_>>())
}

fn start(offset_ms: Option<u64>, session: u32, turns: u32) -> Start {
    Start { offset_us: offset_ms.map(|ms| ms * 1000), session, turns }
}

const MS: u64 = 1_000_000;

#[test]
fn a_concurrency_ramp_raises_the_ceiling_one_step_at_a_time() {
    // AIPerf's linear ramp from 1 to 5 over 4 s: 2 at 1 s, 3 at 2 s, 4 at 3 s, 5 at 4 s.
    let at = |ms: u64| ramped_limit(5, 4_000 * MS, ms * MS);
    assert_eq!([at(0), at(999), at(1000), at(2500), at(3000), at(4000), at(9000)], [1, 1, 2, 3, 4, 5, 5]);
    assert_eq!(ramped_limit(1, 4_000 * MS, 0), 1);
    assert_eq!(ramp_reaches(5, 4_000 * MS, 3), 2_000 * MS);
    // A closed loop of long requests: the starts leave as the ceiling rises, never above it.
    let sessions = (0..8).map(|i| session(&[(i, TurnTiming::Immediately)])).collect();
    let starts = (0..8).map(|i| start(None, i, 1)).collect();
    let schedule = Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() };
    let mut sim = Sim::new(schedule.clone(), Some(5), None, 10_000 * MS);
    sim.d = Dispatch::new(Arc::new(schedule), Some(5), None).with_concurrency_ramp(Some(4_000 * MS));
    sim.run(None);
    let sends: Vec<u64> = sim.sent.iter().map(|(t, _)| t / MS).collect();
    assert_eq!(sends, [0, 1000, 2000, 3000, 4000, 10_000, 11_000, 12_000]);
    assert_eq!(sim.max_active, 5);
}

#[test]
fn a_late_look_keeps_the_ramps_steps_as_the_starts_deadlines() {
    // 1 → 4 over 1.5 s (2 at 0.5 s, 3 at 1 s, 4 at 1.5 s), first looked at 1.7 s: each held
    // start is due at its step and counts its lateness, instead of being due "now".
    let sessions = (0..4).map(|i| session(&[(i, TurnTiming::Immediately)])).collect();
    let starts = (0..4).map(|i| start(None, i, 1)).collect();
    let schedule = Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() };
    let mut d = Dispatch::new(Arc::new(schedule), Some(4), None).with_concurrency_ramp(Some(1_500 * MS));
    let first = d.take(0).unwrap();
    assert_eq!((first.deadline_ns, first.asap), (0, true));
    let late = 1_700 * MS;
    let steps: Vec<(u64, bool)> = (0..3).map(|_| d.take(late).map(|j| (j.deadline_ns / MS, j.asap)).unwrap()).collect();
    assert_eq!(steps, [(500, false), (1000, false), (1500, false)]);
    // A slot freed by a run's end after the ramp: the next start is due when looked at.
    let sessions = (0..6).map(|i| session(&[(i, TurnTiming::Immediately)])).collect();
    let starts = (0..6).map(|i| start(None, i, 1)).collect();
    let schedule = Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() };
    let mut d = Dispatch::new(Arc::new(schedule), Some(2), None).with_concurrency_ramp(Some(100 * MS));
    let a = d.take(0).unwrap();
    let _b = d.take(200 * MS).unwrap();
    d.complete(&a, 300 * MS);
    let c = d.take(400 * MS).unwrap();
    assert_eq!((c.deadline_ns, c.asap), (400 * MS, true));
}

#[test]
fn a_prefill_limit_keeps_prefills_apart_under_the_concurrency_ceiling() {
    // Eight closed-loop sessions of two turns, 4 slots, one request in prefill at a time:
    // a 10 ms prefill, a 100 ms answer.
    let sessions =
        (0..8).map(|i| session(&[(2 * i, TurnTiming::Immediately), (2 * i + 1, TurnTiming::Immediately)])).collect();
    let starts = (0..8).map(|i| start(None, i, 2)).collect();
    let schedule = Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() };
    let mut sim = Sim::new(schedule.clone(), Some(4), None, 100 * MS);
    sim.d = Dispatch::new(Arc::new(schedule.clone()), Some(4), None).with_prefill_limit(Some(1), None);
    sim.ttft_ns = Some(10 * MS);
    sim.run(None);
    assert_eq!(sim.sent.len(), 16);
    let mut p = sim.prefills.clone();
    p.sort_unstable();
    assert!(p.windows(2).all(|w| w[0].1 <= w[1].0), "prefills overlap: {p:?}");
    assert_eq!(sim.max_active, 4);
    assert_eq!(sim.max_in_flight, 4);
    let first: Vec<u64> = sim.sent.iter().take(4).map(|(t, _)| t / MS).collect();
    assert_eq!(first, [0, 10, 20, 30]);
    assert_eq!(sim.d.in_prefill(), 0);
    // Without first tokens a request holds its prefill slot to its end.
    let mut sim = Sim::new(schedule.clone(), Some(4), None, 100 * MS);
    sim.d = Dispatch::new(Arc::new(schedule.clone()), Some(4), None).with_prefill_limit(Some(2), None);
    sim.run(None);
    assert_eq!(sim.max_in_flight, 2);
    // A ramping limit: 1 → 3 over 40 ms (2 at 20 ms, 3 at 40 ms); prefills that outlast it.
    let mut sim = Sim::new(schedule.clone(), Some(4), None, 1000 * MS);
    sim.d = Dispatch::new(Arc::new(schedule), Some(4), None).with_prefill_limit(Some(3), Some(40 * MS));
    sim.ttft_ns = Some(500 * MS);
    sim.run(None);
    let first: Vec<u64> = sim.sent.iter().take(4).map(|(t, _)| t / MS).collect();
    assert_eq!(first, [0, 20, 40, 500]);
}

#[test]
fn starts_leave_at_their_offsets() {
    let sessions = (0..5).map(|i| session(&[(i, TurnTiming::Immediately)])).collect();
    let starts = (0..5).map(|i| start(Some(u64::from(i) * 10), i, 1)).collect();
    let mut sim =
        Sim::new(Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() }, None, None, 3 * MS);
    sim.run(None);
    let at: Vec<u64> = sim.sent.iter().map(|(t, _)| *t / MS).collect();
    assert_eq!(at, vec![0, 10, 20, 30, 40]);
}

#[test]
fn the_idle_cap_moves_every_pending_time_earlier_by_the_same_amount() {
    // A: turn 1 a second after turn 0 ends; B at 5 s, C at 5.1 s; every request takes 10 ms.
    let schedule = Schedule {
        sessions: vec![
            session(&[(0, TurnTiming::Immediately), (1, TurnTiming::After(1_000_000))]),
            session(&[(2, TurnTiming::Immediately)]),
            session(&[(3, TurnTiming::Immediately)]),
        ],
        starts: Starts::Listed(vec![start(Some(0), 0, 2), start(Some(5_000), 1, 1), start(Some(5_100), 2, 1)]),
        shard: Default::default(),
    };
    let mut sim = Sim::new(schedule.clone(), None, None, 10 * MS);
    sim.run(None);
    let at: Vec<u64> = sim.sent.iter().map(|(t, _)| *t / MS).collect();
    assert_eq!(at, [0, 1010, 5000, 5100]);
    assert_eq!(sim.d.idle_skips(), (0, 0));
    // At most 100 ms idle: A's second turn 100 ms after its first ended, B 100 ms after
    // that one ended, and C still 100 ms after B (nothing was in flight only 90 ms).
    let mut sim = Sim::new(schedule.clone(), None, None, 10 * MS);
    sim.d = Dispatch::new(Arc::new(schedule), None, None).with_system_idle_cap(Some(100 * MS));
    sim.run(None);
    let at: Vec<u64> = sim.sent.iter().map(|(t, _)| *t / MS).collect();
    assert_eq!(at, [0, 110, 220, 320]);
    assert_eq!(sim.d.idle_skips(), (2, (900 + 3880) * MS));
}

#[test]
fn later_turns_follow_completion_delay_and_timestamp() {
    // Turn 1 right after turn 0, turn 2 5 ms after turn 1 completes, turn 3 at 100 ms.
    let s = session(&[
        (0, TurnTiming::Immediately),
        (1, TurnTiming::Immediately),
        (2, TurnTiming::After(5_000)),
        (3, TurnTiming::At(100_000)),
    ]);
    let mut sim = Sim::new(
        Schedule { sessions: vec![s], starts: Starts::Listed(vec![start(Some(7), 0, 4)]), shard: Default::default() },
        None,
        None,
        10 * MS,
    );
    sim.run(None);
    let at: Vec<(u32, u64)> = sim.sent.iter().map(|(t, j)| (j.turn, *t / MS)).collect();
    assert_eq!(at, vec![(0, 7), (1, 17), (2, 32), (3, 100)]);
}

#[test]
fn a_passed_timestamp_sends_at_once() {
    let s = session(&[(0, TurnTiming::Immediately), (1, TurnTiming::At(1_000))]);
    let mut sim = Sim::new(
        Schedule { sessions: vec![s], starts: Starts::Listed(vec![start(Some(0), 0, 2)]), shard: Default::default() },
        None,
        None,
        20 * MS,
    );
    sim.run(None);
    assert_eq!(sim.sent[1].0, 20 * MS);
}

#[test]
fn the_concurrency_ceiling_holds_a_slot_for_a_whole_session() {
    // Two sessions of two turns with a 50 ms delay, both due at 0, one slot: the second
    // session waits for the first one's last turn, delay included.
    let s = session(&[(0, TurnTiming::Immediately), (1, TurnTiming::After(50_000))]);
    let schedule = Schedule {
        sessions: vec![s],
        starts: Starts::Listed(vec![start(Some(0), 0, 2), start(Some(0), 0, 2)]),
        shard: Default::default(),
    };
    let mut sim = Sim::new(schedule, Some(1), None, 10 * MS);
    sim.run(None);
    let at: Vec<(u64, u32, u64)> = sim.sent.iter().map(|(t, j)| (j.run, j.turn, *t / MS)).collect();
    assert_eq!(at, vec![(0, 0, 0), (0, 1, 60), (1, 0, 70), (1, 1, 130)]);
    assert_eq!(sim.max_active, 1);
    assert_eq!(sim.d.ceiling(), Ceiling { held_starts: 1, peak_runs: 1 });
}

#[test]
fn a_ceiling_never_reached_holds_nothing_back() {
    let sessions = (0..5).map(|i| session(&[(i, TurnTiming::Immediately)])).collect();
    let starts = (0..5).map(|i| start(Some(u64::from(i) * 10), i, 1)).collect();
    let schedule = Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() };
    let mut sim = Sim::new(schedule, Some(4), None, 3 * MS);
    sim.run(None);
    assert_eq!(sim.d.ceiling(), Ceiling { held_starts: 0, peak_runs: 1 });
}

#[test]
fn asap_starts_fill_the_slots_and_inherit_asap() {
    let sessions = vec![session(&[(0, TurnTiming::Immediately), (1, TurnTiming::Immediately)])];
    let starts = (0..6).map(|_| start(None, 0, 2)).collect();
    let mut sim = Sim::new(
        Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() },
        Some(3),
        None,
        4 * MS,
    );
    sim.run(None);
    assert_eq!(sim.sent.len(), 12);
    assert_eq!(sim.max_active, 3);
    assert!(sim.sent.iter().all(|(_, j)| j.asap));
    // Three runs at a time, two turns of 4 ms each: everything is done by 16 ms.
    assert_eq!(sim.sent.last().unwrap().0, 12 * MS);
}

#[test]
fn the_duration_ends_sending_and_stop_ends_at_any_phase() {
    let sessions = (0..10).map(|i| session(&[(i, TurnTiming::Immediately)])).collect();
    let starts: Vec<Start> = (0..10).map(|i| start(Some(u64::from(i) * 10), i, 1)).collect();
    let schedule = Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() };
    let mut sim = Sim::new(schedule.clone(), None, Some(35 * MS), MS);
    sim.run(None);
    assert_eq!(sim.sent.len(), 4);
    for stop in [0, 1, 15, 45, 95, 200] {
        let mut sim = Sim::new(schedule.clone(), None, None, 3 * MS);
        sim.run(Some(stop * MS));
        let expected = (0..10).filter(|i| i * 10 < stop).count();
        assert_eq!(sim.sent.len(), expected, "stopped at {stop} ms");
        assert_eq!(sim.d.in_flight(), 0);
    }
}

#[test]
fn stopping_drops_queued_turns_and_frees_slots() {
    let s = session(&[(0, TurnTiming::Immediately), (1, TurnTiming::After(1_000_000))]);
    let mut d = Dispatch::new(
        Arc::new(Schedule {
            sessions: vec![s],
            starts: Starts::Listed(vec![start(Some(0), 0, 2)]),
            shard: Default::default(),
        }),
        None,
        None,
    );
    let job = d.take(0).unwrap();
    assert_eq!(d.complete(&job, MS).len(), 1);
    d.stop();
    assert_eq!(d.peek(2 * MS), Peek::Finished);
    assert_eq!(d.take(2 * MS), None);
}

#[test]
fn huge_offsets_and_delays_saturate_instead_of_overflowing() {
    let s = session(&[(0, TurnTiming::Immediately), (1, TurnTiming::After(u64::MAX / 2))]);
    let schedule =
        Schedule { sessions: vec![s], starts: Starts::Listed(vec![start(None, 0, 2)]), shard: Default::default() };
    let mut d = Dispatch::new(Arc::new(schedule), None, Some(u64::MAX - 1));
    let job = d.take(0).unwrap();
    let next = d.complete(&job, u64::MAX - 10)[0];
    assert_eq!(next.deadline_ns, u64::MAX);
    assert_eq!(d.peek(0), Peek::Finished);
}

/// A session of turns (row, timing) waiting for each other as `nodes` say.
fn graph_session(turns: &[(u32, TurnTiming)], nodes: &[Node]) -> Session {
    let mut s = session(turns);
    s.graph = Some(Box::new(Graph::new(nodes).unwrap()));
    s
}

fn node(after: Option<u32>, joins: &[u32]) -> Node {
    Node { after, joins: joins.to_vec() }
}

/// When each (run, turn) was sent.
fn sent_at(sim: &Sim) -> HashMap<(u64, u32), u64> {
    sim.sent.iter().map(|(t, j)| ((j.run, j.turn), *t)).collect()
}

#[test]
fn a_join_waits_for_both_branches_and_leaves_when_the_last_ends() {
    // root0 starts a (two turns) and b (one); root1 joins both, 20 ms after root0 by its own
    // timing. Every request takes 10 ms.
    let s = graph_session(
        &[
            (0, TurnTiming::Immediately),
            (1, TurnTiming::Immediately),
            (2, TurnTiming::After(5_000)),
            (3, TurnTiming::Immediately),
            (4, TurnTiming::After(20_000)),
        ],
        &[node(None, &[]), node(Some(0), &[]), node(Some(1), &[]), node(Some(0), &[]), node(Some(0), &[2, 3])],
    );
    let schedule =
        Schedule { sessions: vec![s], starts: Starts::Listed(vec![start(Some(0), 0, 5)]), shard: Default::default() };
    let mut sim = Sim::new(schedule, Some(1), None, 10 * MS);
    sim.run(None);
    let at: Vec<(u32, u64)> = sim.sent.iter().map(|(t, j)| (j.turn, *t / MS)).collect();
    // a0 and b0 at 10; b0 ends at 20, a1 leaves at 25 and ends at 35: the join waited for
    // it and leaves at once (its 20 ms counted from root0 had passed at 30).
    assert_eq!(at, [(0, 0), (1, 10), (3, 10), (2, 25), (4, 35)]);
    // The run held one slot all along.
    assert_eq!(sim.max_active, 1);
    assert_eq!(sim.d.active_runs(), 0);
}

#[test]
fn a_join_whose_branches_ended_first_keeps_its_delay() {
    // root0 starts x, joined by root2; root1 50 ms after root0, root2 5 ms after root1.
    let s = graph_session(
        &[
            (0, TurnTiming::Immediately),
            (1, TurnTiming::Immediately),
            (2, TurnTiming::After(50_000)),
            (3, TurnTiming::After(5_000)),
        ],
        &[node(None, &[]), node(Some(0), &[]), node(Some(0), &[]), node(Some(2), &[1])],
    );
    let schedule =
        Schedule { sessions: vec![s], starts: Starts::Listed(vec![start(Some(0), 0, 4)]), shard: Default::default() };
    let mut sim = Sim::new(schedule.clone(), None, None, 10 * MS);
    sim.run(None);
    let at: Vec<(u32, u64)> = sim.sent.iter().map(|(t, j)| (j.turn, *t / MS)).collect();
    assert_eq!(at, [(0, 0), (1, 10), (2, 60), (3, 75)]);
    // A request count that cuts the run after x: the first two taken only, and the run ends.
    let cut = Schedule { starts: Starts::Listed(vec![start(Some(0), 0, 2)]), ..schedule };
    let mut sim = Sim::new(cut, Some(1), None, 10 * MS);
    sim.run(None);
    assert_eq!(sim.sent.iter().map(|(_, j)| j.turn).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(sim.d.active_runs(), 0);
}

#[test]
fn stopping_a_run_with_branches_in_flight_frees_its_slot_when_they_end() {
    let s = graph_session(
        &[
            (0, TurnTiming::Immediately),
            (1, TurnTiming::Immediately),
            (2, TurnTiming::Immediately),
            (3, TurnTiming::Immediately),
        ],
        &[node(None, &[]), node(Some(0), &[]), node(Some(0), &[]), node(Some(0), &[1, 2])],
    );
    let schedule =
        Schedule { sessions: vec![s], starts: Starts::Listed(vec![start(Some(0), 0, 4)]), shard: Default::default() };
    let mut d = Dispatch::new(Arc::new(schedule), Some(1), None);
    let root = d.take(0).unwrap();
    let queued = d.complete(&root, 10 * MS);
    assert_eq!(queued.iter().map(|j| j.turn).collect::<Vec<_>>(), [1, 2]);
    let a = d.take(10 * MS).unwrap();
    let b = d.take(10 * MS).unwrap();
    d.stop();
    assert!(d.complete(&a, 20 * MS).is_empty());
    assert_eq!(d.active_runs(), 1);
    assert!(d.complete(&b, 30 * MS).is_empty());
    assert_eq!(d.active_runs(), 0);
    assert_eq!(d.in_flight(), 0);
}

/// A random graph of `n` turns: each later turn follows an earlier one and joins some others,
/// with a delay or none.
fn random_graph(spec: &[(u32, u32, Option<u64>)]) -> Session {
    let mut turns = vec![(0, TurnTiming::Immediately)];
    let mut nodes = vec![node(None, &[])];
    for (k, (after, joins, delay)) in spec.iter().enumerate() {
        let k = k as u32 + 1;
        let after = after % k;
        let joins: Vec<u32> =
            (0..k).filter(|&p| p != after && joins & (1 << (p % 32)) != 0 && (p * 7 + k).is_multiple_of(3)).collect();
        turns.push((k, delay.map_or(TurnTiming::Immediately, |d| TurnTiming::After(d * 1000))));
        nodes.push(node(Some(after), &joins));
    }
    graph_session(&turns, &nodes)
}

/// A schedule of sessions given as (turns, start offset in ms, delay between turns in ms).
fn random_schedule(turns: &[(u32, u64, Option<u64>)]) -> Schedule {
    let mut sessions = Vec::new();
    let mut starts = Vec::new();
    let mut row = 0;
    let mut offsets: Vec<u64> = turns.iter().map(|t| t.1).collect();
    offsets.sort_unstable();
    for (i, (n, _, delay)) in turns.iter().enumerate() {
        let timing = delay.map_or(TurnTiming::Immediately, |d| TurnTiming::After(d * 1000));
        let t: Vec<(u32, TurnTiming)> = (0..*n)
            .map(|k| {
                row += 1;
                (row, if k == 0 { TurnTiming::Immediately } else { timing })
            })
            .collect();
        sessions.push(session(&t));
        starts.push(start(Some(offsets[i]), i as u32, *n));
    }
    Schedule { sessions, starts: Starts::Listed(starts), shard: Default::default() }
}

proptest::proptest! {
    #[test]
    fn every_request_is_sent_once_in_order_within_the_ceiling(
        turns in proptest::collection::vec((1u32..4, 0u64..50, proptest::option::of(0u64..30)), 1..40),
        conc in proptest::option::of(1usize..5),
        service in 1u64..20,
    ) {
        let total: u32 = turns.iter().map(|t| t.0).sum();
        let mut sim = Sim::new(random_schedule(&turns), conc, None, service * MS);
        sim.run(None);
        proptest::prop_assert_eq!(sim.sent.len() as u32, total);
        let mut rows: Vec<u32> = sim.sent.iter().map(|(_, j)| j.row).collect();
        rows.sort_unstable();
        rows.dedup();
        proptest::prop_assert_eq!(rows.len() as u32, total);
        if let Some(c) = conc {
            proptest::prop_assert!(sim.max_active <= c);
        }
        // Turns of a run leave in order, each after the previous one completed.
        for w in sim.sent.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            proptest::prop_assert!(a.0 <= b.0);
        }
        for (t, j) in &sim.sent {
            if j.turn > 0 {
                let prev = sim.sent.iter().find(|(_, p)| p.run == j.run && p.turn == j.turn - 1).unwrap();
                proptest::prop_assert!(*t >= prev.0 + service * MS);
            }
        }
    }

    #[test]
    fn no_turn_leaves_before_the_turns_it_waits_for_end(
        specs in proptest::collection::vec(
            proptest::collection::vec((0u32..64, proptest::num::u32::ANY, proptest::option::of(0u64..30)), 0..12),
            1..6,
        ),
        cuts in proptest::collection::vec(proptest::option::of(1u32..13), 6),
        conc in proptest::option::of(1usize..3),
        service in 1u64..20,
    ) {
        let sessions: Vec<Session> = specs.iter().map(|s| random_graph(s)).collect();
        let starts: Vec<Start> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = s.turns.len() as u32;
                start(Some(i as u64 * 7), i as u32, cuts[i].map_or(n, |c| c.min(n)))
            })
            .collect();
        let schedule = Schedule { sessions: sessions.clone(), starts: Starts::Listed(starts.clone()), shard: Default::default() };
        let mut sim = Sim::new(schedule, conc, None, service * MS);
        sim.run(None);
        // Every run sends as many requests as its cut, each turn once, after every turn it
        // waits for (so a cut run sends the first turns taken).
        let total: u32 = starts.iter().map(|s| s.turns).sum();
        proptest::prop_assert_eq!(sim.sent.len() as u32, total);
        let at = sent_at(&sim);
        proptest::prop_assert_eq!(at.len() as u32, total);
        proptest::prop_assert_eq!(sim.d.active_runs(), 0);
        if let Some(c) = conc {
            proptest::prop_assert!(sim.max_active <= c);
        }
        for st in &starts {
            let sent = sim.sent.iter().filter(|(_, j)| j.session == st.session).count() as u32;
            proptest::prop_assert_eq!(sent, st.turns);
        }
        let end = |run: u64, turn: u32| at[&(run, turn)] + service * MS;
        for (t, j) in &sim.sent {
            let s = &sessions[j.session as usize];
            let Some(after) = s.timed_after(j.turn) else { continue };
            let joins: Vec<u32> = (0..j.turn).filter(|&p| p != after && s.next_turns(p).any(|n| n == j.turn)).collect();
            let after_end = end(j.run, after);
            let joins_end = joins.iter().map(|&p| end(j.run, p)).max().unwrap_or(0);
            proptest::prop_assert!(*t >= after_end && *t >= joins_end, "{:?} before its parents", j);
            let delay = match s.turns[j.turn as usize].timing {
                TurnTiming::After(us) => us * 1000,
                _ => 0,
            };
            // AIPerf's rule: the delay after the turn it follows, unless it waited for a join.
            let due = if joins_end <= after_end { after_end + delay } else { joins_end };
            proptest::prop_assert_eq!(*t, due, "{:?}", j);
        }
    }

    #[test]
    fn shards_send_the_whole_runs_requests_at_the_same_times(
        turns in proptest::collection::vec((1u32..4, 0u64..50, proptest::option::of(0u64..30)), 1..40),
        n in 1u32..5,
        service in 1u64..20,
    ) {
        let whole = random_schedule(&turns);
        let mut sim = Sim::new(whole.clone(), None, None, service * MS);
        sim.run(None);
        let mut union = Vec::new();
        for k in 0..n {
            let mut part = Sim::new(whole.clone().sharded(crate::replay::schedule::Shard { index: k, count: n }), None, None, service * MS);
            part.run(None);
            proptest::prop_assert!(part.sent.iter().all(|(_, j)| j.session % n == k));
            union.extend(part.sent);
        }
        let key = |(t, j): &(u64, Job)| (j.run, j.turn, *t);
        let mut a: Vec<_> = sim.sent.iter().map(key).collect();
        let mut b: Vec<_> = union.iter().map(key).collect();
        a.sort_unstable();
        b.sort_unstable();
        proptest::prop_assert_eq!(a, b);
    }
}
