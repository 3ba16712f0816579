//! Baseten completion traces (AIPerf's `baseten_trace`): Parquet rows of recorded requests, one
//! [`Record`] each (the CLI reads the file's columns), turned into a trace exactly as AIPerf
//! 0.13.0's `baseten_trace` loader builds its conversations:
//!
//! - sessions are kept whole or dropped by `--trace-session-sample-ratio` (CPython's generator
//!   at the seed AIPerf derives for `dataset.loader.baseten_trace.session_sampling`), rows without
//!   a session sampled one by one at the same ratio;
//! - timestamps become milliseconds after the file's earliest one, filtered by the
//!   fixed-schedule offsets, then divided by `--replay-speedup` (hash ids untouched);
//! - open loop (the default): every row keeps its time, a continuation turn fires at the later
//!   of its time and the previous turn's completion; `--max-idle-gap-cap-seconds` shortens every
//!   gap between consecutive rows ([`reflow_idle_gaps`]); `--open-loop-strict` makes each row a
//!   session of its own;
//! - closed loop (`--no-open-loop-replay`): a continuation turn waits the recorded start-to-start
//!   gap less the previous turn's recorded `duration_e2e_ms` (both after the speedup) once the
//!   previous turn completed, at most `--inter-turn-delay-cap-seconds`; the idle-gap cap then
//!   moves the session starts;
//! - each row sends its recorded prompt verbatim (`text_input`), `max_tokens` = the recorded
//!   output tokens (at least 1), and in the body `min_tokens` (unless `--no-force-min-tokens`)
//!   and the KV hints `hash_ids`/`block_size` (unless `--omit-kv-hints`), as the row's `extra`.
//!
//! [`retime`] applies the two options whose meaning holds for any timed trace (`--replay-speedup`,
//! `--max-idle-gap-cap-seconds`) to a trace of another format, with the same rules.

mod convert;
mod options;
mod record;
mod retime;
mod sample;
#[cfg(test)]
mod tests;

pub use convert::{BasetenReport, convert};
pub use options::BasetenReplay;
pub use record::{REQUIRED_COLUMNS, Record, SESSION_COLUMNS, SessionId, session_column};
pub use retime::{reflow_idle_gaps, retime};
