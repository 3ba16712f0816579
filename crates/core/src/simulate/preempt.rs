//! Preemption as vLLM v1 does it (`Scheduler.schedule`, `_preempt_request`): when a running
//! request needs a KV block and none can be freed, the latest started running request
//! (`self.running.pop()`) gives its blocks back and goes first in the waiting queue; when it
//! starts again it computes its prompt and its output so far anew (its prompt's blocks may still
//! be cached; its output blocks are not looked up), then goes on decoding.

use super::row_ids;

impl super::Sim<'_> {
    /// Preempts the running request `idx`, already taken out of its replica's running order:
    /// its blocks are released and it waits first in line; counted in the replica's stats.
    pub(super) fn preempt(&mut self, idx: u32) {
        let (job, replica) = self.release(idx);
        let blocks = row_ids(self.rows, self.ids, job.row).len() as u64;
        let r = &mut self.replicas[replica as usize];
        r.waiting.push_front(idx);
        r.waiting_blocks += blocks;
        r.stats.preemptions += 1;
        r.stats.peak_waiting = r.stats.peak_waiting.max(r.waiting.len() as u64);
    }
}
