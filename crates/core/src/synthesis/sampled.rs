//! The fidelity report's numbers of a generated trace, gathered by the sampler as it emits the
//! rows ([`super::PrefixModel::sample_with_facts`]), so that the written trace is never analysed
//! again.
//!
//! The sampler knows each row's path through the contracted tree, its copy of the tree and its
//! fresh blocks, which is all the analysis of the rows would find: a node's blocks keep one
//! position and one parent in every row that visits it, and fresh blocks occur once. So
//! - a row's infinite-cache hits are the blocks of the leading nodes of its path that an earlier
//!   row visited;
//! - its context length counts the blocks whose (position, id) pair occurs twice in the whole
//!   trace: the leading nodes of its path visited twice by the end, known once every row is
//!   emitted;
//! - the distinct prefixes are the blocks of every visited node plus every fresh block.
//!
//! The results equal [`crate::analysis::analyze_for_comparison`]'s and
//! [`super::fidelity::ArrivalSeries::of`]'s bit for bit (a test checks it).

use crate::analysis::RowMetrics;
use crate::hashing::FastMap;
use crate::trace::{Number, Row};

use super::fidelity::{ArrivalSeries, Compared};

/// What the fidelity report reads of a generated trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampledFacts {
    pub block_size: u32,
    pub requests: u64,
    pub cache_hit_rate: f64,
    pub unique_prefixes: u64,
    /// Per row: input, output and context length and hit rate (no unique prompt lengths).
    pub rows: RowMetrics,
    /// Requests per 1-second window, as the analysis charts them.
    pub requests_per_second: Vec<f64>,
    pub arrivals: ArrivalSeries,
}

impl SampledFacts {
    /// The numbers the report compares.
    pub fn compared(&self) -> Compared<'_> {
        Compared {
            block_size: self.block_size,
            requests: self.requests,
            cache_hit_rate: self.cache_hit_rate,
            unique_prefixes: self.unique_prefixes,
            rows: &self.rows,
            requests_per_second: self.requests_per_second.clone(),
        }
    }
}

/// Visits of each (node, copy), saturated at 2.
enum Visits {
    /// One slot per node and copy, when they are few.
    Dense(Vec<u8>),
    Sparse(FastMap<u64, u8>),
}

/// Past this many (node, copy) slots the visits go in a map (root multipliers up to 10^6).
const DENSE_SLOTS: u64 = 1 << 24;

impl Visits {
    fn get(&self, key: u64) -> u8 {
        match self {
            Visits::Dense(v) => v[key as usize],
            Visits::Sparse(m) => m.get(&key).copied().unwrap_or(0),
        }
    }

    /// Counts a visit; returns the visits before it.
    fn visit(&mut self, key: u64) -> u8 {
        let slot = match self {
            Visits::Dense(v) => &mut v[key as usize],
            Visits::Sparse(m) => m.entry(key).or_insert(0),
        };
        let before = *slot;
        *slot = before.saturating_add(1).min(2);
        before
    }
}

/// Where a row ended: its last tree node, its copy of the tree, and its length in blocks.
struct End {
    node: u32,
    copy: u32,
    blocks: u32,
}

/// Gathers [`SampledFacts`] row by row.
pub(crate) struct Observer {
    block_size: u32,
    copies: u64,
    /// Per contracted node: its parent, and its blocks from the root to its end (scaled).
    parent: Vec<u32>,
    depth: Vec<u64>,
    visits: Visits,
    ends: Vec<End>,
    rows: RowMetrics,
    unique_prefixes: u64,
    timestamps: Vec<f64>,
    /// Per session (numbered from 0): turns so far, and the last turn's timestamp.
    turns: Vec<u32>,
    last_turn: Vec<Option<f64>>,
    delays: Vec<f64>,
}

impl Observer {
    /// An observer of rows walking the tree whose node `k` has children `children[k]` (node 0
    /// the root; a child numbered after its parent), `scaled_len[k]` blocks, in `copies` copies.
    pub(crate) fn new<'a>(
        block_size: u32,
        copies: u64,
        scaled_len: &[u64],
        children: impl Iterator<Item = &'a [(u32, u64)]>,
        capacity: usize,
    ) -> Self {
        let n = scaled_len.len();
        let mut parent = vec![0u32; n];
        for (k, kids) in children.enumerate() {
            for &(c, _) in kids {
                parent[c as usize] = k as u32;
            }
        }
        let mut depth = vec![0u64; n];
        for k in 1..n {
            depth[k] = depth[parent[k] as usize] + scaled_len[k];
        }
        let slots = (n as u64).saturating_mul(copies);
        let visits = if slots <= DENSE_SLOTS {
            Visits::Dense(vec![0; slots as usize])
        } else {
            Visits::Sparse(FastMap::default())
        };
        let rows = RowMetrics {
            isl: Vec::with_capacity(capacity),
            osl: Vec::with_capacity(capacity),
            context_length: Vec::new(),
            unique_prompt_length: Vec::new(),
            hit_rate: Vec::with_capacity(capacity),
        };
        Observer {
            block_size,
            copies,
            parent,
            depth,
            visits,
            ends: Vec::with_capacity(capacity),
            rows,
            unique_prefixes: 0,
            timestamps: Vec::with_capacity(capacity),
            turns: Vec::new(),
            last_turn: Vec::new(),
            delays: Vec::new(),
        }
    }

    /// Counts an emitted row: the tree nodes it walked (`path`, root excluded, with their scaled
    /// lengths), its copy, its fresh blocks, and the row itself with its session number.
    pub(crate) fn row(&mut self, path: &[(u32, u64)], copy: u64, fresh_blocks: u64, row: &Row, session: Option<u64>) {
        let (mut hits, mut leading, mut blocks) = (0u64, true, 0u64);
        for &(node, len) in path {
            let before = self.visits.visit(u64::from(node) * self.copies + copy);
            if before == 0 {
                self.unique_prefixes += len;
                leading = false;
            } else if leading {
                hits += len;
            }
            blocks += len;
        }
        self.unique_prefixes += fresh_blocks;
        blocks += fresh_blocks;
        self.rows.isl.push(row.input_length().unwrap_or(0) as f64);
        self.rows.osl.push(row.output_length.unwrap_or(0) as f64);
        self.rows.hit_rate.push(hits as f64 / blocks as f64);
        self.ends.push(End {
            node: path.last().map_or(0, |&(node, _)| node),
            copy: copy as u32,
            blocks: blocks as u32,
        });
        let timestamp = row.timestamp.map(Number::as_f64);
        if let Some(t) = timestamp {
            self.timestamps.push(t);
        }
        if let Some(s) = session {
            let s = s as usize;
            if s >= self.turns.len() {
                self.turns.resize(s + 1, 0);
                self.last_turn.resize(s + 1, None);
            }
            if self.turns[s] > 0 {
                match (row.delay.map(Number::as_f64), self.last_turn[s], timestamp) {
                    (Some(d), _, _) => self.delays.push(d),
                    (None, Some(a), Some(b)) => self.delays.push(b - a),
                    _ => {}
                }
            }
            self.turns[s] += 1;
            self.last_turn[s] = timestamp;
        }
    }

    /// The facts of every row counted.
    pub(crate) fn finish(mut self) -> SampledFacts {
        let bs = f64::from(self.block_size);
        // A row's blocks that another row shares at the same position are the leading nodes of
        // its path visited twice: a child is never visited more often than its parent.
        let mut context = Vec::with_capacity(self.ends.len());
        for (end, isl) in self.ends.iter().zip(&self.rows.isl) {
            let mut node = end.node;
            while node != 0 && self.visits.get(u64::from(node) * self.copies + u64::from(end.copy)) < 2 {
                node = self.parent[node as usize];
            }
            let repeated = self.depth[node as usize];
            context.push(match end.blocks {
                0 => 0.0,
                blocks if repeated == u64::from(blocks) => *isl,
                _ => repeated as f64 * bs,
            });
        }
        self.rows.context_length = context;
        self.timestamps.sort_by(f64::total_cmp);
        let requests_per_second =
            crate::analysis::requests_per_second(&self.timestamps).into_iter().map(f64::from).collect();
        SampledFacts {
            block_size: self.block_size,
            requests: self.rows.isl.len() as u64,
            cache_hit_rate: crate::stats::mean(&self.rows.hit_rate).unwrap_or(0.0),
            unique_prefixes: self.unique_prefixes,
            rows: self.rows,
            requests_per_second,
            arrivals: ArrivalSeries {
                timestamps: self.timestamps,
                turns: self.turns.into_iter().map(f64::from).collect(),
                delays: self.delays,
            },
        }
    }
}
