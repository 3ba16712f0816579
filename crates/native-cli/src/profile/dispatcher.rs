//! The one dispatcher: paces every request of the schedule by absolute deadlines.
//!
//! It runs on its own OS thread so that pacing never waits behind busy runtime workers. It keeps
//! the schedule's session starts (already sorted) and a heap of later turns reported back by
//! finished requests, sleeps until shortly before the earliest deadline, spins the last stretch,
//! and hands the request to the async runtime. Nothing is ever sent early to "catch up": a request
//! that could not be sent on time is sent as soon as possible and its lateness is recorded.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use aiperf_core::metrics::{RecordError, RequestRecord};
use aiperf_core::schedule::{Schedule, TurnTiming};
use aiperf_core::trace::Trace;
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use super::client::{self, Clock, Endpoint, HttpClient};
use super::prompt::PromptBuilder;
use super::request::{BodyTemplate, Prepared, prepare};

/// The dispatcher sleeps until this long before a deadline, then spins (the OS timer wakes
/// threads ~50–100 µs late; spinning longer would burn a core at high rates).
const SPIN_NS: u64 = 300_000;
/// Longest single sleep, so that Ctrl-C and new turns are noticed quickly.
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// Everything a request task needs, shared read-only.
pub struct Shared {
    pub client: HttpClient,
    pub endpoint: Endpoint,
    pub clock: Clock,
    pub trace: Trace,
    pub schedule: Schedule,
    pub prompts: PromptBuilder,
    pub template: BodyTemplate,
    /// Per row: prompt tokens a prefix cache could reuse, from hash ids sent before.
    pub expected_cached: Vec<Option<u64>>,
    /// Stop sending (Ctrl-C or the benchmark duration).
    pub stop: AtomicBool,
    /// Becomes true when in-flight requests must give up (end of the grace period).
    pub hard_cancel: watch::Receiver<bool>,
    /// Sending stops at this offset (ns), if a benchmark duration was given.
    pub end_ns: Option<u64>,
}

/// A finished request for the collector.
pub struct Finished {
    pub record: RequestRecord,
    pub mock_ttft_ms: Option<f64>,
}

/// Messages from request tasks back to the dispatcher.
pub enum Msg {
    /// The next turn of a session, due at `deadline_ns`, with its body.
    Next(Job, Body),
    /// A session run has sent its last turn.
    SessionDone,
}

/// A prepared request body, or why it could not be built.
pub type Body = Result<Prepared, String>;

/// How many session starts the preparer thread builds ahead of the dispatcher.
const PREPARE_AHEAD: usize = 64;

/// One request to send.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    /// Index into the schedule's starts.
    pub start: u32,
    pub turn: u32,
    pub deadline_ns: u64,
    /// No deadline: sent when the concurrency limit allows; scheduled time = send time.
    pub asap: bool,
}

/// Runs the dispatcher until the schedule is exhausted (and every session finished) or stopped.
pub fn run(
    shared: Arc<Shared>,
    handle: Handle,
    rx: Receiver<Msg>,
    tx: Sender<Msg>,
    records: mpsc::UnboundedSender<Finished>,
    limit: Option<Arc<Semaphore>>,
    mut stop_rx: watch::Receiver<bool>,
) {
    let starts = &shared.schedule.starts;
    let clock = shared.clock;
    let mut next_start = 0usize;
    let mut q = Queue::default();
    // Bodies of session starts are built ahead on their own thread, in schedule order, so that
    // building a long prompt never delays a send.
    let (prep_tx, prep_rx) = std::sync::mpsc::sync_channel::<Body>(PREPARE_AHEAD);
    {
        let shared = shared.clone();
        let spawned = std::thread::Builder::new().name("preparer".into()).spawn(move || {
            for i in 0..shared.schedule.starts.len() {
                if prep_tx.send(build(&shared, i as u32, 0)).is_err() {
                    break;
                }
            }
        });
        if spawned.is_err() {
            return;
        }
    }
    let mut start_body: Option<Body> = None;
    loop {
        while let Ok(m) = rx.try_recv() {
            q.handle(m);
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let from_heap = q.heap.peek().map(|Reverse((d, s))| (*d, *s));
        // A start without a deadline is due now; later turns already due go first.
        let from_start = starts.get(next_start).map(|s| s.offset_us.map_or_else(|| clock.now_ns(), |o| o * 1000));
        let (deadline, heap_seq) = match (from_heap, from_start) {
            (Some((d, s)), Some(o)) if d <= o => (d, Some(s)),
            (Some((d, s)), None) => (d, Some(s)),
            (_, Some(o)) => (o, None),
            (None, None) => {
                if q.active == 0 {
                    break;
                }
                match rx.recv_timeout(MAX_SLEEP) {
                    Ok(m) => q.handle(m),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                continue;
            }
        };
        if shared.end_ns.is_some_and(|end| deadline.max(clock.now_ns()) >= end) {
            break;
        }
        let job = match heap_seq {
            Some(s) => q.pending.get(&s).map(|(j, _)| *j),
            None => {
                if start_body.is_none() {
                    match prep_rx.recv() {
                        Ok(b) => start_body = Some(b),
                        Err(_) => break,
                    }
                }
                Some(Job {
                    start: next_start as u32,
                    turn: 0,
                    deadline_ns: deadline,
                    asap: starts[next_start].offset_us.is_none(),
                })
            }
        };
        let Some(job) = job else { continue };
        let now = clock.now_ns();
        if deadline > now + SPIN_NS {
            let wait = Duration::from_nanos(deadline - now - SPIN_NS).min(MAX_SLEEP);
            match rx.recv_timeout(wait) {
                Ok(m) => q.handle(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            continue;
        }
        while clock.now_ns() < deadline {
            std::hint::spin_loop();
        }
        let body = match heap_seq {
            Some(s) => {
                q.heap.pop();
                q.pending.remove(&s).map(|(_, b)| b)
            }
            None => {
                next_start += 1;
                q.active += 1;
                start_body.take()
            }
        };
        let Some(body) = body else { continue };
        let permit = match &limit {
            None => None,
            Some(sem) => match sem.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    let sem = sem.clone();
                    let got = handle.block_on(async {
                        tokio::select! {
                            p = sem.acquire_owned() => p.ok(),
                            _ = stop_rx.wait_for(|v| *v) => None,
                        }
                    });
                    match got {
                        Some(p) => Some(p),
                        None => break,
                    }
                }
            },
        };
        handle.spawn(request(shared.clone(), job, body, permit, tx.clone(), records.clone()));
    }
}

/// Later turns waiting for their deadline, and the number of session runs still going.
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    pending: HashMap<u64, (Job, Body)>,
    seq: u64,
    active: usize,
}

impl Queue {
    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Next(job, body) => {
                self.seq += 1;
                self.heap.push(Reverse((job.deadline_ns, self.seq)));
                self.pending.insert(self.seq, (job, body));
            }
            Msg::SessionDone => self.active = self.active.saturating_sub(1),
        }
    }
}

fn build(shared: &Shared, start: u32, turn: u32) -> Body {
    let row_idx =
        shared.schedule.sessions[shared.schedule.starts[start as usize].session as usize].turns[turn as usize].row;
    let row = &shared.trace.rows()[row_idx as usize];
    prepare(&shared.template, &shared.prompts, row, shared.trace.hash_ids(row), row_idx as u64)
        .map_err(|e| format!("{e:#}"))
}

/// Sends one request, reports the record, and queues the session's next turn.
async fn request(
    shared: Arc<Shared>,
    job: Job,
    body: Body,
    permit: Option<OwnedSemaphorePermit>,
    tx: Sender<Msg>,
    records: mpsc::UnboundedSender<Finished>,
) {
    let clock = shared.clock;
    let start = shared.schedule.starts[job.start as usize];
    let session = &shared.schedule.sessions[start.session as usize];
    let row_idx = session.turns[job.turn as usize].row as usize;
    let row = &shared.trace.rows()[row_idx];
    let scheduled_ns = if job.asap { clock.now_ns() } else { job.deadline_ns };
    let mut rec = RequestRecord {
        session_id: session.id.as_deref().map(str::to_owned),
        session_run: job.start,
        turn: job.turn,
        trace_line: row.line,
        scheduled_ns,
        streaming: shared.template.streaming,
        expected_cached_tokens: shared.expected_cached.get(row_idx).copied().flatten(),
        ..Default::default()
    };
    let mut mock_ttft_ms = None;
    match body {
        Err(e) => {
            let now = clock.now_ns();
            (rec.sent_ns, rec.end_ns) = (now, now);
            rec.error = Some(RecordError { kind: "invalid_request".into(), message: e });
        }
        Ok(p) => {
            rec.input_tokens = p.input_tokens;
            rec.max_tokens = p.max_tokens;
            let mut cancel = shared.hard_cancel.clone();
            let sent_guess = clock.now_ns();
            let ex = tokio::select! {
                ex = client::send(&shared.client, &shared.endpoint, p.body, &clock) => Some(ex),
                _ = cancel.wait_for(|v| *v) => None,
            };
            match ex {
                None => {
                    rec.sent_ns = sent_guess;
                    rec.end_ns = clock.now_ns();
                    rec.error = Some(RecordError {
                        kind: "cancelled".into(),
                        message: "cancelled at the end of the grace period".into(),
                    });
                }
                Some(ex) => {
                    mock_ttft_ms = ex.mock_ttft_ms;
                    rec.sent_ns = ex.sent_ns;
                    rec.first_byte_ns = ex.first_byte_ns;
                    rec.end_ns = ex.end_ns;
                    rec.streaming = ex.streaming;
                    rec.usage = ex.usage;
                    if !ex.text.is_empty() {
                        rec.output_tokens = shared.prompts.count(&ex.text).ok();
                    } else if ex.error.is_none() {
                        rec.output_tokens = Some(0);
                    }
                    rec.chunk_ns = ex.chunk_ns;
                    rec.error = ex.error;
                    if rec.error.is_none()
                        && let Some(max) = rec.max_tokens
                    {
                        let produced = rec.usage.completion_tokens.unwrap_or(rec.chunk_ns.len() as u64);
                        if produced > max {
                            rec.error = Some(RecordError {
                                kind: "max_tokens_exceeded".into(),
                                message: format!("the server produced {produced} tokens for max_tokens {max}"),
                            });
                        }
                    }
                }
            }
        }
    }
    drop(permit);
    let _ = records.send(Finished { record: rec, mock_ttft_ms });
    let next = job.turn + 1;
    if next < start.turns && !shared.stop.load(Ordering::Relaxed) {
        let now = clock.now_ns();
        let (deadline_ns, asap) = match session.turns[next as usize].timing {
            TurnTiming::At(us) => ((us * 1000).max(now), false),
            TurnTiming::After(us) => (now + us * 1000, false),
            TurnTiming::Immediately => (now, job.asap),
        };
        let body = build(&shared, job.start, next);
        let _ = tx.send(Msg::Next(Job { start: job.start, turn: next, deadline_ns, asap }, body));
    } else {
        let _ = tx.send(Msg::SessionDone);
    }
}
