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

    /// The blocks used once among these numbers, counted before the schedule is known (beside
    /// its making), the count's passes split among parts given to `fork`;
    /// [`BlockIds::mark_counted`] marks them for a schedule that sends each row at most once.
    pub fn count_uses(&self, fork: &impl Fork) -> Uses {
        Uses { renumbering: Renumbering::of(&self.ids, self.blocks, fork), ids: self.ids.len(), blocks: self.blocks }
    }

    /// [`BlockIds::mark_once_on`] with the uses counted beforehand ([`BlockIds::count_uses`] of
    /// these numbers; uses counted of other numbers mark nothing).
    pub fn mark_counted(&mut self, uses: Uses, schedule: &Schedule, fork: &impl Fork) {
        let Some(renumbering) = uses.renumbering.filter(|_| uses.ids == self.ids.len() && uses.blocks == self.blocks)
        else {
            return;
        };
        if rows_sent_once(self.rows, schedule) {
            self.renumber(&renumbering, fork);
        }
    }

    fn renumber(&mut self, renumbering: &Renumbering, fork: &impl Fork) {
        renumbering.apply(&mut self.ids, fork);
        self.blocks = renumbering.left;
    }
}

/// The uses of a [`BlockIds`]' blocks, counted before its schedule is known
/// ([`BlockIds::count_uses`]).
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
}

impl Numbering {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes `trace`'s rows after those taken so far, numbering their hash ids; `trace` is left
    /// empty.
    pub fn take(&mut self, trace: &mut Trace) {
        let base = self.ids.len() as u64;
        let interner = &mut self.interner;
        self.ids.extend(trace.all_hash_ids().iter().map(|&id| interner.intern(id)));
        trace.move_rows_onto(&mut self.rows, base);
    }

    /// The rows taken and their blocks numbered: those of [`Trace::into_parts`] and
    /// [`BlockIds::of`] of the trace they make.
    pub fn finish(self) -> Result<(Vec<Row>, BlockIds), SimulateError> {
        let ids = BlockIds::numbered(&self.interner, self.ids, self.rows.len())?;
        Ok((self.rows, ids))
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

/// The block numbers that occur once among a trace's numbers (`0..blocks`) given the number
/// [`cache::ONCE`]: no request after the one holding such a block looks it up, so the caches
/// keep no entry for it. The others are numbered again densely in the same order, so that the
/// block table indexed by them is as small as the blocks used more than once; numbers reaching
/// `ONCE` itself are left as they are.
///
/// The uses are counted in two bits a block (met, met again), so the tables stay in the
/// processor's cache; a block's new number is its old one less the blocks met once below it
/// (`below`, a count before each word of `once`). The numbers are counted and rewritten a
/// stretch a part, as many parts as a fork runs at once (at most four), each counting into
/// tables of its own.
struct Renumbering {
    once: Vec<u64>,
    below: Vec<u32>,
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
        let mut below = Vec::with_capacity(words);
        let mut singles = 0usize;
        for w in &once {
            below.push(singles as u32);
            singles += w.count_ones() as usize;
        }
        Some(Renumbering { once, below, left: blocks - singles })
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
        match (self.once.get(w), self.below.get(w)) {
            (Some(&o), Some(_)) if o & bit != 0 => cache::ONCE,
            (Some(&o), Some(&b)) => n - b - (o & (bit - 1)).count_ones(),
            _ => n,
        }
    }
}
