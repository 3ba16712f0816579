//! The page's end of the worker: one bridge, when it was last heard from, and the files it sends
//! back to save.

use std::cell::Cell;
use std::rc::Rc;

use yew::prelude::*;
use yew_agent::worker::use_worker_bridge;

use crate::protocol::{FromWorker, ToWorker};
use crate::state::{Action, AppState};
use crate::web;
use crate::worker::TraceWorker;

/// How often the page checks that the worker is still alive.
const TICK_MS: u32 = 5_000;

/// Sends requests to the worker (stable across renders: a context value that never changes).
#[derive(Clone)]
pub struct WorkerLink {
    to_worker: Callback<ToWorker>,
    io: Rc<Io>,
}

impl PartialEq for WorkerLink {
    fn eq(&self, other: &Self) -> bool {
        self.to_worker == other.to_worker && Rc::ptr_eq(&self.io, &other.io)
    }
}

/// What the link keeps between messages.
struct Io {
    /// `performance.now()` of the last message either way.
    contact: Cell<f64>,
}

impl WorkerLink {
    /// A link whose messages go to `to_worker` (the bridge, or a test's stand-in for the worker).
    pub fn new(to_worker: Callback<ToWorker>) -> Self {
        WorkerLink { to_worker, io: Rc::new(Io::new()) }
    }

    pub fn send(&self, msg: ToWorker) {
        self.io.contact.set(web::now_ms());
        self.to_worker.emit(msg);
    }
}

impl Io {
    fn new() -> Self {
        Io { contact: Cell::new(web::now_ms()) }
    }

    /// Side effects of a message from the worker: produced files saved.
    fn heard(&self, msg: &FromWorker) {
        self.contact.set(web::now_ms());
        match msg {
            FromWorker::Export { name, url, .. } => {
                if let Err(e) = web::download_url(name, url) {
                    web::log(&format!("download failed: {e:?}"));
                }
            }
            FromWorker::Converted { name, jsonl } => {
                if let Err(e) = web::download(name, jsonl, "application/x-ndjson") {
                    web::log(&format!("download failed: {e:?}"));
                }
            }
            FromWorker::File { name, text } => {
                let mime = if name.ends_with(".jsonl") {
                    "application/x-ndjson"
                } else if name.ends_with(".json") {
                    "application/json"
                } else {
                    "text/plain"
                };
                if let Err(e) = web::download(name, text, mime) {
                    web::log(&format!("download failed: {e:?}"));
                }
            }
            _ => {}
        }
    }
}

/// Bridges to the worker: its messages go to the reducer, and a periodic tick reports how long it
/// has been silent (a worker that died, e.g. out of memory, never answers again).
#[hook]
pub fn use_worker(dispatch: UseReducerDispatcher<AppState>) -> WorkerLink {
    let io = use_memo((), |_| Io::new());
    let bridge = {
        let (io, dispatch) = (io.clone(), dispatch.clone());
        use_worker_bridge::<TraceWorker, _>(move |msg: FromWorker| {
            io.heard(&msg);
            dispatch.dispatch(Action::Worker(msg));
        })
    };
    let link = {
        let io = io.clone();
        use_memo((), move |_| WorkerLink { to_worker: Callback::from(move |msg| bridge.send(msg)), io })
    };
    use_effect_with((), move |_| {
        let tick = gloo_timers::callback::Interval::new(TICK_MS, move || {
            dispatch.dispatch(Action::Ticked { silent_ms: web::now_ms() - io.contact.get() });
        });
        move || drop(tick)
    });
    (*link).clone()
}
