//! [`Blocks`]: the cached blocks of every replica of a cluster in one pool, each replica's
//! eviction order by its [`Policy`], and [`ONCE`], the number of a block no request looks up.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use serde::{Deserialize, Serialize};

/// Which unpinned block goes when a new block needs room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Least recently used: the block released longest ago (a request's blocks are released tail
    /// first, as vLLM frees them, so its last block goes before its first).
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

const NONE: u32 = u32::MAX;

/// The block number a caller gives every block that occurs once in all the requests it will
/// admit (the simulator counts a trace's ids first). No lookup ever finds such a block, and it is
/// used by one request only, so it needs no entry: it takes room (pinned, then in the eviction
/// order with one use) and is evicted like any other, but its place in a request's held blocks
/// and in the eviction order is this number instead of an entry, and evicting it reads nothing.
pub const ONCE: u32 = u32::MAX - 1;

/// In a request's held blocks, marks the item before it as the prompt's partial last block.
const TAIL: u32 = u32::MAX - 2;

/// One block cached on one replica (32 bytes: one cache line holds it whole).
#[derive(Clone, Debug)]
#[repr(align(32))]
struct Entry {
    /// The block's number.
    block: u32,
    /// The replica holding it; `NONE` once evicted.
    replica: u32,
    /// The neighbours among the entries of the same block (on other replicas); the first entry
    /// of a chain has no previous one.
    chain_prev: u32,
    chain_next: u32,
    /// Running requests holding the block.
    pins: u32,
    /// Requests that used the block (LFU).
    uses: u32,
    /// When the block was last released (0: never): the release queue's items of earlier
    /// releases are stale.
    released: u64,
}

/// One replica's counts and eviction order.
#[derive(Debug, Default)]
struct Shelf {
    len: usize,
    pinned: usize,
    /// Releases oldest first; an item is current while its entry is unpinned and was not
    /// released since (LRU only).
    queue: VecDeque<Release>,
    /// Releases by (uses, release time, entry), current items as in `queue` (LFU only).
    heap: BinaryHeap<Reverse<(u32, u64, u32)>>,
    evictions: u64,
}

/// An item of a replica's LRU release queue: an entry released at `tick`, or `count` blocks of
/// [`ONCE`] released one after the other (no item between them), which are evicted alike.
#[derive(Clone, Copy, Debug)]
struct Release {
    tick: u64,
    slot: u32,
    count: u32,
}

/// The blocks of every replica of a cluster.
#[derive(Debug)]
pub struct Blocks {
    /// Blocks each replica holds at most; `None`: unbounded.
    capacity: Option<usize>,
    policy: Policy,
    /// Block number → its first entry, `NONE` or an entry no longer of that block when held
    /// nowhere (an eviction of a block's only entry leaves it, so that evicting reads nothing
    /// indexed by block: see [`Blocks::chain_of`]).
    first: Vec<u32>,
    entries: Vec<Entry>,
    free: Vec<u32>,
    shelves: Vec<Shelf>,
    /// Release counter, shared by every replica.
    tick: u64,
    /// Block numbers that lost their last entry, when asked for ([`Blocks::track_orphans`]).
    orphans: Option<Vec<u32>>,
}

impl Blocks {
    /// `replicas` empty caches of `capacity` blocks each over block numbers `0..blocks`.
    pub fn new(replicas: usize, blocks: usize, capacity: Option<u64>, policy: Policy) -> Blocks {
        Blocks {
            capacity: capacity.map(|c| usize::try_from(c).unwrap_or(usize::MAX)),
            policy,
            first: vec![NONE; blocks],
            entries: Vec::new(),
            free: Vec::new(),
            shelves: (0..replicas).map(|_| Shelf::default()).collect(),
            tick: 0,
            orphans: None,
        }
    }

    /// Makes room for block numbers `0..blocks`.
    pub fn grow(&mut self, blocks: usize) {
        if blocks > self.first.len() {
            self.first.resize(blocks, NONE);
        }
    }

    /// Collects the block numbers that stop being held anywhere ([`Blocks::take_orphans`]).
    pub fn track_orphans(&mut self) {
        self.orphans.get_or_insert_with(Vec::new);
    }

    /// The block numbers that stopped being held anywhere since the last call.
    pub fn take_orphans(&mut self) -> Vec<u32> {
        self.orphans.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Blocks replica `r` holds (pinned or not).
    pub fn len(&self, r: u32) -> usize {
        self.shelves[r as usize].len
    }

    /// Blocks of replica `r` held by running requests.
    pub fn pinned(&self, r: u32) -> usize {
        self.shelves[r as usize].pinned
    }

    /// Blocks replica `r` evicted so far.
    pub fn evictions(&self, r: u32) -> u64 {
        self.shelves[r as usize].evictions
    }

    /// Whether some replica holds `block`.
    pub fn held_anywhere(&self, block: u32) -> bool {
        self.chain_of(block) != NONE
    }

    /// The first entry of `block`'s chain, `NONE` when no replica holds it.
    #[inline]
    fn chain_of(&self, block: u32) -> u32 {
        let e = self.first.get(block as usize).copied().unwrap_or(NONE);
        match self.entries.get(e as usize) {
            Some(entry) if entry.block == block && entry.replica != NONE => e,
            _ => NONE,
        }
    }

    /// Replica `r`'s entry of `block`, `NONE` if it does not hold it.
    #[inline]
    fn find(&self, r: u32, block: u32) -> u32 {
        let mut e = self.chain_of(block);
        while e != NONE {
            let entry = &self.entries[e as usize];
            if entry.replica == r {
                return e;
            }
            e = entry.chain_next;
        }
        NONE
    }

    /// The leading run of `ids` replica `r` holds: the request's prefix hit, in blocks.
    pub fn overlap(&self, r: u32, ids: &[u32]) -> usize {
        ids.iter().take_while(|&&id| self.find(r, id) != NONE).count()
    }

    /// Every replica's [`Blocks::overlap`] with `ids` at once, into `out` (one per replica).
    pub fn overlaps(&self, ids: &[u32], out: &mut Vec<u32>) {
        out.clear();
        out.resize(self.shelves.len(), 0);
        for (i, &id) in ids.iter().enumerate() {
            let i = i as u32;
            let mut advanced = false;
            let mut e = self.chain_of(id);
            while e != NONE {
                let entry = &self.entries[e as usize];
                let run = &mut out[entry.replica as usize];
                if *run == i {
                    *run = i + 1;
                    advanced = true;
                }
                e = entry.chain_next;
            }
            if !advanced {
                return;
            }
        }
    }

    /// Blocks of `ids` replica `r` does not hold (what admitting the request would add).
    pub fn missing(&self, r: u32, ids: &[u32]) -> usize {
        ids.iter().filter(|&&id| self.find(r, id) == NONE).count()
    }

    /// Blocks of `ids` that admitting the request on replica `r` would add to its pinned ones:
    /// those it does not hold and those it holds unpinned (a cached block a request uses is
    /// pinned as well; vLLM counts its evictable hits among the blocks to allocate too).
    pub fn to_pin(&self, r: u32, ids: &[u32]) -> usize {
        ids.iter().filter(|&&id| !self.pinned_on(r, id)).count()
    }

    /// Whether replica `r` holds `block` pinned.
    pub(super) fn pinned_on(&self, r: u32, block: u32) -> bool {
        let e = self.find(r, block);
        e != NONE && self.entries[e as usize].pins > 0
    }

    /// Whether `missing` new blocks fit beside replica `r`'s pinned ones.
    pub fn fits(&self, r: u32, missing: usize) -> bool {
        self.capacity.is_none_or(|c| self.shelves[r as usize].pinned + missing <= c)
    }

    /// A request starts on replica `r`: each of its blocks is used and pinned, in prompt order,
    /// new ones inserted (evicting unpinned blocks; a block that finds every other block pinned
    /// is not kept). Returns the leading hit in blocks; the pinned entries (and [`ONCE`] for each
    /// block of that number kept) are appended to `held`, for [`Blocks::release`].
    pub fn admit(&mut self, r: u32, ids: &[u32], held: &mut Vec<u32>) -> usize {
        self.admit_with_tail(r, ids, held, false)
    }

    /// [`Blocks::admit`] of a prompt whose last block is partial when `partial_tail`: that block
    /// takes room while the request runs, and once released it is the first block evicted, as
    /// vLLM caches whole blocks only and puts a freed uncached block first in line for reuse.
    pub fn admit_with_tail(&mut self, r: u32, ids: &[u32], held: &mut Vec<u32>, partial_tail: bool) -> usize {
        self.touch_victims(r, ids.len());
        let mut leading = true;
        let mut hit = 0;
        let mut kept_last = false;
        let mut i = 0;
        while let Some(&id) = ids.get(i) {
            i += 1;
            kept_last = false;
            if id == ONCE {
                // A run of blocks of `ONCE` takes its room at once: what is free, then what the
                // evictions make (once they fail, every later block of the run finds no room).
                leading = false;
                let run = 1 + ids[i..].iter().take_while(|&&id| id == ONCE).count();
                i += run - 1;
                let room = self.capacity.map_or(run, |c| c.saturating_sub(self.shelves[r as usize].len).min(run));
                let kept = room + self.evict(r, run - room);
                let shelf = &mut self.shelves[r as usize];
                shelf.len += kept;
                shelf.pinned += kept;
                held.extend(std::iter::repeat_n(ONCE, kept));
                kept_last = kept == run;
                continue;
            }
            let mut slot = self.find(r, id);
            if slot != NONE {
                if leading {
                    hit += 1;
                }
            } else {
                leading = false;
                let full = self.capacity.is_some_and(|c| self.shelves[r as usize].len >= c);
                if full && !self.evict_one(r) {
                    continue;
                }
                slot = self.insert(r, id);
            }
            self.pin(slot);
            held.push(slot);
            kept_last = true;
        }
        if partial_tail && kept_last {
            held.push(TAIL);
        }
        hit
    }

    /// A running request on replica `r` takes one more block for its output tokens, after the
    /// ones in `held` (a block of [`ONCE`]: nothing else asks for it): room is made by evicting
    /// as for a new prompt block, and the block is not kept when every other block is pinned.
    /// The block before it is full from now on (a partial last block of the prompt no longer
    /// goes first when released); `partial` marks this block as one that will still be partial
    /// when the request ends. Returns whether the block was kept.
    pub fn extend(&mut self, r: u32, held: &mut Vec<u32>, partial: bool) -> bool {
        if held.last() == Some(&TAIL) {
            held.pop();
        }
        let full = self.capacity.is_some_and(|c| self.shelves[r as usize].len >= c);
        if full && !self.evict_one(r) {
            return false;
        }
        let shelf = &mut self.shelves[r as usize];
        shelf.len += 1;
        shelf.pinned += 1;
        held.push(ONCE);
        if partial {
            held.push(TAIL);
        }
        true
    }

    /// A request on replica `r` ends: its blocks (what [`Blocks::admit`] appended to `held`) are
    /// released tail first (vLLM's order: a prompt's first blocks, the ones other prompts share,
    /// stay longest).
    pub fn release(&mut self, r: u32, held: &[u32]) {
        let mut tail = false;
        let mut i = held.len();
        while i > 0 {
            i -= 1;
            let slot = held[i];
            if slot == TAIL {
                tail = true;
                continue;
            }
            let first = std::mem::take(&mut tail);
            if slot == ONCE {
                // The blocks of `ONCE` released right after it join it in an LRU queue.
                let run = if first || self.policy != Policy::Lru {
                    1
                } else {
                    // One item counts at most `u32::MAX` blocks.
                    1 + held[..i].iter().rev().take_while(|&&s| s == ONCE).take(u32::MAX as usize - 1).count()
                };
                i -= run - 1;
                self.tick += run as u64;
                self.shelves[r as usize].pinned -= run;
                self.enqueue(r, ONCE, 1, first, run as u32);
                continue;
            }
            let e = &mut self.entries[slot as usize];
            e.pins -= 1;
            if e.pins == 0 {
                self.tick += 1;
                e.released = self.tick;
                let (r, uses) = (e.replica, e.uses);
                self.shelves[r as usize].pinned -= 1;
                self.enqueue(r, slot, uses, first, 1);
            }
        }
    }

    /// Puts a block just released (at the current tick) in replica `r`'s eviction order: last,
    /// or first when `first` (a partial last block; LFU counts it as never used); `count`
    /// blocks of [`ONCE`] released one after the other when `slot` is `ONCE` (LRU only).
    fn enqueue(&mut self, r: u32, slot: u32, uses: u32, first: bool, count: u32) {
        let tick = self.tick;
        let shelf = &mut self.shelves[r as usize];
        match self.policy {
            Policy::Lru => {
                let once_run = if first { shelf.queue.front_mut() } else { shelf.queue.back_mut() };
                match once_run {
                    Some(run) if slot == ONCE && run.slot == ONCE && run.count.checked_add(count).is_some() => {
                        run.count += count;
                    }
                    _ => {
                        let item = Release { tick, slot, count };
                        if first {
                            shelf.queue.push_front(item);
                        } else {
                            shelf.queue.push_back(item);
                        }
                    }
                }
                if shelf.queue.len() > 2 * (shelf.len - shelf.pinned) + 1024 {
                    self.compact(r);
                }
            }
            Policy::Lfu => shelf.heap.push(Reverse((if first { 0 } else { uses }, tick, slot))),
        }
    }

    fn insert(&mut self, r: u32, block: u32) -> u32 {
        if block as usize >= self.first.len() {
            self.grow(block as usize + 1);
        }
        let after = self.chain_of(block);
        let e = Entry { block, replica: r, chain_prev: NONE, chain_next: after, pins: 0, uses: 0, released: 0 };
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
        if after != NONE {
            self.entries[after as usize].chain_prev = slot;
        }
        self.first[block as usize] = slot;
        self.shelves[r as usize].len += 1;
        slot
    }

    fn pin(&mut self, slot: u32) {
        let e = &mut self.entries[slot as usize];
        e.uses = e.uses.saturating_add(1);
        e.pins += 1;
        if e.pins == 1 {
            self.shelves[e.replica as usize].pinned += 1;
        }
    }

    /// Drops `n` of replica `r`'s unpinned blocks, as [`Blocks::evict_one`] `n` times but a run
    /// of [`ONCE`] blocks in an LRU queue at once; returns how many went (fewer once every block
    /// left is pinned).
    fn evict(&mut self, r: u32, n: usize) -> usize {
        if self.policy != Policy::Lru {
            return (0..n).take_while(|_| self.evict_one(r)).count();
        }
        let mut evicted = 0;
        while evicted < n {
            let shelf = &mut self.shelves[r as usize];
            let Some(front) = shelf.queue.front_mut() else { break };
            if front.slot == ONCE {
                let take = (front.count as usize).min(n - evicted);
                front.count -= take as u32;
                if front.count == 0 {
                    shelf.queue.pop_front();
                }
                shelf.len -= take;
                shelf.evictions += take as u64;
                evicted += take;
            } else if self.evict_one(r) {
                evicted += 1;
            } else {
                break;
            }
        }
        evicted
    }

    /// Drops one of replica `r`'s unpinned blocks; false when every block is pinned.
    fn evict_one(&mut self, r: u32) -> bool {
        let slot = match self.policy {
            Policy::Lru => loop {
                let queue = &mut self.shelves[r as usize].queue;
                let Some(front) = queue.front_mut() else { return false };
                if front.slot == ONCE && front.count > 1 {
                    front.count -= 1;
                    break ONCE;
                }
                let Release { tick, slot, .. } = *front;
                queue.pop_front();
                if slot == ONCE || self.current(r, slot, tick) {
                    break slot;
                }
            },
            Policy::Lfu => loop {
                let Some(Reverse((uses, released, s))) = self.shelves[r as usize].heap.pop() else { return false };
                // Uses of 0: a partial last block, current while its release is.
                if s == ONCE || (self.current(r, s, released) && (uses == 0 || self.entries[s as usize].uses == uses)) {
                    break s;
                }
            },
        };
        // A block of `ONCE` has no entry: it was released once and never used again.
        if slot != ONCE {
            self.unchain(slot);
            self.entries[slot as usize].replica = NONE;
            self.free.push(slot);
        }
        let shelf = &mut self.shelves[r as usize];
        shelf.len -= 1;
        shelf.evictions += 1;
        true
    }

    /// Takes an entry out of its block's chain. The only entry of a chain leaves `first` as it
    /// is: [`Blocks::chain_of`] sees that the entry is gone.
    fn unchain(&mut self, slot: u32) {
        let (block, before, after) = {
            let e = &self.entries[slot as usize];
            (e.block, e.chain_prev, e.chain_next)
        };
        if after != NONE {
            self.entries[after as usize].chain_prev = before;
        }
        if before != NONE {
            self.entries[before as usize].chain_next = after;
        } else if after != NONE {
            self.first[block as usize] = after;
        } else if let Some(orphans) = self.orphans.as_mut() {
            orphans.push(block);
        }
    }

    /// Reads the entries of the next `n` blocks of a full replica's release queue before they are
    /// evicted one by one: the reads are independent, so the processor fetches them from memory
    /// at once instead of one eviction after the other (the result is only a value to keep).
    #[inline]
    fn touch_victims(&self, r: u32, n: usize) {
        let shelf = &self.shelves[r as usize];
        if self.policy != Policy::Lru || self.capacity.is_none_or(|c| shelf.len + n <= c) {
            return;
        }
        let (mut sum, mut left) = (0u64, n);
        for item in &shelf.queue {
            if left == 0 {
                break;
            }
            if item.slot == ONCE {
                left = left.saturating_sub(item.count as usize);
            } else {
                sum = sum.wrapping_add(self.entries[item.slot as usize].released);
                left -= 1;
            }
        }
        std::hint::black_box(sum);
    }

    /// Whether a release item (`released`, entry `s`) of replica `r` is the entry's last release
    /// and the entry is unpinned: the block it stands for may be evicted.
    #[inline]
    fn current(&self, r: u32, s: u32, released: u64) -> bool {
        let e = &self.entries[s as usize];
        e.replica == r && e.pins == 0 && e.released == released
    }

    /// Drops the stale items of replica `r`'s release queue (at most half of it stays).
    fn compact(&mut self, r: u32) {
        let mut queue = std::mem::take(&mut self.shelves[r as usize].queue);
        queue.retain(|item| item.slot == ONCE || self.current(r, item.slot, item.tick));
        self.shelves[r as usize].queue = queue;
    }
}
