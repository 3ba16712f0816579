//! [`Sampler`]: the rows of a learned [`PrefixModel`], sampled a part at a time by one seeded
//! walk of its contracted tree.

use super::model::PrefixModel;
use crate::rng::PyRandom;
use crate::synthesis::arrivals::{ArrivalOptions, Clock, SessionStyle};
use crate::synthesis::error::{MAX_OUTPUT_IDS, SynthesisError, room_for};
use crate::synthesis::params::GenerateParams;
use crate::synthesis::sampled::Observer;
use crate::synthesis::sampled::SampledFacts;
use crate::trace::{Input, Row, Trace};

impl PrefixModel {
    /// The rows of [`PrefixModel::sample`] a part at a time ([`Sampler::sample_into`]), and with
    /// `observe` also [`PrefixModel::sample_with_facts`]'s facts ([`Sampler::take_facts`]).
    pub fn sampler(&self, params: &GenerateParams, observe: bool) -> Result<Sampler<'_>, SynthesisError> {
        params.validate()?;
        let copies = u64::from(params.prefix_root_multiplier);
        // Every contracted node gets a stable range of tree ids, sized by the prefix multiplier.
        let mut first_id = Vec::with_capacity(self.nodes.len());
        let mut scaled_len = Vec::with_capacity(self.nodes.len());
        let mut next_tree_id = 0u64;
        let too_large = SynthesisError::TooLarge { limit: MAX_OUTPUT_IDS };
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
        let per_row = (self.model.mean_ids * scale * 1.1).ceil().clamp(16.0, MAX_OUTPUT_IDS as f64) as usize;
        (rows, rows.saturating_mul(per_row).min(MAX_OUTPUT_IDS as usize))
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
                return Err(SynthesisError::TooLarge { limit: MAX_OUTPUT_IDS });
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
