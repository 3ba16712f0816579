//! The warm-up phase: its own dispatcher, paced on the runtime's timer, never recorded.

use std::time::Duration;

use aiperf_core::replay::dispatch::{Dispatch, Job, Peek};
use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::model::Inputs;
use crate::profile::plan::ReplayPlan;
use crate::profile::plan::shaping::WarmupPlan;
use crate::profile::preparer::BodySource;
use crate::profile::request;
use crate::profile::transport::{self, Clock, Transport};

/// The warm-up phase ([`aiperf_core::replay::warmup`]): its dispatcher paced on a clock of its
/// own, each request sent as it is due (never measured, never cancelled on purpose); then the
/// requests in flight are waited for, at most `--warmup-grace-period` after the warm-up's
/// duration when one is given. A later turn of a session carries the session's history as the
/// run's do. Returns what it sent; requests still in flight at the
/// end of the grace period are abandoned and count as failed.
pub(super) async fn send_warmup<T: Transport + Clone>(
    transport: &T,
    inputs: &Inputs,
    source: &BodySource,
    plan: &ReplayPlan,
    warmup: &WarmupPlan,
    stop: &CancellationToken,
) -> WarmedUp {
    let clock = Clock::start();
    let mut dispatch = warmup.shape.dispatch(&inputs.schedule);
    let (mut sent, mut errors) = (0u64, 0u64);
    let mut sessions = WarmupSessions::default();
    let mut in_flight = tokio::task::JoinSet::new();
    // First tokens free prefill slots (`--warmup-prefill-concurrency`).
    let (first_tx, mut first_rx) = tokio::sync::mpsc::unbounded_channel();
    let run = request::Ids::new(false).run;
    let urls = (plan.target.urls.len() as u64).max(1);
    loop {
        if stop.is_cancelled() {
            dispatch.stop();
        }
        let now = clock.now_ns();
        let due = match dispatch.peek(now) {
            Peek::Finished => break,
            Peek::AwaitCompletion => None,
            Peek::Due { deadline_ns, asap } => Some(if asap { now } else { deadline_ns }),
        };
        if let Some(at) = due.filter(|&at| at > now) {
            let wake = tokio::time::sleep(clock.until(at).min(WARMUP_POLL));
            tokio::select! {
                () = wake => {}
                Some(r) = in_flight.join_next() => sessions.done(&mut dispatch, &mut errors, r, clock.now_ns()),
                Some(job) = first_rx.recv() => dispatch.first_token(&job),
            }
            continue;
        }
        if due.is_none() {
            let r = tokio::select! {
                r = in_flight.join_next() => r,
                Some(job) = first_rx.recv() => {
                    dispatch.first_token(&job);
                    continue;
                }
                () = tokio::time::sleep(WARMUP_POLL) => continue,
            };
            match r {
                Some(r) => sessions.done(&mut dispatch, &mut errors, r, clock.now_ns()),
                None => break,
            }
            continue;
        }
        let Some(job) = dispatch.take(now) else { continue };
        sent += 1;
        match sessions.body(source, job) {
            Ok(p) => {
                let t = transport.clone();
                let keep_reply = inputs
                    .trace
                    .rows()
                    .get(job.row as usize)
                    .is_some_and(|r| plan.target.body.turn_history.wants_reply(r, job.turn, job.run_turns));
                // A session of several turns is one conversation, on one URL.
                let (correlation_id, url) = if job.run_turns > 1 {
                    (format!("{run}-warmup-session-{}", job.run), job.run % urls)
                } else {
                    (format!("{run}-warmup-{sent}"), (sent - 1) % urls)
                };
                let out = transport::Outgoing {
                    body: p.body,
                    request_id: format!("{run}-warmup-{sent}"),
                    correlation_id,
                    url_index: u32::try_from(url).unwrap_or(0),
                    last_turn: job.turn.saturating_add(1) >= job.run_turns,
                    first_token: if warmup.shape.prefill.is_some() {
                        let tx = first_tx.clone();
                        transport::OnFirstToken::new(move || {
                            let _ = tx.send(job);
                        })
                    } else {
                        transport::OnFirstToken::default()
                    },
                };
                in_flight.spawn(async move {
                    let ex = t.send(out, clock).await;
                    (job, ex.error.is_some(), keep_reply.then_some(ex.text))
                });
            }
            Err(_) => {
                errors += 1;
                for next in dispatch.complete(&job, now) {
                    sessions.previous.insert((next.run, next.turn), (job.row, None));
                }
            }
        }
    }
    let drained = async {
        while let Some(r) = in_flight.join_next().await {
            errors += u64::from(r.map_or(true, |(_, failed, _)| failed));
        }
    };
    match (warmup.grace, warmup.shape.duration_ns) {
        (Some(grace), Some(d)) => {
            let end = clock.until(d).saturating_add(grace);
            if tokio::time::timeout(end, drained).await.is_err() {
                errors += in_flight.len() as u64;
                in_flight.abort_all();
            }
        }
        _ => drained.await,
    }
    WarmedUp { sent, failed: errors, draws: warmup.shape.draws(&dispatch) }
}

/// A warm-up's requests (sent, failed) and the sessions it drew from the run's sampler.
#[derive(Clone, Copy, Debug)]
pub(super) struct WarmedUp {
    pub(super) sent: u64,
    pub(super) failed: u64,
    pub(super) draws: u64,
}

/// How often the warm-up looks at the stop token while it waits.
const WARMUP_POLL: Duration = Duration::from_millis(20);

/// The warm-up's sessions of several turns: what each queued later turn follows (the previous
/// turn's row and reply), and the conversations so far.
#[derive(Default)]
struct WarmupSessions {
    previous: std::collections::HashMap<(u64, u32), (u32, Option<String>)>,
    histories: std::collections::HashMap<u64, crate::profile::body::History>,
}

impl WarmupSessions {
    /// The body of `job`: a later turn after its session's history, else its row alone.
    fn body(&mut self, source: &BodySource, job: Job) -> crate::profile::preparer::Body {
        match self.previous.remove(&(job.run, job.turn)) {
            Some((prev_row, reply)) => {
                source.build_later(crate::profile::preparer::Later { job, prev_row, reply }, &mut self.histories)
            }
            None => source.build(job.row, job.run, job.session, job.turn),
        }
    }

    /// A warm-up request ended: its slot is free again, and its session's next turn queued.
    fn done(
        &mut self,
        dispatch: &mut Dispatch,
        errors: &mut u64,
        r: Result<(Job, bool, Option<String>), tokio::task::JoinError>,
        now: u64,
    ) {
        match r {
            Ok((job, failed, reply)) => {
                *errors += u64::from(failed);
                let queued = dispatch.complete(&job, now);
                let mut reply = reply;
                for (i, next) in queued.iter().enumerate() {
                    // Several turns follow a turn that starts sub-agents; the last takes the reply.
                    let r = if i + 1 == queued.len() { reply.take() } else { reply.clone() };
                    self.previous.insert((next.run, next.turn), (job.row, r));
                }
            }
            Err(_) => *errors += 1,
        }
    }
}
