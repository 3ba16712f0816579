#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use serde_json::Value;

use super::*;
use crate::trace::{Input, Number, Trace};

fn rec(row: u64, ts: u64, session: Option<&str>, out: u64, e2e: Option<u64>) -> Record {
    Record {
        row,
        timestamp_ms: ts,
        prompt: format!("p{row}"),
        input_tokens: 10,
        output_tokens: out,
        total_hashes: vec![row, row + 100],
        session: session.map(|s| SessionId::Text(s.into())),
        duration_e2e_ms: e2e,
        block_size: Some(16),
    }
}

/// Two sessions and a row without one; times 1000 ms after an epoch of 1_700_000_000_000.
fn records() -> Vec<Record> {
    let t0 = 1_700_000_000_000;
    vec![
        rec(1, t0 + 4_000, Some("b"), 5, Some(300)),
        rec(2, t0, Some("a"), 0, Some(1_000)),
        rec(3, t0 + 60_000, None, 7, None),
        rec(4, t0 + 2_500, Some("a"), 3, Some(200)),
        rec(5, t0 + 9_000, Some("b"), 2, None),
    ]
}

/// A row: timestamp, delay, session and prompt.
type Seen = (Option<f64>, Option<f64>, Option<String>, String);

fn times(t: &Trace) -> Vec<Seen> {
    t.rows()
        .iter()
        .map(|r| {
            let Input::Text(p) = &r.input else { panic!("text") };
            (
                r.timestamp.map(Number::as_f64),
                r.delay.map(Number::as_f64),
                r.session_id.as_deref().map(str::to_owned),
                p.to_string(),
            )
        })
        .collect()
}

fn s(x: &str) -> Option<String> {
    Some(x.to_owned())
}

#[test]
fn open_loop_keeps_every_time_sessions_by_first_time_and_sends_recorded_fields() {
    let (t, report) = convert(&records(), true, &BasetenReplay::default()).unwrap();
    assert_eq!(
        times(&t),
        [
            (Some(0.0), None, s("a"), "p2".into()),
            (Some(2500.0), None, s("a"), "p4".into()),
            (Some(4000.0), None, s("b"), "p1".into()),
            (Some(9000.0), None, s("b"), "p5".into()),
            (Some(60000.0), None, s("session_000000"), "p3".into()),
        ]
    );
    // output_tokens 0 is sent as 1; min_tokens and the KV hints in the body.
    assert_eq!(t.rows()[0].output_length, Some(1));
    assert_eq!(
        Value::Object(t.rows()[0].extra().unwrap().clone()),
        serde_json::json!({"min_tokens": 1, "hash_ids": [2, 102], "block_size": 16})
    );
    assert_eq!((report.rows, report.sessions, report.floored_zero_osl), (5, 3, 1));
}

#[test]
fn speedup_divides_times_and_the_idle_cap_reflows_every_row() {
    let opts = BasetenReplay { speedup: 2.0, idle_gap_cap_s: Some(1.0), ..BasetenReplay::default() };
    let (t, _) = convert(&records(), true, &opts).unwrap();
    // Divided: 0, 1250, 2000, 4500, 30000 → gaps 1250, 750, 2500, 25500 capped at 1000.
    let ts: Vec<f64> = t.rows().iter().map(|r| r.timestamp.unwrap().as_f64()).collect();
    assert_eq!(ts, [0.0, 1000.0, 1750.0, 2750.0, 3750.0]);
    // Hash ids untouched.
    assert_eq!(t.rows()[0].extra().unwrap()["hash_ids"], serde_json::json!([2, 102]));
    let slow = BasetenReplay { speedup: 3.0, ..BasetenReplay::default() };
    let (t, _) = convert(&records(), true, &slow).unwrap();
    assert_eq!(t.rows()[1].timestamp, Some(Number::Float(2500.0 / 3.0)));
}

#[test]
fn closed_loop_turns_gaps_into_think_times_less_recorded_durations() {
    let opts = BasetenReplay { open_loop: false, ..BasetenReplay::default() };
    let (t, _) = convert(&records(), true, &opts).unwrap();
    // a: 2500 − 1000 (row 2's e2e); b: 5000 − 300.
    assert_eq!(
        times(&t),
        [
            (Some(0.0), None, s("a"), "p2".into()),
            (None, Some(1500.0), s("a"), "p4".into()),
            (Some(4000.0), None, s("b"), "p1".into()),
            (None, Some(4700.0), s("b"), "p5".into()),
            (Some(60000.0), None, s("session_000000"), "p3".into()),
        ]
    );
    let capped = BasetenReplay {
        open_loop: false,
        speedup: 2.0,
        inter_turn_delay_cap_s: Some(2.0),
        idle_gap_cap_s: Some(1.5),
        ..BasetenReplay::default()
    };
    let (t, report) = convert(&records(), true, &capped).unwrap();
    let got: Vec<(Option<f64>, Option<f64>)> = times(&t).into_iter().map(|x| (x.0, x.1)).collect();
    // Halved: a 1250 − 500 = 750; b 2500 − 150 = 2350 → 2000; starts 0, 2000, 30000 → 0, 1500, 3000.
    assert_eq!(
        got,
        [(Some(0.0), None), (None, Some(750.0)), (Some(1500.0), None), (None, Some(2000.0)), (Some(3000.0), None)]
    );
    assert_eq!(report.delays_capped, 1);
}

#[test]
fn strict_makes_every_row_its_own_session_and_options_drop_body_fields() {
    let opts = BasetenReplay { strict: true, omit_kv_hints: true, force_min_tokens: false, ..Default::default() };
    let (t, report) = convert(&records(), true, &opts).unwrap();
    assert!(t.rows().iter().all(|r| r.session_id.is_none() && r.extra().is_none()));
    assert_eq!(report.sessions, 5);
    let bad = BasetenReplay { strict: true, open_loop: false, ..Default::default() };
    assert!(convert(&records(), true, &bad).unwrap_err().to_string().contains("--open-loop-strict requires"));
}

#[test]
fn sampling_keeps_whole_sessions_reproducibly_and_at_least_one() {
    let t0 = 1_000;
    let many: Vec<Record> = (0..400u64)
        .map(|i| rec(i + 1, t0 + i * 10, if i % 5 == 4 { None } else { Some(["x", "y"][0]) }, 1, None))
        .map(|mut r| {
            if let Some(SessionId::Text(s)) = &mut r.session {
                *s = format!("s{}", r.row % 50);
            }
            r
        })
        .collect();
    let opts = BasetenReplay { session_sample_ratio: Some(0.3), seed: 7, ..Default::default() };
    let (a, ra) = convert(&many, true, &opts).unwrap();
    let (b, _) = convert(&many, true, &opts).unwrap();
    assert_eq!(a, b);
    let [kept, total, kept_null, nulls] = ra.sampled.unwrap();
    assert_eq!((total, nulls), (40, 80));
    assert!((4..=24).contains(&kept) && (8..=48).contains(&kept_null), "{kept} {kept_null}");
    // Whole sessions: a kept session keeps all its rows.
    let mut per: HashMap<String, u32> = HashMap::new();
    for r in a.rows() {
        *per.entry(r.session_id.as_deref().unwrap().to_owned()).or_default() += 1;
    }
    assert!(per.iter().filter(|(k, _)| k.starts_with('s') && !k.starts_with("session")).all(|(_, n)| *n == 8));
    let tiny = BasetenReplay { session_sample_ratio: Some(1e-9), ..Default::default() };
    let (t, r) = convert(&many, true, &tiny).unwrap();
    assert_eq!(r.sampled.unwrap()[0], 1);
    assert!(t.len() >= 8);
}

#[test]
fn the_fixed_schedule_window_filters_recorded_times_before_the_speedup() {
    let opts = BasetenReplay {
        start_offset_ms: Some(2500.0),
        end_offset_ms: Some(9000.0),
        speedup: 2.0,
        ..Default::default()
    };
    let (t, r) = convert(&records(), true, &opts).unwrap();
    let ts: Vec<f64> = t.rows().iter().map(|r| r.timestamp.unwrap().as_f64()).collect();
    assert_eq!(ts, [1250.0, 2000.0, 4500.0]);
    assert_eq!(r.outside_window, 2);
}
