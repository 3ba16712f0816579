//! Which session a generated run starts next: AIPerf's dataset samplers
//! (`--dataset-sampling-strategy`). `sequential` walks the sessions in trace order and starts
//! again after the last; `random` draws one with replacement; `shuffle` walks a permutation and
//! draws a new one from the previous after the last. The random ones draw AIPerf's numbers for
//! the same `--random-seed`, from AIPerf's derived seed of `dataset.sampler.random` or
//! `dataset.sampler.shuffle`: `random` with CPython's `random.Random` (`choice`), `shuffle` with
//! NumPy's `default_rng` (AIPerf's `RandomGenerator.shuffle`).

use crate::rng::{NumpyRandom, PyRandom, derive_seed};

/// AIPerf's dataset sampling strategies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Sampling {
    /// In trace order, starting again after the last session.
    #[default]
    Sequential,
    /// Uniformly with replacement.
    Random,
    /// Every session once in a random order, then again in a new order.
    Shuffle,
}

impl Sampling {
    /// AIPerf's name of the strategy.
    pub fn name(self) -> &'static str {
        match self {
            Sampling::Sequential => "sequential",
            Sampling::Random => "random",
            Sampling::Shuffle => "shuffle",
        }
    }
}

/// The state of one walk over `n` sessions by a [`Sampling`].
#[derive(Clone, Debug)]
pub struct Sampler {
    state: State,
}

#[derive(Clone, Debug)]
enum State {
    Sequential {
        next: usize,
    },
    Random {
        rng: PyRandom,
    },
    /// The current permutation, made on the first draw, and the position in it.
    Shuffle {
        rng: NumpyRandom,
        order: Vec<u32>,
        next: usize,
    },
}

impl Sampler {
    /// A walk by `sampling`, its numbers seeded from the run's `seed` as AIPerf derives them.
    pub fn new(sampling: Sampling, seed: u64) -> Sampler {
        let state = match sampling {
            Sampling::Sequential => State::Sequential { next: 0 },
            Sampling::Random => State::Random { rng: PyRandom::new(derive_seed(seed, "dataset.sampler.random")) },
            Sampling::Shuffle => State::Shuffle {
                rng: NumpyRandom::new(derive_seed(seed, "dataset.sampler.shuffle")),
                order: Vec::new(),
                next: 0,
            },
        };
        Sampler { state }
    }

    /// The same walk after `k` draws among `n` sessions: where a later phase continues one that
    /// drew `k` sessions from it (AIPerf's phases share one sampler).
    pub fn skip(&mut self, n: usize, k: u64) {
        if n == 0 {
            return;
        }
        if let State::Sequential { next } = &mut self.state {
            // Only the position matters: `next == n` and `next == 0` draw the same session.
            *next = usize::try_from(k % n as u64).unwrap_or(0);
            return;
        }
        for _ in 0..k {
            self.next(n);
        }
    }

    /// The index of the next session among `n` (`n` ≥ 1 and the same at every call).
    pub fn next(&mut self, n: usize) -> usize {
        match &mut self.state {
            State::Sequential { next } => {
                if *next >= n {
                    *next = 0;
                }
                *next += 1;
                *next - 1
            }
            State::Random { rng } => rng.below(n as u64) as usize,
            State::Shuffle { rng, order, next } => {
                if order.is_empty() {
                    *order = (0..n as u32).collect();
                    rng.shuffle(order);
                } else if *next >= order.len() {
                    rng.shuffle(order);
                    *next = 0;
                }
                *next += 1;
                order[*next - 1] as usize
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(s: Sampling, seed: u64, n: usize, k: usize) -> Vec<usize> {
        let mut sampler = Sampler::new(s, seed);
        (0..k).map(|_| sampler.next(n)).collect()
    }

    #[test]
    fn sequential_wraps_in_order() {
        assert_eq!(walk(Sampling::Sequential, 7, 3, 7), [0, 1, 2, 0, 1, 2, 0]);
    }

    /// AIPerf 0.13.0's `RandomSampler` and `ShuffleSampler` over ids `0..5` after
    /// `rng.init(0)` (`aiperf.dataset.dataset_samplers`, CPython 3.11, NumPy 2.4).
    #[test]
    fn random_and_shuffle_draw_aiperfs_numbers() {
        assert_eq!(walk(Sampling::Random, 0, 5, 10), RANDOM_SEED0);
        assert_eq!(walk(Sampling::Shuffle, 0, 5, 10), SHUFFLE_SEED0);
    }

    const RANDOM_SEED0: [usize; 10] = [1, 0, 0, 1, 1, 1, 4, 1, 3, 1];
    const SHUFFLE_SEED0: [usize; 10] = [2, 1, 3, 4, 0, 1, 4, 3, 2, 0];

    #[test]
    fn a_skip_continues_the_walk_where_k_draws_left_it() {
        for s in [Sampling::Sequential, Sampling::Random, Sampling::Shuffle] {
            for k in [0, 1, 4, 5, 13] {
                let mut skipped = Sampler::new(s, 9);
                skipped.skip(5, k);
                let after: Vec<usize> = (0..12).map(|_| skipped.next(5)).collect();
                assert_eq!(after, walk(s, 9, 5, k as usize + 12)[k as usize..], "{s:?} after {k}");
            }
        }
    }

    #[test]
    fn shuffle_sends_every_session_once_per_pass() {
        let w = walk(Sampling::Shuffle, 3, 6, 18);
        for pass in w.chunks(6) {
            let mut p = pass.to_vec();
            p.sort_unstable();
            assert_eq!(p, [0, 1, 2, 3, 4, 5]);
        }
        assert_ne!(w[..6], w[6..12]);
    }
}
