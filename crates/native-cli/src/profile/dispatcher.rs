//! The one dispatcher: drives [`aiperf_core::replay::dispatch::Dispatch`] with the real clock.
//!
//! It runs on its own OS thread so that pacing never waits behind busy runtime workers. The state
//! machine says which job is next and when; this loop sleeps until shortly before that deadline,
//! takes the job with its body (built ahead by the [`super::preparer`]) and hands it to the async
//! runtime just ahead of time; the task waits for the exact deadline. Nothing is ever sent early
//! to "catch up": a request that could not be sent on time is sent as soon as possible and its
//! lateness is recorded. Completions come back on a channel and only time the session's next
//! turn (first tokens too, while `--prefill-concurrency` limits requests in prefill); records
//! flow on to the records stage, never back here.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use aiperf_core::replay::dispatch::{Dispatch, Peek, PrefixCache};
use aiperf_core::trace::{Input, Trace};
use anyhow::Result;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::preparer::Preparer;
use super::request::{self, Finished, Handoff, Returned, Shared};
use super::transport::Transport;

/// The OS wakes a sleeping thread 50–100 µs late on an idle machine and milliseconds late on a
/// busy one; this applies both to the dispatcher and to the runtime worker that must run the
/// request. So the dispatcher hands a request to the runtime one window before its deadline and
/// the task waits out the rest on its worker; a late dispatcher is absorbed by the window. The
/// window is a quarter of the gap between requests, within these bounds: at low rates 2 ms of
/// waiting costs little, at high rates a long one would burn a core.
const SPIN_MIN_NS: u64 = 150_000;
const SPIN_MAX_NS: u64 = 2_000_000;
/// How long the dispatcher itself spins before a hand-off.
const DISPATCH_SPIN_NS: u64 = 100_000;
/// Longest single sleep, so that a stop is noticed quickly.
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// What the dispatcher did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dispatched {
    pub requests: u64,
    /// What the concurrency ceiling held back.
    pub ceiling: aiperf_core::replay::dispatch::Ceiling,
    /// How often `--system-idle-gap-cap-seconds` moved the pending times, and the ns skipped.
    pub idle_skips: (u64, u64),
}

/// Everything the dispatcher loop owns.
pub struct Dispatcher<T: Transport> {
    pub dispatch: Dispatch,
    pub preparer: Preparer,
    pub shared: Arc<Shared<T>>,
    pub handle: Handle,
    /// First tokens (while prefill is limited) and completions.
    pub completions: Receiver<Returned>,
    pub completions_tx: Sender<Returned>,
    pub records: Sender<Finished>,
    /// Cancelled when sending must stop (a signal, the end of the benchmark duration).
    pub stop: CancellationToken,
    pub block_size: u64,
    /// Requests handed off so far, for the progress display.
    pub sent: Arc<std::sync::atomic::AtomicU64>,
}

impl<T: Transport> Dispatcher<T> {
    /// Runs until nothing is left to send or sending is stopped. Requests still in flight go on;
    /// the records stage sees them end.
    pub fn run(mut self) -> Result<Dispatched> {
        let clock = self.shared.clock;
        let trace = self.shared.trace.clone();
        let mut cache = PrefixCache::default();
        let mut last_deadline = 0u64;
        let mut urls = request::UrlPicker::new(self.shared.urls);
        let mut done = Dispatched::default();
        // Time zero lies a little ahead (`mod.rs`), so that this thread is running by then: sleep
        // until the widest hand-off window before it, and hand the first burst off from there.
        if let Some(ahead) = clock.until(0).checked_sub(Duration::from_nanos(SPIN_MAX_NS)) {
            std::thread::sleep(ahead);
        }
        loop {
            while let Ok(c) = self.completions.try_recv() {
                self.completed(c);
            }
            if self.stop.is_cancelled() {
                self.dispatch.stop();
            }
            let now = clock.now_ns();
            let (deadline, asap) = match self.dispatch.peek(now) {
                Peek::Finished => break,
                Peek::AwaitCompletion => {
                    self.wait(MAX_SLEEP);
                    continue;
                }
                Peek::Due { deadline_ns, asap } => (deadline_ns, asap),
            };
            // Nothing leaves before time zero, not even a request due as soon as possible.
            while asap && !clock.until(0).is_zero() {
                std::hint::spin_loop();
            }
            let window = (deadline.saturating_sub(last_deadline) / 4).clamp(SPIN_MIN_NS, SPIN_MAX_NS);
            let handoff = if asap { deadline } else { deadline.saturating_sub(window) };
            // A late wake-up of this thread is absorbed by the hand-off window: spin only briefly.
            let spin = DISPATCH_SPIN_NS.min(window);
            if handoff > now.saturating_add(spin) {
                self.wait(Duration::from_nanos(handoff - now - spin).min(MAX_SLEEP));
                continue;
            }
            while clock.now_ns() < handoff {
                std::hint::spin_loop();
            }
            let Some(job) = self.dispatch.take(clock.now_ns()) else { continue };
            last_deadline = deadline;
            let body = self.preparer.take(&job)?;
            let expected_cached_tokens = expected(&trace, job.row, &mut cache, self.block_size);
            let url_index = urls.pick(&job, trace.rows().get(job.row as usize));
            let h = Handoff { job, body, expected_cached_tokens, dispatched_ns: clock.now_ns(), url_index };
            self.handle.spawn(request::run(self.shared.clone(), h, self.completions_tx.clone(), self.records.clone()));
            done.requests += 1;
            self.sent.store(done.requests, std::sync::atomic::Ordering::Relaxed);
        }
        done.ceiling = self.dispatch.ceiling();
        done.idle_skips = self.dispatch.idle_skips();
        Ok(done)
    }

    fn completed(&mut self, r: Returned) {
        match r {
            Returned::FirstToken(job) => self.dispatch.first_token(&job),
            Returned::Completed(c) => {
                let queued = self.dispatch.complete(&c.job, c.end_ns);
                let mut reply = c.reply;
                for (i, next) in queued.iter().enumerate() {
                    // Several turns follow a turn that starts sub-agents; the last takes the reply.
                    let r = if i + 1 == queued.len() { reply.take() } else { reply.clone() };
                    self.preparer.queued(next, c.job.row, r);
                }
            }
        }
    }

    /// Waits for a completion at most `timeout`.
    fn wait(&mut self, timeout: Duration) {
        match self.completions.recv_timeout(timeout) {
            Ok(c) => self.completed(c),
            // The dispatcher holds a sender itself, so the channel never disconnects.
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
    }
}

/// Prompt tokens of `row` that a prefix cache holding everything sent so far could reuse.
fn expected(trace: &Trace, row: u32, cache: &mut PrefixCache, block_size: u64) -> Option<u64> {
    let r = trace.rows().get(row as usize)?;
    let Input::Length(n) = r.input else { return None };
    Some(cache.observe(trace.hash_ids(r), u64::try_from(n).unwrap_or(0), block_size))
}
