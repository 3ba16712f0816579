//! The mock's prefix cache: a block-hash model of the prompt's words.

/// Words per block of the mock's prefix cache (its "tokens" are the prompt's words).
pub const CACHE_BLOCK_WORDS: usize = 16;
/// Blocks the mock's prefix cache holds; when full it is emptied (a crude eviction).
pub const CACHE_CAPACITY_BLOCKS: usize = 1 << 16;

/// The mock's prefix cache: chained hashes of full blocks of [`CACHE_BLOCK_WORDS`] words; a
/// request's hit is the words of its leading blocks already stored (vLLM counts queries and hits
/// in tokens the same way).
#[derive(Default)]
pub struct PrefixCache {
    blocks: std::collections::HashSet<u64>,
}

impl PrefixCache {
    /// Looks `words` up and stores their blocks; returns the words hit.
    pub fn query(&mut self, words: &[&str]) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut parent = 0u64;
        let mut hit = 0u64;
        let mut prefix = true;
        for block in words.chunks_exact(CACHE_BLOCK_WORDS) {
            let mut h = DefaultHasher::new();
            (parent, block).hash(&mut h);
            parent = h.finish();
            if prefix && self.blocks.contains(&parent) {
                hit += CACHE_BLOCK_WORDS as u64;
            } else {
                prefix = false;
                if self.blocks.len() >= CACHE_CAPACITY_BLOCKS {
                    self.blocks.clear();
                }
                self.blocks.insert(parent);
            }
        }
        hit
    }

    pub fn clear(&mut self) {
        self.blocks.clear();
    }

    /// Fraction of the capacity in use.
    pub fn usage(&self) -> f64 {
        self.blocks.len() as f64 / CACHE_CAPACITY_BLOCKS as f64
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_cache_hits_leading_blocks_already_seen() {
        let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let a: Vec<&str> = words.iter().map(String::as_str).collect();
        let mut c = PrefixCache::default();
        assert_eq!(c.query(&a), 0);
        // Same first 2 blocks (32 words), then different: 32 words hit; a partial block never hits.
        let mut b = a[..35].to_vec();
        b[33] = "other";
        assert_eq!(c.query(&b), 32);
        // A different first block: nothing after it counts, even if later blocks match.
        let mut d = a.clone();
        d[0] = "changed";
        assert_eq!(c.query(&d), 0);
        c.clear();
        assert_eq!(c.query(&a), 0);
        assert!(c.usage() > 0.0);
    }
}
