//! The simulator's replicas in engine steps ([`Steps`]): each replica a [`StepHost`] over the
//! cluster's block table, in virtual time; a step's end is an event of the simulation.

use std::cmp::Reverse;

use super::engine::{Progress, Slots, StepHost, Steps};
use super::{Event, Sim, us_to_ns};

/// Replica `replica` of the simulation at `now`.
struct OnReplica<'s, 'a> {
    sim: &'s mut Sim<'a>,
    replica: u32,
    now: u64,
}

impl StepHost for OnReplica<'_, '_> {
    type Id = u32;

    fn progress(&mut self, id: u32) -> &mut Progress {
        &mut self.sim.pending[id as usize].progress
    }

    fn order(&mut self) -> &mut Vec<u32> {
        &mut self.sim.replicas[self.replica as usize].order
    }

    fn next_waiting(&self) -> Option<u32> {
        let r = &self.sim.replicas[self.replica as usize];
        if self.sim.cluster.max_running.is_some_and(|m| r.running >= m) {
            return None;
        }
        r.waiting.front().copied()
    }

    fn fits_next(&self, more: u64) -> bool {
        self.sim.fits_next(self.replica, usize::try_from(more).unwrap_or(usize::MAX))
    }

    fn start_next(&mut self) -> u64 {
        let (replica, now) = (self.replica, self.now);
        let sim = &mut *self.sim;
        let Some(&idx) = sim.replicas[replica as usize].waiting.front() else { return 0 };
        let first = !sim.pending[idx as usize].progress.started;
        let started = sim.start(replica, first);
        if first {
            let record = started.record(&sim.pending[idx as usize], replica, now, now, now, 0);
            sim.keep_record(idx, record);
        }
        started.cached
    }

    fn extend(&mut self, id: u32, partial: bool) -> bool {
        let (sim, replica) = (&mut *self.sim, self.replica);
        let kept = sim.blocks.extend(replica, &mut sim.pending[id as usize].held, partial);
        let s = &mut sim.replicas[replica as usize].stats;
        s.peak_blocks = s.peak_blocks.max(sim.blocks.len(replica) as u64);
        kept
    }

    fn preempt(&mut self, id: u32) {
        self.sim.preempt(id);
    }

    fn token(&mut self, id: u32, produced: u64) {
        let out_idx = self.sim.pending[id as usize].out_idx;
        if produced == 1
            && let Some(out) = self.sim.out.requests.get_mut(out_idx as usize)
        {
            out.first_token_ns = self.now;
        }
    }

    fn slots(&mut self) -> &mut Slots {
        &mut self.sim.replicas[self.replica as usize].slots
    }

    fn finish(&mut self, id: u32) {
        let (sim, now) = (&mut *self.sim, self.now);
        let p = &sim.pending[id as usize];
        if let Some(out) = sim.out.requests.get_mut(p.out_idx as usize) {
            out.end_ns = now;
            out.itl_ns = now.saturating_sub(out.first_token_ns) / (p.progress.output.saturating_sub(1)).max(1);
        }
        let (job, _) = sim.release(id);
        sim.free(id);
        sim.done.push(job);
    }
}

impl Sim<'_> {
    /// Builds the replica's next step at `now` ([`Steps::plan`]) and schedules its end; with
    /// nothing to run, the replica waits for an arrival.
    pub(super) fn schedule_step(&mut self, replica: u32, now: u64) {
        let Some(steps) = self.cluster.steps else { return };
        let block_size = self.cluster.block_size;
        let mut batch = std::mem::take(&mut self.replicas[replica as usize].batch);
        let us = steps.plan(&mut OnReplica { sim: self, replica, now }, block_size, &mut batch);
        let r = &mut self.replicas[replica as usize];
        r.batch = batch;
        r.stepping = us.is_some();
        if let Some(us) = us {
            let end = now.saturating_add(us_to_ns(us));
            self.seq += 1;
            self.ends.push(Reverse((end, self.seq, replica, Event::Step)));
        }
    }

    /// The replica's step ends at `now`: its requests make their tokens, those done end (their
    /// jobs into `self.done`), and the next step starts.
    pub(super) fn step_end(&mut self, replica: u32, now: u64) {
        let batch = std::mem::take(&mut self.replicas[replica as usize].batch);
        Steps::end(&mut OnReplica { sim: self, replica, now }, &batch);
        self.replicas[replica as usize].batch = batch;
        self.schedule_step(replica, now);
    }
}
