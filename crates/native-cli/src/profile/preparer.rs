//! Request bodies built ahead of their deadlines, on their own threads, so that building a long
//! prompt never delays a send: first turns in schedule order (a bounded look-ahead), later turns
//! as soon as the previous turn completed and the dispatcher queued them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use aiperf_core::dispatch::Job;
use aiperf_core::schedule::{Schedule, StartCursor};
use aiperf_core::trace::Trace;
use anyhow::{Context, Result, bail};

use super::body::{BodyTemplate, Prepared, prepare};
use super::prompt::PromptBuilder;

/// A prepared body, or why it could not be built (recorded as that request's error).
pub type Body = Result<Prepared, String>;

/// How many first turns are built ahead of the dispatcher.
const PREPARE_AHEAD: usize = 64;

/// What building a body needs.
pub struct BodySource {
    pub template: BodyTemplate,
    pub prompts: Arc<PromptBuilder>,
    pub trace: Arc<Trace>,
}

impl BodySource {
    /// The body of trace row `row`.
    pub fn build(&self, row: u32) -> Body {
        let r = self.trace.rows().get(row as usize).ok_or_else(|| format!("no trace row {row}"))?;
        prepare(&self.template, &self.prompts, r, self.trace.hash_ids(r), u64::from(row)).map_err(|e| format!("{e:#}"))
    }
}

/// The dispatcher's side of the preparer threads.
pub struct Preparer {
    starts: Receiver<(u64, Body)>,
    later_tx: Sender<Job>,
    later_rx: Receiver<((u64, u32), Body)>,
    ready: HashMap<(u64, u32), Body>,
}

impl Preparer {
    /// Starts the threads for `schedule` and returns once the first bodies are built (the
    /// look-ahead is full, or the schedule has no more), so that the first burst of a run never
    /// waits for a body.
    pub fn start(source: Arc<BodySource>, schedule: Arc<Schedule>) -> Result<Preparer> {
        let (starts_tx, starts) = sync_channel(PREPARE_AHEAD);
        let (later_tx, jobs) = channel::<Job>();
        let (done_tx, later_rx) = channel();
        let (primed_tx, primed) = channel::<()>();
        {
            let source = source.clone();
            std::thread::Builder::new()
                .name("prepare-starts".into())
                .spawn(move || prepare_starts(&source, &schedule, &starts_tx, primed_tx))
                .context("cannot start the request preparer")?;
        }
        // An error here means the thread ended early; `take` reports it.
        let _ = primed.recv();
        std::thread::Builder::new()
            .name("prepare-turns".into())
            .spawn(move || {
                for job in jobs {
                    if done_tx.send(((job.run, job.turn), source.build(job.row))).is_err() {
                        break;
                    }
                }
            })
            .context("cannot start the request preparer")?;
        Ok(Preparer { starts, later_tx, later_rx, ready: HashMap::new() })
    }

    /// A later turn was queued: build its body now.
    pub fn queued(&self, job: &Job) {
        // A stopped preparer is reported by `take`.
        let _ = self.later_tx.send(*job);
    }

    /// The body of a job that is due, waiting for it if it is not built yet.
    pub fn take(&mut self, job: &Job) -> Result<Body> {
        if job.turn == 0 {
            loop {
                let (run, body) = self.starts.recv().context("the request preparer stopped unexpectedly")?;
                if run == job.run {
                    return Ok(body);
                }
                if run > job.run {
                    bail!("the request preparer is out of step (run {run} for {})", job.run);
                }
            }
        }
        let key = (job.run, job.turn);
        loop {
            if let Some(b) = self.ready.remove(&key) {
                return Ok(b);
            }
            let (k, body) = self.later_rx.recv().context("the request preparer stopped unexpectedly")?;
            self.ready.insert(k, body);
        }
    }
}

fn prepare_starts(source: &BodySource, schedule: &Schedule, tx: &SyncSender<(u64, Body)>, primed: Sender<()>) {
    let mut cursor = StartCursor::new(schedule);
    let mut built = 0u64;
    let mut primed = Some(primed);
    while let Some(s) = cursor.next(schedule) {
        // A job's run is its index in the whole run (see `StartCursor::index`), also in a shard.
        let run = cursor.index();
        if built == PREPARE_AHEAD as u64
            && let Some(p) = primed.take()
        {
            let _ = p.send(());
        }
        let body = match schedule.sessions.get(s.session as usize).and_then(|x| x.turns.first()) {
            Some(t) => source.build(t.row),
            None => Err(format!("session {} has no turns", s.session)),
        };
        if tx.send((run, body)).is_err() {
            return;
        }
        built += 1;
    }
    if let Some(p) = primed {
        let _ = p.send(());
    }
}
