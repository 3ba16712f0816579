//! [`BlockCache`]: one replica's prefix cache keyed by any `u64` block hash (the mock server's),
//! [`Blocks`] of one replica with the hashes it holds numbered.

use std::collections::HashMap;

use super::pool::{Blocks, ONCE, Policy};

/// The last block of a prompt given to [`BlockCache::admit_with_tail`] by its hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// The prompt is whole blocks.
    None,
    /// A partial block follows the hashes, and is filled before the request ends.
    Filled,
    /// A partial block follows the hashes, and is still partial when the request ends.
    Partial,
}

/// One replica's prefix cache keyed by `u64` block hashes: [`Blocks`] with the hashes it holds
/// numbered (a number is given back when its block leaves the cache, so memory follows the
/// capacity, not the hashes ever seen).
#[derive(Debug)]
pub struct BlockCache {
    blocks: Blocks,
    pub(super) numbers: HashMap<u64, u32>,
    pub(super) hashes: Vec<u64>,
    spare: Vec<u32>,
    scratch: Vec<u32>,
}

impl BlockCache {
    /// An empty cache of `capacity` blocks (`None`: unbounded).
    pub fn new(capacity: Option<u64>, policy: Policy) -> BlockCache {
        let mut blocks = Blocks::new(1, 0, capacity, policy);
        blocks.track_orphans();
        BlockCache { blocks, numbers: HashMap::new(), hashes: Vec::new(), spare: Vec::new(), scratch: Vec::new() }
    }

    /// Blocks held (pinned or not).
    pub fn len(&self) -> usize {
        self.blocks.len(0)
    }

    /// Whether no block is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocks held by running requests.
    pub fn pinned(&self) -> usize {
        self.blocks.pinned(0)
    }

    /// Blocks evicted so far.
    pub fn evictions(&self) -> u64 {
        self.blocks.evictions(0)
    }

    /// The leading run of `hashes` held.
    pub fn overlap(&self, hashes: &[u64]) -> usize {
        hashes.iter().take_while(|h| self.numbers.contains_key(h)).count()
    }

    /// Hashes not held (what admitting them would add).
    pub fn missing(&self, hashes: &[u64]) -> usize {
        hashes.iter().filter(|h| !self.numbers.contains_key(h)).count()
    }

    /// Hashes not held or held unpinned: the blocks admitting them would add to the pinned ones
    /// ([`Blocks::to_pin`]).
    pub fn to_pin(&self, hashes: &[u64]) -> usize {
        hashes.iter().filter(|h| self.numbers.get(h).is_none_or(|&n| !self.blocks.pinned_on(0, n))).count()
    }

    /// Whether `missing` new blocks fit beside the pinned ones.
    pub fn fits(&self, missing: usize) -> bool {
        self.blocks.fits(0, missing)
    }

    /// A request starts: see [`Blocks::admit`]. Returns the leading hit in blocks; what to give
    /// [`BlockCache::release`] when it ends is appended to `held`.
    pub fn admit(&mut self, hashes: &[u64], held: &mut Vec<u32>) -> usize {
        self.admit_with_tail(hashes, Tail::None, held)
    }

    /// [`BlockCache::admit`] of a prompt that ends in a partial block (`tail`), which has no hash
    /// (only whole blocks are cached): it takes room while the request runs, and when `tail` is
    /// [`Tail::Partial`] it goes first when released ([`Blocks::admit_with_tail`]).
    pub fn admit_with_tail(&mut self, hashes: &[u64], tail: Tail, held: &mut Vec<u32>) -> usize {
        let mut numbers = std::mem::take(&mut self.scratch);
        numbers.clear();
        for &h in hashes {
            let n = match self.numbers.get(&h) {
                Some(&n) => n,
                None => {
                    let n = self.spare.pop().unwrap_or(self.hashes.len() as u32);
                    if n as usize == self.hashes.len() {
                        self.hashes.push(h);
                    } else {
                        self.hashes[n as usize] = h;
                    }
                    self.numbers.insert(h, n);
                    n
                }
            };
            numbers.push(n);
        }
        let hashed = numbers.len();
        if tail != Tail::None {
            numbers.push(ONCE);
        }
        let hit = self.blocks.admit_with_tail(0, &numbers, held, tail == Tail::Partial);
        numbers.truncate(hashed);
        // Numbers given to blocks that were not kept, and to blocks evicted, go back.
        for n in numbers.iter().copied().chain(self.blocks.take_orphans()) {
            if !self.blocks.held_anywhere(n) && self.numbers.remove(&self.hashes[n as usize]).is_some() {
                self.spare.push(n);
            }
        }
        self.scratch = numbers;
        hit
    }

    /// A running request takes one more block for its output tokens: see [`Blocks::extend`].
    pub fn extend(&mut self, held: &mut Vec<u32>, partial: bool) -> bool {
        self.blocks.extend(0, held, partial)
    }

    /// A request ends: its blocks are released tail first.
    pub fn release(&mut self, held: &[u32]) {
        self.blocks.release(0, held);
    }
}
