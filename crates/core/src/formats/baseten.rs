//! Baseten completion traces (AIPerf's `baseten_trace`): Parquet rows of recorded requests, one
//! [`Record`] each (the CLI reads the file's columns), turned into a trace exactly as AIPerf
//! 0.13.0's `baseten_trace` loader builds its conversations:
//!
//! - sessions are kept whole or dropped by `--trace-session-sample-ratio` (CPython's generator
//!   at the seed AIPerf derives for `dataset.loader.baseten_trace.session_sampling`), rows without
//!   a session sampled one by one at the same ratio;
//! - timestamps become milliseconds after the file's earliest one, filtered by the
//!   fixed-schedule offsets, then divided by `--replay-speedup` (hash ids untouched);
//! - open loop (the default): every row keeps its time, a continuation turn fires at the later
//!   of its time and the previous turn's completion; `--max-idle-gap-cap-seconds` shortens every
//!   gap between consecutive rows ([`reflow_idle_gaps`]); `--open-loop-strict` makes each row a
//!   session of its own;
//! - closed loop (`--no-open-loop-replay`): a continuation turn waits the recorded start-to-start
//!   gap less the previous turn's recorded `duration_e2e_ms` (both after the speedup) once the
//!   previous turn completed, at most `--inter-turn-delay-cap-seconds`; the idle-gap cap then
//!   moves the session starts;
//! - each row sends its recorded prompt verbatim (`text_input`), `max_tokens` = the recorded
//!   output tokens (at least 1), and in the body `min_tokens` (unless `--no-force-min-tokens`)
//!   and the KV hints `hash_ids`/`block_size` (unless `--omit-kv-hints`), as the row's `extra`.
//!
//! [`retime`] applies the two options whose meaning holds for any timed trace (`--replay-speedup`,
//! `--max-idle-gap-cap-seconds`) to a trace of another format, with the same rules.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::error::FormatError;
use crate::rng::{PyRandom, derive_seed};
use crate::trace::{Input, Number, Row, Trace};

/// The columns a Baseten trace must have.
pub const REQUIRED_COLUMNS: [&str; 4] = ["timestamp_start_unix_ms", "prompt", "input_tokens", "output_tokens"];

/// The session columns, in AIPerf's order of preference.
pub const SESSION_COLUMNS: [&str; 2] = ["provided_session_id", "poor_man_session_id"];

/// The component AIPerf derives its session sampler's seed from.
const SAMPLING_COMPONENT: &str = "dataset.loader.baseten_trace.session_sampling";

/// The session column of a file with these columns: `provided_session_id`, else
/// `poor_man_session_id`, else none (every row is a session of its own).
pub fn session_column(has: impl Fn(&str) -> bool) -> Option<&'static str> {
    SESSION_COLUMNS.into_iter().find(|c| has(c))
}

/// A session id as the file holds it (a string or a non-negative integer).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SessionId {
    Text(String),
    Int(u64),
}

impl SessionId {
    /// The id as AIPerf names the session (`str(id)`).
    fn key(&self) -> String {
        match self {
            SessionId::Text(s) => s.clone(),
            SessionId::Int(n) => n.to_string(),
        }
    }
}

/// One row of a Baseten trace: its recorded request.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// 1-based row of the file (errors name it).
    pub row: u64,
    pub timestamp_ms: u64,
    pub prompt: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// KV-cache block hashes (`total_hashes`; empty when null or not read).
    pub total_hashes: Vec<u64>,
    /// The session column's value (`None`: null, or no session column).
    pub session: Option<SessionId>,
    pub duration_e2e_ms: Option<u64>,
    pub block_size: Option<u64>,
}

/// AIPerf's `baseten_trace` replay options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BasetenReplay {
    /// `--open-loop-replay` (default) / `--no-open-loop-replay`.
    pub open_loop: bool,
    /// `--open-loop-strict`: every row its own single-turn session (open loop only).
    pub strict: bool,
    /// `--replay-speedup` (1 = recorded speed).
    pub speedup: f64,
    /// `--max-idle-gap-cap-seconds`.
    pub idle_gap_cap_s: Option<f64>,
    /// `--trace-session-sample-ratio` (0 < r ≤ 1).
    pub session_sample_ratio: Option<f64>,
    /// `--inter-turn-delay-cap-seconds`: the closed loop's think times at most this.
    pub inter_turn_delay_cap_s: Option<f64>,
    /// `--omit-kv-hints`.
    pub omit_kv_hints: bool,
    /// `--force-min-tokens` (default) / `--no-force-min-tokens`.
    pub force_min_tokens: bool,
    /// `--random-seed`.
    pub seed: u64,
    /// `--fixed-schedule-start-offset` / `--fixed-schedule-end-offset`: rows kept by their
    /// recorded time after the earliest row (ms, before the speedup), both ends included.
    pub start_offset_ms: Option<f64>,
    pub end_offset_ms: Option<f64>,
}

impl Default for BasetenReplay {
    fn default() -> Self {
        BasetenReplay {
            open_loop: true,
            strict: false,
            speedup: 1.0,
            idle_gap_cap_s: None,
            session_sample_ratio: None,
            inter_turn_delay_cap_s: None,
            omit_kv_hints: false,
            force_min_tokens: true,
            seed: 0,
            start_offset_ms: None,
            end_offset_ms: None,
        }
    }
}

impl BasetenReplay {
    fn validate(&self) -> Result<(), FormatError> {
        let bad = |what: &str, v: f64, accepted: &str| {
            Err(FormatError::Options(format!("{what} {v}: accepted is {accepted}")))
        };
        if !(self.speedup.is_finite() && self.speedup > 0.0) {
            return bad("--replay-speedup", self.speedup, "a number above 0");
        }
        if let Some(c) = self.idle_gap_cap_s
            && !(c.is_finite() && c > 0.0)
        {
            return bad("--max-idle-gap-cap-seconds", c, "a number of seconds above 0");
        }
        if let Some(r) = self.session_sample_ratio
            && !(r > 0.0 && r <= 1.0)
        {
            return bad("--trace-session-sample-ratio", r, "a fraction above 0 and at most 1");
        }
        if let Some(c) = self.inter_turn_delay_cap_s
            && !(c.is_finite() && c >= 0.0)
        {
            return bad("--inter-turn-delay-cap-seconds", c, "a number of seconds from 0");
        }
        if self.strict && !self.open_loop {
            return Err(FormatError::Options(
                "--open-loop-strict requires open-loop replay; remove --no-open-loop-replay (or drop --open-loop-strict)."
                    .into(),
            ));
        }
        Ok(())
    }
}

/// What the conversion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BasetenReport {
    pub records: u64,
    /// With a sample ratio below 1 and a session column: sessions kept of all, rows without a
    /// session kept of all.
    pub sampled: Option<[u64; 4]>,
    /// Rows outside the fixed-schedule offsets.
    pub outside_window: u64,
    /// Rows with `output_tokens` 0 sent with an output length of 1.
    pub floored_zero_osl: u64,
    /// Think times shortened to the inter-turn delay cap.
    pub delays_capped: u64,
    pub sessions: u64,
    pub rows: u64,
}

impl std::fmt::Display for BasetenReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "baseten_trace: {} rows in {} sessions of {} records", self.rows, self.sessions, self.records)?;
        if let Some([kept, total, kept_null, null]) = self.sampled {
            write!(f, "; sampled {kept} of {total} sessions and {kept_null} of {null} rows without a session")?;
        }
        if self.outside_window > 0 {
            write!(f, "; {} rows outside the fixed-schedule offsets", self.outside_window)?;
        }
        if self.floored_zero_osl > 0 {
            write!(f, "; {} rows with output_tokens=0 sent with an output length of 1", self.floored_zero_osl)?;
        }
        if self.delays_capped > 0 {
            write!(f, "; {} think times capped", self.delays_capped)?;
        }
        Ok(())
    }
}

/// One kept row on its way to the trace.
struct Item {
    record: usize,
    /// Milliseconds after the earliest row (after the speedup); `None` once the closed loop made
    /// it a delay.
    ts: Option<f64>,
    delay: Option<f64>,
    output_length: u64,
}

/// Converts a Baseten trace's records (in file order; `has_sessions`: the file has a session
/// column) into the trace AIPerf replays.
pub fn convert(
    records: &[Record],
    has_sessions: bool,
    opts: &BasetenReplay,
) -> Result<(Trace, BasetenReport), FormatError> {
    opts.validate()?;
    let mut report = BasetenReport { records: records.len() as u64, ..BasetenReport::default() };
    let Some(min_ts) = records.iter().map(|r| r.timestamp_ms).min() else {
        return Ok((Trace::new(), report));
    };
    let kept = match opts.session_sample_ratio {
        Some(r) if r < 1.0 && has_sessions => {
            let (kept, counts) = sample(records, r, opts.seed);
            report.sampled = Some(counts);
            kept
        }
        _ => vec![true; records.len()],
    };
    let mut items: Vec<Item> = Vec::with_capacity(records.len());
    for (k, r) in records.iter().enumerate() {
        if !kept[k] {
            continue;
        }
        let ts = (r.timestamp_ms - min_ts) as f64;
        if opts.start_offset_ms.is_some_and(|s| ts < s) || opts.end_offset_ms.is_some_and(|e| ts > e) {
            report.outside_window += 1;
            continue;
        }
        let ts = if opts.speedup == 1.0 { ts } else { ts / opts.speedup };
        report.floored_zero_osl += u64::from(r.output_tokens == 0);
        items.push(Item { record: k, ts: Some(ts), delay: None, output_length: r.output_tokens.max(1) });
    }
    let cap_ms = opts.idle_gap_cap_s.map(|s| s * 1000.0);
    if opts.open_loop {
        reflow_items(&mut items.iter_mut().collect::<Vec<_>>(), cap_ms);
    }
    let mut groups = group(records, &items);
    if opts.open_loop && opts.strict {
        groups = groups.into_iter().flat_map(|(_, members)| members.into_iter().map(|m| (None, vec![m]))).collect();
    } else if !opts.open_loop {
        for (_, members) in &groups {
            back_pressure(records, &mut items, members, opts, &mut report);
        }
        let mut order: Vec<usize> = groups.iter().flat_map(|(_, m)| m.iter().copied()).collect();
        order.retain(|&i| items[i].ts.is_some());
        let mut timed: Vec<&mut Item> = Vec::with_capacity(order.len());
        // The items in the sessions' order, as AIPerf walks its grouped rows.
        let mut slots: Vec<Option<&mut Item>> = items.iter_mut().map(Some).collect();
        for i in order {
            if let Some(item) = slots[i].take() {
                timed.push(item);
            }
        }
        reflow_items(&mut timed, cap_ms);
    }
    let mut trace = Trace::with_capacity(items.len(), 0);
    for (session, members) in &groups {
        for &i in members {
            let item = &items[i];
            let r = &records[item.record];
            let mut row = Row::new(Input::Text(r.prompt.as_str().into()));
            row.output_length = Some(item.output_length);
            row.timestamp = item.ts.map(number);
            row.delay = item.delay.map(number);
            row.session_id = session.as_deref().map(Into::into);
            row.line = u32::try_from(r.row).unwrap_or(u32::MAX);
            let body = request_body(r, item.output_length, opts);
            if !body.is_empty() {
                row.rare_mut().extra = Some(body);
            }
            trace.push(row, std::iter::empty());
        }
    }
    report.sessions = groups.len() as u64;
    report.rows = trace.len() as u64;
    Ok((trace, report))
}

/// A time in ms as the trace writes it: a whole number stays one.
fn number(ms: f64) -> Number {
    if ms.fract() == 0.0 && ms.abs() < 9.0e15 { Number::Int(ms as i64) } else { Number::Float(ms) }
}

/// The per-row body fields AIPerf's loader sends (`request_body`).
fn request_body(r: &Record, output_length: u64, opts: &BasetenReplay) -> Map<String, Value> {
    let mut body = Map::new();
    if opts.force_min_tokens {
        body.insert("min_tokens".into(), Value::from(output_length));
    }
    if !opts.omit_kv_hints {
        if !r.total_hashes.is_empty() {
            body.insert("hash_ids".into(), Value::from(r.total_hashes.clone()));
        }
        if let Some(b) = r.block_size {
            body.insert("block_size".into(), Value::from(b));
        }
    }
    body
}

/// Which records the session sampling keeps, and the counts: sessions kept, sessions, rows
/// without a session kept, rows without a session. AIPerf's draws: one `random()` per session in
/// the order of their first timestamp (then id), one session by `choice` when none was kept, then
/// one per row without a session in file order.
fn sample(records: &[Record], ratio: f64, seed: u64) -> (Vec<bool>, [u64; 4]) {
    let mut first: HashMap<&SessionId, u64> = HashMap::new();
    let mut nulls = 0u64;
    for r in records {
        match &r.session {
            Some(id) => {
                let e = first.entry(id).or_insert(r.timestamp_ms);
                *e = (*e).min(r.timestamp_ms);
            }
            None => nulls += 1,
        }
    }
    let mut entries: Vec<(u64, String, &SessionId)> = first.into_iter().map(|(id, ts)| (ts, id.key(), id)).collect();
    entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut rng = PyRandom::new(derive_seed(seed, SAMPLING_COMPONENT));
    let mut chosen: Vec<&SessionId> = entries.iter().filter(|_| rng.random() < ratio).map(|e| e.2).collect();
    if chosen.is_empty() && !entries.is_empty() {
        chosen.push(entries[rng.below(entries.len() as u64) as usize].2);
    }
    let null_kept: Vec<bool> = (0..nulls).map(|_| rng.random() < ratio).collect();
    let chosen_set: std::collections::HashSet<&SessionId> = chosen.iter().copied().collect();
    let mut ordinal = 0usize;
    let kept = records
        .iter()
        .map(|r| match &r.session {
            Some(id) => chosen_set.contains(id),
            None => {
                ordinal += 1;
                null_kept[ordinal - 1]
            }
        })
        .collect();
    let counts =
        [chosen_set.len() as u64, entries.len() as u64, null_kept.iter().filter(|k| **k).count() as u64, nulls];
    (kept, counts)
}

/// The sessions of the kept items (indices into `items`): each session's rows by time (ties in
/// file order), the sessions by their first time, then name. A row without a session is a
/// session named `session_NNNNNN` (AIPerf's generated ids, counted in file order).
fn group(records: &[Record], items: &[Item]) -> Vec<(Option<String>, Vec<usize>)> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    let mut generated = 0u64;
    for (i, item) in items.iter().enumerate() {
        let key = match &records[item.record].session {
            Some(id) => id.key(),
            None => {
                generated += 1;
                format!("session_{:06}", generated - 1)
            }
        };
        match index.get(&key) {
            Some(&g) => groups[g].1.push(i),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push((key, vec![i]));
            }
        }
    }
    let whole_ms = |i: usize| items[i].ts.map_or(0, |t| t as i64);
    for (_, members) in &mut groups {
        members.sort_by_key(|&i| whole_ms(i));
    }
    groups.sort_by(|a, b| {
        let first = |m: &[usize]| m.iter().map(|&i| whole_ms(i)).min().unwrap_or(0);
        (first(&a.1), &a.0).cmp(&(first(&b.1), &b.0))
    });
    groups.into_iter().map(|(k, m)| (Some(k), m)).collect()
}

/// The closed loop over one session: each later turn's timestamp becomes a delay after the
/// previous turn completes, the recorded gap less the previous turn's recorded duration.
fn back_pressure(
    records: &[Record],
    items: &mut [Item],
    members: &[usize],
    opts: &BasetenReplay,
    report: &mut BasetenReport,
) {
    let e2e = |i: usize| records[i].duration_e2e_ms.unwrap_or(0) as f64 / opts.speedup;
    let mut prev: Option<(i64, f64)> = None;
    for &i in members {
        let ts = items[i].ts.map_or(0, |t| t as i64);
        let this_e2e = e2e(items[i].record);
        if let Some((prev_ts, prev_e2e)) = prev {
            let gap = (ts - prev_ts).max(0) as f64;
            let mut delay = (gap - prev_e2e).max(0.0);
            if let Some(cap) = opts.inter_turn_delay_cap_s.and_then(|s| crate::trace::delay_cap::clamp_ms(delay, s)) {
                delay = cap;
                report.delays_capped += 1;
            }
            items[i].delay = Some(delay);
            items[i].ts = None;
        }
        prev = Some((ts, this_e2e));
    }
}

fn reflow_items(items: &mut [&mut Item], cap_ms: Option<f64>) {
    let Some(cap) = cap_ms else { return };
    let times: Vec<f64> = items.iter().filter_map(|i| i.ts).collect();
    let new = reflow_idle_gaps(&times, cap);
    for (item, t) in items.iter_mut().filter(|i| i.ts.is_some()).zip(new) {
        item.ts = Some(t as f64);
    }
}

/// AIPerf's `reflow_idle_gaps`: the times (ms, truncated to whole ms) in the same positions, with
/// every gap between consecutive times (in time order, ties in position order) longer than the
/// cap (rounded up to whole ms) shortened to it; the earliest time keeps its value.
pub fn reflow_idle_gaps(times_ms: &[f64], cap_ms: f64) -> Vec<i64> {
    let values: Vec<i64> = times_ms.iter().map(|&t| t as i64).collect();
    if values.len() <= 1 {
        return values;
    }
    let cap = cap_ms.ceil() as i64;
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&i| (values[i], i));
    let mut out = vec![0i64; values.len()];
    let (mut prev_old, mut prev_new) = (values[order[0]], values[order[0]]);
    out[order[0]] = prev_new;
    for &i in &order[1..] {
        prev_new += (values[i] - prev_old).min(cap);
        out[i] = prev_new;
        prev_old = values[i];
    }
    out
}

/// `--replay-speedup` and `--max-idle-gap-cap-seconds` on a trace of another format: every row's
/// `timestamp` and `delay` divided by `speedup` (hash ids untouched), then every gap between
/// consecutive timestamps (all rows, time order) longer than the cap shortened to it
/// ([`reflow_idle_gaps`]).
pub fn retime(trace: &mut Trace, speedup: f64, idle_gap_cap_s: Option<f64>) -> Result<(), FormatError> {
    BasetenReplay { speedup, idle_gap_cap_s, ..BasetenReplay::default() }.validate()?;
    for row in trace.rows_mut() {
        if speedup != 1.0 {
            row.timestamp = row.timestamp.map(|t| Number::Float(t.as_f64() / speedup));
            row.delay = row.delay.map(|d| Number::Float(d.as_f64() / speedup));
        }
    }
    if let Some(cap) = idle_gap_cap_s {
        let times: Vec<f64> = trace.rows().iter().filter_map(|r| r.timestamp.map(Number::as_f64)).collect();
        let new = reflow_idle_gaps(&times, cap * 1000.0);
        for (row, t) in trace.rows_mut().iter_mut().filter(|r| r.timestamp.is_some()).zip(new) {
            row.timestamp = Some(Number::Int(t));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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

    #[test]
    fn reflow_matches_aiperf() {
        // Positions kept, ties in position order, the cap rounded up, times truncated.
        assert_eq!(reflow_idle_gaps(&[5000.0, 0.0, 100.9, 100.0, 9000.0], 999.2), [1100, 0, 100, 100, 2100]);
        assert_eq!(reflow_idle_gaps(&[7.5], 1.0), [7]);
    }

    #[test]
    fn retime_divides_timestamps_and_delays_and_caps_idle_gaps() {
        let mut t = crate::trace::parse_str(
            "{\"timestamp\":0,\"input_length\":1,\"hash_ids\":[1]}\n{\"timestamp\":10000,\"input_length\":1}\n\
             {\"session_id\":\"s\",\"timestamp\":4000,\"input_length\":1}\n{\"session_id\":\"s\",\"delay\":600,\"input_length\":1}\n",
            crate::trace::ParseOptions::default(),
        )
        .unwrap()
        .trace;
        retime(&mut t, 2.0, Some(1.0)).unwrap();
        let ts: Vec<Option<f64>> = t.rows().iter().map(|r| r.timestamp.map(Number::as_f64)).collect();
        assert_eq!(ts, [Some(0.0), Some(2000.0), Some(1000.0), None]);
        assert_eq!(t.rows()[3].delay, Some(Number::Float(300.0)));
        assert_eq!(t.hash_ids(&t.rows()[0]), [1]);
        assert!(retime(&mut t, 0.0, None).is_err());
    }
}
