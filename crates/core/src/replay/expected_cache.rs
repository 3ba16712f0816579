//! The cached prompt tokens a request should find: the blocks a prefix cache that kept
//! everything would hold, in send order.

use std::collections::HashSet;

/// The blocks a prefix cache that kept everything would hold, in send order: what each request
/// could reuse on the cache state the server would have when it arrives (sessions reused past
/// the trace's end find their own earlier blocks).
#[derive(Clone, Debug, Default)]
pub struct PrefixCache {
    seen: HashSet<u64>,
}

impl PrefixCache {
    /// Records a request's blocks; returns its prompt tokens covered by leading blocks already
    /// sent (at most `input_length`).
    pub fn observe(&mut self, hash_ids: &[u64], input_length: u64, block_size: u64) -> u64 {
        let shared = hash_ids.iter().take_while(|id| self.seen.contains(id)).count() as u64;
        self.seen.extend(hash_ids.iter().copied());
        shared.saturating_mul(block_size).min(input_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_cache_counts_leading_blocks_already_sent() {
        let mut c = PrefixCache::default();
        assert_eq!(c.observe(&[1, 2, 3], 1200, 512), 0);
        assert_eq!(c.observe(&[1, 2, 9], 1500, 512), 1024);
        assert_eq!(c.observe(&[1, 2, 9], 700, 512), 700);
        assert_eq!(c.observe(&[7, 1, 2], 1500, 512), 0);
        assert_eq!(c.observe(&[1, 2, 3], 1200, u64::MAX), 1200);
    }
}
