//! The rows of a synthetic workload drawn with AIPerf's generators: turns, delays, lengths,
//! prefixes and their hash ids.

use super::error::{MAX_IDS, MAX_ROWS, SyntheticError};
use super::normal::Normal;
use super::workload::SyntheticWorkload;
use crate::rng::{PyRandom, derive_seed};
use crate::trace::{Input, Number, Row, Trace};

/// The generators and id counters of one generation.
pub(super) struct Generator<'a> {
    w: &'a SyntheticWorkload,
    turns: Normal,
    delays: Normal,
    lengths: Normal,
    prefixes: Normal,
    max_tokens: Normal,
    seq_dist: Normal,
    range: PyRandom,
    /// Whole blocks of the shared system prompt.
    system_ids: Vec<u64>,
    /// Whole blocks of each pool prefix.
    pool_ids: Vec<Vec<u64>>,
    next_id: u64,
}

impl<'a> Generator<'a> {
    pub(super) fn new(w: &'a SyntheticWorkload, seed: u64) -> Generator<'a> {
        let block = u64::from(w.block_size);
        let mut next_id = 0u64;
        let mut fresh = |n: u64| {
            let ids = (next_id..next_id + n).collect::<Vec<_>>();
            next_id += n;
            ids
        };
        let system_ids = fresh(w.shared_system_length.unwrap_or(0) / block);
        let pool = if w.prefix_enabled() { w.prefix_pool_size.unwrap_or(0) } else { 0 };
        let prefix_blocks = w.prefix_length.unwrap_or(0) / block;
        let pool_ids = (0..pool).map(|_| fresh(prefix_blocks)).collect();
        Generator {
            w,
            turns: Normal::new(seed, "composer.conversation.turn_count"),
            delays: Normal::new(seed, "composer.conversation.turn_delay"),
            lengths: Normal::new(seed, "dataset.prompt.length"),
            prefixes: Normal::new(seed, "dataset.prompt.prefix"),
            max_tokens: Normal::new(seed, "composer.turn.max_tokens"),
            seq_dist: Normal::new(seed, "models.sequence.distribution"),
            range: PyRandom::new(derive_seed(seed, "models.range_ratio.distribution")),
            system_ids,
            pool_ids,
            next_id,
        }
    }

    /// Appends the rows of conversation `index`.
    pub(super) fn conversation(&mut self, index: u64, trace: &mut Trace) -> Result<(), SyntheticError> {
        let w = self.w;
        let session: Box<str> = format!("session_{index:06}").into();
        let turns = self.turns.positive_int(w.turn_mean.trunc().max(1.0), w.turn_stddev.trunc());
        for turn in 0..turns {
            if trace.len() as u64 >= MAX_ROWS {
                return Err(SyntheticError::TooLarge { what: "rows", limit: MAX_ROWS });
            }
            let first = turn == 0;
            let with_prefix = first && w.prefix_enabled();
            let (isl, osl) = self.lengths_of_turn(with_prefix);
            // Shared blocks at the head of the prompt, and the tokens ahead of the body.
            let (shared, head): (Vec<u64>, u64) = if !first {
                (Vec::new(), 0)
            } else if with_prefix {
                let k = self.prefixes.rng.below(self.pool_ids.len() as u64) as usize;
                (self.pool_ids[k].clone(), w.prefix_length.unwrap_or(0))
            } else {
                let head = w.shared_system_length.unwrap_or(0) + w.user_context_length.unwrap_or(0);
                (self.system_ids.clone(), head)
            };
            let total = head.saturating_add(isl);
            let blocks = total.div_ceil(u64::from(w.block_size));
            if (trace.total_hash_ids() as u64).saturating_add(blocks) > MAX_IDS || total > i64::MAX as u64 {
                return Err(SyntheticError::TooLarge { what: "hash ids", limit: MAX_IDS });
            }
            let fresh = blocks - shared.len() as u64;
            let start = self.next_id;
            self.next_id += fresh;
            let mut row = Row::new(Input::Length(total as i64));
            row.output_length = osl;
            row.session_id = Some(session.clone());
            if !first && w.delay_mean > 0.0 {
                let d = self.delays.positive_int(w.delay_mean.trunc(), w.delay_stddev.trunc());
                row.delay = Some(delay_number(d as f64 * w.delay_ratio));
            }
            trace.push(row, shared.into_iter().chain(start..start + fresh));
        }
        Ok(())
    }

    /// The body's ISL and the OSL of one turn, from the active distribution.
    fn lengths_of_turn(&mut self, with_prefix: bool) -> (u64, Option<u64>) {
        let w = self.w;
        let floor = if with_prefix { 0 } else { 1 };
        if let Some(dist) = &w.seq_dist {
            let (isl, osl) = dist.sample(&mut self.seq_dist);
            return (isl.max(floor), Some(osl).filter(|&o| o > 0));
        }
        if let Some(r) = &w.range_ratio {
            let (il, ih) = r.input_bounds(w.isl());
            let (ol, oh) = r.output_bounds(w.osl_mean.unwrap_or(1));
            let isl = self.range.randint(il, ih);
            let osl = self.range.randint(ol, oh);
            return (isl.max(floor), Some(osl));
        }
        let isl = match &w.isl_dist {
            Some(d) => d.sample_int(&mut self.lengths),
            None => self.lengths.positive_int(w.isl() as f64, w.isl_stddev.trunc()),
        };
        let osl = match (&w.osl_dist, w.osl_mean) {
            (Some(d), _) => Some(d.sample_int(&mut self.max_tokens)),
            (None, Some(m)) if m > 0 => Some(self.max_tokens.positive_int(m as f64, w.osl_stddev.trunc())),
            _ => None,
        };
        (isl, osl)
    }
}

/// A delay in milliseconds as the trace writes it: an integer when it is one.
fn delay_number(ms: f64) -> Number {
    if ms.fract() == 0.0 && ms.abs() < 9.0e15 { Number::Int(ms as i64) } else { Number::Float(ms) }
}
