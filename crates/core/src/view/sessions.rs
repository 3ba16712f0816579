//! The sessions of a run over time, as AIPerf's `analyze swim-lane` lays them out: each session
//! run on a slot (a row a later session reuses once the earlier one ended, assigned greedily in
//! order of session start), its turns as bars and the delays between them, and the number of
//! requests in flight and of sessions open over time. Pure functions of the run's [`Point`]s;
//! what is drawn is bounded by [`MAX_SLOTS`] and [`MAX_REQUESTS`] whatever the run's size.
//!
//! [`Point`]: super::Point

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

use super::run::{NONE, Run};

/// Most slots drawn (the first ones).
pub const MAX_SLOTS: usize = 40;
/// Most requests drawn: sessions in order of start on the drawn slots, while they fit.
pub const MAX_REQUESTS: usize = 2000;
/// Most steps of a concurrency curve drawn (more are reduced to the peak of each stretch).
pub const MAX_STEPS: usize = 600;

/// One session run: its requests (indices in [`Run::points`]) in order of send.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub start_ns: u64,
    pub end_ns: u64,
    pub requests: Vec<u32>,
}

/// The session runs of a run (by [`Point::instance`](super::Point::instance); a request with
/// none is a session of its own), ordered by start, ties in order of first request.
pub fn sessions(run: &Run) -> Vec<Session> {
    let mut at: HashMap<u32, usize> = HashMap::new();
    let mut out: Vec<Session> = Vec::new();
    for (i, p) in run.points.iter().enumerate() {
        let (start, end) = (p.sent_ns, p.end_ns.max(p.sent_ns));
        let known = if p.instance == NONE { None } else { at.get(&p.instance).copied() };
        match known.and_then(|k| out.get_mut(k)) {
            Some(s) => {
                s.start_ns = s.start_ns.min(start);
                s.end_ns = s.end_ns.max(end);
                s.requests.push(i as u32);
            }
            None => {
                if p.instance != NONE {
                    at.insert(p.instance, out.len());
                }
                out.push(Session { start_ns: start, end_ns: end, requests: vec![i as u32] });
            }
        }
    }
    let sent = |i: &u32| run.points.get(*i as usize).map_or(0, |p| p.sent_ns);
    for s in &mut out {
        s.requests.sort_by_key(|i| (sent(i), *i));
    }
    out.sort_by_key(|s| s.start_ns);
    out
}

/// The slot of each `[start, end)` span: taken in order of start (ties in the given order), each
/// gets the lowest slot whose last span ended at or before its start, else a new slot.
pub fn assign_slots(spans: &[(u64, u64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| spans[i].0);
    let mut busy: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut free: BTreeSet<usize> = BTreeSet::new();
    let mut slots = vec![0; spans.len()];
    let mut count = 0;
    for i in order {
        let (start, end) = spans[i];
        while let Some(&Reverse((e, slot))) = busy.peek() {
            if e > start {
                break;
            }
            busy.pop();
            free.insert(slot);
        }
        let slot = free.pop_first().unwrap_or_else(|| {
            count += 1;
            count - 1
        });
        slots[i] = slot;
        busy.push(Reverse((end.max(start), slot)));
    }
    slots
}

/// How many `[start, end)` spans hold each instant: `(t, count from t on)` at every instant the
/// count changes, in order of time. Empty spans count nowhere.
pub fn in_flight(spans: &[(u64, u64)]) -> Vec<(u64, u32)> {
    let mut events: Vec<(u64, i64)> = Vec::with_capacity(2 * spans.len());
    for &(a, b) in spans.iter().filter(|(a, b)| b > a) {
        events.push((a, 1));
        events.push((b, -1));
    }
    events.sort_unstable();
    let mut out: Vec<(u64, u32)> = Vec::new();
    let mut n: i64 = 0;
    let mut k = 0;
    while k < events.len() {
        let t = events[k].0;
        while events.get(k).is_some_and(|e| e.0 == t) {
            n += events[k].1;
            k += 1;
        }
        let v = n.max(0) as u32;
        if out.last().is_none_or(|l| l.1 != v) {
            out.push((t, v));
        }
    }
    out
}

/// A step curve as points of a line (seconds from `t0_ns`): each step's start and end, so the
/// line draws the steps. Over [`MAX_STEPS`] steps, the time is cut into [`MAX_STEPS`] stretches
/// each drawn at its peak.
pub fn step_line(steps: &[(u64, u32)], t0_ns: u64) -> Vec<(f64, f64)> {
    let secs = |ns: u64| ns.saturating_sub(t0_ns) as f64 / 1e9;
    let (Some(first), Some(last)) = (steps.first(), steps.last()) else {
        return Vec::new();
    };
    let reduced: Vec<(f64, f64)> = if steps.len() <= MAX_STEPS {
        steps.iter().map(|&(t, v)| (secs(t), f64::from(v))).collect()
    } else {
        let (a, b) = (secs(first.0), secs(last.0));
        let w = (b - a) / MAX_STEPS as f64;
        let mut peak = vec![0u32; MAX_STEPS];
        // A step counts in every stretch it overlaps.
        for (k, &(t, v)) in steps.iter().enumerate() {
            let next = steps.get(k + 1).map_or(b, |s| secs(s.0));
            let lo = (((secs(t) - a) / w) as usize).min(MAX_STEPS - 1);
            let hi = (((next - a) / w) as usize).min(MAX_STEPS - 1).max(lo);
            for p in &mut peak[lo..=hi] {
                *p = (*p).max(v);
            }
        }
        peak.into_iter().enumerate().map(|(i, v)| (a + i as f64 * w, f64::from(v))).collect()
    };
    let mut out = Vec::with_capacity(2 * reduced.len());
    for (k, &(t, v)) in reduced.iter().enumerate() {
        if let Some(&(_, prev)) = k.checked_sub(1).and_then(|j| reduced.get(j)) {
            out.push((t, prev));
        }
        out.push((t, v));
    }
    out
}

/// What a bar of the swim-lane is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneBarKind {
    /// A request, from its send to its end.
    Turn,
    /// The delay between the end of a turn and the send of the session's next one.
    Delay,
}

/// A bar on a slot's row, in seconds from the run's first send.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneBar {
    pub row: usize,
    pub x0: f64,
    pub x1: f64,
    pub kind: LaneBarKind,
    /// Which session, turn and times (shown on hover).
    pub tip: String,
}

/// The swim-lane of a run: what is drawn and how much of the run it is.
#[derive(Clone, Debug, PartialEq)]
pub struct SwimLane {
    pub bars: Vec<LaneBar>,
    /// `(row, x)` where a session starts on a slot an earlier session used.
    pub reuses: Vec<(usize, f64)>,
    /// Rows drawn (the first slots).
    pub rows: usize,
    pub slots: usize,
    pub sessions: usize,
    pub requests: usize,
    pub drawn_sessions: usize,
    pub drawn_requests: usize,
    /// The time axis' end (s): the last end of the run.
    pub end_s: f64,
    /// Requests in flight and sessions open, as step lines over the whole run.
    pub in_flight: Vec<(f64, f64)>,
    pub open: Vec<(f64, f64)>,
}

impl SwimLane {
    /// What of the run is drawn, when not all of it (empty when all of it is).
    pub fn summary_note(&self) -> String {
        if self.drawn_requests == self.requests {
            return String::new();
        }
        format!(
            "Drawn: {} of {} sessions ({} of {} requests), those starting first on the first {} of {} slots.",
            self.drawn_sessions, self.sessions, self.drawn_requests, self.requests, self.rows, self.slots
        )
    }
}

/// Whether a session of the run has more than one turn (the runs the swim-lane is drawn for).
pub fn has_multi_turn_sessions(run: &Run) -> bool {
    // Instances are numbered in order of first appearance: one below the next new number is seen again.
    let mut next = 0;
    run.points.iter().filter(|p| p.instance != NONE).any(|p| {
        let again = p.instance < next;
        next = next.max(p.instance.saturating_add(1));
        again
    })
}

/// The swim-lane of a run: its sessions on their slots, at most [`MAX_SLOTS`] rows and
/// [`MAX_REQUESTS`] turn bars, and its concurrency curves.
pub fn swim_lane(run: &Run) -> SwimLane {
    let t0 = run.t0_ns();
    let secs = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
    let ms = |ns: u64| ns.saturating_sub(t0) as f64 / 1e6;
    let all = sessions(run);
    let spans: Vec<(u64, u64)> = all.iter().map(|s| (s.start_ns, s.end_ns)).collect();
    let slots = assign_slots(&spans);
    let slot_count = slots.iter().max().map_or(0, |m| m + 1);
    let rows = slot_count.min(MAX_SLOTS);
    let mut lane = SwimLane {
        bars: Vec::new(),
        reuses: Vec::new(),
        rows,
        slots: slot_count,
        sessions: all.len(),
        requests: run.points.len(),
        drawn_sessions: 0,
        drawn_requests: 0,
        end_s: secs(spans.iter().map(|s| s.1).max().unwrap_or(t0)),
        in_flight: Vec::new(),
        open: Vec::new(),
    };
    let mut used = vec![false; rows];
    for (s, &slot) in all.iter().zip(&slots) {
        if slot >= rows {
            continue;
        }
        if lane.drawn_requests + s.requests.len() > MAX_REQUESTS {
            break;
        }
        if std::mem::replace(&mut used[slot], true) {
            lane.reuses.push((slot, secs(s.start_ns)));
        }
        lane.drawn_sessions += 1;
        lane.drawn_requests += s.requests.len();
        let mut prev_end: Option<u64> = None;
        for &i in &s.requests {
            let Some(p) = run.points.get(i as usize) else { continue };
            let name = match run.sessions.get(p.session as usize) {
                Some(id) => format!("session {id}"),
                None => format!("request #{}", i + 1),
            };
            if let Some(e) = prev_end.filter(|&e| e < p.sent_ns) {
                lane.bars.push(LaneBar {
                    row: slot,
                    x0: secs(e),
                    x1: secs(p.sent_ns),
                    kind: LaneBarKind::Delay,
                    tip: format!("{name}: {:.1} ms between turns before turn {}", (p.sent_ns - e) as f64 / 1e6, p.turn),
                });
            }
            let end = p.end_ns.max(p.sent_ns);
            let outcome = if p.ok() { "" } else { " (failed)" };
            lane.bars.push(LaneBar {
                row: slot,
                x0: secs(p.sent_ns),
                x1: secs(end),
                kind: LaneBarKind::Turn,
                tip: format!(
                    "{name}, turn {}: sent {:.1} ms, ended {:.1} ms ({:.1} ms){outcome}",
                    p.turn,
                    ms(p.sent_ns),
                    ms(end),
                    (end - p.sent_ns) as f64 / 1e6
                ),
            });
            prev_end = Some(prev_end.map_or(end, |e| e.max(end)));
        }
    }
    let requests: Vec<(u64, u64)> = run.points.iter().map(|p| (p.sent_ns, p.end_ns.max(p.sent_ns))).collect();
    lane.in_flight = step_line(&in_flight(&requests), t0);
    lane.open = step_line(&in_flight(&spans), t0);
    lane
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spans_strategy() -> impl Strategy<Value = Vec<(u64, u64)>> {
        proptest::collection::vec((0u64..200, 0u64..60), 0..80)
            .prop_map(|v| v.into_iter().map(|(a, d)| (a, a + d)).collect())
    }

    proptest! {
        #[test]
        fn slots_never_overlap_and_reuse_the_lowest_free_one(spans in spans_strategy()) {
            let slots = assign_slots(&spans);
            prop_assert_eq!(slots.len(), spans.len());
            // No two spans of a slot overlap.
            for i in 0..spans.len() {
                for j in (i + 1)..spans.len() {
                    if slots[i] == slots[j] {
                        let (a, b) = (spans[i], spans[j]);
                        prop_assert!(a.1 <= b.0 || b.1 <= a.0 || a.0 == a.1 || b.0 == b.1, "{a:?} {b:?} on {}", slots[i]);
                    }
                }
            }
            // The greedy reference: in order of start, the first slot free at the start.
            let mut order: Vec<usize> = (0..spans.len()).collect();
            order.sort_by_key(|&i| spans[i].0);
            let mut ends: Vec<u64> = Vec::new();
            for i in order {
                let (a, b) = spans[i];
                let k = ends.iter().position(|&e| e <= a).unwrap_or(ends.len());
                if k == ends.len() { ends.push(b) } else { ends[k] = b }
                prop_assert_eq!(slots[i], k);
            }
        }

        #[test]
        fn in_flight_is_the_brute_force_count(spans in spans_strategy()) {
            let steps = in_flight(&spans);
            let count = |t: u64| spans.iter().filter(|&&(a, b)| a <= t && t < b).count() as u32;
            for t in 0..270 {
                let v = steps.iter().rev().find(|s| s.0 <= t).map_or(0, |s| s.1);
                prop_assert_eq!(v, count(t), "at {}", t);
            }
            prop_assert!(steps.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 != w[1].1));
        }
    }

    #[test]
    fn a_freed_slot_is_reused_and_a_busy_one_is_not() {
        // 0 and 1 overlap; 2 starts when 0 ended (slot 0 again); 3 while 1 and 2 run.
        assert_eq!(assign_slots(&[(0, 10), (5, 20), (10, 30), (12, 14)]), vec![0, 1, 0, 2]);
        assert_eq!(in_flight(&[(0, 10), (5, 20), (10, 30)]), vec![(0, 1), (5, 2), (20, 1), (30, 0)]);
        assert!(in_flight(&[(3, 3)]).is_empty());
    }

    #[test]
    fn long_curves_keep_their_peaks() {
        let spans: Vec<(u64, u64)> = (0..5000).map(|i| (i * 10, i * 10 + 25)).collect();
        let steps = in_flight(&spans);
        assert!(steps.len() > MAX_STEPS);
        let line = step_line(&steps, 0);
        assert!(line.len() <= 2 * MAX_STEPS);
        let peak = line.iter().map(|p| p.1).fold(0.0, f64::max);
        assert_eq!(peak, 3.0);
        assert_eq!(step_line(&[(0, 1), (10, 2)], 0), vec![(0.0, 1.0), (1e-8, 1.0), (1e-8, 2.0)]);
    }

    #[test]
    fn every_request_is_drawn_once_on_its_sessions_slot() {
        let run = super::super::tests::run_of(60, "a");
        assert!(has_multi_turn_sessions(&run));
        let lane = swim_lane(&run);
        assert_eq!(lane.sessions, 5);
        assert_eq!(lane.drawn_requests, 60);
        let turns: Vec<&LaneBar> = lane.bars.iter().filter(|b| b.kind == LaneBarKind::Turn).collect();
        assert_eq!(turns.len(), 60);
        assert!(lane.summary_note().is_empty());
        assert!(turns.iter().all(|b| b.row < lane.rows && b.x0 <= b.x1 && b.tip.contains("turn")));
        assert!(!lane.in_flight.is_empty() && !lane.open.is_empty());
    }

    #[test]
    fn big_runs_are_drawn_in_part_and_say_so() {
        use super::super::tests::{jsonl, record};
        use super::super::{Run, RunSettings};
        // 3000 one-turn sessions, a send every 7 ms, each 800 ms long: over 100 slots.
        let recs: Vec<_> = (0..3000u64)
            .map(|i| {
                let mut r = record(i, false);
                r.session_id = Some(format!("s{i}"));
                r.correlation_id = None;
                r.end_ns = r.sent_ns + 800_000_000;
                r
            })
            .collect();
        let (text, _) = jsonl(&recs, true, &[]);
        let run = Run::from_jsonl("big", "p.jsonl", &text, RunSettings::default()).unwrap();
        assert!(!has_multi_turn_sessions(&run));
        let lane = swim_lane(&run);
        assert!(lane.slots > 100 && lane.rows == MAX_SLOTS);
        assert!(lane.drawn_requests <= MAX_REQUESTS && lane.drawn_requests > 0);
        assert!(lane.bars.iter().all(|b| b.row < MAX_SLOTS));
        assert!(lane.summary_note().contains("of 3000 sessions"), "{}", lane.summary_note());
        assert!(lane.in_flight.len() <= 2 * MAX_STEPS);
        // One-turn sessions taken greedily need as many slots as the most in flight at once.
        assert_eq!(lane.in_flight.iter().map(|p| p.1).fold(0.0, f64::max), lane.slots as f64);
    }
}
