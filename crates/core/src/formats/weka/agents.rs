//! The sessions of a WEKA document as AIPerf 0.13's loader replays them: the file's own requests
//! split into agent chains ([`super::chains`]), the main chain the root session; each sub-agent
//! entry (split the same way) and each other chain a session that a turn of the root starts and,
//! when a later turn of the root was recorded after it ended, that turn joins.
//!
//! A sub-agent is started by the root's last turn before its entry (none: AIPerf drops it) and
//! joined by the root's first later turn that starts no earlier than the entry's `t` plus its
//! `duration_ms` (without one: its requests' latest end). A chain is started by the root's last
//! turn before its first request (none: the first turn) and joined by the root's first later turn
//! that starts no earlier than its requests' latest end. Sub-agents (and chains) started and
//! joined by the same turns are one branch of that turn; nothing joins the others (AIPerf's
//! background branches).

use super::chains::{self, Item};
use super::model::{Req, Spawn};
use crate::trace::Branch;

/// AIPerf's `_JOIN_EPSILON_SECONDS` (and its sub-agent time slack).
const JOIN_EPSILON_S: f64 = 1e-6;

/// One session: its conversation (the file's, or a sub-agent's) and what its name adds to that
/// conversation's (`""`, or a chain's `/fa:000` after the file's, `:fa:000` after a sub-agent's),
/// its requests in turn order (indices into the document's requests), and the branches its turns
/// start.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Session {
    pub conv: u32,
    pub suffix: String,
    pub reqs: Vec<usize>,
    pub branches: Vec<Started>,
}

/// A branch of a session: the turn that starts it, its children (indices into the plan's
/// sessions), the turn that joins them, and each child's offset in ms after the turn ends.
pub(super) type Started = (u32, Vec<usize>, Option<u32>, Vec<f64>);

/// A request's end in seconds: its start plus `api_time` (missing, negative or not finite: 0).
fn end_s(r: &Req) -> f64 {
    let api = r.api.filter(|a| a.is_finite()).unwrap_or(0.0).max(0.0);
    r.at_ns as f64 / 1e9 + api
}

/// The sessions of a document whose requests are `reqs` (in document order, their hash ids
/// `ids`) and whose conversations' sub-agent entries are `spawns` (conversation 0 the file's own).
/// `map` puts a time in seconds on the replay's timeline (the idle-gap cap's); without `timed`
/// (no times replayed) every child starts at once.
pub(super) fn plan(
    reqs: &[&Req],
    ids: &[&[u64]],
    spawns: &[Option<Spawn>],
    map: &dyn Fn(f64) -> f64,
    timed: bool,
) -> Vec<Session> {
    let of_conv = |c: u32| -> Vec<usize> { (0..reqs.len()).filter(|&i| reqs[i].conv == c).collect() };
    let items: Vec<Item<'_>> = reqs
        .iter()
        .zip(ids)
        .map(|(r, ids)| Item {
            t: r.at_ns as f64 / 1e9,
            end: end_s(r),
            model: r.model,
            ids,
            input: r.input,
            output: r.output.unwrap_or(0),
        })
        .collect();
    // Splits the requests `of` (of conversation `conv`) into its main chain and the others.
    let split = |conv: u32, of: Vec<usize>| -> Vec<Session> {
        let sub: Vec<Item<'_>> = of.iter().map(|&i| items[i]).collect();
        let Some(c) = chains::split(&sub) else {
            let mut reqs = of;
            reqs.sort_by(|&a, &b| items[a].t.total_cmp(&items[b].t).then(a.cmp(&b)));
            return vec![Session { conv, suffix: String::new(), reqs, branches: Vec::new() }];
        };
        let to_doc = |v: &[usize]| v.iter().map(|&k| of[k]).collect::<Vec<usize>>();
        let mut out = vec![Session { conv, suffix: String::new(), reqs: to_doc(&c.main), branches: Vec::new() }];
        for (worker, reqs) in &c.workers {
            let suffix = if conv == 0 { format!("/{worker}") } else { format!(":{worker}") };
            out.push(Session { conv, suffix, reqs: to_doc(reqs), branches: Vec::new() });
        }
        out
    };
    let root_reqs = of_conv(0);
    // Without a split, the file's requests stay in document order (AIPerf's).
    let mut sessions = split(0, root_reqs.clone());
    if sessions.len() == 1 {
        sessions[0].reqs = root_reqs;
    }
    let flat = sessions.len() - 1;
    // (outer index, turn, mapped start) of the root's turns, by outer index.
    let mut root: Vec<(u32, u32, f64)> =
        sessions[0].reqs.iter().enumerate().map(|(k, &i)| (reqs[i].outer, k as u32, map(items[i].t))).collect();
    root.sort_by_key(|r| r.0);
    let preceding = |outer: u32| root.iter().filter(|r| r.0 < outer).map(|r| r.1).max();
    let join = |outer: u32, end: f64| root.iter().find(|r| r.0 > outer && r.2 + JOIN_EPSILON_S >= end).map(|r| r.1);
    // Groups of children by (starting turn, join turn), in the order first met, with the
    // branch's start (the earliest child's).
    type Groups = Vec<((u32, Option<u32>), Vec<usize>, f64)>;
    let mut groups: Groups = Vec::new();
    let add = |groups: &mut Groups, key, children: Vec<usize>, start: f64| match groups.iter_mut().find(|g| g.0 == key)
    {
        Some(g) => {
            g.1.extend(children);
            g.2 = g.2.min(start);
        }
        None => groups.push((key, children, start)),
    };
    for (conv, spawn) in spawns.iter().enumerate() {
        let Some(s) = spawn.as_ref().filter(|s| s.parent == 0) else { continue };
        let Some(start) = preceding(s.outer) else { continue };
        let inner = of_conv(conv as u32);
        let t = s.at_ns as f64 / 1e9;
        let end = match s.duration_ms {
            Some(ms) => t + if ms.is_finite() && ms >= 0.0 { ms / 1000.0 } else { 0.0 },
            None => inner
                .iter()
                .map(|&i| items[i].end)
                .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))))
                .unwrap_or(t),
        };
        let first = sessions.len();
        sessions.extend(split(conv as u32, inner));
        add(&mut groups, (start, join(s.outer, map(end))), (first..sessions.len()).collect(), map(t));
    }
    let mut flat_groups: Groups = Vec::new();
    for (s, session) in sessions.iter().enumerate().take(flat + 1).skip(1) {
        let Some(&first) = session.reqs.first() else { continue };
        let outer = reqs[first].outer;
        let start = preceding(outer).unwrap_or(0);
        let end = session.reqs.iter().map(|&i| items[i].end).fold(f64::NEG_INFINITY, f64::max);
        add(&mut flat_groups, (start, join(outer, map(end))), vec![s], map(items[first].t));
    }
    for ((start, join), children, branch_s) in groups.into_iter().chain(flat_groups) {
        let offsets = offsets(&sessions, &items, reqs, start, &children, branch_s, map, timed);
        sessions[0].branches.push((start, children, join, offsets));
    }
    sessions
}

/// AIPerf's dispatch offsets of the children of a branch of turn `turn` of the root that starts
/// at `branch_s`: each child's first request after the branch's start. A branch that starts
/// before the turn's recorded end AIPerf starts from the turn's send, which the replay here does
/// not: those children start when the turn ends.
#[allow(clippy::too_many_arguments)]
fn offsets(
    sessions: &[Session],
    items: &[Item<'_>],
    reqs: &[&Req],
    turn: u32,
    children: &[usize],
    branch_s: f64,
    map: &dyn Fn(f64) -> f64,
    timed: bool,
) -> Vec<f64> {
    let parent = sessions[0].reqs.get(turn as usize).copied();
    let overlaps = parent.is_some_and(|p| {
        let api = reqs[p].api.filter(|a| a.is_finite() && *a > 0.0);
        api.is_some_and(|api| branch_s < map(items[p].t) + api)
    });
    children
        .iter()
        .map(|&c| match sessions[c].reqs.first() {
            Some(&f) if timed && !overlaps => ((map(items[f].t) - branch_s) * 1000.0).max(0.0),
            _ => 0.0,
        })
        .collect()
}

/// A session's branches as the trace's, its children named `name_of(child)`.
pub(super) fn branches(s: &Session, name_of: impl Fn(usize) -> Box<str>) -> Vec<(u32, Branch)> {
    s.branches
        .iter()
        .map(|(turn, children, join_at, offsets_ms)| {
            let children = children.iter().map(|&c| name_of(c)).collect();
            (*turn, Branch { children, join_at: *join_at, offsets_ms: offsets_ms.clone() })
        })
        .collect()
}
