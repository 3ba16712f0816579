//! The trace's hash ids numbered densely as the block table's numbers, and the blocks used once
//! told apart.

use super::SimulateError;
use super::cache;
use crate::analysis::Interner;
use crate::fork::{Fork, InTurn, Part};
use crate::replay::schedule::{Schedule, Starts};
use crate::trace::{Row, Trace};

/// The trace's hash ids numbered densely from 0 (the block table's numbers), row by row as in
/// the trace's arena: made once for every simulation of the trace, and apart from its schedule
/// (so beside [`trace_schedule`](super::trace_schedule)), or while the trace is read ([`Numbering`]).
#[derive(Clone, Debug)]
pub struct BlockIds {
    pub(super) ids: Vec<u32>,
    /// The distinct hash ids.
    pub(super) blocks: usize,
    /// The trace's rows.
    pub(super) rows: usize,
}

impl BlockIds {
    /// Numbers the trace's hash ids in the order they first occur.
    pub fn of(trace: &Trace) -> Result<BlockIds, SimulateError> {
        let mut interner = Interner::new();
        let ids: Vec<u32> = trace.all_hash_ids().iter().map(|&id| interner.intern(id)).collect();
        BlockIds::numbered(&interner, ids, trace.len())
    }

    /// The numbers `interner` gave to the hash ids of `rows` rows; refused when it ran out of
    /// numbers.
    fn numbered(interner: &Interner, ids: Vec<u32>, rows: usize) -> Result<BlockIds, SimulateError> {
        if interner.overflowed() {
            return Err(SimulateError::TooManyBlocks);
        }
        Ok(BlockIds { ids, blocks: interner.size(), rows })
    }

    /// Gives the blocks that occur once the number [`cache::ONCE`] when `schedule` sends every
    /// row at most once (no request after the one holding such a block looks it up, so the
    /// caches keep no entry for it), the others numbered again densely in the same order; the
    /// simulations of `schedule` give the same results with or without it, faster with it.
    pub fn mark_once(&mut self, schedule: &Schedule) {
        self.mark_once_on(schedule, &InTurn);
    }

    /// [`BlockIds::mark_once`] with its passes over the numbers split among parts given to
    /// `fork`: the same numbers.
    pub fn mark_once_on(&mut self, schedule: &Schedule, fork: &impl Fork) {
        if rows_sent_once(self.rows, schedule)
            && let Some(renumbering) = Renumbering::of(&self.ids, self.blocks, fork)
        {
            self.renumber(&renumbering, fork);
        }
    }

    /// Gives the blocks that occur once the number [`cache::ONCE`], as [`BlockIds::mark_once`]
    /// does for [`trace_schedule`](super::trace_schedule)`(rows)` (these numbers' rows), with
    /// the uses counted as the numbers were given ([`Numbering::finish`]): known before that
    /// schedule is made, so beside its making. It sends each row once when no row starts
    /// sub-agents; rows that do leave the numbers as they are (the simulations are the same,
    /// slower). Uses counted of other numbers mark nothing.
    pub fn mark_counted(&mut self, uses: Uses, rows: &[Row], fork: &impl Fork) {
        let Some(renumbering) = uses.renumbering.filter(|_| uses.ids == self.ids.len() && uses.blocks == self.blocks)
        else {
            return;
        };
        if rows.len() == self.rows && rows.iter().all(|r| r.branches().is_empty()) {
            self.renumber(&renumbering, fork);
        }
    }

    fn renumber(&mut self, renumbering: &Renumbering, fork: &impl Fork) {
        renumbering.apply(&mut self.ids, fork);
        self.blocks = renumbering.left;
    }
}

/// The uses of a [`BlockIds`]' blocks, counted as they were numbered ([`Numbering::finish`]).
pub struct Uses {
    renumbering: Option<Renumbering>,
    /// How many numbers and blocks were counted.
    ids: usize,
    blocks: usize,
}

/// A trace's rows taken a block of its file at a time, in file order, their hash ids numbered
/// as they come: [`BlockIds::of`] the whole trace, without its `u64` ids ever held at once.
#[derive(Default)]
pub struct Numbering {
    interner: Interner,
    ids: Vec<u32>,
    rows: Vec<Row>,
    /// A bit per number: set once its id came again.
    again: Vec<u64>,
}

impl Numbering {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes `trace`'s rows after those taken so far, numbering their hash ids; `trace` is left
    /// empty.
    pub fn take(&mut self, trace: &mut Trace) {
        let base = self.ids.len() as u64;
        let (interner, again) = (&mut self.interner, &mut self.again);
        self.ids.extend(trace.all_hash_ids().iter().map(|&id| {
            let numbered = interner.size();
            let n = interner.intern(id);
            if (n as usize) < numbered {
                let (w, bit) = Renumbering::at(n);
                if w >= again.len() {
                    again.resize((w + 1).max(2 * again.len()), 0);
                }
                again[w] |= bit;
            }
            n
        }));
        trace.move_rows_onto(&mut self.rows, base);
    }

    /// The rows taken, their blocks numbered, and the blocks' uses: those of
    /// [`Trace::into_parts`], [`BlockIds::of`] of the trace they make, and what
    /// [`BlockIds::mark_counted`] marks them with.
    pub fn finish(self) -> Result<(Vec<Row>, BlockIds, Uses), SimulateError> {
        let ids = BlockIds::numbered(&self.interner, self.ids, self.rows.len())?;
        let uses = Uses {
            renumbering: Renumbering::of_repeated(self.again, ids.blocks),
            ids: ids.ids.len(),
            blocks: ids.blocks,
        };
        Ok((self.rows, ids, uses))
    }
}

/// Whether `schedule` sends each row of `trace` at most once (a fixed schedule's sessions, each
/// run once): then a block number that occurs once in the trace is asked for by one request only.
fn rows_sent_once(rows: usize, schedule: &Schedule) -> bool {
    let Starts::Listed(starts) = &schedule.starts else { return false };
    let mut sent = vec![false; rows];
    for start in starts {
        let Some(session) = schedule.sessions.get(start.session as usize) else { return false };
        for turn in session.turns.iter().take(start.turns as usize) {
            match sent.get_mut(turn.row as usize) {
                Some(s) if !*s => *s = true,
                _ => return false,
            }
        }
    }
    true
}

/// [`Renumbering`] of `ids` (numbers `0..blocks`) applied: how many numbers are left.
#[cfg(test)]
pub(super) fn mark_once(ids: &mut [u32], blocks: usize, fork: &impl Fork) -> usize {
    let Some(renumbering) = Renumbering::of(ids, blocks, fork) else { return blocks };
    renumbering.apply(ids, fork);
    renumbering.left
}

/// The numbers' stretch a part: as many parts as `fork` runs at once, at most four.
fn stretch(len: usize, fork: &impl Fork) -> usize {
    len.div_ceil(fork.width().clamp(1, 4)).max(1)
}

/// A word of [`Renumbering`]: the numbers of its 64 that occur once, and how many numbers below
/// it do.
#[derive(Clone, Copy)]
struct Word {
    once: u64,
    below: u64,
}

/// The block numbers that occur once among a trace's numbers (`0..blocks`) given the number
/// [`cache::ONCE`]: no request after the one holding such a block looks it up, so the caches
/// keep no entry for it. The others are numbered again densely in the same order, so that the
/// block table indexed by them is as small as the blocks used more than once; numbers reaching
/// `ONCE` itself are left as they are.
///
/// The uses are counted in two bits a block (met, met again), so the tables stay in the
/// processor's cache, or a bit a block as the numbers are given (met again: every number given
/// was met); a block's new number is its old one less the blocks met once below it (counted
/// before each [`Word`]). The numbers are counted and rewritten a stretch a part, as many parts
/// as a fork runs at once (at most four), each counting into tables of its own.
struct Renumbering {
    /// Per word of 64 numbers: which occur once, and how many below the word do.
    words: Vec<Word>,
    /// How many numbers are left.
    left: usize,
}

impl Renumbering {
    /// The uses of `ids` (numbers `0..blocks`) counted a stretch a part given to `fork`; `None`
    /// when numbers reach [`cache::ONCE`].
    fn of(ids: &[u32], blocks: usize, fork: &impl Fork) -> Option<Renumbering> {
        if blocks > cache::ONCE as usize {
            return None;
        }
        let words = blocks.div_ceil(64);
        let counts: Vec<Part<'_, [Vec<u64>; 2]>> = ids
            .chunks(stretch(ids.len(), fork))
            .map(|part| {
                Box::new(move || {
                    let (mut met, mut again) = (vec![0u64; words], vec![0u64; words]);
                    for &n in part {
                        let (w, bit) = Self::at(n);
                        if let (Some(m), Some(a)) = (met.get_mut(w), again.get_mut(w)) {
                            *a |= *m & bit;
                            *m |= bit;
                        }
                    }
                    [met, again]
                }) as Part<'_, [Vec<u64>; 2]>
            })
            .collect();
        let mut counts = fork.run(counts).into_iter();
        let [mut met, mut again] = counts.next().unwrap_or_else(|| [vec![0; words], vec![0; words]]);
        for [m2, a2] in counts {
            for (((m, a), m2), a2) in met.iter_mut().zip(&mut again).zip(m2).zip(a2) {
                *a |= a2 | (*m & m2);
                *m |= m2;
            }
        }
        let once: Vec<u64> = met.iter().zip(&again).map(|(m, a)| m & !a).collect();
        Some(Renumbering::of_once(once, blocks))
    }

    /// The renumbering of numbers `0..blocks` that all occur, those of `again` (a bit per
    /// number) more than once; `None` when numbers reach [`cache::ONCE`].
    fn of_repeated(mut again: Vec<u64>, blocks: usize) -> Option<Renumbering> {
        if blocks > cache::ONCE as usize {
            return None;
        }
        let words = blocks.div_ceil(64);
        again.resize(words, 0);
        for (w, a) in again.iter_mut().enumerate() {
            // The numbers of the word that exist: all but past `blocks` in the last word.
            let met = match blocks - w * 64 {
                left if left >= 64 => u64::MAX,
                left => (1u64 << left) - 1,
            };
            *a = met & !*a;
        }
        Some(Renumbering::of_once(again, blocks))
    }

    /// The renumbering that gives the numbers of `once` (a bit per number of `0..blocks`)
    /// [`cache::ONCE`].
    fn of_once(once: Vec<u64>, blocks: usize) -> Renumbering {
        let mut singles = 0usize;
        let words = once
            .into_iter()
            .map(|once| {
                let word = Word { once, below: singles as u64 };
                singles += once.count_ones() as usize;
                word
            })
            .collect();
        Renumbering { words, left: blocks - singles }
    }

    /// Gives each of `ids` its new number, a stretch a part given to `fork`.
    fn apply(&self, ids: &mut [u32], fork: &impl Fork) {
        let rewrites: Vec<Part<'_, ()>> = ids
            .chunks_mut(stretch(ids.len(), fork))
            .map(|part| {
                Box::new(move || {
                    for n in part {
                        *n = self.number(*n);
                    }
                }) as Part<'_, ()>
            })
            .collect();
        fork.run(rewrites);
    }

    /// The word and the bit of number `n`.
    fn at(n: u32) -> (usize, u64) {
        ((n / 64) as usize, 1u64 << (n % 64))
    }

    /// The new number of `n`: [`cache::ONCE`] for a block met once, else its number less the
    /// blocks met once below it.
    #[inline]
    fn number(&self, n: u32) -> u32 {
        let (w, bit) = Self::at(n);
        let Some(word) = self.words.get(w) else { return n };
        // Both worked out, one kept: no branch on which.
        let renumbered = n.wrapping_sub((word.below + u64::from((word.once & (bit - 1)).count_ones())) as u32);
        if word.once & bit != 0 { cache::ONCE } else { renumbered }
    }
}
