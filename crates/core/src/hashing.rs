//! Hash maps keyed by what a trace or a run names (session ids, conversation ids, metric names).
//!
//! The standard library's SipHash resists collisions an attacker crafts, at several times the cost
//! of a fast hasher; a million distinct session ids made it the largest single cost of reading a
//! trace. These maps hash with foldhash at a fixed seed instead: the same on every run and every
//! platform (nothing here depends on the OS's randomness), and nothing reads a map's iteration
//! order.

use std::collections::{HashMap, HashSet};

/// The hasher of [`FastMap`] and [`FastSet`]: foldhash at a fixed seed.
pub type FastHash = foldhash::fast::FixedState;

/// A `HashMap` with [`FastHash`].
pub type FastMap<K, V> = HashMap<K, V, FastHash>;

/// A `HashSet` with [`FastHash`].
pub type FastSet<K> = HashSet<K, FastHash>;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn the_seed_is_fixed() {
        let (a, b) = (FastHash::default(), FastHash::default());
        assert_eq!(a.hash_one("session-17"), b.hash_one("session-17"));
        let mut m: FastMap<Box<str>, u32> = FastMap::default();
        m.insert("a".into(), 1);
        assert_eq!(m.get("a"), Some(&1));
    }
}
