//! One request from its hand-off to its record: wait for the exact deadline, send it through the
//! [`Transport`], and pass on what happened — the completion to the dispatcher (so the session's
//! next turn can be timed) and the raw record to the records stage. Nothing is computed here
//! that could delay another request: token counting happens in [`super::records`].

use std::sync::Arc;
use std::sync::mpsc::Sender;

use aiperf_core::dispatch::Job;
use aiperf_core::metrics::{RecordError, RequestRecord};
use aiperf_core::trace::Trace;
use tokio_util::sync::CancellationToken;

use super::preparer::Body;
use super::transport::{Clock, Outgoing, Transport};

/// Below this remaining time a task waiting for its deadline spins instead of yielding.
const TASK_SPIN_NS: u64 = 50_000;

/// What every request task shares.
pub struct Shared<T> {
    pub transport: T,
    pub clock: Clock,
    pub trace: Arc<Trace>,
    /// Cancelled when in-flight requests must give up (end of the grace period, second signal).
    pub abort: CancellationToken,
    pub ids: Ids,
    /// How many `--url`s sessions are spread over.
    pub urls: u32,
}

impl<T> Shared<T> {
    /// The URL of a job: its session run's, round robin in start order, so that every turn of
    /// a session goes to the same server (prefix reuse is per replica). `None` with one URL.
    pub fn url_of(&self, job: &Job) -> Option<u32> {
        (self.urls > 1).then(|| (job.run % u64::from(self.urls)) as u32)
    }
}

/// How requests and sessions are named in their headers.
#[derive(Clone, Debug)]
pub struct Ids {
    /// Unique to this run (random), so request ids never repeat across runs or shards.
    pub run: String,
    /// Replaying the trace's timestamps: sessions are named as AIPerf names them,
    /// `fixed-schedule-<session>`; otherwise each session run gets its own id.
    pub fixed_schedule: bool,
}

impl Ids {
    /// Ids from the clock and the process id (no cryptographic strength needed: uniqueness).
    pub fn new(fixed_schedule: bool) -> Ids {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let mut rng = aiperf_core::schedule::Rng::new((t as u64) ^ u64::from(std::process::id()).rotate_left(32));
        Ids { run: format!("{:016x}{:08x}", rng.next_u64(), rng.next_u64() as u32), fixed_schedule }
    }

    /// `X-Request-ID` of a job.
    pub fn request(&self, job: &Job) -> String {
        format!("{}-{}-{}", self.run, job.run, job.turn)
    }

    /// The correlation id of a job's session: its conversation or session id, or the run.
    pub fn correlation(&self, job: &Job, row: Option<&aiperf_core::trace::Row>) -> String {
        let named = row.and_then(|r| r.conversation_id().or(r.session_id.as_deref()));
        match (self.fixed_schedule, named) {
            (true, Some(id)) => format!("fixed-schedule-{id}"),
            (true, None) => format!("fixed-schedule-session_{:06}", job.run),
            (false, _) => format!("{}-session-{}", self.run, job.run),
        }
    }
}

/// A finished request for the records stage.
#[derive(Debug)]
pub struct Finished {
    pub record: RequestRecord,
    /// The generated text, for client-side token counting.
    pub text: String,
    pub mock_ttft_ms: Option<f64>,
}

/// A request's completion, for the dispatcher.
#[derive(Clone, Copy, Debug)]
pub struct Completed {
    pub job: Job,
    pub end_ns: u64,
}

/// One request handed over by the dispatcher.
pub struct Handoff {
    pub job: Job,
    pub body: Body,
    pub expected_cached_tokens: Option<u64>,
    pub dispatched_ns: u64,
}

/// Sends one request and reports it.
pub async fn run<T: Transport>(
    shared: Arc<Shared<T>>,
    h: Handoff,
    completions: Sender<Completed>,
    records: Sender<Finished>,
) {
    let clock = shared.clock;
    let job = h.job;
    if !job.asap {
        // Handed over early so that waking this worker is not on the clock: wait out the rest.
        loop {
            let now = clock.now_ns();
            if now >= job.deadline_ns || shared.abort.is_cancelled() {
                break;
            }
            if job.deadline_ns - now > TASK_SPIN_NS {
                tokio::task::yield_now().await;
            } else {
                std::hint::spin_loop();
            }
        }
    }
    let row = shared.trace.rows().get(job.row as usize);
    let mut rec = RequestRecord {
        session_id: row.and_then(|r| r.session_id.as_deref()).map(str::to_owned),
        session_run: u32::try_from(job.run).unwrap_or(u32::MAX),
        turn: job.turn,
        trace_line: row.map_or(0, |r| r.line),
        scheduled_ns: if job.asap { clock.now_ns() } else { job.deadline_ns },
        dispatched_ns: Some(h.dispatched_ns),
        expected_cached_tokens: h.expected_cached_tokens,
        url_index: shared.url_of(&job),
        ..Default::default()
    };
    let mut text = String::new();
    let mut mock_ttft_ms = None;
    match h.body {
        Err(e) => {
            let now = clock.now_ns();
            (rec.sent_ns, rec.end_ns) = (now, now);
            rec.error = Some(RecordError { kind: "invalid_request".into(), message: e });
        }
        Ok(p) => {
            rec.input_tokens = p.input_tokens;
            rec.max_tokens = p.max_tokens;
            let sent_guess = clock.now_ns();
            let ex = tokio::select! {
                biased;
                _ = shared.abort.cancelled() => None,
                ex = shared.transport.send(Outgoing {
                    body: p.body,
                    request_id: shared.ids.request(&job),
                    correlation_id: shared.ids.correlation(&job, row),
                    url_index: rec.url_index.unwrap_or(0),
                }, clock) => Some(ex),
            };
            match ex {
                None => {
                    rec.sent_ns = sent_guess;
                    rec.end_ns = clock.now_ns();
                    rec.error = Some(RecordError {
                        kind: "cancelled".into(),
                        message: "cancelled in flight when the run was stopped".into(),
                    });
                }
                Some(ex) => {
                    mock_ttft_ms = ex.mock_ttft_ms;
                    rec.sent_ns = ex.sent_ns;
                    rec.first_byte_ns = ex.first_byte_ns;
                    rec.end_ns = ex.end_ns;
                    rec.streaming = ex.streaming;
                    rec.usage = ex.usage;
                    rec.chunk_ns = ex.chunk_ns;
                    rec.error = ex.error;
                    text = ex.text;
                }
            }
        }
    }
    // The dispatcher first, so that the session's next turn is timed at once.
    let _ = completions.send(Completed { job, end_ns: rec.end_ns });
    let _ = records.send(Finished { record: rec, text, mock_ttft_ms });
}
