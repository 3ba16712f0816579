//! What would a cluster hit? A discrete-event simulation of a trace served by replicas with a
//! finite prefix cache of KV blocks, a router in front and a simple engine timing.
//!
//! Arrivals are the replay's own: [`simulate`] drives the [`Dispatch`] of a [`Schedule`] with a
//! virtual clock, so row timestamps, sessions whose next turn waits for the previous one's end
//! plus its `delay`, and everything else the replay decides, are the same implementation. Each
//! request is routed ([`Router`]) to a replica, waits in that replica's FIFO queue until a
//! running slot is free (`max_running`) and the blocks it would pin (new ones, and cached ones
//! no running request holds) fit beside the pinned ones, then
//! runs: its prompt blocks are matched as a chained prefix ([`cache`]), pinned until it ends,
//! and its timing follows [`Engine`]. Blocks are the trace's hash ids (a row's prompt); decode
//! tokens are not cached and take no capacity. As in vLLM, a request's blocks are released tail
//! first, and a partial last block (a row's `input_length` short of its ids' whole blocks), which
//! vLLM does not cache, is the first to be evicted. The engine serves the hit blocks' tokens as vLLM
//! does ([`engine_cached_tokens`]: never the prompt's last token); the per-row hit rate counts
//! the blocks found in the cache, as `analyze-trace` does.
//!
//! Nothing here reads a clock or the OS: the random router draws from a seeded generator, so a
//! run is a function of the trace and the [`Cluster`].

mod blocks;
pub mod cache;
pub mod calibrate;
mod cluster;
pub mod engine;
mod error;
mod numbered;
mod outcome;
mod preempt;
mod stepped;
mod timing;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

pub use blocks::{OutputBlocks, blocks_for_gb, engine_cached_tokens};
use cache::Blocks;
pub use cache::Policy;
pub use cluster::{Cluster, Router};
pub use engine::{Progress, StepHost, StepOrder, Steps};
pub use error::{MAX_REPLICAS, SimulateError};
pub use numbered::{BlockIds, Numbering, Uses};
pub use outcome::{ReplicaStats, Sample, SimRequest, Simulation};
pub use timing::Engine;

use crate::replay::dispatch::{Dispatch, Job, Peek};
use crate::replay::schedule::{Schedule, ScheduleError, Timing};
use crate::rng::PyRandom;
use crate::trace::{Row, Trace};

/// The schedule a simulation replays: the trace's timestamps shifted to start at zero (a fixed
/// schedule with AIPerf's auto offset), in `aiperf-cli simulate` and the browser alike.
pub fn trace_schedule(rows: &[Row]) -> Result<Schedule, ScheduleError> {
    let timing = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    crate::replay::schedule::build_of(rows, timing, None)
}

/// The sampling interval ([`Cluster::sample_every_ns`]) that gives about `samples` points over
/// the schedule's span, at least 1 ms.
pub fn sample_every_ns(schedule: &Schedule, samples: u64) -> u64 {
    let span_ns = schedule.starts().filter_map(|s| s.offset_us).max().unwrap_or(0).saturating_mul(1000);
    (span_ns / samples.max(1)).max(1_000_000)
}

struct Replica {
    waiting: VecDeque<u32>,
    /// Blocks of the waiting requests (pending prefill, for the KV-aware cost).
    waiting_blocks: u64,
    running: u32,
    /// Blocks of the running requests.
    running_blocks: u64,
    stats: ReplicaStats,
    /// With [`Steps`]: the running requests in the order they started, whether a step is under
    /// way, and its batch (request, prompt tokens it computes; 0: one decode token).
    order: Vec<u32>,
    stepping: bool,
    batch: Vec<(u32, u64)>,
    slots: engine::Slots,
}

/// A request between its arrival and its end.
struct Pending {
    job: Job,
    arrival_ns: u64,
    replica: u32,
    /// The blocks it pinned (reused buffers).
    held: Vec<u32>,
    /// Its tokens and output blocks (the request engine reads the output blocks still to take
    /// and whether the last stays partial; [`Steps`] all of it).
    progress: Progress,
    /// Its time between tokens and its end, once started.
    itl_ns: u64,
    end_ns: u64,
    /// Its record's place in `out.requests` (`u32::MAX`: not started yet).
    out_idx: u32,
    /// Its place in the order of starts.
    start_seq: u64,
    /// Its place in the order of arrivals.
    arrival_seq: u64,
}

/// What a request's next event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// It takes an output block.
    Grow,
    /// It ends.
    End,
    /// Its replica's step ends (the event's number is the replica's).
    Step,
}

/// What starting a request pinned and counted.
struct Started {
    input: u64,
    output: u64,
    hit: usize,
    cached: u64,
    blocks: usize,
}

impl Started {
    /// The record of `p` started on `replica` at `start_ns`, with its first token, end and
    /// inter-token gap as given.
    fn record(
        &self,
        p: &Pending,
        replica: u32,
        start_ns: u64,
        first_token_ns: u64,
        end_ns: u64,
        itl_ns: u64,
    ) -> SimRequest {
        SimRequest {
            row: p.job.row,
            replica,
            run: p.job.run.min(u64::from(u32::MAX)) as u32,
            turn: p.job.turn,
            arrival_ns: p.arrival_ns,
            start_ns,
            first_token_ns,
            end_ns,
            itl_ns,
            input_tokens: self.input,
            output_tokens: self.output,
            cached_tokens: self.cached,
            blocks: self.blocks as u32,
            hit_blocks: self.hit as u32,
        }
    }
}

struct Sim<'a> {
    rows: &'a [Row],
    /// The trace's hash ids as dense block numbers, row by row as in the trace's arena.
    ids: &'a [u32],
    blocks: Blocks,
    /// Each replica's cached prefix of the request being routed.
    overlaps: Vec<u32>,
    cluster: Cluster,
    replicas: Vec<Replica>,
    pending: Vec<Pending>,
    free_pending: Vec<u32>,
    spare: Vec<Vec<u32>>,
    /// Requests' and replicas' next events (time, order, request or replica, what).
    ends: BinaryHeap<Reverse<(u64, u64, u32, Event)>>,
    /// Requests a step ended, for the dispatcher.
    done: Vec<Job>,
    /// Requests ended and not handed over yet: their end, place in the order of starts and
    /// record's place in `out.requests`.
    ended: Vec<(u64, u64, u32)>,
    /// Whether `out.requests` keeps every request (else a record's place is reused once it is
    /// handed over: the places free).
    keep: bool,
    free_records: Vec<u32>,
    /// Requests started.
    started: u64,
    /// The arrivals from the earliest of a request still waiting or running on, in order: the
    /// time of each and whether it has ended.
    arrivals: VecDeque<(u64, bool)>,
    /// The place in the order of arrivals of the first of `arrivals`.
    arrivals_from: u64,
    seq: u64,
    rr: u64,
    rng: PyRandom,
    out: Simulation,
    next_sample_ns: u64,
}

/// What a simulation tells of its requests as it goes on ([`simulate_numbered`]).
pub trait Observer {
    /// A request ended: its place in the order of starts (its index in
    /// [`Simulation::requests`] when they are kept) and its final record. Requests are handed
    /// over in the order they ended, those ending at the same time in the order they started.
    fn ended(&mut self, i: usize, r: &SimRequest);

    /// Every request handed over from now on arrived at or after `ns` (`u64::MAX`: no request
    /// is handed over any more): nothing it records happens before `ns`.
    fn arrivals_from(&mut self, ns: u64) {
        let _ = ns;
    }

    /// Whether [`Simulation::requests`] is to hold every request at the end; else it is left
    /// empty, and the simulation holds the records of the requests running only.
    fn keep_requests(&self) -> bool {
        true
    }
}

impl<F: FnMut(usize, &SimRequest)> Observer for F {
    fn ended(&mut self, i: usize, r: &SimRequest) {
        self(i, r);
    }
}

/// Simulates `schedule` (built from `trace`) on `cluster`.
pub fn simulate(trace: &Trace, schedule: Arc<Schedule>, cluster: &Cluster) -> Result<Simulation, SimulateError> {
    simulate_observed(trace, schedule, cluster, &mut |_, _| {})
}

/// [`simulate`], handing each request to `on_end` once it has ended, with its index in
/// [`Simulation::requests`]: in the order the requests ended, those ending at the same time in
/// the order they started (their indices), as the simulation goes on. A request's record is
/// final when it is handed over.
pub fn simulate_observed(
    trace: &Trace,
    schedule: Arc<Schedule>,
    cluster: &Cluster,
    on_end: &mut dyn FnMut(usize, &SimRequest),
) -> Result<Simulation, SimulateError> {
    cluster.check()?;
    let mut ids = BlockIds::of(trace)?;
    ids.mark_once(&schedule);
    simulate_numbered(trace.rows(), schedule, &ids, cluster, &mut { on_end })
}

/// [`simulate_observed`] of a trace's rows (its hash ids' values no longer needed:
/// [`Trace::into_parts`]) and its blocks numbered beforehand ([`BlockIds::of`] of the trace), told
/// to an [`Observer`].
pub fn simulate_numbered(
    rows: &[Row],
    schedule: Arc<Schedule>,
    ids: &BlockIds,
    cluster: &Cluster,
    on_end: &mut dyn Observer,
) -> Result<Simulation, SimulateError> {
    cluster.check()?;
    // A trace's rows hold their ids in row order: the last one's end is where its numbers end.
    let reach = rows.last().map_or(0, |r| r.ids_range().end);
    if ids.rows != rows.len() || reach != ids.ids.len() {
        return Err(SimulateError::BlockIdsOfAnotherTrace {
            numbered: ids.rows,
            rows: rows.len(),
            reach,
            blocks: ids.ids.len(),
        });
    }
    let blocks = Blocks::new(cluster.replicas as usize, ids.blocks, cluster.kv_blocks, cluster.policy);
    let ids = &ids.ids[..];
    let replicas = (0..cluster.replicas)
        .map(|_| Replica {
            waiting: VecDeque::new(),
            waiting_blocks: 0,
            running: 0,
            running_blocks: 0,
            stats: ReplicaStats::default(),
            order: Vec::new(),
            stepping: false,
            batch: Vec::new(),
            slots: engine::Slots::new(cluster.max_running),
        })
        .collect();
    let mut sim = Sim {
        rows,
        ids,
        blocks,
        overlaps: Vec::new(),
        cluster: *cluster,
        replicas,
        pending: Vec::new(),
        free_pending: Vec::new(),
        spare: Vec::new(),
        ends: BinaryHeap::new(),
        done: Vec::new(),
        ended: Vec::new(),
        keep: on_end.keep_requests(),
        free_records: Vec::new(),
        started: 0,
        arrivals: VecDeque::new(),
        arrivals_from: 0,
        seq: 0,
        rr: 0,
        rng: PyRandom::new(cluster.seed),
        out: Simulation { requests: Vec::with_capacity(rows.len()), ..Simulation::default() },
        next_sample_ns: 0,
    };
    let mut dispatch = Dispatch::new(schedule, None, None);
    let mut now = 0u64;
    loop {
        let next_end = sim.ends.peek().map(|Reverse((t, _, _, _))| *t);
        match dispatch.peek(now) {
            Peek::Due { deadline_ns, .. } if next_end.is_none_or(|e| deadline_ns < e) => {
                if deadline_ns > now {
                    sim.hand_over_ended(on_end, deadline_ns);
                }
                now = now.max(deadline_ns);
                sim.sample_until(now);
                if let Some(job) = dispatch.take(now) {
                    sim.arrive(job, now);
                }
            }
            _ => {
                let Some(Reverse((t, _, p, event))) = sim.ends.pop() else { break };
                if t > now {
                    sim.hand_over_ended(on_end, t);
                }
                now = now.max(t);
                sim.sample_until(now);
                match event {
                    Event::Grow => sim.grow(p, now),
                    Event::End => {
                        let job = sim.finish(p, now);
                        dispatch.complete(&job, now);
                    }
                    Event::Step => {
                        sim.step_end(p, now);
                        for job in std::mem::take(&mut sim.done) {
                            dispatch.complete(&job, now);
                        }
                    }
                }
            }
        }
    }
    sim.hand_over_ended(on_end, u64::MAX);
    for (i, r) in sim.replicas.iter_mut().enumerate() {
        r.stats.evictions = sim.blocks.evictions(i as u32);
    }
    sim.out.replicas = sim.replicas.into_iter().map(|r| r.stats).collect();
    if !sim.keep {
        sim.out.requests = Vec::new();
    }
    Ok(sim.out)
}

impl Sim<'_> {
    /// Hands the requests ended so far to `on_end`, by end time then start, and tells it the
    /// earliest arrival of a request handed over later. Called when the clock is about to move
    /// on to `next`: every request ended so far ended at or before the present time, and every
    /// request ending later ends at a later time (an end is the time of its event) and arrived
    /// at `next` or later, or is waiting or running now.
    fn hand_over_ended(&mut self, on_end: &mut dyn Observer, next: u64) {
        self.ended.sort_unstable();
        for &(_, seq, i) in &self.ended {
            if let Some(r) = self.out.requests.get(i as usize) {
                on_end.ended(usize::try_from(seq).unwrap_or(usize::MAX), r);
                if !self.keep {
                    self.free_records.push(i);
                }
            }
        }
        self.ended.clear();
        on_end.arrivals_from(self.arrivals.front().map_or(next, |&(t, _)| t.min(next)));
    }

    fn ids(&self, row: u32) -> &[u32] {
        row_ids(self.rows, self.ids, row)
    }

    fn sample_until(&mut self, now: u64) {
        let every = self.cluster.sample_every_ns;
        if every == 0 {
            return;
        }
        while self.next_sample_ns <= now {
            let t = self.next_sample_ns;
            for (i, r) in self.replicas.iter().enumerate() {
                self.out.samples.push(Sample {
                    t_ns: t,
                    replica: i as u32,
                    blocks: self.blocks.len(i as u32) as u64,
                    pinned: self.blocks.pinned(i as u32) as u64,
                    waiting: r.waiting.len() as u32,
                    running: r.running,
                });
            }
            self.next_sample_ns = t.saturating_add(every);
            if self.next_sample_ns == t {
                break;
            }
        }
    }

    fn route(&mut self, job: &Job) -> u32 {
        let n = self.cluster.replicas;
        match self.cluster.router {
            Router::RoundRobin => {
                let r = (self.rr % u64::from(n)) as u32;
                self.rr += 1;
                r
            }
            Router::Random => self.rng.below(u64::from(n)) as u32,
            Router::SessionAffinity => (job.run % u64::from(n)) as u32,
            Router::LeastLoaded => (0..n)
                .min_by_key(|&i| {
                    let r = &self.replicas[i as usize];
                    (u64::from(r.running) + r.waiting.len() as u64, i)
                })
                .unwrap_or(0),
            Router::KvAware => {
                let ids = row_ids(self.rows, self.ids, job.row);
                self.blocks.overlaps(ids, &mut self.overlaps);
                let blocks = ids.len() as f64;
                let w = self.cluster.overlap_weight;
                let mut best = (f64::INFINITY, 0u32);
                for ((i, r), &overlap) in self.replicas.iter().enumerate().zip(&self.overlaps) {
                    let overlap = f64::from(overlap);
                    let prefill = blocks - overlap + r.waiting_blocks as f64;
                    let decode = r.running_blocks as f64 + blocks;
                    let cost = w * prefill + decode;
                    if cost < best.0 {
                        best = (cost, i as u32);
                    }
                }
                best.1
            }
        }
    }

    fn arrive(&mut self, job: Job, now: u64) {
        let replica = self.route(&job);
        let held = self.spare.pop().unwrap_or_default();
        let p = Pending {
            job,
            arrival_ns: now,
            replica,
            held,
            progress: Progress::default(),
            itl_ns: 0,
            end_ns: 0,
            out_idx: u32::MAX,
            start_seq: 0,
            arrival_seq: self.arrivals_from + self.arrivals.len() as u64,
        };
        self.arrivals.push_back((now, false));
        let idx = match self.free_pending.pop() {
            Some(i) => {
                self.pending[i as usize] = p;
                i
            }
            None => {
                self.pending.push(p);
                (self.pending.len() - 1) as u32
            }
        };
        let blocks = self.ids(job.row).len() as u64;
        let r = &mut self.replicas[replica as usize];
        r.waiting.push_back(idx);
        r.waiting_blocks += blocks;
        r.stats.peak_waiting = r.stats.peak_waiting.max(r.waiting.len() as u64);
        match self.cluster.steps {
            Some(_) if !r.stepping => self.schedule_step(replica, now),
            Some(_) => {}
            None => self.admit(replica, now),
        }
    }

    /// Starts the replica's waiting requests in order while a slot is free and their blocks fit.
    fn admit(&mut self, replica: u32, now: u64) {
        let cluster = self.cluster;
        loop {
            let r = &self.replicas[replica as usize];
            if cluster.max_running.is_some_and(|m| r.running >= m) {
                return;
            }
            let Some(&idx) = r.waiting.front() else { return };
            if !self.fits_next(replica, 0) {
                return;
            }
            let started = self.start(replica, true);
            let (input, output, cached) = (started.input, started.output, started.cached);
            let e = &cluster.engine;
            let r = &self.replicas[replica as usize];
            let prefill_us = e.prefill_fixed_us + e.prefill_per_token_us * (input - cached) as f64;
            let itl_us = e.decode_fixed_us + e.decode_per_running_us * f64::from(r.running);
            let first = now.saturating_add(us_to_ns(prefill_us));
            let itl_ns = us_to_ns(itl_us);
            let p = &mut self.pending[idx as usize];
            p.itl_ns = itl_ns;
            let end = first.saturating_add(itl_ns.saturating_mul(output - 1));
            p.end_ns = end;
            let (grows, first_grow) = (p.progress.grows_left, p.progress.first_grow);
            let record = started.record(p, replica, now, first, end, itl_ns);
            self.keep_record(idx, record);
            if grows > 0 {
                let at = first.saturating_add(itl_ns.saturating_mul(first_grow - 1));
                self.seq += 1;
                self.ends.push(Reverse((at, self.seq, idx, Event::Grow)));
            }
            self.seq += 1;
            self.ends.push(Reverse((end, self.seq, idx, Event::End)));
        }
    }

    /// Whether the replica's first waiting request fits beside the running ones, with `more`
    /// blocks beside its prompt's (its cached blocks no request pins count too: it pins them):
    /// always when nothing runs (a request larger than the whole
    /// capacity starts alone and keeps what fits).
    fn fits_next(&self, replica: u32, more: usize) -> bool {
        let r = &self.replicas[replica as usize];
        let Some(&idx) = r.waiting.front() else { return false };
        let ids = row_ids(self.rows, self.ids, self.pending[idx as usize].job.row);
        // Counting the blocks it would pin is needed only when they might not all fit.
        r.running == 0
            || self.blocks.fits(replica, ids.len() + more)
            || self.blocks.fits(replica, self.blocks.to_pin(replica, ids) + more)
    }

    /// Starts the replica's first waiting request: its prompt blocks matched and pinned, its
    /// output blocks planned ([`OutputBlocks`]), and, when `first` (not a resumption after a
    /// preemption), counted in the replica's stats.
    fn start(&mut self, replica: u32, first: bool) -> Started {
        let (rows, cluster) = (self.rows, self.cluster);
        let r = &mut self.replicas[replica as usize];
        let idx = r.waiting.pop_front().unwrap_or(0);
        let p = &mut self.pending[idx as usize];
        let row = rows.get(p.job.row as usize);
        let ids = row_ids(rows, self.ids, p.job.row);
        r.waiting_blocks -= ids.len() as u64;
        let bs = u64::from(cluster.block_size);
        let input =
            row.and_then(|row| row.input_length()).map_or(ids.len() as u64 * bs, |n| u64::try_from(n).unwrap_or(0));
        let output = row.and_then(|row| row.output_length).unwrap_or(1).max(1);
        let grows = match cluster.output_blocks && !ids.is_empty() {
            true => OutputBlocks::new(input, ids.len() as u64, output, cluster.block_size),
            false => OutputBlocks { count: 0, first_token: 0, last_partial: input < ids.len() as u64 * bs },
        };
        let partial_tail = grows.count == 0 && grows.last_partial;
        let hit = self.blocks.admit_with_tail(replica, ids, &mut p.held, partial_tail);
        p.progress.plan(input, output, grows);
        r.running += 1;
        r.running_blocks += ids.len() as u64;
        let cached = engine_cached_tokens(hit as u64, input, cluster.block_size);
        let s = &mut r.stats;
        if first {
            s.requests += 1;
            s.input_tokens += input;
            s.cached_tokens += cached;
            if !ids.is_empty() {
                s.rows_with_blocks += 1;
                s.hit_fraction_sum += hit as f64 / ids.len() as f64;
            }
        }
        s.peak_running = s.peak_running.max(u64::from(r.running));
        s.peak_blocks = s.peak_blocks.max(self.blocks.len(replica) as u64);
        Started { input, output, hit, cached, blocks: ids.len() }
    }

    /// A running request's decoding reaches a new block: it takes one ([`OutputBlocks`]), and
    /// the next one `block_size` tokens later.
    fn grow(&mut self, idx: u32, now: u64) {
        let step = u64::from(self.cluster.block_size);
        let p = &mut self.pending[idx as usize];
        let replica = p.replica;
        // Blocks due at the request's end or later (no time between tokens, or times at the
        // clock's limit) are all taken now: the request's end comes next.
        while p.progress.grows_left > 0 {
            p.progress.grows_left -= 1;
            let last = p.progress.grows_left == 0;
            self.blocks.extend(replica, &mut p.held, last && p.progress.last_partial);
            let at = now.saturating_add(p.itl_ns.saturating_mul(step));
            if !last && at < p.end_ns {
                self.seq += 1;
                self.ends.push(Reverse((at, self.seq, idx, Event::Grow)));
                break;
            }
        }
        let s = &mut self.replicas[replica as usize].stats;
        s.peak_blocks = s.peak_blocks.max(self.blocks.len(replica) as u64);
    }

    /// A request ends: its blocks are released and its replica admits what now fits.
    fn finish(&mut self, idx: u32, now: u64) -> Job {
        let (job, replica) = self.release(idx);
        self.free(idx);
        self.admit(replica, now);
        job
    }

    /// A running request's blocks are released and its place on its replica freed.
    fn release(&mut self, idx: u32) -> (Job, u32) {
        let p = &mut self.pending[idx as usize];
        let (job, replica) = (p.job, p.replica);
        self.blocks.release(replica, &p.held);
        p.held.clear();
        let blocks = row_ids(self.rows, self.ids, job.row).len() as u64;
        let r = &mut self.replicas[replica as usize];
        r.running -= 1;
        r.running_blocks -= blocks;
        (job, replica)
    }

    /// Keeps a started request's record until it is handed over (in `out.requests`, at a place
    /// freed by a request handed over unless every request is kept).
    fn keep_record(&mut self, idx: u32, record: SimRequest) {
        let at = match self.free_records.pop() {
            Some(at) => {
                self.out.requests[at as usize] = record;
                at
            }
            None => {
                self.out.requests.push(record);
                (self.out.requests.len() - 1) as u32
            }
        };
        let p = &mut self.pending[idx as usize];
        (p.out_idx, p.start_seq) = (at, self.started);
        self.started += 1;
    }

    /// An ended request's place is free for the next one; its record waits to be handed over.
    fn free(&mut self, idx: u32) {
        let (out_idx, seq) = (self.pending[idx as usize].out_idx, self.pending[idx as usize].arrival_seq);
        let start_seq = self.pending[idx as usize].start_seq;
        let place = seq.checked_sub(self.arrivals_from).and_then(|k| usize::try_from(k).ok());
        if let Some(a) = place.and_then(|k| self.arrivals.get_mut(k)) {
            a.1 = true;
        }
        while self.arrivals.front().is_some_and(|a| a.1) {
            self.arrivals.pop_front();
            self.arrivals_from += 1;
        }
        if let Some(r) = self.out.requests.get(out_idx as usize) {
            self.ended.push((r.end_ns, start_seq, out_idx));
        }
        let held = std::mem::take(&mut self.pending[idx as usize].held);
        self.spare.push(held);
        self.free_pending.push(idx);
    }
}

/// A row's block numbers: its span of the trace's arena, numbered.
fn row_ids<'a>(rows: &[Row], ids: &'a [u32], row: u32) -> &'a [u32] {
    rows.get(row as usize).and_then(|r| ids.get(r.ids_range())).unwrap_or(&[])
}

fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round().clamp(0.0, u64::MAX as f64) as u64
}

#[cfg(test)]
mod tests;
