//! How many KV blocks a request takes: its output tokens' blocks as vLLM allocates them, a capacity in GB as blocks, the tokens a cached prefix serves.

use super::cache;

/// The KV blocks a request's output tokens take, as vLLM allocates them: every token fed to the
/// model has a slot (the prompt's, then each output token's but the last, which is sampled and
/// never fed); the prompt's blocks have room up to their end, and each block past it is taken
/// by the decoding step that first needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputBlocks {
    /// Blocks taken while decoding.
    pub count: u64,
    /// The output token (1 for the first) whose step takes the first of them; the next ones
    /// follow every `block_size` tokens.
    pub first_token: u64,
    /// Whether the request's last block is still partial when it ends (vLLM caches whole blocks
    /// only, so that block is the first to go once freed).
    pub last_partial: bool,
}

impl OutputBlocks {
    /// For a prompt of `prompt_tokens` held in `prompt_blocks` blocks of `block_size` tokens
    /// (room for at least its tokens) and `output_tokens` output tokens.
    pub fn new(prompt_tokens: u64, prompt_blocks: u64, output_tokens: u64, block_size: u32) -> OutputBlocks {
        let bs = u64::from(block_size.max(1));
        let fed = prompt_tokens.saturating_add(output_tokens.saturating_sub(1));
        let room = prompt_blocks.saturating_mul(bs).max(prompt_tokens.div_ceil(bs).saturating_mul(bs));
        let count = fed.saturating_sub(room).div_ceil(bs);
        OutputBlocks {
            count,
            first_token: room.saturating_sub(prompt_tokens).saturating_add(1),
            last_partial: fed < room.saturating_add(count.saturating_mul(bs)),
        }
    }

    /// The output blocks and the partial last block of a prompt of `prompt_tokens` tokens whose
    /// whole blocks have `hashes` hashes, for `output_tokens` output tokens (the mock server's KV
    /// model, which hashes a prompt's whole token blocks itself).
    pub fn with_tail(
        hashes: usize,
        prompt_tokens: u64,
        output_tokens: u64,
        block_size: u32,
    ) -> (OutputBlocks, cache::Tail) {
        let bs = u64::from(block_size.max(1));
        let blocks = prompt_tokens.div_ceil(bs).max(hashes as u64);
        let output = OutputBlocks::new(prompt_tokens, blocks, output_tokens, block_size);
        let tail = match (blocks > hashes as u64, output.count == 0 && output.last_partial) {
            (false, _) => cache::Tail::None,
            (true, true) => cache::Tail::Partial,
            (true, false) => cache::Tail::Filled,
        };
        (output, tail)
    }
}

/// KV blocks for `gb` gigabytes (10^9 bytes) of KV cache at `bytes_per_token`, `block_size`
/// tokens a block (rounded down).
pub fn blocks_for_gb(gb: f64, bytes_per_token: u64, block_size: u32) -> u64 {
    let per_block = bytes_per_token.saturating_mul(u64::from(block_size)).max(1) as f64;
    (gb * 1e9 / per_block).floor().max(0.0) as u64
}

/// Prompt tokens the engine serves from its prefix cache when the request's `hit_blocks` leading
/// blocks of `block_size` tokens are cached: whole blocks, never the prompt's last token. vLLM
/// computes the last token again to get its logits (`KVCacheManager::get_computed_blocks` caps
/// the hit at `prompt_tokens - 1` tokens in whole blocks), so a fully cached prompt of whole
/// blocks hits one block less, and a partial last block never hits.
pub fn engine_cached_tokens(hit_blocks: u64, prompt_tokens: u64, block_size: u32) -> u64 {
    let bs = u64::from(block_size.max(1));
    hit_blocks.min(prompt_tokens.saturating_sub(1) / bs).saturating_mul(bs)
}
