//! One request from its hand-off to its record: wait for the exact deadline, send it through the
//! [`Transport`], and pass on what happened — the completion to the dispatcher (so the session's
//! next turn can be timed) and the raw record to the records stage. Nothing is computed here
//! that could delay another request: token counting happens in [`super::records`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::Sender;

use aiperf_core::replay::dispatch::Job;
use aiperf_core::results::record::{CANCELLED, RecordError, RequestRecord};
use aiperf_core::trace::Trace;
use tokio_util::sync::CancellationToken;

use super::body::TurnHistory;
use super::preparer::Body;
use super::transport::{Clock, OnFirstToken, Outgoing, Transport};

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
    /// Whether later turns carry the replies to earlier ones.
    pub turn_history: TurnHistory,
    /// How many `--url`s requests are spread over.
    pub urls: u32,
    /// Whether the dispatcher limits requests in prefill, so wants to hear of first tokens.
    pub prefill_limited: bool,
}

/// Which `--url` each request goes to, so that a session or conversation stays on one server
/// (prefix reuse is per replica): a session run's turns go to URL `run % n` (round robin in start
/// order); rows carrying a `conversation_id` (converted formats: each row is its own run) go to
/// the URL their conversation's first row went to, conversations taking URLs round robin in order
/// of appearance. Holds one entry per conversation seen (ids of the trace, already in memory).
#[derive(Debug, Default)]
pub struct UrlPicker {
    urls: u32,
    conversations: HashMap<Box<str>, u32>,
    next: u32,
}

impl UrlPicker {
    pub fn new(urls: u32) -> UrlPicker {
        UrlPicker { urls, ..UrlPicker::default() }
    }

    /// The URL index of a job (`None` with a single URL).
    pub fn pick(&mut self, job: &Job, row: Option<&aiperf_core::trace::Row>) -> Option<u32> {
        if self.urls <= 1 {
            return None;
        }
        Some(match row.and_then(|r| r.conversation_id()) {
            Some(id) => match self.conversations.get(id) {
                Some(&i) => i,
                None => {
                    let i = self.next;
                    self.next = (self.next + 1) % self.urls;
                    self.conversations.insert(id.into(), i);
                    i
                }
            },
            None => (job.run % u64::from(self.urls)) as u32,
        })
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
        let mut rng =
            aiperf_core::replay::schedule::Rng::new((t as u64) ^ u64::from(std::process::id()).rotate_left(32));
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
    /// `--export-level raw`: what was sent and what came back (`None` for a request that never
    /// reached the transport or was abandoned in flight).
    pub raw: Option<Box<super::transport::RawCapture>>,
}

/// What a request tells the dispatcher: its first token (the end of its prefill, only while
/// prefill is limited), then its completion.
#[derive(Clone, Debug)]
pub enum Returned {
    FirstToken(Job),
    Completed(Completed),
}

/// A request's completion, for the dispatcher.
#[derive(Clone, Debug)]
pub struct Completed {
    pub job: Job,
    pub end_ns: u64,
    /// The server's reply, when the session's next turn carries it (live turn history).
    pub reply: Option<String>,
}

/// One request handed over by the dispatcher.
pub struct Handoff {
    pub job: Job,
    pub body: Body,
    pub expected_cached_tokens: Option<u64>,
    pub dispatched_ns: u64,
    /// Which `--url` it goes to ([`UrlPicker`]); `None` with a single URL.
    pub url_index: Option<u32>,
}

/// Sends one request and reports it.
pub async fn run<T: Transport>(
    shared: Arc<Shared<T>>,
    h: Handoff,
    completions: Sender<Returned>,
    records: Sender<Finished>,
) {
    let clock = shared.clock;
    let job = h.job;
    if !job.asap {
        // Handed over early so that waking this worker is not on the clock: wait out the rest.
        loop {
            let left = clock.until(job.deadline_ns);
            if left.is_zero() || shared.abort.is_cancelled() {
                break;
            }
            if left.as_nanos() > u128::from(TASK_SPIN_NS) {
                tokio::task::yield_now().await;
            } else {
                std::hint::spin_loop();
            }
        }
    }
    let row = shared.trace.rows().get(job.row as usize);
    let (request_id, correlation_id) = (shared.ids.request(&job), shared.ids.correlation(&job, row));
    let mut rec = RequestRecord {
        session_id: row.and_then(|r| r.session_id.as_deref().or(r.conversation_id())).map(str::to_owned),
        request_id: Some(request_id.clone()),
        correlation_id: Some(correlation_id.clone()),
        session_num: u32::try_from(job.run).unwrap_or(u32::MAX),
        turn: job.turn,
        trace_line: row.map_or(0, |r| r.line),
        scheduled_ns: if job.asap { clock.now_ns() } else { job.deadline_ns },
        dispatched_ns: Some(h.dispatched_ns),
        expected_cached_tokens: h.expected_cached_tokens,
        url_index: h.url_index,
        ..Default::default()
    };
    let mut text = String::new();
    let mut mock_ttft_ms = None;
    let mut raw = None;
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
            // A request chosen for cancellation is abandoned its delay after the send: the
            // exchange is dropped, which closes its connection, as a client that goes away.
            let cancel_after = job.cancel_after_ns.map(std::time::Duration::from_nanos);
            let timer = async {
                match cancel_after {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let first_token = if shared.prefill_limited {
                let tx = completions.clone();
                OnFirstToken::new(move || {
                    let _ = tx.send(Returned::FirstToken(job));
                })
            } else {
                OnFirstToken::default()
            };
            let ex = tokio::select! {
                biased;
                _ = shared.abort.cancelled() => Err("cancelled in flight when the run was stopped".to_owned()),
                ex = shared.transport.send(Outgoing {
                    body: p.body,
                    request_id,
                    correlation_id,
                    url_index: rec.url_index.unwrap_or(0),
                    last_turn: job.turn.saturating_add(1) >= job.run_turns,
                    first_token,
                }, clock) => Ok(ex),
                () = timer => Err(format!(
                    "Request cancelled {:.3}s after being sent",
                    cancel_after.unwrap_or_default().as_secs_f64()
                )),
            };
            match ex {
                Err(message) => {
                    rec.sent_ns = sent_guess;
                    rec.end_ns = clock.now_ns();
                    rec.error = Some(RecordError { kind: CANCELLED.into(), message });
                }
                Ok(ex) => {
                    mock_ttft_ms = ex.mock_ttft_ms;
                    rec.sent_ns = ex.sent_ns;
                    rec.first_byte_ns = ex.first_byte_ns;
                    rec.end_ns = ex.end_ns;
                    rec.streaming = ex.streaming;
                    rec.usage = ex.usage;
                    rec.chunk_ns = ex.chunk_ns;
                    rec.http = ex.http;
                    rec.error = ex.error;
                    text = ex.text;
                    raw = ex.raw;
                }
            }
        }
    }
    // The dispatcher first, so that the session's next turn is timed at once.
    let reply = row.is_some_and(|r| shared.turn_history.wants_reply(r, job.turn, job.run_turns)).then(|| text.clone());
    let _ = completions.send(Returned::Completed(Completed { job, end_ns: rec.end_ns, reply }));
    let _ = records.send(Finished { record: rec, text, mock_ttft_ms, raw });
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::trace::{ParseOptions, read};

    fn job(run: u64, turn: u32) -> Job {
        Job { run, session: 0, turn, run_turns: 1, row: 0, deadline_ns: 0, asap: false, cancel_after_ns: None }
    }

    #[test]
    fn sessions_and_conversations_stay_on_one_url() {
        let mut one = UrlPicker::new(1);
        assert_eq!(one.pick(&job(5, 0), None), None);
        // Session runs: round robin by run, every turn on its run's URL.
        let mut p = UrlPicker::new(3);
        let runs: Vec<Option<u32>> = (0..6).map(|r| p.pick(&job(r, 0), None)).collect();
        assert_eq!(runs, [Some(0), Some(1), Some(2), Some(0), Some(1), Some(2)]);
        assert_eq!(p.pick(&job(4, 7), None), Some(1));
        // Conversations (each row its own run): by first appearance, whatever the run.
        let text = ["b", "a", "b", "c", "a", "d"]
            .iter()
            .map(|c| format!("{{\"conversation_id\": \"{c}\", \"input_length\": 5, \"output_length\": 1}}\n"))
            .collect::<String>();
        let Ok(parsed) = read(text.as_bytes(), ParseOptions::new("t")) else { panic!("the trace must parse") };
        let trace = parsed.trace;
        let mut p = UrlPicker::new(2);
        let got: Vec<Option<u32>> =
            trace.rows().iter().enumerate().map(|(i, r)| p.pick(&job(i as u64, 0), Some(r))).collect();
        assert_eq!(got, [Some(0), Some(1), Some(0), Some(0), Some(1), Some(1)]);
    }
}
