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

use serde::{Deserialize, Serialize};

use super::arrivals::{ArrivalModel, ArrivalOptions, Clock, SessionStyle};
use super::rng::PyRandom;
use super::sampled::{Observer, SampledFacts};
use super::settings::Value;
use super::{Param, SynthesisError, SynthesisSettings, room_for};
use crate::analysis::DEFAULT_BLOCK_SIZE;
use crate::hashing::FastMap;
use crate::trace::{Input, Row, Trace};

/// The parameters of generative synthesis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenerateParams {
    /// Rows to generate (≥ 1).
    pub num_requests: usize,
    /// Gaps between arrivals are divided by this (> 0).
    pub speedup_ratio: f64,
    /// Scales the arrival rate, the timeline kept (> 0).
    pub intensity: f64,
    /// Generation stops at this many seconds of timeline, if set.
    pub duration_s: Option<u64>,
    /// Scales the length of every shared prefix node (> 0; rounded, at least one block).
    pub prefix_len_multiplier: f64,
    /// Number of disjoint copies of the prefix tree requests are spread over (≥ 1).
    pub prefix_root_multiplier: u32,
    /// Scales unique prompt lengths (> 0; rounded, at least one block).
    pub prompt_len_multiplier: f64,
    /// Scales output lengths (≥ 0; results are at least 1).
    pub output_len_multiplier: f64,
    /// Sampled requests shorter than this are rejected and resampled.
    pub min_isl: Option<u64>,
    /// Sampled requests longer than this are rejected and resampled.
    pub max_isl: Option<u64>,
    /// Output lengths are raised to at least this.
    pub min_osl: Option<u64>,
    /// Output lengths are capped to this.
    pub max_osl: Option<u64>,
    /// Tokens per hash id block.
    pub block_size: u32,
    pub seed: u64,
}

impl Default for GenerateParams {
    fn default() -> Self {
        GenerateParams {
            num_requests: 1000,
            speedup_ratio: 1.0,
            intensity: 1.0,
            duration_s: None,
            prefix_len_multiplier: 1.0,
            prefix_root_multiplier: 1,
            prompt_len_multiplier: 1.0,
            output_len_multiplier: 1.0,
            min_isl: None,
            max_isl: None,
            min_osl: None,
            max_osl: None,
            block_size: DEFAULT_BLOCK_SIZE,
            seed: 0,
        }
    }
}

impl GenerateParams {
    /// Rejects parameters outside their range ([`Param`]), naming the first one at fault.
    pub fn validate(&self) -> Result<(), SynthesisError> {
        SynthesisSettings { mode: super::Mode::Generate, params: self.clone() }.validate()
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

    /// The rows of [`PrefixModel::sample`] a part at a time ([`Sampler::sample_into`]), and with
    /// `observe` also [`PrefixModel::sample_with_facts`]'s facts ([`Sampler::take_facts`]).
    pub fn sampler(&self, params: &GenerateParams, observe: bool) -> Result<Sampler<'_>, SynthesisError> {
        params.validate()?;
        let copies = u64::from(params.prefix_root_multiplier);
        // Every contracted node gets a stable range of tree ids, sized by the prefix multiplier.
        let mut first_id = Vec::with_capacity(self.nodes.len());
        let mut scaled_len = Vec::with_capacity(self.nodes.len());
        let mut next_tree_id = 0u64;
        let too_large = SynthesisError::TooLarge { limit: super::MAX_OUTPUT_IDS };
        for node in &self.nodes {
            let len = if node.len == 0 { 0 } else { scale_blocks(node.len, params.prefix_len_multiplier) };
            room_for(0, len)?;
            first_id.push(next_tree_id);
            scaled_len.push(len);
            next_tree_id = next_tree_id.checked_add(len).ok_or(too_large.clone())?;
        }
        let next_fresh = next_tree_id.checked_mul(copies).ok_or(too_large)?;
        let steps = self
            .nodes
            .iter()
            .zip(first_id.iter().zip(&scaled_len))
            .map(|(n, (&first_id, &len))| Step {
                first_id,
                len,
                child_total: self.children[n.children.clone()].last().map_or(0, |&(_, cum)| cum),
                append: n.append,
                stop: n.stop,
                children: (n.children.start as u32, n.children.end as u32),
                prompts: n.prompts.start,
                stop_fills: n.stop_fills.start,
            })
            .collect();
        // Every row has at least one id.
        room_for(0, params.num_requests as u64)?;
        let capacity = params.num_requests.min(1 << 20);
        let observer = observe.then(|| {
            let children = self.nodes.iter().map(|n| &self.children[n.children.clone()]);
            Observer::new(self.block_size, copies, &scaled_len, children, capacity)
        });
        let options = ArrivalOptions {
            speedup: params.speedup_ratio,
            intensity: params.intensity,
            duration_ms: params.duration_s.map(|s| s as f64 * 1000.0),
        };
        let prompts = self
            .prompt_blocks
            .iter()
            .zip(&self.prompt_fills)
            .map(|(&len, &fill)| (scale_blocks(len, params.prompt_len_multiplier), fill))
            .collect();
        let outputs = self.output_lengths.iter().map(|&o| params.output_length(o)).collect();
        Ok(Sampler {
            model: self,
            params: params.clone(),
            copies,
            steps,
            prompts,
            outputs,
            next_fresh,
            rng: PyRandom::new(params.seed),
            clock: self.arrivals.as_ref().map(|a| a.clock(params.seed, options)),
            observer,
            path: Vec::new(),
            attempts: 0,
            rejected: 0,
            emitted: 0,
            emitted_ids: 0,
            ended: false,
        })
    }
}

impl GenerateParams {
    /// A source row's output length as the sampled row gets it: scaled, at least 1, bounded by
    /// `min_osl` and `max_osl`.
    fn output_length(&self, source: u64) -> u64 {
        let mut o = ((source as f64 * self.output_len_multiplier).round_ties_even() as u64).max(1);
        if let Some(lo) = self.min_osl {
            o = o.max(lo);
        }
        if let Some(hi) = self.max_osl {
            o = o.min(hi);
        }
        o
    }
}

/// Generative sampling in progress ([`PrefixModel::sampler`]): one seeded stream of rows, taken a
/// part at a time, so that earlier parts can be written while later ones are sampled. The rows
/// are those of [`PrefixModel::sample`], in its order, however they are split into parts.
pub struct Sampler<'a> {
    model: &'a PrefixModel,
    params: GenerateParams,
    copies: u64,
    /// Per contracted node, what the walk reads of it.
    steps: Vec<Step>,
    /// Per unique prompt: its length in blocks scaled by the prompt multiplier, and its fill.
    prompts: Vec<(u64, u32)>,
    /// The output lengths to draw from, scaled and bounded as the options say.
    outputs: Vec<u64>,
    /// The next id of a fresh (unique) block.
    next_fresh: u64,
    rng: PyRandom,
    clock: Option<Clock<'a>>,
    observer: Option<Observer>,
    /// The tree nodes of the row being sampled (root excluded) with their scaled lengths.
    path: Vec<(u32, u64)>,
    /// Samples drawn and rejected by the ISL filter.
    attempts: usize,
    rejected: usize,
    /// Rows and hash ids emitted so far, over every part.
    emitted: usize,
    emitted_ids: usize,
    /// The arrival clock ran out of time (`duration_s`).
    ended: bool,
}

/// A contracted node as the walk reads it, in one place: its scaled tree ids, the weights of its
/// choices, and where its children, unique prompts and stop fills are.
#[derive(Clone, Copy, Debug)]
struct Step {
    first_id: u64,
    len: u64,
    /// The children's total weight (the last cumulative count).
    child_total: u64,
    append: u64,
    stop: u64,
    children: (u32, u32),
    prompts: usize,
    stop_fills: usize,
}

impl std::fmt::Debug for Sampler<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler").field("emitted", &self.emitted).field("ended", &self.ended).finish_non_exhaustive()
    }
}

impl Sampler<'_> {
    /// Room for `rows` rows (capped at 2^20) and their hash ids, as the source's rows are long
    /// and the multipliers scale them: what a trace of them is given up front.
    pub fn room(&self, rows: usize) -> (usize, usize) {
        let rows = rows.min(1 << 20);
        let p = &self.params;
        let scale = p.prefix_len_multiplier.max(p.prompt_len_multiplier).max(1.0);
        let per_row = (self.model.mean_ids * scale * 1.1).ceil().clamp(16.0, super::MAX_OUTPUT_IDS as f64) as usize;
        (rows, rows.saturating_mul(per_row).min(super::MAX_OUTPUT_IDS as usize))
    }

    /// Rows emitted so far.
    pub fn emitted(&self) -> usize {
        self.emitted
    }

    /// Appends up to `rows` more rows to `out`; returns how many (0 once every row was emitted or
    /// the arrival clock ran out of time).
    pub fn sample_into(&mut self, out: &mut Trace, rows: usize) -> Result<usize, SynthesisError> {
        let start = out.total_hash_ids();
        let sampled = self.sample_rows(out, rows);
        if sampled.is_err() {
            // The ids of the row being drawn when the error came.
            let rows_end = out.rows().last().map_or(0, |r| out.hash_ids_range(r).end);
            out.arena_mut().truncate(start.max(rows_end));
        }
        sampled
    }

    /// [`Sampler::sample_into`]'s rows: each row's ids go straight into `out`'s arena, and are
    /// taken back off it when the row is rejected.
    fn sample_rows(&mut self, out: &mut Trace, rows: usize) -> Result<usize, SynthesisError> {
        let model = self.model;
        let params = &self.params;
        let bs = u64::from(model.block_size);
        let copies = self.copies;
        let path = &mut self.path;
        let until = self.emitted.saturating_add(rows).min(params.num_requests);
        let first = self.emitted;
        // The ISL filter gives up once 10,000 samples were drawn and fewer than 1% passed: fast
        // when it rejects (almost) everything, and at most ~100 draws per row otherwise.
        while !self.ended && self.emitted < until {
            self.attempts += 1;
            if self.attempts > 10_000 && self.emitted.saturating_mul(100) < self.attempts {
                return Err(SynthesisError::FilterRejectsEverything {
                    min_isl: params.min_isl.unwrap_or(0),
                    max_isl: params.max_isl.map_or("∞".into(), |v| v.to_string()),
                    accepted: self.emitted,
                    rejected: self.rejected,
                });
            }
            path.clear();
            let ids_start = out.total_hash_ids();
            let ids = out.arena_mut();
            let copy = self.rng.below(copies);
            let mut fresh_blocks = 0u64;
            let mut fill = None;
            let mut node = 0usize;
            loop {
                let n = &self.steps[node];
                room_for(self.emitted_ids + (ids.len() - ids_start), n.len)?;
                ids.extend((n.first_id..n.first_id + n.len).map(|t| t * copies + copy));
                let child_total = n.child_total;
                let total = child_total + n.append + n.stop;
                if total == 0 {
                    break;
                }
                let r = self.rng.below(total);
                if r < child_total {
                    let kids = &model.children[n.children.0 as usize..n.children.1 as usize];
                    let at = kids.partition_point(|&(_, cum)| cum <= r);
                    node = kids[at].0 as usize;
                    path.push((node as u32, self.steps[node].len));
                } else {
                    // The draw picks one observed row's ending: a unique prompt of this node (its
                    // length and fill), or a row stopping here (its fill).
                    let pick = (r - child_total) as usize;
                    if r < child_total + n.append {
                        let (blocks, prompt_fill) = self.prompts[n.prompts + pick];
                        fresh_blocks = blocks;
                        fill = Some(prompt_fill);
                    } else {
                        fill = model.stop_fills.get(n.stop_fills + pick - n.append as usize).copied();
                    }
                    break;
                }
            }
            let tree_blocks = ids.len() - ids_start;
            if tree_blocks == 0 && fresh_blocks == 0 {
                fresh_blocks = match self.prompts.len() {
                    0 => 1,
                    n => self.prompts[self.rng.below(n as u64) as usize].0,
                };
            }
            room_for(self.emitted_ids + tree_blocks, fresh_blocks)?;
            let blocks = tree_blocks as u64 + fresh_blocks;
            let fill = u64::from(
                fill.unwrap_or_else(|| model.last_fill[self.rng.below(model.last_fill.len() as u64) as usize]),
            );
            let isl = (blocks - 1) * bs + fill;
            if params.min_isl.is_some_and(|m| isl < m) || params.max_isl.is_some_and(|m| isl > m) {
                self.rejected += 1;
                ids.truncate(ids_start);
                continue;
            }
            if self.next_fresh.checked_add(fresh_blocks).is_none() {
                return Err(SynthesisError::TooLarge { limit: super::MAX_OUTPUT_IDS });
            }
            ids.extend(self.next_fresh..self.next_fresh + fresh_blocks);
            self.next_fresh += fresh_blocks;
            let mut row = Row::new(Input::Length(isl as i64));
            if !self.outputs.is_empty() {
                row.output_length = Some(self.outputs[self.rng.below(self.outputs.len() as u64) as usize]);
            }
            let mut session = None;
            if let Some(clock) = &mut self.clock {
                let Some(arrival) = clock.next_arrival() else {
                    self.ended = true;
                    out.arena_mut().truncate(ids_start);
                    break;
                };
                row.timestamp = Some(arrival.time);
                session = arrival.session;
                if let Some(s) = arrival.session {
                    let id = format!("s{s}");
                    match clock.style() {
                        SessionStyle::Conversation => row.conversation = Some(id.into()),
                        SessionStyle::SessionTimestamps => row.session_id = Some(id.into()),
                        SessionStyle::SessionDelays => {
                            row.session_id = Some(id.into());
                            if let Some(gap) = arrival.gap {
                                (row.timestamp, row.delay) = (None, Some(gap));
                            }
                        }
                    }
                }
            }
            if let Some(observer) = &mut self.observer {
                observer.row(path, copy, fresh_blocks, &row, session);
            }
            self.emitted += 1;
            self.emitted_ids += out.total_hash_ids() - ids_start;
            out.push_with_arena_tail(row, ids_start);
        }
        Ok(self.emitted - first)
    }

    /// What the fidelity report reads of the rows emitted so far (`None` unless observed, and
    /// once taken).
    pub fn take_facts(&mut self) -> Option<SampledFacts> {
        self.observer.take().map(Observer::finish)
    }
}

/// `round(len * multiplier)`, at least one block.
fn scale_blocks(len: u32, multiplier: f64) -> u64 {
    ((f64::from(len) * multiplier).round() as u64).max(1)
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
    use crate::trace::{ParseOptions, parse_str, write_trace};

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
