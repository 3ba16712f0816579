//! AIPerf 0.13's `weka_trace` replay options on a WEKA document: which documents are kept
//! (`--max-context-length`) and when each request is sent (`--trace-idle-gap-cap-seconds`,
//! `--use-think-time-only`, `--ignore-trace-delays`).
//!
//! With these options a document becomes AIPerf's sessions ([`super::agents`]: the file's main
//! agent, its other agent chains and its sub-agents, each started by a turn of the main agent and
//! joined by a later one), each replayed as AIPerf replays its turns: the first at its recorded
//! time (a sub-agent's when the turn that starts it ended), each later one a delay after the
//! previous one completed. With a model filter (the conversion option `model`), which drops the turns the
//! branches name, each conversation is a session of its own. That delay is AIPerf's: the idle time
//! between the previous request's end and this one's start, `t[k] - (t[k-1] + api_time[k-1])`
//! (a missing `api_time` counting 0), floored at 0; with `--use-think-time-only` the request's
//! recorded `think_time` where it has one. With `--trace-idle-gap-cap-seconds S`, the request
//! starts of the whole document (parent and sub-agents) are sorted and every gap between two
//! consecutive starts longer than `S` is cut to `S`; the times and the delays are taken on that
//! compressed timeline, and `think_time` is not used. Without it, `--inter-turn-delay-cap-seconds`
//! caps each delay (AIPerf's idle-gap cap takes precedence over it). `--max-context-length N` drops a whole
//! document whose peak `in + out` (an `out` of 0 counted as 1, the file's own requests' `out`
//! capped by `--synthesis-max-osl`) exceeds `N`.

use super::agents;
use super::model::{End, Parsed, Req};
use super::progress::{Progress, note, push_request};
use crate::formats::error::FormatError;
use crate::formats::options::WekaTiming;
use crate::formats::sink::{ConvertStats, Sink};
use crate::hashing::FastMap;
use crate::trace::Trace;

/// Whether a document whose peak context is `peak` tokens is kept under `max_context_length`.
pub fn fits_context(peak: u64, max_context_length: Option<u64>) -> bool {
    max_context_length.is_none_or(|max| peak <= max)
}

/// AIPerf's refusal of a conversion whose every WEKA document `max_context_length` dropped
/// (`None` when something is left, or nothing was dropped for it).
pub fn no_eligible_trace(stats: &ConvertStats, rows: usize, max_context_length: Option<u64>) -> Option<String> {
    let max = max_context_length?;
    if rows > 0 || stats.weka_over_context == 0 {
        return None;
    }
    let mut msg = format!(
        "No eligible traces in weka_trace after filter-then-cap (scanned {}, --max-context-length={max}, --num-dataset-entries=None).",
        stats.weka_documents
    );
    if let Some(smallest) = stats.weka_smallest_peak.filter(|&p| p > 0) {
        msg.push_str(&format!(
            " Smallest trace requires {smallest} tokens; raise --max-context-length to at least that (e.g. --max-context-length {smallest}) to admit any trace."
        ));
    }
    Some(msg)
}

/// A converted trace's rows as AIPerf times WEKA turns: each session's first turn keeps its
/// time and the later ones follow their delays; with `ignore_delays` no turn keeps a time.
pub fn time_turns(trace: &mut Trace, ignore_delays: bool) {
    let mut seen: FastMap<Box<str>, ()> = FastMap::default();
    for row in trace.rows_mut() {
        let first = match row.session_id.as_deref() {
            Some(id) => seen.insert(id.into(), ()).is_none(),
            None => true,
        };
        if ignore_delays || !first {
            row.timestamp = None;
        }
    }
}

/// Holds the document's parts until its last, then converts it whole under `timing`.
pub(super) fn convert_whole(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    part: Parsed,
    timing: &WekaTiming,
) -> Result<Option<String>, FormatError> {
    let last = part.end.is_some();
    progress.held.push(part);
    if !last {
        return Ok(None);
    }
    let mut parts = std::mem::take(&mut progress.held);
    let end = parts.last_mut().and_then(|p| p.end.take()).unwrap_or_default();
    if let Some(e) = end.stop {
        // Every request before the error is counted, as when converted as it comes.
        for p in &parts {
            for _ in &p.reqs {
                sink.count_record();
            }
        }
        return Err(e);
    }
    let reqs: Vec<&Req> = parts.iter().flat_map(|p| &p.reqs).collect();
    let peak = peak_context(&reqs, timing.max_osl);
    sink.weka_peak(peak, fits_context(peak, timing.max_context_length));
    if !fits_context(peak, timing.max_context_length) {
        for _ in &reqs {
            sink.count_record();
        }
        let max = timing.max_context_length.unwrap_or(0);
        return Ok(Some(format!(
            "WEKA trace {}: dropped by --max-context-length {max} (its peak prompt + output is {peak} tokens)",
            end.name
        )));
    }
    if sink.opts.models.is_empty() {
        return convert_agents(sink, progress, &parts, end, timing);
    }
    // A model filter drops turns the branches would name: each conversation replays on its own.
    let times = replay_times(&reqs, timing);
    let mut k = 0;
    for p in &parts {
        let mut start = 0;
        for r in &p.reqs {
            let ids = p.ids.get(start..r.ids_end).unwrap_or_default();
            start = r.ids_end;
            let (at_ns, delay_ms) = times.get(k).copied().unwrap_or((r.at_ns, None));
            k += 1;
            push_request(sink, progress, r, ids, at_ns, Some(delay_ms))?;
        }
    }
    note(sink, progress, end)
}

/// The document's requests as AIPerf's sessions ([`agents::plan`]): the root's turns start and
/// join its sub-agents and agent chains.
fn convert_agents(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    parts: &[Parsed],
    end: End,
    timing: &WekaTiming,
) -> Result<Option<String>, FormatError> {
    let mut reqs: Vec<&Req> = Vec::new();
    let mut ids: Vec<&[u64]> = Vec::new();
    for p in parts {
        let mut start = 0;
        for r in &p.reqs {
            reqs.push(r);
            ids.push(p.ids.get(start..r.ids_end).unwrap_or_default());
            start = r.ids_end;
        }
    }
    let spawns = progress.spawns.clone();
    if spawns.iter().flatten().any(|s| s.parent != 0) {
        return Err(FormatError::Options(format!(
            "{}: a sub-agent inside a sub-agent; AIPerf's WEKA loader reads sub-agents of the file's own requests only",
            sink.file()
        )));
    }
    // The sessions on the recorded timeline, then, with the idle-gap cap, on the capped one made
    // of the requests they replay (a sub-agent AIPerf drops is not among them).
    let timed = !timing.ignore_delays;
    let mut sessions = agents::plan(&reqs, &ids, &spawns, &|t| t, timed);
    if let Some(cap) = timing.idle_gap_cap_s {
        let starts: Vec<f64> = sessions.iter().flat_map(|s| &s.reqs).map(|&i| reqs[i].at_ns as f64 / 1e9).collect();
        let warp = Warp::new(&starts, cap);
        sessions = agents::plan(&reqs, &ids, &spawns, &|t| warp.map(t), timed);
    }
    // Each session's conversation: its own, or one named after it.
    let mut conv_of = Vec::with_capacity(sessions.len());
    for s in &sessions {
        if s.suffix.is_empty() {
            conv_of.push(s.conv);
            continue;
        }
        let Some((name, block)) = progress.convs.get(s.conv as usize).cloned() else {
            return Err(FormatError::Options(format!("{}: a request without its conversation", sink.file())));
        };
        conv_of.push(progress.convs.len() as u32);
        progress.convs.push((format!("{name}{}", s.suffix).into(), block));
    }
    let all = &reqs;
    let ordered: Vec<Req> = sessions
        .iter()
        .zip(&conv_of)
        .flat_map(|(s, &conv)| s.reqs.iter().map(move |&i| Req { conv, ..all[i].clone() }))
        .collect();
    let refs: Vec<&Req> = ordered.iter().collect();
    let times = replay_times(&refs, timing);
    let mut k = 0;
    // The rows of each session's turns, for its branches.
    let mut rows: Vec<Vec<usize>> = Vec::with_capacity(sessions.len());
    for s in &sessions {
        let mut these = Vec::with_capacity(s.reqs.len());
        for &i in &s.reqs {
            let (at_ns, delay_ms) = times.get(k).copied().unwrap_or((reqs[i].at_ns, None));
            let r = &ordered[k];
            k += 1;
            these.push(sink.rows());
            push_request(sink, progress, r, ids[i], at_ns, Some(delay_ms))?;
        }
        rows.push(these);
    }
    for (s, these) in sessions.iter().zip(&rows) {
        let name_of = |c: usize| -> Box<str> {
            conv_of.get(c).and_then(|&v| progress.convs.get(v as usize)).map_or_else(Box::default, |c| Box::from(&*c.0))
        };
        for (turn, branch) in agents::branches(s, name_of) {
            if let Some(&row) = these.get(turn as usize) {
                sink.add_branch(row, branch);
            }
        }
    }
    // Requests of dropped sub-agents, counted as read.
    for _ in ordered.len()..reqs.len() {
        sink.count_record();
    }
    note(sink, progress, end)
}

/// AIPerf's peak requested context of a document: `in + out` over every request, `out` of 0
/// counted as 1, the file's own requests' `out` capped by `max_osl` (sub-agents' never are).
pub(super) fn peak_context(reqs: &[&Req], max_osl: Option<u64>) -> u64 {
    reqs.iter()
        .map(|r| {
            let mut out = r.output.unwrap_or(0);
            if r.conv == 0
                && let Some(cap) = max_osl
            {
                out = out.min(cap);
            }
            r.input.saturating_add(out.max(1))
        })
        .max()
        .unwrap_or(0)
}

/// Each request's send time (ns from the document's start) and, for a later turn of its
/// conversation, its delay in ms after the previous turn completed.
pub(super) fn replay_times(reqs: &[&Req], timing: &WekaTiming) -> Vec<(i64, Option<f64>)> {
    let seconds: Vec<f64> = reqs.iter().map(|r| r.at_ns as f64 / 1e9).collect();
    let warp = timing.idle_gap_cap_s.map(|cap| Warp::new(&seconds, cap));
    let mapped: Vec<f64> = match &warp {
        Some(w) => seconds.iter().map(|&t| w.map(t)).collect(),
        None => seconds.clone(),
    };
    // The previous request's (time, api_time) of each conversation.
    let mut prev: Vec<Option<(f64, Option<f64>)>> = Vec::new();
    let mut out = Vec::with_capacity(reqs.len());
    for (r, &t) in reqs.iter().zip(&mapped) {
        let conv = r.conv as usize;
        if prev.len() <= conv {
            prev.resize(conv + 1, None);
        }
        let delay = prev[conv].and_then(|(prev_t, prev_api)| {
            if timing.ignore_delays {
                return None;
            }
            let ms = match r.think {
                Some(think) if timing.think_time_only && warp.is_none() => think * 1000.0,
                _ => end_to_start_ms((t - prev_t) * 1000.0, prev_api),
            };
            let ms = match timing.inter_turn_delay_cap_s {
                Some(cap) if warp.is_none() => crate::trace::delay_cap::clamp_ms(ms, cap).unwrap_or(ms),
                _ => ms,
            };
            ms.is_finite().then_some(ms.max(0.0))
        });
        prev[conv] = Some((t, r.api));
        let at_ns = if warp.is_some() { (t * 1e9).round() as i64 } else { r.at_ns };
        out.push((at_ns, delay));
    }
    out
}

/// AIPerf's end-to-start delay: the start-to-start gap less the previous request's `api_time`
/// (missing or not finite: 0), at least 0.
fn end_to_start_ms(start_to_start_ms: f64, prev_api_s: Option<f64>) -> f64 {
    let api_ms = prev_api_s.filter(|a| a.is_finite()).map_or(0.0, |a| a * 1000.0);
    (start_to_start_ms - api_ms).max(0.0)
}

/// One compressed gap: from `start` to `end` (raw seconds), `shift_before` already removed
/// before it, `excess` removed by it.
struct Gap {
    start: f64,
    end: f64,
    shift_before: f64,
    excess: f64,
}

/// AIPerf's per-trace idle-gap time warp: every gap between consecutive (sorted) request starts
/// longer than `cap` seconds keeps its first `cap` seconds; later times shift left by the rest.
pub(super) struct Warp {
    gaps: Vec<Gap>,
    cap: f64,
}

impl Warp {
    pub(super) fn new(starts: &[f64], cap: f64) -> Warp {
        let mut sorted = starts.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut gaps = Vec::new();
        let mut shift = 0.0;
        for w in sorted.windows(2) {
            let gap = w[1] - w[0];
            if gap > cap {
                let excess = gap - cap;
                gaps.push(Gap { start: w[0], end: w[1], shift_before: shift, excess });
                shift += excess;
            }
        }
        Warp { gaps, cap }
    }

    pub(super) fn map(&self, t: f64) -> f64 {
        let mut shift = 0.0;
        for g in &self.gaps {
            if t < g.start {
                return t - g.shift_before;
            }
            if t < g.end {
                if t - g.start <= self.cap {
                    return t - g.shift_before;
                }
                return g.start - g.shift_before + self.cap;
            }
            shift = g.shift_before + g.excess;
        }
        t - shift
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn req(at_s: f64, conv: u32, api: Option<f64>, think: Option<f64>) -> Req {
        Req {
            at_ns: (at_s * 1e9).round() as i64,
            outer: 0,
            input: 100,
            output: Some(10),
            ids_end: 0,
            conv,
            model: 0,
            api,
            think,
        }
    }

    #[test]
    fn delays_are_end_to_start_or_think_time() {
        let reqs = [
            req(0.0, 0, Some(2.0), None),
            req(10.0, 0, Some(1.5), Some(7.0)),
            req(5.0, 1, None, None),
            req(11.0, 1, None, Some(3.0)),
            req(11.0, 0, None, None),
        ];
        let refs: Vec<&Req> = reqs.iter().collect();
        let plain = replay_times(&refs, &WekaTiming::default());
        let delays: Vec<Option<f64>> = plain.iter().map(|t| t.1).collect();
        // 10 - (0 + 2) = 8 s; sub-agent 11 - 5 = 6 s; 11 - (10 + 1.5) < 0 → 0.
        assert_eq!(delays, vec![None, Some(8000.0), None, Some(6000.0), Some(0.0)]);
        let think = replay_times(&refs, &WekaTiming { think_time_only: true, ..WekaTiming::default() });
        let delays: Vec<Option<f64>> = think.iter().map(|t| t.1).collect();
        assert_eq!(delays, vec![None, Some(7000.0), None, Some(3000.0), Some(0.0)]);
        let ignored = replay_times(&refs, &WekaTiming { ignore_delays: true, ..WekaTiming::default() });
        assert!(ignored.iter().all(|t| t.1.is_none()));
        assert_eq!(plain.iter().map(|t| t.0).collect::<Vec<_>>(), reqs.iter().map(|r| r.at_ns).collect::<Vec<_>>());
    }

    #[test]
    fn idle_gaps_are_capped_over_the_whole_document() {
        // AIPerf's own example: cap 60 s, starts 0, 20 (a sub-agent) and 220 → 220 moves to 80.
        let reqs =
            [req(0.0, 0, Some(1.0), Some(50.0)), req(20.0, 1, Some(80.0), None), req(220.0, 0, None, Some(50.0))];
        let refs: Vec<&Req> = reqs.iter().collect();
        let capped = replay_times(
            &refs,
            &WekaTiming { idle_gap_cap_s: Some(60.0), think_time_only: true, ..WekaTiming::default() },
        );
        assert_eq!(capped.iter().map(|t| t.0).collect::<Vec<_>>(), vec![0, 20_000_000_000, 80_000_000_000]);
        // Think time is not used under the cap: 80 - (0 + 1) = 79 s.
        assert_eq!(capped[2].1, Some(79_000.0));
        let w = Warp::new(&[0.0, 20.0, 220.0], 60.0);
        assert_eq!(w.map(50.0), 50.0);
        assert_eq!(w.map(150.0), 80.0);
        assert_eq!(w.map(230.0), 90.0);
    }

    #[test]
    fn the_inter_turn_delay_cap_shortens_delays_unless_the_idle_gap_cap_is_given() {
        let reqs = [
            req(0.0, 0, Some(2.0), None),
            req(10.0, 0, Some(1.5), Some(7.0)),
            req(5.0, 1, None, None),
            req(11.0, 1, None, Some(3.0)),
        ];
        let refs: Vec<&Req> = reqs.iter().collect();
        let cap = |t: WekaTiming| replay_times(&refs, &t).iter().map(|t| t.1).collect::<Vec<_>>();
        // Idle times 8 s and 6 s, think times 7 s and 3 s: each at most 4 s.
        let capped = WekaTiming { inter_turn_delay_cap_s: Some(4.0), ..WekaTiming::default() };
        assert_eq!(cap(capped), vec![None, Some(4000.0), None, Some(4000.0)]);
        assert_eq!(cap(WekaTiming { think_time_only: true, ..capped }), vec![None, Some(4000.0), None, Some(3000.0)]);
        // Under the idle-gap cap (no gap longer than 60 s here) the delays are not capped.
        assert_eq!(
            cap(WekaTiming { idle_gap_cap_s: Some(60.0), ..capped }),
            vec![None, Some(8000.0), None, Some(6000.0)]
        );
        assert!(cap(WekaTiming { ignore_delays: true, ..capped }).iter().all(Option::is_none));
    }

    #[test]
    fn the_peak_caps_only_the_files_own_outputs() {
        let mut a = req(0.0, 0, None, None);
        a.output = Some(500);
        let mut b = req(1.0, 1, None, None);
        b.input = 300;
        b.output = Some(0);
        let refs = vec![&a, &b];
        assert_eq!(peak_context(&refs, None), 600);
        assert_eq!(peak_context(&refs, Some(50)), 301);
        assert!(fits_context(600, Some(600)) && !fits_context(601, Some(600)) && fits_context(9, None));
    }
}
