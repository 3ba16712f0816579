//! A Baseten trace as the CLI reads it: the columns it must have, its session column, and one
//! [`Record`] per row.

/// The columns a Baseten trace must have.
pub const REQUIRED_COLUMNS: [&str; 4] = ["timestamp_start_unix_ms", "prompt", "input_tokens", "output_tokens"];

/// The session columns, in AIPerf's order of preference.
pub const SESSION_COLUMNS: [&str; 2] = ["provided_session_id", "poor_man_session_id"];

/// The session column of a file with these columns: `provided_session_id`, else
/// `poor_man_session_id`, else none (every row is a session of its own).
pub fn session_column(has: impl Fn(&str) -> bool) -> Option<&'static str> {
    SESSION_COLUMNS.into_iter().find(|c| has(c))
}

/// A session id as the file holds it (a string or a non-negative integer).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SessionId {
    Text(String),
    Int(u64),
}

impl SessionId {
    /// The id as AIPerf names the session (`str(id)`).
    pub(super) fn key(&self) -> String {
        match self {
            SessionId::Text(s) => s.clone(),
            SessionId::Int(n) => n.to_string(),
        }
    }
}

/// One row of a Baseten trace: its recorded request.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// 1-based row of the file (errors name it).
    pub row: u64,
    pub timestamp_ms: u64,
    pub prompt: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// KV-cache block hashes (`total_hashes`; empty when null or not read).
    pub total_hashes: Vec<u64>,
    /// The session column's value (`None`: null, or no session column).
    pub session: Option<SessionId>,
    pub duration_e2e_ms: Option<u64>,
    pub block_size: Option<u64>,
}
