//! AIPerf 0.13.0's own dataset files (`--custom-dataset-type single_turn | multi_turn |
//! random_pool`), read line by line into a trace.
//!
//! Every non-blank line is one JSON object (blank lines are skipped, as AIPerf skips them):
//! a single_turn record ([`super::single_turn`]), a multi_turn conversation
//! ([`super::multi_turn`]) or a random_pool entry ([`super::random_pool`]). Records and
//! conversations of one `session_id` are the turns of one session in file order, wherever their
//! lines are, as AIPerf groups them; a multi_turn line without one is a session of its own, named
//! `line-N` (a name no line gives). Pools are sampled by [`super::random_pool::sample`].

use std::collections::HashSet;

use serde_json::Value;

use super::model::{Row, Trace};
use super::random_pool::{self, Pool};
use super::single_turn::{RecordError, err, record_row};

/// AIPerf's dataset file types read here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    SingleTurn,
    MultiTurn,
    RandomPool,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::SingleTurn, Kind::MultiTurn, Kind::RandomPool];

    /// AIPerf's name (`--custom-dataset-type`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::SingleTurn => "single_turn",
            Kind::MultiTurn => "multi_turn",
            Kind::RandomPool => "random_pool",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of a file that reads as one of AIPerf's own dataset files rather than a trace, told
/// from its first non-blank line (of `first_bytes`) as AIPerf infers it: an object with `turns`
/// is a multi_turn conversation; one with `text` or `texts` and none of a Mooncake row's inputs a
/// single_turn record (random_pool files read as single_turn ones unless named). With the
/// evidence.
pub fn infer(first_bytes: &[u8]) -> Option<(Kind, &'static str)> {
    let text = String::from_utf8_lossy(first_bytes);
    let line = text.trim_start_matches('\u{feff}').lines().map(str::trim).find(|l| !l.is_empty())?;
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) else { return None };
    if m.get("turns").is_some_and(Value::is_array) {
        return Some((Kind::MultiTurn, "a first line with a list of `turns`"));
    }
    let mooncake = ["input_length", "text_input", "messages", "payload", "hash_ids"];
    if (m.contains_key("text") || m.contains_key("texts")) && !mooncake.iter().any(|k| m.contains_key(*k)) {
        return Some((Kind::SingleTurn, "a first line with `text` or `texts` and no Mooncake input"));
    }
    None
}

/// A line that is not one of the file's records: its 1-based number and what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("line {line}: {error}")]
pub struct LineError {
    pub line: u64,
    pub error: RecordError,
}

/// The JSON of one line, `None` for a blank one.
fn json(line: u64, text: &str) -> Result<Option<Value>, LineError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| LineError { line, error: err("", "a JSON object per line", format!("no JSON ({e})")) })
}

/// Reads a single_turn or multi_turn file's lines (pushed in order) into one trace.
#[derive(Debug)]
pub struct ConversationReader {
    /// Lines are multi_turn conversations (else single_turn records).
    multi_turn: bool,
    rows: Vec<Row>,
    /// Rows of multi_turn lines without a session id: the first row and the line.
    unnamed: Vec<(usize, usize, u64)>,
    /// Every session id the lines give.
    named: HashSet<String>,
    /// Each multi_turn conversation's leading system turn (its first line and the text).
    systems: Vec<(u64, Option<String>)>,
}

impl ConversationReader {
    /// A reader of single_turn records.
    pub fn single_turn() -> ConversationReader {
        ConversationReader {
            multi_turn: false,
            rows: Vec::new(),
            unnamed: Vec::new(),
            named: HashSet::new(),
            systems: Vec::new(),
        }
    }

    /// A reader of multi_turn conversations.
    pub fn multi_turn() -> ConversationReader {
        ConversationReader { multi_turn: true, ..ConversationReader::single_turn() }
    }

    /// Reads line `line` (1-based).
    pub fn push_line(&mut self, line: u64, text: &str) -> Result<(), LineError> {
        let Some(v) = json(line, text)? else { return Ok(()) };
        let at = |error| LineError { line, error };
        if self.multi_turn {
            let c = super::multi_turn::conversation(&v, line).map_err(at)?;
            let known = c.session_id.as_ref().is_some_and(|id| self.named.contains(id));
            if known && c.system.is_some() {
                let expected = "user (a leading system turn opens only a conversation's first line: AIPerf sends a \
                                later one as a turn of the history)";
                return Err(at(err("turns[0].role", expected, "\"system\"")));
            }
            if !known {
                self.systems.push((line, c.system));
            }
            let start = self.rows.len();
            self.rows.extend(c.rows);
            match c.session_id {
                Some(id) => {
                    for r in &mut self.rows[start..] {
                        r.session_id = Some(id.as_str().into());
                    }
                    self.named.insert(id);
                }
                None => self.unnamed.push((start, self.rows.len(), line)),
            }
        } else {
            let row = record_row(&v, line).map_err(at)?;
            if let Some(id) = &row.session_id {
                self.named.insert(id.to_string());
            }
            self.rows.push(row);
        }
        Ok(())
    }

    /// The system prompt of the multi_turn conversations: their leading system turn (AIPerf's
    /// conversation system prompt), which must be the same in every conversation, or absent from
    /// all, since the run has one; the first line that differs is the error.
    pub fn system_prompt(&self) -> Result<Option<&str>, LineError> {
        let Some((_, first)) = self.systems.first() else { return Ok(None) };
        match self.systems.iter().find(|(_, s)| s != first) {
            None => Ok(first.as_deref()),
            Some((line, other)) => Err(LineError {
                line: *line,
                error: err(
                    "turns[0]",
                    "the same leading system turn in every conversation of the file, or in none (one system prompt \
                     for the run here; AIPerf gives each conversation its own)",
                    match (other, first) {
                        (Some(s), _) => format!("system {s:?}"),
                        (None, Some(f)) => format!("no system turn where line {} has {f:?}", self.systems[0].0),
                        (None, None) => "no system turn".to_string(),
                    },
                ),
            }),
        }
    }

    /// The rows read so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The trace of every line read, in file order.
    pub fn finish(mut self) -> Trace {
        for (start, end, line) in std::mem::take(&mut self.unnamed) {
            let mut id = format!("line-{line}");
            while self.named.contains(&id) {
                id.push('\'');
            }
            for r in &mut self.rows[start..end] {
                r.session_id = Some(id.as_str().into());
            }
        }
        let mut trace = Trace::with_capacity(self.rows.len(), 0);
        for row in self.rows {
            trace.push(row, []);
        }
        trace
    }
}

/// Reads the lines of one random_pool file (pushed in order) into its pool.
#[derive(Debug, Default)]
pub struct PoolReader {
    entries: Vec<Vec<String>>,
}

impl PoolReader {
    pub fn new() -> PoolReader {
        PoolReader::default()
    }

    /// Reads line `line` (1-based).
    pub fn push_line(&mut self, line: u64, text: &str) -> Result<(), LineError> {
        let Some(v) = json(line, text)? else { return Ok(()) };
        let texts = random_pool::entry(&v).map_err(|error| LineError { line, error })?;
        self.entries.push(texts);
        Ok(())
    }

    /// The pool named `name` (AIPerf's: the file's name).
    pub fn finish(self, name: impl Into<String>) -> Pool {
        Pool { name: name.into(), entries: self.entries }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::Input;
    use super::*;

    fn read(kind: Kind, text: &str) -> Result<Trace, LineError> {
        let mut r = match kind {
            Kind::MultiTurn => ConversationReader::multi_turn(),
            _ => ConversationReader::single_turn(),
        };
        for (i, l) in text.lines().enumerate() {
            r.push_line(i as u64 + 1, l)?;
        }
        Ok(r.finish())
    }

    fn ids(t: &Trace) -> Vec<Option<&str>> {
        t.rows().iter().map(|r| r.session_id.as_deref()).collect()
    }

    #[test]
    fn single_turn_lines_are_rows_and_sessions_keep_their_ids() {
        let t = read(
            Kind::SingleTurn,
            "{\"text\": \"a\", \"session_id\": \"s\"}\n\n  \n{\"text\": \"b\"}\n{\"text\": \"c\", \"session_id\": \"s\", \"delay\": 5}\n",
        )
        .unwrap();
        assert_eq!(ids(&t), [Some("s"), None, Some("s")]);
        assert_eq!(t.rows().iter().map(|r| r.line).collect::<Vec<_>>(), [1, 4, 5]);
        assert_eq!(t.rows()[1].input, Input::Text("b".into()));
        let e = read(Kind::SingleTurn, "{\"text\": \"a\"}\n{\"text\": \"b\",}\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("line 2: a JSON object per line, got no JSON ("), "{e}");
        let e = read(Kind::SingleTurn, "{\"text\": \"a\", \"images\": [\"x.png\"]}").unwrap_err();
        assert!(e.to_string().starts_with("line 1: `images`: no images"), "{e}");
    }

    #[test]
    fn multi_turn_lines_are_sessions_named_by_their_line_when_unnamed() {
        let t = read(
            Kind::MultiTurn,
            "{\"turns\": [{\"text\": \"a\"}, {\"text\": \"b\", \"delay\": 10}]}\n{\"session_id\": \"line-1\", \"turns\": [{\"text\": \"c\"}]}\n{\"session_id\": \"x\", \"turns\": [{\"text\": \"d\"}]}\n{\"turns\": [{\"text\": \"e\"}]}\n{\"session_id\": \"x\", \"turns\": [{\"text\": \"f\"}]}\n",
        )
        .unwrap();
        // A name a line gives is never given to an unnamed line; lines of one id are one session.
        assert_eq!(ids(&t), [Some("line-1'"), Some("line-1'"), Some("line-1"), Some("x"), Some("line-4"), Some("x")]);
        // One leading system turn for every conversation, or the first line that differs.
        let system = |text: &str| {
            let mut r = ConversationReader::multi_turn();
            for (i, l) in text.lines().enumerate() {
                r.push_line(i as u64 + 1, l)?;
            }
            r.system_prompt().map(|s| s.map(str::to_owned))
        };
        let sys =
            |t: &str| format!("{{\"turns\": [{{\"role\": \"system\", \"text\": \"{t}\"}}, {{\"text\": \"q\"}}]}}");
        assert_eq!(system(&[sys("be brief"), sys("be brief")].join("\n")).unwrap().as_deref(), Some("be brief"));
        assert_eq!(system("{\"turns\": [{\"text\": \"q\"}]}").unwrap(), None);
        let e = system(&[sys("be brief"), "{\"turns\": [{\"text\": \"q\"}]}".into()].join("\n")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("got no system turn where line 1 has \"be brief\""), "{e}");
        let e = system(&[sys("a"), sys("b")].join("\n")).unwrap_err();
        assert!(e.to_string().starts_with("line 2: `turns[0]`: the same leading system turn"), "{e}");
        let named = |t: &str| {
            format!(
                "{{\"session_id\": \"s\", \"turns\": [{{\"role\": \"system\", \"text\": \"{t}\"}}, {{\"text\": \"q\"}}]}}"
            )
        };
        let e = system(&[named("a"), named("a")].join("\n")).unwrap_err();
        assert!(e.to_string().starts_with("line 2: `turns[0].role`: user (a leading system turn opens only"), "{e}");

        let e = read(Kind::MultiTurn, "{\"turns\": [{\"text\": \"a\"}]}\n{\"session_id\": \"s\"}\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: `turns`: a list of at least one turn (AIPerf's single_turn records), got nothing"
        );
    }

    #[test]
    fn aiperfs_files_are_told_from_traces_by_their_first_line() {
        let kind = |t: &str| infer(t.as_bytes()).map(|(k, _)| k);
        assert_eq!(kind("\n{\"turns\": [{\"text\": \"a\"}]}\n"), Some(Kind::MultiTurn));
        assert_eq!(kind("{\"text\": \"a\", \"session_id\": \"s\"}"), Some(Kind::SingleTurn));
        assert_eq!(kind("{\"texts\": [\"a\"]}\n{\"input_length\": 3}"), Some(Kind::SingleTurn));
        assert_eq!(kind("{\"text_input\": \"a\"}"), None);
        assert_eq!(kind("{\"input_length\": 3, \"text\": \"a\"}"), None);
        assert_eq!(kind("timestamp,ContextTokens\n"), None);
        assert_eq!(kind(""), None);
    }

    #[test]
    fn a_pool_reads_its_entries() {
        let mut r = PoolReader::new();
        r.push_line(1, "{\"text\": \"a\"}").unwrap();
        r.push_line(2, "").unwrap();
        r.push_line(3, "{\"texts\": [\"b\", \"c\"]}").unwrap();
        let e = r.push_line(4, "{\"text\": \"d\", \"session_id\": \"s\"}").unwrap_err();
        assert!(e.to_string().starts_with("line 4: `session_id`: no timing, session"), "{e}");
        let p = r.finish("p.jsonl");
        assert_eq!(p, Pool { name: "p.jsonl".into(), entries: vec![vec!["a".into()], vec!["b".into(), "c".into()]] });
        assert_eq!(Kind::from_name("random_pool"), Some(Kind::RandomPool));
        assert_eq!(Kind::from_name("mooncake_trace"), None);
    }
}
