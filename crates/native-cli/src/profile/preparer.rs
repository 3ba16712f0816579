//! Request bodies built ahead of their deadlines, on their own threads, so that building a long
//! prompt never delays a send: first turns in schedule order (a bounded look-ahead), later turns
//! as soon as the previous turn completed and the dispatcher queued them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use aiperf_core::replay::cache_bust::{self, CacheBust, Phase};
use aiperf_core::replay::dispatch::Job;
use aiperf_core::replay::schedule::{Schedule, StartCursor};
use aiperf_core::trace::{Row, Trace};
use anyhow::{Context, Result, bail};

use super::body::{BodyTemplate, History, Marker, Prepared, Role, TurnHistory, prepare, threads_history, user_text};
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
    /// `--cache-bust` in this phase.
    pub busting: Option<Busting>,
}

/// AIPerf's `--cache-bust` in one phase of a run: the marker each session run carries.
#[derive(Clone, Debug)]
pub struct Busting {
    pub bust: CacheBust,
    pub phase: Phase,
    /// Sessions the warm-up drew (`Warmup::draws`); 0 in the warm-up itself.
    pub warmup_draws: u64,
    /// The run replays a fixed schedule (the trace's timestamps).
    pub fixed: bool,
    /// Tokens a session's first generated prompt gives up to its marker
    /// ([`BodyTemplate::cache_bust_shrinks`]): AIPerf's estimate, the mean tokens of eight
    /// markers, rounded.
    pub shrink: u64,
}

impl Busting {
    /// `bust` in `phase`, the shrink estimated with `prompts`' tokenizer when `template` asks for it.
    pub fn new(
        bust: CacheBust,
        phase: Phase,
        warmup_draws: u64,
        fixed: bool,
        template: &BodyTemplate,
        prompts: &PromptBuilder,
    ) -> Busting {
        let shrink = if template.cache_bust_shrinks {
            let samples = cache_bust::cost_samples(bust.target);
            let total: u64 = samples.iter().map(|m| prompts.count(m).unwrap_or(0)).sum();
            (total as f64 / samples.len().max(1) as f64).round() as u64
        } else {
            0
        };
        Busting { bust, phase, warmup_draws, fixed, shrink }
    }
}

/// A later turn to build: its job, the row of the session's previous turn and what the server
/// replied to it.
#[derive(Debug)]
pub struct Later {
    pub job: Job,
    pub prev_row: u32,
    pub reply: Option<String>,
}

impl BodySource {
    /// The `--cache-bust` marker of turn `turn` of session run `run` (of session `session`,
    /// whose turn is row `row`): the conversation is named by its rows' session id, or as
    /// AIPerf names one without (`session_NNNNNN`, its index).
    fn marker(&self, run: u64, session: u32, row: &Row, turn: u32) -> Option<Marker> {
        let b = self.busting.as_ref()?;
        let named = row.session_id.as_deref().or(row.conversation_id());
        let trace_id = named.map_or_else(|| format!("session_{session:06}"), str::to_owned);
        let pass = cache_bust::pass(b.phase, b.warmup_draws, b.fixed, run, session);
        let text = b.bust.marker(b.phase, pass, &trace_id)?;
        let tokens = self.prompts.count(&text).unwrap_or(0);
        Some(Marker {
            text,
            target: b.bust.target,
            tokens,
            shrink: if turn == 0 { b.shrink } else { 0 },
            on_user: !(b.bust.target.wants_system() && self.template.system.is_some()),
        })
    }

    /// The body of turn `turn` of session run `run` (of session `session`): trace row `row` on
    /// its own.
    pub fn build(&self, row: u32, run: u64, session: u32, turn: u32) -> Body {
        let r = self.trace.rows().get(row as usize).ok_or_else(|| format!("no trace row {row}"))?;
        let marker = self.marker(run, session, r, turn);
        prepare(&self.template, &self.prompts, r, self.trace.hash_ids(r), u64::from(row), None, marker.as_ref())
            .map_err(|e| format!("{e:#}"))
    }

    /// The body of a later turn. With live history (the default) a generated prompt comes after
    /// the session's earlier prompts and the server's replies, kept in `histories` by session run
    /// until its last turn is built; so memory holds one conversation per session in flight.
    pub fn build_later(&self, later: Later, histories: &mut HashMap<u64, History>) -> Body {
        let job = later.job;
        let last = job.turn.saturating_add(1) >= job.run_turns;
        let rows = self.trace.rows();
        let r = rows.get(job.row as usize).ok_or_else(|| format!("no trace row {}", job.row))?;
        if self.template.turn_history != TurnHistory::Live || !threads_history(r) {
            histories.remove(&job.run);
            return self.build(job.row, job.run, job.session, job.turn);
        }
        let marker = self.marker(job.run, job.session, r, job.turn);
        let history = histories.entry(job.run).or_default();
        let endpoint = self.template.endpoint;
        // The previous turn's prompt joined the history when it was built here; the first turn's
        // (built without a history) or a refused one is built again.
        // The conversation's first user message carries the session's marker.
        if history.last_prompt_turn != job.turn.checked_sub(1)
            && let Some(prev) = rows.get(later.prev_row as usize)
            && let Some((text, tokens)) = user_text(
                &self.prompts,
                prev,
                self.trace.hash_ids(prev),
                u64::from(later.prev_row),
                self.template.max_prompt_tokens,
                (if history.is_empty() {
                    self.marker(job.run, job.session, prev, job.turn.saturating_sub(1))
                } else {
                    None
                })
                .as_ref(),
            )
        {
            history.push(endpoint, Role::User, &text, tokens.unwrap_or(0));
        }
        // A failed turn leaves no reply; the conversation goes on without one.
        if let Some(reply) = later.reply.filter(|t| !t.is_empty()) {
            let tokens = self.prompts.count(&reply).unwrap_or(0);
            history.push(endpoint, Role::Assistant, &reply, tokens);
        }
        let body = prepare(
            &self.template,
            &self.prompts,
            r,
            self.trace.hash_ids(r),
            u64::from(job.row),
            Some((history, job.turn)),
            marker.as_ref(),
        )
        .map_err(|e| format!("{e:#}"));
        if last {
            histories.remove(&job.run);
        }
        body
    }
}

/// The dispatcher's side of the preparer threads.
pub struct Preparer {
    starts: Receiver<(u64, Body)>,
    later_tx: Sender<Later>,
    later_rx: Receiver<((u64, u32), Body)>,
    ready: HashMap<(u64, u32), Body>,
}

impl Preparer {
    /// Starts the threads for `schedule` and returns once the first bodies are built (the
    /// look-ahead is full, or the schedule has no more), so that the first burst of a run never
    /// waits for a body.
    pub fn start(source: Arc<BodySource>, schedule: Arc<Schedule>) -> Result<Preparer> {
        let (starts_tx, starts) = sync_channel(PREPARE_AHEAD);
        let (later_tx, jobs) = channel::<Later>();
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
                let mut histories = HashMap::new();
                for later in jobs {
                    let key = (later.job.run, later.job.turn);
                    if done_tx.send((key, source.build_later(later, &mut histories))).is_err() {
                        break;
                    }
                }
            })
            .context("cannot start the request preparer")?;
        Ok(Preparer { starts, later_tx, later_rx, ready: HashMap::new() })
    }

    /// A later turn was queued: build its body now (after `prev_row`, answered with `reply`).
    pub fn queued(&self, job: &Job, prev_row: u32, reply: Option<String>) {
        // A stopped preparer is reported by `take`.
        let _ = self.later_tx.send(Later { job: *job, prev_row, reply });
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
            Some(t) => source.build(t.row, run, s.session, 0),
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
