//! The server's state: shared by every connection, read by every phase of a request's answer.

use std::io::{BufWriter, Write};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use serde_json::Value;

use super::args::Args;
use super::cache::PrefixCache;
use super::kv::{Model, Tokens};
use super::load::Slots;
use super::metrics::Counters;

/// What every connection shares: the options, the request counter, the arrivals log, the load
/// model, the counters and the cache.
pub(super) struct State {
    pub(super) args: Args,
    pub(super) counter: AtomicU64,
    pub(super) arrivals: Option<Mutex<BufWriter<Box<dyn Write + Send>>>>,
    pub(super) slots: Option<Slots>,
    pub(super) metrics: Counters,
    pub(super) cache: Mutex<PrefixCache>,
    /// The KV model, which replaces `cache` and `slots` when on ([`Args::kv_model`]).
    pub(super) kv: Option<Model>,
    pub(super) tokens: Tokens,
}

impl State {
    pub(super) fn log(&self, line: &Value) {
        if let Some(log) = &self.arrivals
            && let Ok(mut w) = log.lock()
        {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
    }
}
