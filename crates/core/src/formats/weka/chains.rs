//! AIPerf 0.13's agent chains of a WEKA conversation (`weka_agent_chains.py`): requests recorded
//! flat, one after the other, that belong to several agents, told apart by their hash ids.
//!
//! A request whose ids extend, in full, the ids of a chain's last request (the same model, that
//! request ended by then) continues that chain; otherwise it starts a chain forked from the chain
//! whose last request shares the longest prefix with it. A fork registered on a request that
//! stayed its chain's last (the longer context was never taken up again) is that agent's own
//! continuation after an edit of its context (a compaction): the deepest such fork of the same
//! model that starts after the request ended is spliced back onto the chain. A chain that starts
//! more than `SEAM_MAX_GAP_S` after the request ended and shares less than `SEAM_MIN_OVERLAP` of
//! its ids stays a chain of its own. Requests without ids ride the first chain.
//!
//! The chains other than the main one (the chain of the earliest request) are named as AIPerf
//! names them: `aux` (a one-request chain on another model, or on a small fresh context, or a
//! large-input short-output reduction), `wg:G_M` (one of at least `WORKER_GROUP_MIN` chains forked
//! from the same request that ran at once) or `fa` (an agent of its own).
//!
//! Bounds: a conversation's requests are checked against every chain, so the work is at most
//! requests × chains × ids per request; AIPerf's defaults of its `AIPERF_DATASET_WEKA_*`
//! settings are the constants here.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::hashing::{FastMap, FastSet};

/// AIPerf's `_EPSILON_SECONDS`: the slack of "ended by then".
const EPSILON_S: f64 = 1e-6;
/// `WEKA_SEAM_MAX_GAP_SECONDS`.
const SEAM_MAX_GAP_S: f64 = 3600.0;
/// `WEKA_SEAM_MIN_OVERLAP_RATIO`.
const SEAM_MIN_OVERLAP: f64 = 0.5;
/// `WEKA_AUX_MAX_REQUESTS`.
const AUX_MAX_REQUESTS: usize = 1;
/// `WEKA_AUX_ISL_RATIO`.
const AUX_ISL_RATIO: f64 = 0.10;
/// `WEKA_AUX_ISL_FLOOR`.
const AUX_ISL_FLOOR: u64 = 16384;
/// `WEKA_AUX_REDUCTION_OSL_MAX`.
const REDUCTION_OSL_MAX: u64 = 4000;
/// `WEKA_AUX_REDUCTION_RATIO`.
const REDUCTION_RATIO: f64 = 20.0;
/// `WEKA_WORKER_GROUP_MIN`.
const WORKER_GROUP_MIN: usize = 3;
/// AIPerf's `_TITLE_GEN_MAX_OUTPUT_TOKENS`: the largest output of a title-generation preamble.
const TITLE_GEN_MAX_OUTPUT: u64 = 64;

/// One request as the detection sees it; its place in the slice is its order in the document.
#[derive(Clone, Copy, Debug)]
pub(super) struct Item<'a> {
    /// Start, in seconds.
    pub t: f64,
    /// Start plus the recorded `api_time` (missing, negative or not finite: 0).
    pub end: f64,
    pub model: u32,
    pub ids: &'a [u64],
    pub input: u64,
    pub output: u64,
}

/// How a chain split off another.
#[derive(Clone, Debug, PartialEq)]
struct Fork {
    parent: Option<usize>,
    /// The request it forked from (the parent's last request then).
    from: Option<usize>,
    /// Ids shared with that request.
    depth: usize,
    /// Its first request's start.
    time: f64,
}

#[derive(Clone, Debug, Default)]
struct Chain {
    reqs: Vec<usize>,
    fork: Option<Fork>,
    spliced_into: Option<usize>,
    /// The last request with ids.
    tail: Option<usize>,
}

/// The chains of a conversation: each as its requests (indices into the items), the main one
/// first, then the others by their first request.
#[derive(Debug, PartialEq)]
pub(super) struct Chains {
    pub main: Vec<usize>,
    /// The other chains, each with its name (`fa:000`, `aux:001`, `wg:000_002`).
    pub workers: Vec<(String, Vec<usize>)>,
}

fn lcp(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn by_time(items: &[Item<'_>], order: &mut [usize]) {
    order.sort_by(|&a, &b| items[a].t.total_cmp(&items[b].t).then(a.cmp(&b)));
}

/// AIPerf's `_split_off_preamble`: the earliest request, when it shares no prefix with any other
/// and is small (a title generation) or shares no id at all with the rest, set aside.
fn preamble(items: &[Item<'_>], all: &[usize]) -> Option<usize> {
    if all.len() < 2 {
        return None;
    }
    let mut ordered = all.to_vec();
    by_time(items, &mut ordered);
    let first = ordered[0];
    let ids = items[first].ids;
    if ids.is_empty() {
        return None;
    }
    let rest = &ordered[1..];
    if rest.iter().any(|&o| !items[o].ids.is_empty() && lcp(ids, items[o].ids) > 0) {
        return None;
    }
    if items[first].output > TITLE_GEN_MAX_OUTPUT {
        let others: FastSet<u64> = rest.iter().flat_map(|&o| items[o].ids.iter().copied()).collect();
        if ids.iter().any(|h| others.contains(h)) {
            return None;
        }
    }
    Some(first)
}

/// The chains of `items` as AIPerf's WEKA loader splits them (preamble set aside and put back on
/// the main chain); `None` when it finds one agent only.
pub(super) fn split(items: &[Item<'_>]) -> Option<Chains> {
    if items.len() < 2 {
        return None;
    }
    let all: Vec<usize> = (0..items.len()).collect();
    let pre = preamble(items, &all);
    let rest: Vec<usize> = all.iter().copied().filter(|&i| Some(i) != pre).collect();
    let d = detect(items, &rest);
    if d.workers.is_empty() {
        return None;
    }
    let main_chain = &d.chains[d.main];
    let main_peak = main_chain.reqs.iter().map(|&i| items[i].input).max().unwrap_or(0);
    let main_model = main_chain.reqs.first().map(|&i| items[i].model);
    let groups = worker_groups(items, &d);
    let mut workers = Vec::with_capacity(d.workers.len());
    for (n, &ci) in d.workers.iter().enumerate() {
        let reqs = &d.chains[ci].reqs;
        let aux = is_aux(items, reqs, main_peak, main_model) || is_reduction(items, reqs);
        let name = match groups.get(&ci) {
            _ if aux => format!("aux:{n:03}"),
            Some((g, m)) => format!("wg:{g:03}_{m:03}"),
            None => format!("fa:{n:03}"),
        };
        workers.push((name, reqs.clone()));
    }
    let mut main = main_chain.reqs.clone();
    if let Some(p) = pre {
        main.push(p);
        by_time(items, &mut main);
    }
    Some(Chains { main, workers })
}

/// `is_aux_chain` with AIPerf's defaults.
fn is_aux(items: &[Item<'_>], reqs: &[usize], main_peak: u64, main_model: Option<u32>) -> bool {
    let Some(&first) = reqs.first() else { return false };
    if reqs.len() > AUX_MAX_REQUESTS {
        return false;
    }
    if main_model.is_some_and(|m| m != items[first].model) {
        return true;
    }
    let threshold = AUX_ISL_FLOOR.max((AUX_ISL_RATIO * main_peak as f64) as u64);
    items[first].input < threshold
}

/// `is_reduction_chain` with AIPerf's defaults.
fn is_reduction(items: &[Item<'_>], reqs: &[usize]) -> bool {
    let [only] = reqs else { return false };
    let r = &items[*only];
    if r.output == 0 || r.output >= REDUCTION_OSL_MAX || r.input < AUX_ISL_FLOOR {
        return false;
    }
    r.input as f64 > REDUCTION_RATIO * r.output as f64
}

/// What `detect_agent_chains` finds.
struct Detection {
    chains: Vec<Chain>,
    main: usize,
    workers: Vec<usize>,
}

/// AIPerf's `detect_agent_chains` over the requests `of` (indices into `items`).
fn detect(items: &[Item<'_>], of: &[usize]) -> Detection {
    let mut ordered = of.to_vec();
    by_time(items, &mut ordered);
    let mut p1 = Phase1 { items, chains: Vec::new(), chain_of: FastMap::default(), forks_by_tail: FastMap::default() };
    for &i in &ordered {
        p1.classify(i);
    }
    let Phase1 { mut chains, mut chain_of, mut forks_by_tail, .. } = p1;
    let Some(&first) = ordered.first() else {
        return Detection { chains, main: 0, workers: Vec::new() };
    };
    resolve_seams(items, &mut chains, &mut forks_by_tail, &mut chain_of);
    let resolve = |chains: &[Chain], mut i: usize| {
        while let Some(j) = chains[i].spliced_into {
            i = j;
        }
        i
    };
    for k in 0..chains.len() {
        if chains[k].spliced_into.is_none()
            && let Some(p) = chains[k].fork.as_ref().and_then(|f| f.parent)
        {
            let r = resolve(&chains, p);
            if let Some(f) = chains[k].fork.as_mut() {
                f.parent = Some(r);
            }
        }
    }
    let main = resolve(&chains, chain_of.get(&first).copied().unwrap_or(0));
    let first_of = |c: &Chain| c.reqs.first().map_or((f64::INFINITY, usize::MAX), |&i| (items[i].t, i));
    let mut workers: Vec<usize> =
        (0..chains.len()).filter(|&i| chains[i].spliced_into.is_none() && i != main).collect();
    workers.sort_by(|&a, &b| {
        let (ta, ia) = first_of(&chains[a]);
        let (tb, ib) = first_of(&chains[b]);
        ta.total_cmp(&tb).then(ia.cmp(&ib))
    });
    Detection { chains, main, workers }
}

/// The greedy forward pass.
struct Phase1<'i, 'a> {
    items: &'i [Item<'a>],
    chains: Vec<Chain>,
    chain_of: FastMap<usize, usize>,
    forks_by_tail: FastMap<usize, Vec<usize>>,
}

impl Phase1<'_, '_> {
    fn append(&mut self, c: usize, i: usize) {
        self.chains[c].reqs.push(i);
        self.chain_of.insert(i, c);
        if !self.items[i].ids.is_empty() {
            self.chains[c].tail = Some(i);
        }
    }

    fn classify(&mut self, i: usize) {
        let r = self.items[i];
        if r.ids.is_empty() {
            if self.chains.is_empty() {
                self.chains.push(Chain::default());
            }
            self.chains[0].reqs.push(i);
            self.chain_of.insert(i, 0);
            return;
        }
        if self.chains.is_empty() {
            self.chains.push(Chain::default());
            self.append(0, i);
            return;
        }
        if let Some(c) = self.extension_target(&r) {
            self.append(c, i);
            return;
        }
        let (parent, depth) = self.max_lcp_chain(r.ids);
        if parent.is_none() && self.chains.iter().all(|c| c.tail.is_none()) {
            self.append(0, i);
            return;
        }
        let from = parent.and_then(|p| self.chains[p].tail);
        let new = self.chains.len();
        self.chains.push(Chain { fork: Some(Fork { parent, from, depth, time: r.t }), ..Chain::default() });
        self.append(new, i);
        if let Some(f) = from
            && depth > 0
        {
            self.forks_by_tail.entry(f).or_default().push(new);
        }
    }

    /// The chain whose last ids `r` extends in full, of the same model and ended by `r`'s start;
    /// the deepest, then the first.
    fn extension_target(&self, r: &Item<'_>) -> Option<usize> {
        let mut best = None;
        let mut best_len = 0;
        for (k, c) in self.chains.iter().enumerate() {
            let Some(tail) = c.tail.map(|t| self.items[t]) else { continue };
            let tl = tail.ids.len();
            if tl > r.ids.len() || tl <= best_len || tail.model != r.model || tail.end > r.t + EPSILON_S {
                continue;
            }
            if r.ids[..tl] == *tail.ids {
                best = Some(k);
                best_len = tl;
            }
        }
        best
    }

    /// The chain whose last ids share the longest prefix with `ids` (then the longer, then the
    /// first), and that length.
    fn max_lcp_chain(&self, ids: &[u64]) -> (Option<usize>, usize) {
        let mut best = None;
        let mut key = (0, 0);
        for (k, c) in self.chains.iter().enumerate() {
            let Some(tail) = c.tail.map(|t| self.items[t].ids) else { continue };
            let d = lcp(tail, ids);
            if d > 0 && (d, tail.len()) > key {
                best = Some(k);
                key = (d, tail.len());
            }
        }
        (best, key.0)
    }
}

fn last_with_ids(items: &[Item<'_>], c: &Chain) -> Option<usize> {
    c.reqs.iter().rev().copied().find(|&i| !items[i].ids.is_empty())
}

/// AIPerf's `_resolve_seams`: continuations spliced back onto the requests that stayed their
/// chain's last.
fn resolve_seams(
    items: &[Item<'_>],
    chains: &mut [Chain],
    forks_by_tail: &mut FastMap<usize, Vec<usize>>,
    chain_of: &mut FastMap<usize, usize>,
) {
    let resolve = |chains: &[Chain], mut i: usize| {
        while let Some(j) = chains[i].spliced_into {
            i = j;
        }
        i
    };
    let mut keys: BinaryHeap<Reverse<usize>> = forks_by_tail.keys().map(|&k| Reverse(k)).collect();
    let mut processed: BTreeSet<usize> = BTreeSet::new();
    while let Some(Reverse(from)) = keys.pop() {
        if !processed.insert(from) {
            continue;
        }
        let owner = resolve(chains, chain_of.get(&from).copied().unwrap_or(0));
        if last_with_ids(items, &chains[owner]) != Some(from) {
            continue;
        }
        let registered: Vec<usize> = forks_by_tail
            .get(&from)
            .map(|v| v.iter().copied().filter(|&c| chains[c].spliced_into.is_none()).collect())
            .unwrap_or_default();
        let Some(elected) = elect(items, chains, &registered, from) else { continue };
        let moved = std::mem::take(&mut chains[elected].reqs);
        for &i in &moved {
            chain_of.insert(i, owner);
        }
        chains[owner].reqs.extend(moved.iter().copied());
        chains[elected].reqs = moved;
        chains[elected].spliced_into = Some(owner);
        let Some(new_tail) = last_with_ids(items, &chains[owner]) else { continue };
        let tail_ids = items[new_tail].ids;
        let mut rekeyed = false;
        for &c in &registered {
            if c == elected || chains[c].spliced_into.is_some() || chains[c].fork.is_none() {
                continue;
            }
            let d = chains[c].reqs.first().map_or(0, |&f| lcp(tail_ids, items[f].ids));
            if d == 0 {
                continue;
            }
            if let Some(f) = chains[c].fork.as_mut() {
                f.from = Some(new_tail);
                f.depth = d;
                f.parent = Some(owner);
            }
            forks_by_tail.entry(new_tail).or_default().push(c);
            rekeyed = true;
        }
        if rekeyed {
            processed.remove(&new_tail);
            keys.push(Reverse(new_tail));
        }
    }
}

/// AIPerf's `_elect_continuation` among the forks `registered` on request `from`.
fn elect(items: &[Item<'_>], chains: &[Chain], registered: &[usize], from: usize) -> Option<usize> {
    let tail = items[from];
    let blocks = tail.ids.len();
    let mut best: Option<(usize, f64, usize)> = None;
    for &c in registered {
        let (Some(fork), Some(&first)) = (chains[c].fork.as_ref(), chains[c].reqs.first()) else { continue };
        let start = items[first];
        if fork.depth == 0 || tail.end > start.t + EPSILON_S || start.model != tail.model {
            continue;
        }
        let blocked =
            blocks > 0 && start.t - tail.end > SEAM_MAX_GAP_S && (fork.depth as f64 / blocks as f64) < SEAM_MIN_OVERLAP;
        if blocked {
            continue;
        }
        // Deepest, then earliest, then the lowest index.
        let better = best.is_none_or(|(d, t, k)| {
            fork.depth > d || (fork.depth == d && (fork.time < t || (fork.time == t && c < k)))
        });
        if better {
            best = Some((fork.depth, fork.time, c));
        }
    }
    best.map(|b| b.2)
}

/// AIPerf's `worker_group_assignment`: chains forked from the same request (sharing ids with it)
/// that ran at once, at least [`WORKER_GROUP_MIN`] of them: (group, member) of each.
fn worker_groups(items: &[Item<'_>], d: &Detection) -> FastMap<usize, (usize, usize)> {
    // (t0, t1, first request, chain) by fork point, in the order the points are first met.
    type Span = (f64, f64, usize, usize);
    let mut buckets: Vec<((usize, usize), Vec<Span>)> = Vec::new();
    for &ci in &d.workers {
        let c = &d.chains[ci];
        let Some(Fork { parent: Some(p), from: Some(f), depth, .. }) = c.fork else { continue };
        let Some(&first) = c.reqs.first() else { continue };
        if depth == 0 {
            continue;
        }
        let t1 = c.reqs.iter().map(|&i| items[i].end).fold(f64::NEG_INFINITY, f64::max);
        let cand = (items[first].t, t1, first, ci);
        match buckets.iter_mut().find(|b| b.0 == (p, f)) {
            Some(b) => b.1.push(cand),
            None => buckets.push(((p, f), vec![cand])),
        }
    }
    let mut groups: Vec<Vec<Span>> = Vec::new();
    for (_, mut cands) in buckets {
        cands.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
        // Sorted by start, an interval overlaps the component so far when it starts before the
        // component's latest end (touching intervals do not overlap).
        let mut comp: Vec<Span> = Vec::new();
        let mut reach = f64::NEG_INFINITY;
        for c in cands {
            if !comp.is_empty() && c.0 >= reach {
                groups.push(std::mem::take(&mut comp));
                reach = f64::NEG_INFINITY;
            }
            reach = reach.max(c.1);
            comp.push(c);
        }
        if !comp.is_empty() {
            groups.push(comp);
        }
    }
    groups.retain(|g| g.len() >= WORKER_GROUP_MIN);
    groups.sort_by(|a, b| a[0].0.total_cmp(&b[0].0).then(a[0].2.cmp(&b[0].2)));
    let mut out = FastMap::default();
    for (g, comp) in groups.iter().enumerate() {
        for (m, c) in comp.iter().enumerate() {
            out.insert(c.3, (g, m));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! The expected chains are what AIPerf 0.13.0's `detect_agent_chains`, `_split_off_preamble`
    //! and its classification give on the same requests.
    use super::*;

    fn item(t: f64, api: f64, ids: &'static [u64], input: u64) -> Item<'static> {
        Item { t, end: t + api, model: 0, ids, input, output: 3000 }
    }

    fn names(c: &Chains) -> Vec<(&str, &[usize])> {
        c.workers.iter().map(|(n, r)| (n.as_str(), r.as_slice())).collect()
    }

    #[test]
    fn a_conversation_that_extends_its_context_is_one_agent() {
        let items = [item(0.0, 1.0, &[1], 100), item(2.0, 1.0, &[1, 2], 200), item(4.0, 1.0, &[1, 2, 3], 300)];
        assert_eq!(split(&items), None);
    }

    #[test]
    fn forks_are_agents_and_a_compaction_stays_on_its_chain() {
        let items = [
            item(0.0, 1.0, &[1, 2], 40_000),
            item(1.5, 3.0, &[1, 2, 5], 40_000),
            item(1.6, 3.0, &[1, 2, 6], 40_000),
            item(5.0, 1.0, &[1, 2, 5, 7], 40_000),
            item(2.0, 1.0, &[1, 2, 3, 4], 40_000),
            item(9.0, 1.0, &[1, 9], 40_000),
        ];
        let c = split(&items).unwrap();
        // 5 shares only `[1]` with 3, the main chain's last request, which it follows: the
        // same agent after a compaction.
        assert_eq!(c.main, vec![0, 1, 3, 5]);
        assert_eq!(names(&c), vec![("fa:000", &[2][..]), ("fa:001", &[4][..])]);
    }

    #[test]
    fn three_forks_that_run_at_once_are_a_worker_group_and_a_small_one_aux() {
        let items = [
            item(0.0, 1.0, &[1, 2], 40_000),
            item(1.1, 5.0, &[1, 2, 3], 40_000),
            item(1.2, 5.0, &[1, 2, 4], 40_000),
            item(1.3, 5.0, &[1, 2, 5], 40_000),
            item(1.35, 5.0, &[1, 2, 6], 40_000),
            item(1.4, 1.0, &[8], 100),
            item(7.0, 1.0, &[1, 2, 3, 6], 40_000),
        ];
        let c = split(&items).unwrap();
        assert_eq!(c.main, vec![0, 1, 6]);
        assert_eq!(
            names(&c),
            vec![("wg:000_000", &[2][..]), ("wg:000_001", &[3][..]), ("wg:000_002", &[4][..]), ("aux:003", &[5][..])]
        );
        // A one-request chain with a large input and a short output is a reduction (aux).
        let mut reduced = items;
        reduced[5] = Item { output: 100, ..item(1.4, 1.0, &[1, 2, 7], 40_000) };
        assert_eq!(split(&reduced).unwrap().workers[3].0, "aux:003");
    }

    #[test]
    fn a_late_continuation_sharing_little_is_an_agent_of_its_own() {
        let items = [
            item(0.0, 1.0, &[1, 2, 3, 4], 40_000),
            item(7300.0, 1.0, &[1, 9], 40_000),
            item(7302.0, 1.0, &[1, 9, 10], 40_000),
        ];
        let c = split(&items).unwrap();
        assert_eq!(c.main, vec![0]);
        assert_eq!(names(&c), vec![("fa:000", &[1, 2][..])]);
    }

    #[test]
    fn a_small_disjoint_first_request_is_a_preamble_of_the_main_chain() {
        let title = Item { output: 20, ..item(0.0, 0.5, &[50], 300) };
        let items = [title, item(1.0, 1.0, &[1, 2], 40_000), item(3.0, 1.0, &[1, 2, 3], 40_000)];
        assert_eq!(split(&items), None);
        let items = [title, item(1.0, 1.0, &[1, 2], 40_000), item(1.5, 1.0, &[1, 3], 40_000)];
        let c = split(&items).unwrap();
        assert_eq!(c.main, vec![0, 1]);
        assert_eq!(names(&c), vec![("fa:000", &[2][..])]);
    }
}
