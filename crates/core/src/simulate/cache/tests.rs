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
    assert_eq!(c.evictions(), 1);
    // The evicted block's number went back and serves the next new block.
    assert_eq!(c.hashes.len(), 4);
    assert_eq!(run(&mut c, &[5]), 0);
    assert_eq!((c.hashes.len(), c.numbers.len()), (4, 3));
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
    assert_eq!(c.missing(&[3]), 1);
    c.release(&held);
    assert_eq!(c.pinned(), 0);
    assert_eq!(run(&mut c, &[9, 1, 2]), 0);
}

proptest::proptest! {
    /// The hash-keyed cache, which numbers only the hashes it holds, behaves as the block
    /// table over hashes numbered once (as the simulator numbers a trace's ids).
    #[test]
    fn the_hash_keyed_cache_is_the_table_over_numbered_hashes(
        requests in proptest::collection::vec((proptest::collection::vec(0u64..24, 1..6), 0usize..3), 1..80),
        capacity in 2u64..12,
        lfu: bool,
    ) {
        let policy = if lfu { Policy::Lfu } else { Policy::Lru };
        let hash = |id: u64| id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 7;
        let mut cache = BlockCache::new(Some(capacity), policy);
        let mut table = Blocks::new(1, 24, Some(capacity), policy);
        let mut running: std::collections::VecDeque<(Vec<u32>, Vec<u32>)> = Default::default();
        for (ids, keep) in &requests {
            let hashes: Vec<u64> = ids.iter().map(|&i| hash(i)).collect();
            let numbers: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
            proptest::prop_assert_eq!(cache.missing(&hashes), table.missing(0, &numbers));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            proptest::prop_assert_eq!(cache.admit(&hashes, &mut a), table.admit(0, &numbers, &mut b));
            running.push_back((a, b));
            while running.len() > *keep {
                let Some((a, b)) = running.pop_front() else { break };
                cache.release(&a);
                table.release(0, &b);
            }
            proptest::prop_assert_eq!((cache.len(), cache.pinned(), cache.evictions()), (table.len(0), table.pinned(0), table.evictions(0)));
            proptest::prop_assert!(cache.numbers.len() == cache.len() && cache.hashes.len() <= capacity as usize + 6);
        }
    }
}

proptest::proptest! {
    /// Blocks that occur once among all the requests, given [`ONCE`] instead of their
    /// numbers (and kept as runs in an LRU queue), leave every hit, count and eviction as they
    /// are (overlapping requests on several replicas, bounded or not, prompts with a partial
    /// last block, output blocks).
    #[test]
    fn blocks_occurring_once_can_share_one_number(
        requests in proptest::collection::vec(
            (proptest::collection::vec(0u32..40, 1..8), 0u32..3, 0usize..4, proptest::bool::ANY, 0usize..3),
            1..60,
        ),
        capacity in proptest::option::of(2u64..14),
        lfu: bool,
    ) {
        let policy = if lfu { Policy::Lfu } else { Policy::Lru };
        let mut count = [0u32; 40];
        for (ids, ..) in &requests {
            for &id in ids {
                count[id as usize] += 1;
            }
        }
        let (mut plain, mut marked) = (Blocks::new(3, 40, capacity, policy), Blocks::new(3, 40, capacity, policy));
        let mut running: std::collections::VecDeque<(u32, Vec<u32>, Vec<u32>)> = Default::default();
        for (ids, replica, keep, partial, outputs) in &requests {
            let once: Vec<u32> = ids.iter().map(|&id| if count[id as usize] == 1 { ONCE } else { id }).collect();
            let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
            plain.overlaps(ids, &mut out_a);
            marked.overlaps(&once, &mut out_b);
            proptest::prop_assert_eq!(out_a, out_b);
            proptest::prop_assert_eq!(plain.missing(*replica, ids), marked.missing(*replica, &once));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            proptest::prop_assert_eq!(
                plain.admit_with_tail(*replica, ids, &mut a, *partial),
                marked.admit_with_tail(*replica, &once, &mut b, *partial)
            );
            for k in 0..*outputs {
                let last = k + 1 == *outputs;
                proptest::prop_assert_eq!(plain.extend(*replica, &mut a, last), marked.extend(*replica, &mut b, last));
            }
            running.push_back((*replica, a, b));
            while running.len() > *keep {
                let Some((r, a, b)) = running.pop_front() else { break };
                plain.release(r, &a);
                marked.release(r, &b);
            }
            for r in 0..3 {
                proptest::prop_assert_eq!(
                    (plain.len(r), plain.pinned(r), plain.evictions(r)),
                    (marked.len(r), marked.pinned(r), marked.evictions(r))
                );
            }
        }
    }
}

#[test]
fn a_partial_last_block_is_evicted_first() {
    for policy in [Policy::Lru, Policy::Lfu] {
        let mut b = Blocks::new(1, 8, Some(3), policy);
        let mut held = Vec::new();
        b.admit(0, &[0], &mut held);
        b.release(0, &held);
        held.clear();
        b.admit_with_tail(0, &[1, 2], &mut held, true);
        b.release(0, &held);
        held.clear();
        // Block 3 needs room: the partial block 2 goes, not 0, released longer ago.
        b.admit(0, &[3], &mut held);
        assert_eq!((b.overlap(0, &[0]), b.overlap(0, &[1, 2]), b.evictions(0)), (1, 1, 1), "{policy:?}");
    }
}

#[test]
fn replicas_share_a_block_and_each_evicts_its_own() {
    let mut b = Blocks::new(3, 8, Some(2), Policy::Lru);
    let mut held = Vec::new();
    b.admit(0, &[0, 1], &mut held);
    b.admit(2, &[0, 2], &mut held);
    b.release(0, &held);
    let mut out = Vec::new();
    b.overlaps(&[0, 1, 3], &mut out);
    assert_eq!(out, [2, 0, 1]);
    assert_eq!((b.overlap(0, &[0, 1, 3]), b.overlap(2, &[0, 2])), (2, 2));
    // Replica 2 evicts its block 2 (a prompt's tail is released first), then its copy of 0;
    // replica 0 keeps its own.
    held.clear();
    b.admit(2, &[5], &mut held);
    b.overlaps(&[0, 1], &mut out);
    assert_eq!(out, [2, 0, 1]);
    assert_eq!((b.evictions(0), b.evictions(2), b.len(2)), (0, 1, 2));
    assert_eq!(b.missing(2, &[0, 2, 5]), 1);
    b.release(2, &held);
    held.clear();
    b.admit(2, &[6], &mut held);
    b.overlaps(&[0, 1], &mut out);
    assert_eq!(out, [2, 0, 0]);
}
