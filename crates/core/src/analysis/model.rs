//! [`Analysis`]: everything `analyze-trace` reports of a trace, in the reference's key order.

use serde::{Deserialize, Serialize};

use super::arrivals::ArrivalStats;
use super::cache::CachePoint;
use super::lint::Lint;
use super::prefix::PrefixGroup;
use crate::stats::Summary;

/// The full analysis of a trace. Serializes with the reference's keys first, in its order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub total_requests: u64,
    pub unique_prefixes: u64,
    pub num_prefix_groups: u64,
    pub cache_hit_rate: f64,
    pub min_isl: i64,
    pub max_isl: i64,
    pub avg_isl: f64,
    pub min_osl: u64,
    pub max_osl: u64,
    pub avg_osl: f64,
    pub prefix_reuse_ratio: f64,
    pub isl_stats: Option<Summary>,
    pub osl_stats: Option<Summary>,
    pub context_length_stats: Option<Summary>,
    pub unique_prompt_length_stats: Option<Summary>,
    pub hit_rate_stats: Option<Summary>,
    // Beyond the reference.
    pub block_size: u32,
    pub total_hash_ids: u64,
    pub distinct_hash_ids: u64,
    pub arrivals: Option<ArrivalStats>,
    /// Hit rate of a finite LRU prefix cache by capacity; the last point is the infinite cache.
    pub lru_hit_rate_curve: Vec<CachePoint>,
    /// The largest prefix groups: rows sharing a first block.
    pub top_prefix_groups: Vec<PrefixGroup>,
    pub lint: Lint,
    /// False when no row has hash ids (e.g. converted from a source without prefix hashes): the
    /// hit rates and prefix counts above are then not measurements but absent information.
    #[serde(default = "prefix_information_default")]
    pub prefix_information: bool,
}

fn prefix_information_default() -> bool {
    true
}
