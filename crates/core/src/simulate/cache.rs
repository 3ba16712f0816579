//! One replica's prefix cache of KV blocks: blocks keyed by their hash id, pinned while a request
//! that holds them runs, and evicted by a [`Policy`] among the unpinned ones when the capacity is
//! reached.
//!
//! Prefix matching is chained as in vLLM's automatic prefix caching: a request's block hits only
//! when every block before it hit too (its id stands for the whole prefix up to it, as in the
//! Mooncake traces), so a request's hit is the leading run of its ids found in the cache.

use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

/// Which unpinned block goes when a new block needs room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Least recently used: the block released longest ago (a request's blocks are released in
    /// prompt order, so its first block goes before its last).
    #[default]
    Lru,
    /// Least frequently used: the block used by the fewest requests; ties go to the least
    /// recently released.
    Lfu,
}

impl Policy {
    /// The name on the command line and in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Lru => "lru",
            Policy::Lfu => "lfu",
        }
    }
}

/// A hasher for block ids (already hashes or small integers): one multiply and a shift.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let h = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        self.0 = h ^ (h >> 32);
    }
}

pub(crate) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Entry {
    id: u64,
    /// Neighbours in the LRU list of unpinned blocks (oldest first).
    prev: u32,
    next: u32,
    /// Running requests holding the block.
    pins: u32,
    /// Requests that used the block (LFU).
    uses: u32,
    /// When the block was last released (orders ties; identifies a current LFU heap entry).
    released: u64,
}

/// The blocks of one replica.
#[derive(Debug)]
pub(crate) struct BlockCache {
    /// `None`: unbounded.
    capacity: Option<usize>,
    policy: Policy,
    map: IdMap<u32>,
    entries: Vec<Entry>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    /// Unpinned blocks by (uses, release time), stale entries skipped when popped (LFU only).
    heap: BinaryHeap<std::cmp::Reverse<(u32, u64, u32)>>,
    pinned: usize,
    tick: u64,
    pub(crate) evictions: u64,
}

impl BlockCache {
    pub(crate) fn new(capacity: Option<u64>, policy: Policy) -> BlockCache {
        BlockCache {
            capacity: capacity.map(|c| usize::try_from(c).unwrap_or(usize::MAX)),
            policy,
            map: IdMap::default(),
            entries: Vec::new(),
            free: Vec::new(),
            head: NONE,
            tail: NONE,
            heap: BinaryHeap::new(),
            pinned: 0,
            tick: 0,
            evictions: 0,
        }
    }

    /// Blocks held (pinned or not).
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Blocks held by running requests.
    pub(crate) fn pinned(&self) -> usize {
        self.pinned
    }

    /// The leading run of `ids` held: the request's prefix hit, in blocks.
    pub(crate) fn overlap(&self, ids: &[u64]) -> usize {
        ids.iter().take_while(|id| self.map.contains_key(id)).count()
    }

    /// Blocks of `ids` not held (what admitting the request would add).
    pub(crate) fn missing(&self, ids: &[u64]) -> usize {
        ids.iter().filter(|id| !self.map.contains_key(id)).count()
    }

    /// Whether `missing` new blocks fit beside the pinned ones.
    pub(crate) fn fits(&self, missing: usize) -> bool {
        self.capacity.is_none_or(|c| self.pinned + missing <= c)
    }

    /// A request starts: each of its blocks is used and pinned, in prompt order, new ones
    /// inserted (evicting unpinned blocks; a block that finds every other block pinned is not
    /// kept). Returns the leading hit in blocks; the pinned slots are appended to `held`.
    pub(crate) fn admit(&mut self, ids: &[u64], held: &mut Vec<u32>) -> usize {
        let mut leading = true;
        let mut hit = 0;
        for &id in ids {
            let slot = match self.map.get(&id) {
                Some(&s) => {
                    if leading {
                        hit += 1;
                    }
                    s
                }
                None => {
                    leading = false;
                    if self.capacity.is_some_and(|c| self.map.len() >= c) && !self.evict_one() {
                        continue;
                    }
                    self.insert(id)
                }
            };
            self.pin(slot);
            held.push(slot);
        }
        hit
    }

    /// A request ends: its blocks are released in prompt order.
    pub(crate) fn release(&mut self, held: &[u32]) {
        for &slot in held {
            let e = &mut self.entries[slot as usize];
            e.pins -= 1;
            if e.pins == 0 {
                self.pinned -= 1;
                self.tick += 1;
                e.released = self.tick;
                match self.policy {
                    Policy::Lru => self.push_back(slot),
                    Policy::Lfu => self.heap.push(std::cmp::Reverse((e.uses, e.released, slot))),
                }
            }
        }
    }

    fn insert(&mut self, id: u64) -> u32 {
        let e = Entry { id, prev: NONE, next: NONE, pins: 0, uses: 0, released: 0 };
        let slot = match self.free.pop() {
            Some(s) => {
                self.entries[s as usize] = e;
                s
            }
            None => {
                self.entries.push(e);
                (self.entries.len() - 1) as u32
            }
        };
        self.map.insert(id, slot);
        slot
    }

    fn pin(&mut self, slot: u32) {
        let e = &mut self.entries[slot as usize];
        e.uses = e.uses.saturating_add(1);
        e.pins += 1;
        if e.pins == 1 {
            self.pinned += 1;
            if self.policy == Policy::Lru {
                self.unlink(slot);
            }
        }
    }

    /// Drops one unpinned block; false when every block is pinned.
    fn evict_one(&mut self) -> bool {
        let slot = match self.policy {
            Policy::Lru => {
                let s = self.head;
                if s == NONE {
                    return false;
                }
                self.unlink(s);
                s
            }
            Policy::Lfu => loop {
                let Some(std::cmp::Reverse((uses, released, s))) = self.heap.pop() else { return false };
                let e = &self.entries[s as usize];
                if e.pins == 0 && e.uses == uses && e.released == released && self.map.get(&e.id) == Some(&s) {
                    break s;
                }
            },
        };
        let id = self.entries[slot as usize].id;
        self.map.remove(&id);
        self.free.push(slot);
        self.evictions += 1;
        true
    }

    fn push_back(&mut self, slot: u32) {
        let tail = self.tail;
        {
            let e = &mut self.entries[slot as usize];
            e.prev = tail;
            e.next = NONE;
        }
        if tail == NONE {
            self.head = slot;
        } else {
            self.entries[tail as usize].next = slot;
        }
        self.tail = slot;
    }

    /// Takes an unpinned block out of the LRU list (a no-op for a block not in it).
    fn unlink(&mut self, slot: u32) {
        let (prev, next) = {
            let e = &self.entries[slot as usize];
            (e.prev, e.next)
        };
        if prev == NONE && next == NONE && self.head != slot {
            return;
        }
        if prev == NONE {
            self.head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
        let e = &mut self.entries[slot as usize];
        e.prev = NONE;
        e.next = NONE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cache: &mut BlockCache, ids: &[u64]) -> usize {
        let mut held = Vec::new();
        let hit = cache.admit(ids, &mut held);
        cache.release(&held);
        hit
    }

    #[test]
    fn lru_evicts_the_block_released_longest_ago() {
        let mut c = BlockCache::new(Some(3), Policy::Lru);
        assert_eq!(run(&mut c, &[1, 2]), 0);
        assert_eq!(run(&mut c, &[3]), 0);
        assert_eq!(run(&mut c, &[1]), 1);
        // 4 evicts 2 (released before 3 and the reused 1).
        assert_eq!(run(&mut c, &[4]), 0);
        assert_eq!(c.overlap(&[1]), 1);
        assert_eq!(c.overlap(&[2]), 0);
        assert_eq!(c.evictions, 1);
    }

    #[test]
    fn lfu_keeps_the_block_used_most() {
        let mut c = BlockCache::new(Some(2), Policy::Lfu);
        run(&mut c, &[1]);
        run(&mut c, &[1]);
        run(&mut c, &[2]);
        run(&mut c, &[3]);
        assert_eq!(c.overlap(&[1]), 1);
        assert_eq!(c.overlap(&[2]), 0);
    }

    #[test]
    fn pinned_blocks_stay_and_a_hit_stops_at_the_first_miss() {
        let mut c = BlockCache::new(Some(2), Policy::Lru);
        let mut held = Vec::new();
        assert_eq!(c.admit(&[1, 2], &mut held), 0);
        assert!(!c.fits(1));
        // Every block is pinned: the new block is not kept.
        let mut other = Vec::new();
        c.admit(&[3], &mut other);
        assert_eq!(c.len(), 2);
        assert!(other.is_empty());
        c.release(&held);
        assert_eq!(c.pinned(), 0);
        assert_eq!(run(&mut c, &[9, 1, 2]), 0);
    }
}
