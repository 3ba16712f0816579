//! The learned model ([`PrefixModel`]): the contracted prefix tree, the empirical length and fill
//! distributions per node, the arrival model, and how it is learned from a trace.

use serde::{Deserialize, Serialize};

use crate::hashing::FastMap;
use crate::synthesis::arrivals::ArrivalModel;
use crate::synthesis::error::SynthesisError;
use crate::synthesis::settings::{Param, Value};
use crate::trace::Trace;

/// A contracted tree node: a run of `len` blocks always visited together, and what follows it.
#[derive(Clone, Debug, Default)]
pub(super) struct Node {
    pub(super) len: u32,
    /// Range of this node's children in [`PrefixModel::children`].
    pub(super) children: std::ops::Range<usize>,
    /// Weight of "append a fresh unique prompt" (children visited by one row).
    pub(super) append: u64,
    /// Lengths in blocks of those unique prompts, in [`PrefixModel::prompt_blocks`].
    pub(super) prompts: std::ops::Range<usize>,
    /// Weight of "stop here" (rows ending at this node).
    pub(super) stop: u64,
    /// Last-block fills of the rows ending here, in [`PrefixModel::stop_fills`].
    pub(super) stop_fills: std::ops::Range<usize>,
}

/// No parent yet: an id not seen so far, in [`PrefixModel::learn`]'s table of ids.
const NO_PARENT: u32 = u32::MAX;

/// What was learned from a trace: the contracted prefix tree and the empirical distributions.
#[derive(Clone, Debug)]
pub struct PrefixModel {
    pub(super) block_size: u32,
    /// Node 0 is the super-root (no blocks).
    pub(super) nodes: Vec<Node>,
    /// `(child node, cumulative traversal count)` per node's child range.
    pub(super) children: Vec<(u32, u64)>,
    /// Unique prompt lengths in blocks, grouped by the node they hang off.
    pub(super) prompt_blocks: Vec<u32>,
    /// Last-block fill of the row of each unique prompt (parallel to `prompt_blocks`).
    pub(super) prompt_fills: Vec<u32>,
    /// Last-block fills of rows stopping inside the shared tree, grouped by node.
    pub(super) stop_fills: Vec<u32>,
    pub(super) last_fill: Vec<u32>,
    pub(super) output_lengths: Vec<u64>,
    pub(super) arrivals: Option<ArrivalModel>,
    /// Blocks of the uncontracted tree that were kept (visited by at least two rows).
    pub(super) shared_blocks: usize,
    /// Mean hash ids of the rows learned from (to size the output).
    pub(super) mean_ids: f64,
}

/// Sizes of a learned model, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelStats {
    /// Rows with hash ids the model was learned from.
    pub rows: usize,
    /// Shared tree nodes (blocks visited by at least two rows).
    pub shared_blocks: usize,
    /// Nodes after contracting chains with equal visit counts (root excluded).
    pub contracted_nodes: usize,
    /// Unique prompts (removed once-visited subtrees).
    pub unique_prompts: usize,
}

impl PrefixModel {
    /// Learns the model from the rows of `trace` that have `input_length` and hash ids.
    pub fn learn(trace: &Trace, block_size: u32) -> Result<PrefixModel, SynthesisError> {
        Param::BlockSize.check(Value::Int(u64::from(block_size)))?;
        let bs = i64::from(block_size);
        // Uncontracted tree: node 0 is the root; a node is (parent node, id). Traces number their
        // blocks from 0 up, and an id mostly has one parent: when the ids are that dense, the
        // node of an id under its first parent is found in `dense` (by id: that parent, that
        // node), and only the same id under another parent in `index`.
        let max_id = trace.iter().flat_map(|(_, ids)| ids.iter().copied()).max().unwrap_or(0);
        let dense_ids =
            usize::try_from(max_id).ok().filter(|&m| m / 4 <= trace.total_hash_ids() + 1024).map_or(0, |m| m + 1);
        let mut dense: Vec<(u32, u32)> = vec![(NO_PARENT, 0); dense_ids];
        let mut index: FastMap<(u32, u64), u32> = FastMap::with_capacity_and_hasher(
            if dense_ids > 0 { 0 } else { trace.total_hash_ids() / 2 },
            Default::default(),
        );
        let mut parent: Vec<u32> = vec![0];
        // Per node, the (id, node) of the child last walked into: rows sharing a prefix walk the
        // same chain, which this finds without a lookup in `index`.
        let mut last_child: Vec<(u64, u32)> = vec![(0, 0)];
        let mut visits: Vec<u64> = vec![0];
        let mut ends: Vec<u64> = vec![0];
        let mut last_fill = Vec::new();
        let mut output_lengths = Vec::new();
        let mut rows = 0usize;
        let mut rows_without_ids = 0usize;
        // (end node, last-block fill) per row.
        let mut row_ends: Vec<(u32, u32)> = Vec::new();
        let mut total_ids = 0usize;
        for (row, ids) in trace.iter() {
            if let Some(o) = row.output_length {
                output_lengths.push(o);
            }
            let Some(isl) = row.input_length() else { continue };
            if ids.is_empty() {
                rows_without_ids += 1;
                continue;
            }
            rows += 1;
            total_ids += ids.len();
            visits[0] += 1;
            let mut at = 0u32;
            for &id in ids {
                let node = match last_child[at as usize] {
                    (last, node) if node != 0 && last == id => node,
                    _ => {
                        let next = parent.len() as u32;
                        // Every id fits a usize when `dense` is not empty.
                        let node = match dense.get_mut(id as usize) {
                            Some(&mut (first_parent, node)) if first_parent == at => node,
                            Some(slot) if slot.0 == NO_PARENT => {
                                *slot = (at, next);
                                next
                            }
                            _ => *index.entry((at, id)).or_insert(next),
                        };
                        if node == next {
                            parent.push(at);
                            visits.push(0);
                            ends.push(0);
                            last_child.push((0, 0));
                        }
                        last_child[at as usize] = (id, node);
                        node
                    }
                };
                visits[node as usize] += 1;
                at = node;
            }
            ends[at as usize] += 1;
            let fill = (isl - (ids.len() as i64 - 1) * bs).clamp(1, bs) as u32;
            last_fill.push(fill);
            row_ends.push((at, fill));
        }
        drop((index, dense));
        drop(last_child);
        if rows == 0 && rows_without_ids > 0 {
            return Err(SynthesisError::NoHashIds { rows: rows_without_ids });
        }
        if rows == 0 {
            return Err(SynthesisError::NothingToLearn);
        }
        let n = parent.len();
        // Children lists (CSR), in first-seen order.
        let mut first_child = vec![0usize; n + 1];
        for &p in &parent[1..] {
            first_child[p as usize + 1] += 1;
        }
        for i in 0..n {
            first_child[i + 1] += first_child[i];
        }
        let mut fill_at = first_child.clone();
        let mut child_list = vec![0u32; n.saturating_sub(1)];
        for (v, &p) in parent.iter().enumerate().skip(1) {
            child_list[fill_at[p as usize]] = v as u32;
            fill_at[p as usize] += 1;
        }
        let kids = |v: usize| &child_list[first_child[v]..first_child[v + 1]];
        // Fills of the rows ending at each node (CSR, like the children).
        row_ends.sort_by_key(|&(node, _)| node);
        let mut first_end = vec![0usize; n + 1];
        for &(node, _) in &row_ends {
            first_end[node as usize + 1] += 1;
        }
        for i in 0..n {
            first_end[i + 1] += first_end[i];
        }
        let fills_at = |v: usize| row_ends[first_end[v]..first_end[v + 1]].iter().map(|&(_, f)| f);

        // Unique prompts: a once-visited node under a shared node (or the root) starts a path.
        // Length in blocks and last-block fill of the unique prompt starting at `v`.
        let prompt_of = |v: usize| {
            let (mut len, mut at) = (1u32, v);
            while let Some(&c) = kids(at).first() {
                len += 1;
                at = c as usize;
            }
            (len, fills_at(at).next().unwrap_or(1))
        };
        let shared_blocks = visits[1..].iter().filter(|&&c| c >= 2).count();

        // Contract chains of shared nodes with equal visit counts, depth first from the root.
        let mut nodes: Vec<Node> = Vec::new();
        let mut children: Vec<(u32, u64)> = Vec::new();
        let (mut prompt_blocks, mut prompt_fills, mut stop_fills) = (Vec::new(), Vec::new(), Vec::new());
        // (uncontracted head, contracted index) to expand.
        let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
        nodes.push(Node::default());
        while let Some((head, k)) = stack.pop() {
            let mut tail = head;
            let mut len = u32::from(head != 0);
            if head != 0 {
                while let [only] = kids(tail) {
                    if visits[*only as usize] != visits[tail] {
                        break;
                    }
                    tail = *only as usize;
                    len += 1;
                }
            }
            let (start, prompts_start) = (children.len(), prompt_blocks.len());
            let mut cum = 0u64;
            for &c in kids(tail) {
                let c = c as usize;
                if visits[c] >= 2 {
                    cum += visits[c];
                    let idx = nodes.len();
                    nodes.push(Node::default());
                    children.push((idx as u32, cum));
                    stack.push((c, idx));
                } else {
                    // The prompt length distribution is kept per node: how long the unique part
                    // is depends strongly on how long the shared prefix before it is.
                    let (len, fill) = prompt_of(c);
                    prompt_blocks.push(len);
                    prompt_fills.push(fill);
                }
            }
            let stops_start = stop_fills.len();
            stop_fills.extend(fills_at(tail));
            nodes[k] = Node {
                stop_fills: stops_start..stop_fills.len(),
                len,
                children: start..children.len(),
                append: (prompt_blocks.len() - prompts_start) as u64,
                prompts: prompts_start..prompt_blocks.len(),
                stop: ends[tail],
            };
        }

        Ok(PrefixModel {
            block_size,
            nodes,
            children,
            prompt_blocks,
            prompt_fills,
            stop_fills,
            last_fill,
            output_lengths,
            arrivals: ArrivalModel::learn(trace),
            shared_blocks,
            mean_ids: total_ids as f64 / rows as f64,
        })
    }

    /// What was learned about arrivals (`None` when no row has a timestamp).
    pub fn arrivals(&self) -> Option<&ArrivalModel> {
        self.arrivals.as_ref()
    }

    /// Sizes of the model.
    pub fn stats(&self) -> ModelStats {
        ModelStats {
            rows: self.last_fill.len(),
            shared_blocks: self.shared_blocks,
            contracted_nodes: self.nodes.len() - 1,
            unique_prompts: self.prompt_blocks.len(),
        }
    }
}
