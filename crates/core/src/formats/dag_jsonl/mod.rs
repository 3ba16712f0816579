//! AIPerf 0.13.0's `dag_jsonl` datasets (`--custom-dataset-type dag_jsonl`): one conversation a
//! line, whose turns start sub-agent conversations (`forks`, `spawns`) that later turns wait for.
//!
//! A line is AIPerf's `DagConversation`: `session_id` and `turns`, each turn a `DagTurn` with
//! `messages` (sent as the request's messages), `max_tokens` (the row's `output_length`), `model`
//! and `extra` (merged into the body), `tools`, `delay` (milliseconds after the session's previous
//! turn ended) and the branches:
//!
//! - `spawns`: a list of session ids (one group joined by the next turn, none when this is the
//!   last turn) or `{"children": [...], "join_at": K}` objects (joined by turn `K`);
//! - `forks`: session ids (the session ends with this turn, so it must be the last one) or
//!   `{"child": id, "background": true}` (the session goes on, nothing joins it).
//!
//! Every turn becomes a row of its session ([`crate::trace::Row::branches`] holding its branches);
//! the replay ([`crate::replay::schedule::sessions`]) turns each root conversation (one no turn
//! starts) and its sub-agents into one session run. The checks are AIPerf's, with its wording where
//! it has one: unknown keys, empty `messages`, a message without `role`, a `max_tokens` below 1 or
//! given as a boolean, a negative `delay`, duplicate session ids or children, a branch to an
//! unknown session, a session forked by two parents, a foreground fork before the last turn,
//! a `join_at` outside the session, a `system` message after a root's first turn, and cycles.
//! AIPerf's request-less orchestrator conversations (`orchestrator`, `rounds`, `think_time_*`,
//! conversation-level `spawns`) and `pre_session_spawns` are refused by name.
//!
//! Each turn's `messages` are sent as written: AIPerf's default `context_mode`
//! (`deltas_without_responses`) sends the session's earlier turns and the server's replies
//! before them, which a replay here does not (its `message_array_with_responses` mode is what is
//! sent).

mod error;
mod graph;
mod line;
#[cfg(test)]
mod tests;

pub use error::DagError;

use serde_json::Value;

use crate::hashing::FastMap;
use crate::trace::Trace;
use line::{Conversation, conversation};

/// Reads a `dag_jsonl` file line by line ([`DagReader::push_line`]) into a trace
/// ([`DagReader::finish`]).
#[derive(Default)]
pub struct DagReader {
    conversations: Vec<Conversation>,
    ids: FastMap<String, usize>,
}

impl DagReader {
    pub fn new() -> DagReader {
        DagReader::default()
    }

    /// Reads line `line` (1-based) of the file; blank lines are skipped, a UTF-8 byte order mark
    /// on the first is dropped.
    pub fn push_line(&mut self, text: &str, line: u32) -> Result<(), DagError> {
        let text = if line == 1 { text.trim_start_matches('\u{feff}') } else { text };
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(text).map_err(|e| DagError::Json { line, message: e.to_string() })?;
        let conv = conversation(&value, line)?;
        if self.ids.contains_key(&conv.id) {
            return Err(DagError::Graph { line, message: format!("duplicate session_id '{}'", conv.id) });
        }
        self.ids.insert(conv.id.clone(), self.conversations.len());
        self.conversations.push(conv);
        Ok(())
    }

    /// The trace: every conversation's turns as rows of its `session_id`, in file order, each
    /// holding the branches it starts; after AIPerf's checks of the graph.
    pub fn finish(self) -> Result<Trace, DagError> {
        if self.conversations.is_empty() {
            return Err(DagError::Empty);
        }
        graph::rows(self.conversations, &self.ids)
    }
}

/// Reads a whole `dag_jsonl` text.
pub fn parse(text: &str) -> Result<Trace, DagError> {
    let mut r = DagReader::new();
    for (i, line) in text.lines().enumerate() {
        r.push_line(line, u32::try_from(i + 1).unwrap_or(u32::MAX))?;
    }
    r.finish()
}
