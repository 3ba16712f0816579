//! Generative synthesis (Dynamo's `datagen synthesize`, reproducible): learn a trace's prefix tree
//! and its length and arrival distributions, then sample any number of new requests.
//!
//! The model: ids are renumbered per parent (the same id under two parents becomes two nodes, so
//! the id graph is a tree); the tree records per node how many rows visit it and how many end
//! there; chains of nodes with equal visit counts are contracted; nodes visited by one row only
//! are unique prompts, removed from the tree, their lengths forming the prompt-length
//! distribution. Sampling walks from the root choosing a child (by traversal count), "append a
//! fresh unique prompt" or "stop". Output lengths are resampled from their empirical distribution;
//! arrival times follow the trace's rate over time ([`super::arrivals`]).
//!
//! Beyond Dynamo, the prompt-length and last-block-fill distributions are kept per node (the
//! lengths and fills of the rows that ended there): on the conversation trace one global prompt
//! length distribution overstates the ISL standard deviation by ~9% and one global fill moves the
//! ISL percentiles of short rows; per node, both follow the original closely.
//!
//! Fixed against Dynamo: one seeded generator for everything (same seed, same bytes), the partial
//! last block is kept on every path, fractional prefix multipliers are rounded rather than
//! ceiled, gaps keep fractional milliseconds, and an ISL filter that rejects almost every sample
//! ends with an error instead of looping.

mod sampler;

pub use sampler::Sampler;

use serde::{Deserialize, Serialize};

use super::arrivals::ArrivalModel;
use super::error::SynthesisError;
use super::params::GenerateParams;
use super::sampled::SampledFacts;
use super::settings::Value;
use super::settings::{Mode, Param, SynthesisSettings};
use crate::hashing::FastMap;
use crate::trace::Trace;

impl GenerateParams {
    /// Rejects parameters outside their range ([`Param`]), naming the first one at fault.
    pub fn validate(&self) -> Result<(), SynthesisError> {
        SynthesisSettings { mode: Mode::Generate, params: self.clone() }.validate()
    }
}

/// A contracted tree node: a run of `len` blocks always visited together, and what follows it.
#[derive(Clone, Debug, Default)]
struct Node {
    len: u32,
    /// Range of this node's children in [`PrefixModel::children`].
    children: std::ops::Range<usize>,
    /// Weight of "append a fresh unique prompt" (children visited by one row).
    append: u64,
    /// Lengths in blocks of those unique prompts, in [`PrefixModel::prompt_blocks`].
    prompts: std::ops::Range<usize>,
    /// Weight of "stop here" (rows ending at this node).
    stop: u64,
    /// Last-block fills of the rows ending here, in [`PrefixModel::stop_fills`].
    stop_fills: std::ops::Range<usize>,
}

/// No parent yet: an id not seen so far, in [`PrefixModel::learn`]'s table of ids.
const NO_PARENT: u32 = u32::MAX;

/// What was learned from a trace: the contracted prefix tree and the empirical distributions.
#[derive(Clone, Debug)]
pub struct PrefixModel {
    block_size: u32,
    /// Node 0 is the super-root (no blocks).
    nodes: Vec<Node>,
    /// `(child node, cumulative traversal count)` per node's child range.
    children: Vec<(u32, u64)>,
    /// Unique prompt lengths in blocks, grouped by the node they hang off.
    prompt_blocks: Vec<u32>,
    /// Last-block fill of the row of each unique prompt (parallel to `prompt_blocks`).
    prompt_fills: Vec<u32>,
    /// Last-block fills of rows stopping inside the shared tree, grouped by node.
    stop_fills: Vec<u32>,
    last_fill: Vec<u32>,
    output_lengths: Vec<u64>,
    arrivals: Option<ArrivalModel>,
    /// Blocks of the uncontracted tree that were kept (visited by at least two rows).
    shared_blocks: usize,
    /// Mean hash ids of the rows learned from (to size the output).
    mean_ids: f64,
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

    /// Samples `params.num_requests` rows, fewer when `params.duration_s` ends first (the model's
    /// block size is used, not the params').
    pub fn sample(&self, params: &GenerateParams) -> Result<Trace, SynthesisError> {
        self.sample_observed(params, false).map(|(trace, _)| trace)
    }

    /// [`PrefixModel::sample`], and what the fidelity report reads of the rows, gathered while
    /// they are sampled (the same numbers as an analysis of the trace).
    pub fn sample_with_facts(&self, params: &GenerateParams) -> Result<(Trace, SampledFacts), SynthesisError> {
        let (trace, facts) = self.sample_observed(params, true)?;
        Ok((trace, facts.unwrap_or_default()))
    }

    fn sample_observed(
        &self,
        params: &GenerateParams,
        observe: bool,
    ) -> Result<(Trace, Option<SampledFacts>), SynthesisError> {
        let mut sampler = self.sampler(params, observe)?;
        let (rows, ids) = sampler.room(params.num_requests);
        let mut trace = Trace::with_capacity(rows, ids);
        sampler.sample_into(&mut trace, params.num_requests)?;
        Ok((trace, sampler.take_facts()))
    }
}

/// Learns a model from `trace` and samples `params.num_requests` rows from it.
pub fn generate(trace: &Trace, params: &GenerateParams) -> Result<Trace, SynthesisError> {
    params.validate()?;
    PrefixModel::learn(trace, params.block_size)?.sample(params)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::trace::{Input, ParseOptions, Row, parse_str, write_trace};

    fn small() -> Trace {
        // Blocks of 4. Rows 1-3 share [1, 2]; rows 1-2 share [1, 2, 3]; row 4 is unique.
        let text = "{\"timestamp\":0,\"input_length\":14,\"output_length\":5,\"hash_ids\":[1,2,3,4]}\n\
                    {\"timestamp\":0,\"input_length\":10,\"output_length\":6,\"hash_ids\":[1,2,3]}\n\
                    {\"timestamp\":10,\"input_length\":7,\"output_length\":7,\"hash_ids\":[1,2]}\n\
                    {\"timestamp\":25,\"input_length\":3,\"output_length\":8,\"hash_ids\":[9]}\n";
        parse_str(text, ParseOptions::default()).unwrap().trace
    }

    #[test]
    fn learns_the_contracted_tree() {
        let m = PrefixModel::learn(&small(), 4).unwrap();
        assert_eq!(m.stats(), ModelStats { rows: 4, shared_blocks: 3, contracted_nodes: 2, unique_prompts: 2 });
        // Root: child [1,2] (3 visits) and one unique prompt ([9]).
        let root = &m.nodes[0];
        assert_eq!((root.append, root.stop, root.children.len()), (1, 0, 1));
        let a = &m.nodes[m.children[root.children.start].0 as usize];
        // [1,2] (contracted, 2 blocks): child [3] (2 visits), stop 1, no append.
        assert_eq!((a.len, a.append, a.stop), (2, 0, 1));
        let b = &m.nodes[m.children[a.children.start].0 as usize];
        assert_eq!((b.len, b.append, b.stop), (1, 1, 1));
        let mut prompts = m.prompt_blocks.clone();
        prompts.sort();
        assert_eq!(prompts, [1, 1]);
    }

    #[test]
    fn samples_valid_rows_reproducibly() {
        let p = GenerateParams { num_requests: 200, block_size: 4, seed: 3, ..GenerateParams::default() };
        let a = generate(&small(), &p).unwrap();
        assert_eq!(a.len(), 200);
        assert_eq!(write_trace(&a), write_trace(&generate(&small(), &p).unwrap()));
        let other = generate(&small(), &GenerateParams { seed: 4, ..p.clone() }).unwrap();
        assert_ne!(write_trace(&a), write_trace(&other));
        for (row, ids) in a.iter() {
            let (isl, n) = (row.input_length().unwrap(), ids.len() as i64);
            assert!((n - 1) * 4 < isl && isl <= n * 4);
            // Every walk starts at the root: [1,2] maps to tree ids 0,1, or a fresh prompt.
            assert!(ids[0] == 0 || ids[0] >= 3, "{ids:?}");
        }
    }

    #[test]
    fn parts_of_any_size_are_the_whole_sample() {
        let path = format!("{}/../../tests/fixtures/traces/conversation_head500.jsonl", env!("CARGO_MANIFEST_DIR"));
        let head = parse_str(&std::fs::read_to_string(path).unwrap(), ParseOptions::default()).unwrap().trace;
        for (trace, p) in [
            (small(), GenerateParams { num_requests: 300, block_size: 4, seed: 5, ..GenerateParams::default() }),
            // The clock runs out of time before the rows are all drawn.
            (head.clone(), GenerateParams { num_requests: 5000, duration_s: Some(60), seed: 2, ..Default::default() }),
            (head, GenerateParams { num_requests: 700, prefix_root_multiplier: 3, seed: 1, ..Default::default() }),
        ] {
            let model = PrefixModel::learn(&trace, p.block_size).unwrap();
            let (whole, facts) = model.sample_with_facts(&p).unwrap();
            for part in [1, 7, 64, 100_000] {
                let mut sampler = model.sampler(&p, true).unwrap();
                let (mut text, mut rows) = (String::new(), Trace::new());
                while sampler.sample_into(&mut rows, part).unwrap() > 0 {
                    assert!(rows.len() <= part);
                    text += &write_trace(&rows);
                    rows.clear();
                }
                assert_eq!(sampler.emitted(), whole.len());
                assert_eq!(text, write_trace(&whole), "parts of {part}");
                assert_eq!(sampler.take_facts(), Some(facts.clone()));
            }
        }
    }

    #[test]
    fn an_impossible_filter_is_an_error_not_a_hang() {
        let p = GenerateParams { num_requests: 10, block_size: 4, min_isl: Some(1000), ..GenerateParams::default() };
        assert!(matches!(generate(&small(), &p), Err(SynthesisError::FilterRejectsEverything { .. })));
    }

    #[test]
    fn absurd_values_are_refused_and_huge_outputs_fail_instead_of_exhausting_memory() {
        for (p, param) in [
            (GenerateParams { prefix_len_multiplier: 1e15, ..GenerateParams::default() }, "prefix_len_multiplier"),
            (GenerateParams { prompt_len_multiplier: 1e300, ..GenerateParams::default() }, "prompt_len_multiplier"),
            (GenerateParams { output_len_multiplier: 1e30, ..GenerateParams::default() }, "output_len_multiplier"),
            (GenerateParams { num_requests: 1 << 30, ..GenerateParams::default() }, "num_requests"),
        ] {
            let p = GenerateParams { block_size: 4, ..p };
            assert_eq!(generate(&small(), &p).unwrap_err().param(), Some(param), "{p:?}");
        }
        // Within range, but a 300,000-block shared prefix scaled 1000 times is too large.
        let ids: Vec<u64> = (0..300_000).collect();
        let long: Trace = (0..2).map(|_| (Row::new(Input::Length(1_200_000)), ids.clone())).collect();
        let p = GenerateParams { block_size: 4, prefix_len_multiplier: 1000.0, ..GenerateParams::default() };
        assert_eq!(generate(&long, &p).unwrap_err(), SynthesisError::TooLarge { limit: super::super::MAX_OUTPUT_IDS });
    }

    #[test]
    fn rows_without_hash_ids_are_named_as_the_cause() {
        let mut t = Trace::new();
        t.push(crate::trace::Row::new(crate::trace::Input::Length(10)), []);
        assert_eq!(PrefixModel::learn(&t, 4).err(), Some(SynthesisError::NoHashIds { rows: 1 }));
    }

    #[test]
    fn root_copies_keep_ids_disjoint() {
        let p = GenerateParams { num_requests: 100, block_size: 4, prefix_root_multiplier: 3, ..Default::default() };
        let t = generate(&small(), &p).unwrap();
        let firsts: std::collections::BTreeSet<u64> =
            t.iter().filter(|(_, ids)| ids[0] < 9).map(|(_, ids)| ids[0]).collect();
        assert_eq!(firsts.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    }
}
