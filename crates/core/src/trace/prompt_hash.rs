//! Prompts → hash_ids: AIPerf-compatible chained block hashing of token sequences.
//!
//! A prompt's tokens are cut into blocks of `block_size` (the last one may be partial). Each
//! block's hash chains its parent's: `h = H((parent, H(tuple(block))))`, where `H` is AIPerf's
//! stable hash (the first 8 bytes, big-endian, of SHA-256 of the object's Python `repr`) and the
//! root's parent is 0. Hashes are mapped to consecutive ids in first-seen order over the whole
//! input, so two prompts share an id exactly when they share that whole prefix. Tokenization is
//! the caller's business (the CLI uses a local `tokenizer.json`); this module is pure.

use std::collections::HashMap;
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// AIPerf's stable hash of raw bytes: the first 8 bytes of their SHA-256, big-endian.
pub fn stable_hash_bytes(bytes: &[u8]) -> u64 {
    let digest = Sha256::digest(bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// Python's `repr` of a tuple of non-negative integers: `()`, `(5,)`, `(1, 2, 3)`.
pub fn tuple_repr(values: impl IntoIterator<Item = u64>, out: &mut String) {
    out.clear();
    out.push('(');
    let mut count = 0;
    for v in values {
        if count > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{v}");
        count += 1;
    }
    if count == 1 {
        out.push(',');
    }
    out.push(')');
}

/// Stable hash of a tuple of integers (AIPerf hashes tuples through their `repr`).
pub fn stable_hash_tuple(values: impl IntoIterator<Item = u64>) -> u64 {
    let mut s = String::new();
    tuple_repr(values, &mut s);
    stable_hash_bytes(s.as_bytes())
}

/// Turns token sequences into hash ids, keeping the hash → id map across calls.
#[derive(Clone, Debug)]
pub struct BlockHasher {
    block_size: usize,
    ids: HashMap<u64, u64>,
    scratch: String,
}

impl BlockHasher {
    /// A hasher cutting tokens into blocks of `block_size` (at least 1).
    pub fn new(block_size: u32) -> Self {
        BlockHasher { block_size: block_size.max(1) as usize, ids: HashMap::new(), scratch: String::new() }
    }

    /// Number of distinct block hashes seen so far (the next new id).
    pub fn distinct_blocks(&self) -> u64 {
        self.ids.len() as u64
    }

    /// The ids of `tokens`' blocks: `ceil(len / block_size)` of them.
    pub fn hash_ids(&mut self, tokens: &[u32]) -> Vec<u64> {
        self.hash_blocks(tokens.chunks(self.block_size))
    }

    /// The ids of explicit blocks (AIPerf's `RollingHasher.hash_token_blocks`).
    pub fn hash_blocks<'a>(&mut self, blocks: impl IntoIterator<Item = &'a [u32]>) -> Vec<u64> {
        let mut out = Vec::new();
        let mut parent = 0u64;
        for block in blocks {
            tuple_repr(block.iter().map(|&t| u64::from(t)), &mut self.scratch);
            let block_hash = stable_hash_bytes(self.scratch.as_bytes());
            tuple_repr([parent, block_hash], &mut self.scratch);
            let chained = stable_hash_bytes(self.scratch.as_bytes());
            let next = self.ids.len() as u64;
            out.push(*self.ids.entry(chained).or_insert(next));
            parent = chained;
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tuples_print_like_python() {
        let mut s = String::new();
        tuple_repr([], &mut s);
        assert_eq!(s, "()");
        tuple_repr([5], &mut s);
        assert_eq!(s, "(5,)");
        tuple_repr([1, 2, 3], &mut s);
        assert_eq!(s, "(1, 2, 3)");
    }

    #[test]
    fn partial_last_block_gets_an_id() {
        let mut h = BlockHasher::new(2);
        assert_eq!(h.hash_ids(&[1, 2, 3, 4, 5]), [0, 1, 2]);
        assert_eq!(h.hash_ids(&[1, 2, 3, 4, 6]), [0, 1, 3]);
        assert_eq!(h.hash_ids(&[]), Vec::<u64>::new());
        assert_eq!(h.distinct_blocks(), 4);
    }
}
