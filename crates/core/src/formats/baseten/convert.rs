//! A Baseten trace's records into the trace AIPerf replays: rows sampled and windowed, timed
//! open or closed loop, grouped into sessions, each with the body fields AIPerf's loader sends.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::options::BasetenReplay;
use super::record::Record;
use super::retime::reflow_idle_gaps;
use super::sample::sample;
use crate::formats::error::FormatError;
use crate::trace::{Input, Number, Row, Trace};

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
