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

mod model;
mod sampler;

pub use model::{ModelStats, PrefixModel};
pub use sampler::Sampler;

use super::error::SynthesisError;
use super::params::GenerateParams;
use super::sampled::SampledFacts;
use super::settings::{Mode, SynthesisSettings};
use crate::trace::Trace;

impl GenerateParams {
    /// Rejects parameters outside their range
    /// ([`Param`](crate::synthesis::settings::Param)), naming the first one at fault.
    pub fn validate(&self) -> Result<(), SynthesisError> {
        SynthesisSettings { mode: Mode::Generate, params: self.clone() }.validate()
    }
}

impl PrefixModel {
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
