//! BurstGPT v1 (`Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`) and v2
//! (adds `Session ID` and `Elapsed time` at positions 2–3) CSV, read by column name. Timestamps
//! are seconds; a row with `Response tokens == 0` is a failed request; only `Conversation log`
//! rows carry a `Session ID`, which becomes the row's `conversation_id`. No prefix hashes.

use std::sync::Arc;

use super::columns::{Header, Record as CsvRecord};
use super::error::FormatError;
use super::sink::{Record, Sink};

const NEEDED: &str = "Timestamp, Model, Request tokens, Response tokens (Session ID optional)";

#[derive(Debug)]
struct Columns {
    header: Header,
    time: usize,
    model: usize,
    input: usize,
    output: usize,
    session: Option<usize>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    columns: Option<Columns>,
    rows: u64,
    in_sessions: u64,
}

impl State {
    pub(super) fn line(&mut self, sink: &mut Sink<'_>, line: u64, text: &str) -> Result<(), FormatError> {
        let Some(c) = &self.columns else {
            let header = Header::parse(sink.file(), line, text)?;
            let time = header.require(sink.file(), "Timestamp", NEEDED)?;
            let model = header.require(sink.file(), "Model", NEEDED)?;
            let input = header.require(sink.file(), "Request tokens", NEEDED)?;
            let output = header.require(sink.file(), "Response tokens", NEEDED)?;
            let session = header.find("Session ID");
            self.columns = Some(Columns { header, time, model, input, output, session });
            return Ok(());
        };
        let file = sink.file().clone();
        let rec = CsvRecord::new(&file, line, text, &c.header)?;
        let at_ns = rec.seconds_ns(c.time)?;
        let input = rec.count(c.input)?;
        let output = rec.count(c.output)?;
        sink.count_record();
        if !sink.keeps_model(rec.text(c.model)) || (output == 0 && !sink.keeps_failed()) {
            return Ok(());
        }
        let conversation = c
            .session
            .map(|s| rec.text(s))
            .filter(|s| !s.is_empty())
            .map(|s| Arc::from(format!("{}{s}", sink.prefix())));
        self.rows += 1;
        self.in_sessions += u64::from(conversation.is_some());
        sink.push(Record { at_ns, input, output: Some(output), conversation, ids: None, line, turn: None })
    }

    pub(super) fn end(self) -> Result<String, FormatError> {
        let version = match self.columns.as_ref().and_then(|c| c.session) {
            Some(_) => "v2 (with Session ID)",
            None => "v1",
        };
        Ok(format!(
            "BurstGPT {version}, {} rows kept ({} in conversations); timestamps in seconds; no prefix hashes",
            self.rows, self.in_sessions
        ))
    }
}
