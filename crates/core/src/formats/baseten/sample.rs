//! AIPerf's session sampling (`--trace-session-sample-ratio`): whole sessions kept or dropped by
//! CPython's generator at the seed AIPerf derives, rows without a session one by one.

use std::collections::HashMap;

use super::record::{Record, SessionId};
use crate::rng::{PyRandom, derive_seed};

/// The component AIPerf derives its session sampler's seed from.
const SAMPLING_COMPONENT: &str = "dataset.loader.baseten_trace.session_sampling";

/// Which records the session sampling keeps, and the counts: sessions kept, sessions, rows
/// without a session kept, rows without a session. AIPerf's draws: one `random()` per session in
/// the order of their first timestamp (then id), one session by `choice` when none was kept, then
/// one per row without a session in file order.
pub(super) fn sample(records: &[Record], ratio: f64, seed: u64) -> (Vec<bool>, [u64; 4]) {
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
