#![allow(clippy::unwrap_used)]

use super::build::generated;
use super::*;
use crate::trace::{Input, Number, Row, Trace};
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
    let turns: Vec<Turn> = (0..3).map(|row| Turn { row, timing: TurnTiming::Immediately }).collect();
    let sessions = vec![Session::chain(None, turns)];
    let schedule =
        generated(sessions, Some((10.0, ArrivalPattern::Constant)), 0, Some(10)).unwrap().with_users(Some(2));
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
    let sessions = vec![Session::chain(None, vec![Turn { row: 0, timing: TurnTiming::Immediately }])];
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
        .map(|row| Session::chain(None, vec![Turn { row, timing: TurnTiming::Immediately }; row as usize + 1]))
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
fn a_rate_ramp_rises_every_tenth_of_a_second_to_its_target() {
    // 10 per second over 1 s: 1/s at the start, raised along the line every 0.1 s.
    let r = |ms: f64| ramped_rate(10.0, 1_000_000, ms * 1000.0);
    assert_eq!(r(0.0), 1.0);
    assert_eq!(r(99.0), 1.0);
    assert!((r(150.0) - 1.9).abs() < 1e-9);
    assert!((r(950.0) - 9.1).abs() < 1e-9);
    assert_eq!(r(1000.0), 10.0);
    // The schedule's gaps follow it: constant arrivals shrink from 1 s to 0.1 s.
    let sessions = vec![Session::chain(None, vec![Turn { row: 0, timing: TurnTiming::Immediately }])];
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

/// AIPerf's DAG conversations: root spawns a (two turns) and b, joined by its next turn; b forks
/// c in the background.
const DAG: &str = r#"{"session_id": "root", "turns": [{"messages": [{"role": "user", "content": "plan"}], "spawns": ["a", "b"]}, {"messages": [{"role": "user", "content": "merge"}], "delay": 20}]}
{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "a0"}], "delay": 3}, {"messages": [{"role": "user", "content": "a1"}], "delay": 5.5}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "b0"}], "forks": [{"child": "c", "background": true}]}, {"messages": [{"role": "user", "content": "b1"}]}]}
{"session_id": "c", "turns": [{"messages": [{"role": "user", "content": "c0"}]}]}
{"session_id": "solo", "turns": [{"messages": [{"role": "user", "content": "s0"}]}, {"messages": [{"role": "user", "content": "s1"}], "delay": 1}]}
"#;

#[test]
fn a_root_and_its_sub_agents_are_one_session_in_an_order_that_keeps_parents_first() {
    let trace = crate::formats::dag_jsonl::parse(DAG).unwrap();
    let sessions = build::sessions(&trace).unwrap();
    // The sub-agents run within their root only; a session without branches stays a chain.
    assert_eq!(sessions.len(), 2);
    let (root, solo) = (&sessions[0], &sessions[1]);
    assert_eq!(root.id.as_deref(), Some("root"));
    assert!(solo.graph.is_none());
    assert_eq!(solo.turns.len(), 2);
    // Rows: root 0-1, a 2-3, b 4-5, c 6.
    let rows: Vec<u32> = root.turns.iter().map(|t| t.row).collect();
    assert_eq!(rows, [0, 2, 3, 4, 6, 5, 1]);
    let timings: Vec<TurnTiming> = root.turns.iter().map(|t| t.timing).collect();
    // A sub-agent's first turn leaves when the turn that started it ends (a0's delay unused).
    assert_eq!(
        timings,
        [
            TurnTiming::Immediately,
            TurnTiming::Immediately,
            TurnTiming::After(5_500),
            TurnTiming::Immediately,
            TurnTiming::Immediately,
            TurnTiming::Immediately,
            TurnTiming::After(20_000)
        ]
    );
    let after: Vec<Option<u32>> = (0..7).map(|t| root.timed_after(t)).collect();
    assert_eq!(after, [None, Some(0), Some(1), Some(0), Some(3), Some(3), Some(0)]);
    let next: Vec<Vec<u32>> = (0..7).map(|t| root.next_turns(t).collect()).collect();
    assert_eq!(next, [vec![1, 3, 6], vec![2], vec![6], vec![4, 5], vec![], vec![6], vec![]]);
    let waits: Vec<u32> = (0..7).map(|t| root.waits_for(t)).collect();
    assert_eq!(waits, [0, 1, 1, 1, 1, 1, 3]);
    // A run of the whole trace sends every turn of the root and its sub-agents.
    let s = build(&trace, Timing::AsFastAsAllowed, None).unwrap();
    assert_eq!(s.request_count(), Some(9));
}

#[test]
fn branches_to_unknown_or_cyclic_sessions_are_refused_with_their_line() {
    let mut trace = Trace::new();
    let mut row = |sid: &str, children: &[&str], line: u32| {
        let mut r = Row::new(Input::Length(10));
        r.session_id = Some(sid.into());
        r.line = line;
        if !children.is_empty() {
            r.rare_mut().branches = vec![crate::trace::Branch {
                children: children.iter().map(|&c| c.into()).collect(),
                join_at: None,
                offsets_ms: Vec::new(),
            }];
        }
        trace.push(r, []);
    };
    row("a", &["zz"], 1);
    let err = build::sessions(&trace).unwrap_err();
    assert_eq!(err.to_string(), "line 1: a branch starts session 'zz', which is not in the trace");
    let mut trace = Trace::new();
    for (sid, child, line) in [("r", "a", 1), ("a", "b", 2), ("b", "a", 3)] {
        let mut r = Row::new(Input::Length(10));
        r.session_id = Some(sid.into());
        r.line = line;
        r.rare_mut().branches =
            vec![crate::trace::Branch { children: vec![child.into()], join_at: None, offsets_ms: Vec::new() }];
        trace.push(r, []);
    }
    let err = build::sessions(&trace).unwrap_err();
    assert_eq!(err.to_string(), "line 2: the sub-agent sessions form a cycle: r -> a -> b -> a");
}
