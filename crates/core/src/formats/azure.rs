//! Azure LLM inference traces, 2023 (Splitwise) and 2024 (DynamoLLM): CSV
//! `TIMESTAMP,ContextTokens,GeneratedTokens` with absolute date-times, without (2023, 7 fraction
//! digits) or with a UTC offset (2024, `+00:00`). No prefix hashes and no conversations.

use super::columns::{Header, Record as CsvRecord};
use super::error::FormatError;
use super::sink::{Record, Sink};
use crate::datetime::{DATETIME_SYNTAX, parse_datetime};

const NEEDED: &str = "TIMESTAMP, ContextTokens, GeneratedTokens";

#[derive(Debug)]
struct Columns {
    header: Header,
    time: usize,
    input: usize,
    output: usize,
}

#[derive(Debug, Default)]
pub(super) struct State {
    columns: Option<Columns>,
    rows: u64,
    with_offset: u64,
}

impl State {
    pub(super) fn line(&mut self, sink: &mut Sink<'_>, line: u64, text: &str) -> Result<(), FormatError> {
        let Some(c) = &self.columns else {
            let header = Header::parse(sink.file(), line, text)?;
            let time = header.require(sink.file(), "TIMESTAMP", NEEDED)?;
            let input = header.require(sink.file(), "ContextTokens", NEEDED)?;
            let output = header.require(sink.file(), "GeneratedTokens", NEEDED)?;
            self.columns = Some(Columns { header, time, input, output });
            return Ok(());
        };
        let file = sink.file().clone();
        let rec = CsvRecord::new(&file, line, text, &c.header)?;
        let at = parse_datetime(rec.text(c.time)).ok_or_else(|| rec.error(c.time, DATETIME_SYNTAX))?;
        let input = rec.count(c.input)?;
        let output = rec.count(c.output)?;
        self.rows += 1;
        self.with_offset += u64::from(at.has_offset);
        sink.count_record();
        sink.push(Record {
            at_ns: at.unix_ns,
            input,
            output: Some(output),
            conversation: None,
            ids: None,
            line,
            turn: None,
        })
    }

    pub(super) fn end(self) -> Result<String, FormatError> {
        let variant = if self.with_offset == 0 {
            "Azure LLM 2023 style (date-times without UTC offset)".to_string()
        } else if self.with_offset == self.rows {
            "Azure LLM 2024 style (date-times with UTC offset)".to_string()
        } else {
            format!(
                "Azure LLM trace, {} of {} date-times with a UTC offset (others read as UTC)",
                self.with_offset, self.rows
            )
        };
        Ok(format!("{variant}, {} rows; no prefix hashes, no conversations", self.rows))
    }
}
