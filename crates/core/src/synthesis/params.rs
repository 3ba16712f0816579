//! The parameters of both syntheses, as the settings table sets them and the syntheses take them:
//! [`GenerateParams`] and [`TransformParams`] (checked against the table by their `validate`).

use serde::{Deserialize, Serialize};

use crate::analysis::DEFAULT_BLOCK_SIZE;

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

/// The parameters of transform synthesis (AIPerf's `--synthesis-*` options, block size, seed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransformParams {
    /// Timestamps are divided by this (> 0).
    pub speedup_ratio: f64,
    /// Scales the shared prefix of every row (> 0).
    pub prefix_len_multiplier: f64,
    /// Number of disjoint copies of the prefix trees rows are spread over (≥ 1).
    pub prefix_root_multiplier: u32,
    /// Scales the non-shared part of every prompt (> 0).
    pub prompt_len_multiplier: f64,
    /// Scales output lengths (≥ 0; results are at least 1).
    pub output_len_multiplier: f64,
    /// Rows longer than this are dropped before synthesis; synthesized rows are capped to it.
    pub max_isl: Option<u64>,
    /// Output lengths are capped to this.
    pub max_osl: Option<u64>,
    /// Tokens per hash id block.
    pub block_size: u32,
    /// AIPerf's `--random-seed`.
    pub seed: u64,
}

impl Default for TransformParams {
    fn default() -> Self {
        TransformParams {
            speedup_ratio: 1.0,
            prefix_len_multiplier: 1.0,
            prefix_root_multiplier: 1,
            prompt_len_multiplier: 1.0,
            output_len_multiplier: 1.0,
            max_isl: None,
            max_osl: None,
            block_size: DEFAULT_BLOCK_SIZE,
            seed: 0,
        }
    }
}
