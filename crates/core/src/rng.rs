//! CPython-compatible random numbers: MT19937 seeded like `random.Random(n)`, `getrandbits`,
//! `randint` and `random()`, plus AIPerf's per-component seed derivation; and NumPy's
//! `default_rng` (PCG64) for the draws AIPerf makes with NumPy.
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

/// NumPy's `np.random.default_rng(seed)`: PCG64 (XSL-RR 128/64) seeded through a
/// `SeedSequence`, for the draws AIPerf makes with NumPy (its `RandomGenerator.shuffle`).
#[derive(Clone, Debug)]
pub struct NumpyRandom {
    state: u128,
    inc: u128,
    /// The upper half of the last 64-bit output, not yet handed out as a 32-bit draw.
    spare: Option<u32>,
}

const PCG_MULT: u128 = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645;

impl NumpyRandom {
    /// Same stream as `np.random.default_rng(seed)` for a non-negative integer seed.
    pub fn new(seed: u64) -> Self {
        let s = seed_sequence(seed);
        let word = |i: usize| u64::from(s[2 * i]) | (u64::from(s[2 * i + 1]) << 32);
        let initstate = (u128::from(word(0)) << 64) | u128::from(word(1));
        let initseq = (u128::from(word(2)) << 64) | u128::from(word(3));
        let mut r = NumpyRandom { state: 0, inc: (initseq << 1) | 1, spare: None };
        r.step();
        r.state = r.state.wrapping_add(initstate);
        r.step();
        r
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let x = ((self.state >> 64) as u64) ^ (self.state as u64);
        x.rotate_right((self.state >> 122) as u32)
    }

    /// The next 32-bit output: the halves of a 64-bit one, low first.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(hi) = self.spare.take() {
            return hi;
        }
        let x = self.next_u64();
        self.spare = Some((x >> 32) as u32);
        x as u32
    }

    /// A uniform integer in `0..=max` (NumPy's `random_interval`: masked rejection).
    pub fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mask = u64::MAX >> max.leading_zeros();
        loop {
            let v = if max <= u64::from(u32::MAX) { u64::from(self.next_u32()) & mask } else { self.next_u64() & mask };
            if v <= max {
                return v;
            }
        }
    }

    /// `Generator.shuffle` of a list: Fisher–Yates from the end.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.interval(i as u64) as usize;
            v.swap(i, j);
        }
    }
}

/// NumPy's `SeedSequence(seed).generate_state(4, np.uint64)` as eight 32-bit words.
fn seed_sequence(seed: u64) -> [u32; 8] {
    const INIT_A: u32 = 0x43b0_d7e5;
    const MULT_A: u32 = 0x931e_8875;
    const INIT_B: u32 = 0x8b51_f9dd;
    const MULT_B: u32 = 0x58f3_8ded;
    const MIX_L: u32 = 0xca01_f9dd;
    const MIX_R: u32 = 0x4973_f715;
    let entropy: Vec<u32> = if seed >> 32 == 0 { vec![seed as u32] } else { vec![seed as u32, (seed >> 32) as u32] };
    let mut hash_a = INIT_A;
    let mut hashmix = |v: u32| {
        let mut v = v ^ hash_a;
        hash_a = hash_a.wrapping_mul(MULT_A);
        v = v.wrapping_mul(hash_a);
        v ^ (v >> 16)
    };
    let mix = |x: u32, y: u32| {
        let r = MIX_L.wrapping_mul(x).wrapping_sub(MIX_R.wrapping_mul(y));
        r ^ (r >> 16)
    };
    let mut pool = [0u32; 4];
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0));
    }
    for src in 0..4 {
        for dst in 0..4 {
            if src != dst {
                let h = hashmix(pool[src]);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    let mut hash_b = INIT_B;
    let mut out = [0u32; 8];
    for (i, o) in out.iter_mut().enumerate() {
        let mut v = pool[i % 4] ^ hash_b;
        hash_b = hash_b.wrapping_mul(MULT_B);
        v = v.wrapping_mul(hash_b);
        *o = v ^ (v >> 16);
    }
    out
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
    fn matches_numpys_default_rng() {
        // `np.random.default_rng(seed).bit_generator.random_raw()` (NumPy 2.4).
        assert_eq!(NumpyRandom::new(0).next_u64(), NUMPY_SEED0);
        assert_eq!(NumpyRandom::new((1 << 40) + 5).next_u64(), NUMPY_SEED_BIG);
    }

    const NUMPY_SEED0: u64 = 11_749_869_230_777_074_271;
    const NUMPY_SEED_BIG: u64 = 87_427_594_128_977_387;

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
