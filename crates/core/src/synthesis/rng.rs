//! CPython-compatible random numbers: MT19937 seeded like `random.Random(n)`, `getrandbits`,
//! `randint` and `random()`, plus AIPerf's per-component seed derivation.
//!
//! Transform synthesis must draw exactly the numbers AIPerf 0.13.0 draws for the same
//! `--random-seed`, so this follows CPython's `_randommodule.c` bit for bit.

use sha2::{Digest, Sha256};

const N: usize = 624;
const M: usize = 397;

/// AIPerf's seed for one component: the first 8 bytes (big-endian) of
/// `sha256("{seed}:{component}")`.
pub fn derive_seed(seed: u64, component: &str) -> u64 {
    let digest = Sha256::digest(format!("{seed}:{component}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The component name AIPerf uses for the prefix synthesizer's generator.
pub const SYNTHESIZER_COMPONENT: &str = "dataset.synthesis.synthesizer";

/// MT19937 with CPython's seeding and drawing functions.
#[derive(Clone)]
pub struct PyRandom {
    state: Box<[u32; N]>,
    index: usize,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyRandom").field("index", &self.index).finish_non_exhaustive()
    }
}

impl PyRandom {
    /// Same stream as CPython's `random.Random(seed)` for a non-negative integer seed.
    pub fn new(seed: u64) -> Self {
        // CPython feeds the absolute value's 32-bit words, least significant first, dropping
        // leading zero words (but always at least one word).
        let low = seed as u32;
        let high = (seed >> 32) as u32;
        if high == 0 { Self::from_key(&[low]) } else { Self::from_key(&[low, high]) }
    }

    /// `init_by_array` over `key`.
    fn from_key(key: &[u32]) -> Self {
        let mut mt = Box::new([0u32; N]);
        mt[0] = 19_650_218;
        for i in 1..N {
            mt[i] = 1_812_433_253u32.wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_add(i as u32);
        }
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        PyRandom { state: mt, index: N }
    }

    fn twist(&mut self) {
        let mt = &mut self.state;
        for k in 0..N {
            let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % N] & 0x7fff_ffff);
            let mut v = mt[(k + M) % N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            mt[k] = v;
        }
        self.index = 0;
    }

    /// The next raw 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)` for `k` in 1..=64 (words are filled least significant first, as CPython).
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        debug_assert!((1..=64).contains(&k));
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// A uniform integer in `0..n` (`_randbelow_with_getrandbits`); 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `randint(a, b)`: a uniform integer in `a..=b` (requires `a <= b`).
    pub fn randint(&mut self, a: u64, b: u64) -> u64 {
        a + self.below(b - a + 1)
    }

    /// `random()`: a uniform float in [0, 1) with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (f64::from(a) * 67_108_864.0 + f64::from(b)) * (1.0 / 9_007_199_254_740_992.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn matches_cpython_reference_draws() {
        // Values printed by CPython 3: `random.Random(seed)` then the same calls.
        let mut r = PyRandom::new(1);
        assert_eq!(r.getrandbits(32), 577_090_037);
        let mut r = PyRandom::new(0);
        assert_eq!(r.random(), 0.844_421_851_525_048_1);
        // A seed above 2^32 is fed as two words; 50-bit draws take two outputs.
        let mut r = PyRandom::new((1 << 40) + 5);
        assert_eq!(r.getrandbits(64), 9_535_518_150_286_577_956);
        assert_eq!(r.below(1_000_000_000_000_000), 747_368_412_824_233);
    }

    #[test]
    fn below_stays_in_range_and_uses_the_bit_length() {
        let mut r = PyRandom::new(42);
        for n in [1u64, 2, 3, 7, 1 << 40, u64::MAX] {
            for _ in 0..50 {
                assert!(r.below(n) < n);
            }
        }
    }
}
