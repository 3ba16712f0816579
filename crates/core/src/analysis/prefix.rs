//! The prefix statistics' per-id tables: how often each `(position, id)` pair occurs
//! ([`PairCounts`]) and the prefix trie of all rows ([`PrefixTrie`] over [`TrieNodes`]).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::ids::Tables;
use super::input::AnalysisInput;

/// How often each `(position, id)` pair occurs, saturated at 2 (all the reference asks is "≥ 2").
pub(super) struct PairCounts {
    /// Per id: the position of its first occurrence (low 30 bits; [`UNSEEN`]: never seen,
    /// [`FAR`]: in `far_first`) and the occurrences at that position, saturated at 2 (high two
    /// bits). One word per id, so a lookup touches one cache line.
    pub(super) first: Vec<u32>,
    /// First positions too large for the low bits (a row of over a billion ids).
    pub(super) far_first: HashMap<u32, u32>,
    /// The rare pairs of an id at a second position.
    pub(super) other: HashMap<(u32, u32), u8>,
    pub(super) ids_at_several_positions: u64,
}

/// The low 30 bits of a packed table entry.
const LOW: u32 = (1 << 30) - 1;
/// One in the high two bits of a packed table entry (a count saturated at 2).
const ONE: u32 = 1 << 30;
const UNSEEN: u32 = LOW;
const FAR: u32 = LOW - 1;

impl PairCounts {
    pub(super) fn build(input: &AnalysisInput, tables: &mut Tables) -> Self {
        let size = input.id_space();
        let ids = input.ids();
        let mut pc = PairCounts {
            first: tables.words(size, UNSEEN),
            far_first: HashMap::new(),
            other: HashMap::new(),
            ids_at_several_positions: 0,
        };
        let mut several = BitSet::new(0);
        for (_, range) in input.iter() {
            for (pos, &id) in ids[range].iter().enumerate() {
                let pos = u32::try_from(pos).unwrap_or(u32::MAX);
                let entry = pc.first[id as usize];
                let (code, first) = match entry & LOW {
                    UNSEEN if pos < FAR => (pos, pos),
                    UNSEEN => {
                        pc.far_first.insert(id, pos);
                        (FAR, pos)
                    }
                    FAR => (FAR, pc.far_first.get(&id).copied().unwrap_or(u32::MAX)),
                    p => (p, p),
                };
                if first == pos {
                    pc.first[id as usize] = code | ((entry / ONE + 1).min(2) * ONE);
                } else {
                    let c = pc.other.entry((pos, id)).or_insert(0);
                    *c = c.saturating_add(1).min(2);
                    if several.words.is_empty() {
                        several = BitSet::new(size);
                    }
                    if !several.contains(id as usize) {
                        several.insert(id as usize);
                        pc.ids_at_several_positions += 1;
                    }
                }
            }
        }
        pc
    }

    #[inline]
    pub(super) fn is_repeated(&self, pos: usize, id: u32) -> bool {
        let pos = u32::try_from(pos).unwrap_or(u32::MAX);
        let entry = self.first[id as usize];
        let first = match entry & LOW {
            FAR => self.far_first.get(&id).copied().unwrap_or(u32::MAX),
            p => p,
        };
        if first == pos { entry >= 2 * ONE } else { self.other.get(&(pos, id)).is_some_and(|&c| c >= 2) }
    }
}

/// The prefix trie of all rows' id sequences, built in two linear passes.
pub(super) struct PrefixTrie {
    pub(super) unique_prefixes: u64,
    /// Σ over rows of the prefix positions another row shares (leading slices seen ≥ 2 times).
    shared_slices: u64,
    /// Σ over rows of their length (all leading slices).
    all_slices: u64,
    pub(super) groups: Vec<PrefixGroup>,
}

impl PrefixTrie {
    pub(super) fn build(input: &AnalysisInput, tables: &mut Tables) -> Self {
        let ids = input.ids();
        let mut nodes = TrieNodes::new(input.id_space(), tables);
        let mut all_slices = 0u64;
        for (_, range) in input.iter() {
            all_slices += range.len() as u64;
            let mut parent = ROOT;
            for &id in &ids[range] {
                parent = nodes.enter(parent, id as usize);
            }
        }
        let mut group_of: HashMap<usize, usize> = HashMap::new();
        let mut t = PrefixTrie { unique_prefixes: nodes.count, shared_slices: 0, all_slices, groups: Vec::new() };
        for (_, range) in input.iter() {
            let Some(&first) = ids.get(range.start).filter(|_| !range.is_empty()) else { continue };
            let root_id = input.root_id(first);
            // A child is never visited more often than its parent, so the nodes this row shares
            // with another row are a leading run of its path.
            let mut shared = 0u64;
            let mut parent = ROOT;
            for &id in &ids[range] {
                match nodes.child(parent, id as usize) {
                    Some(node) if nodes.visited_twice(node) => {
                        shared += 1;
                        parent = node;
                    }
                    _ => break,
                }
            }
            t.shared_slices += shared;
            let next = t.groups.len();
            let g = *group_of.entry(first as usize).or_insert(next);
            if g == next {
                t.groups.push(PrefixGroup { root_id, requests: 0, mean_shared_blocks: 0.0, max_shared_blocks: 0 });
            }
            let group = &mut t.groups[g];
            group.requests += 1;
            // Sums of integers below 2^53: exact, whatever the order.
            group.mean_shared_blocks += shared as f64;
            group.max_shared_blocks = group.max_shared_blocks.max(shared);
        }
        for g in &mut t.groups {
            g.mean_shared_blocks /= g.requests as f64;
        }
        tables.keep_words(nodes.home);
        t
    }

    pub(super) fn reuse_ratio(&self) -> f64 {
        if self.all_slices == 0 { 0.0 } else { self.shared_slices as f64 / self.all_slices as f64 }
    }

    pub(super) fn top_groups(&self, n: usize) -> Vec<PrefixGroup> {
        let mut g: Vec<PrefixGroup> = self.groups.iter().filter(|g| g.requests >= 2).cloned().collect();
        g.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.root_id.cmp(&b.root_id)));
        g.truncate(n);
        g
    }
}

/// The parent of the trie's depth-1 nodes.
const ROOT: usize = usize::MAX;

/// Trie nodes keyed by (parent node, id). Nearly every id sits under one parent only (a block id
/// names a prefix), so the first node made for an id is that id's "home" node, numbered by the
/// id itself, with its parent and visits in a flat vector; only an id met again under another
/// parent (or under a parent numbered past the low bits) costs a hash map entry. Work and memory
/// are linear in the number of ids.
struct TrieNodes {
    /// Per id, its home node: the parent (low 30 bits; [`NO_HOME`]: none yet; [`ROOT_PARENT`]:
    /// depth 1) and the visits, saturated at 2 (high two bits). One word, one cache line.
    home: Vec<u32>,
    /// Other nodes: (parent, id) → node number `size + k`.
    other: HashMap<(usize, usize), usize>,
    /// Visits of the other nodes, saturated at 2.
    other_visits: Vec<u8>,
    /// Nodes made so far.
    count: u64,
}

const NO_HOME: u32 = LOW;
const ROOT_PARENT: u32 = LOW - 1;

impl TrieNodes {
    fn new(size: usize, tables: &mut Tables) -> Self {
        TrieNodes { home: tables.words(size, NO_HOME), other: HashMap::new(), other_visits: Vec::new(), count: 0 }
    }

    /// A parent as stored in a home entry, if it fits there.
    fn packed(parent: usize) -> Option<u32> {
        if parent == ROOT { Some(ROOT_PARENT) } else { u32::try_from(parent).ok().filter(|&p| p < ROOT_PARENT) }
    }

    /// The node for `id` under `parent`, if there is one.
    #[inline]
    fn child(&self, parent: usize, id: usize) -> Option<usize> {
        if Self::packed(parent).is_some_and(|p| self.home[id] & LOW == p) {
            Some(id)
        } else {
            self.other.get(&(parent, id)).copied()
        }
    }

    /// Visits the node for `id` under `parent`, made if needed.
    #[inline]
    fn enter(&mut self, parent: usize, id: usize) -> usize {
        let packed = Self::packed(parent);
        let entry = self.home[id];
        if let Some(p) = packed {
            if entry & LOW == p {
                if entry < 2 * ONE {
                    self.home[id] = entry + ONE;
                }
                return id;
            }
            if entry & LOW == NO_HOME {
                self.home[id] = p + ONE;
                self.count += 1;
                return id;
            }
        }
        let size = self.home.len();
        let next = size + self.other_visits.len();
        let node = *self.other.entry((parent, id)).or_insert(next);
        if node == next {
            self.other_visits.push(0);
            self.count += 1;
        }
        let v = &mut self.other_visits[node - size];
        *v = (*v + 1).min(2);
        node
    }

    #[inline]
    fn visited_twice(&self, node: usize) -> bool {
        let size = self.home.len();
        if node < size { self.home[node] >= 2 * ONE } else { self.other_visits[node - size] >= 2 }
    }
}

/// A fixed-size set of small integers.
pub(crate) struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    pub(crate) fn new(size: usize) -> Self {
        BitSet { words: vec![0; size.div_ceil(64)] }
    }
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }
    #[inline]
    pub(crate) fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }
}

/// Rows that start with the same block, and how deep they share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefixGroup {
    pub root_id: u64,
    pub requests: u64,
    /// Mean over the group's rows of the blocks shared with at least one other row of the trace.
    pub mean_shared_blocks: f64,
    pub max_shared_blocks: u64,
}
