//! The columns of the Azure and BurstGPT traces: a header naming them (read by name, since
//! BurstGPT v2 inserts columns) and typed access to a record's fields that names the file, line
//! and column on failure. Lines are split by [`crate::csv::split`].

use std::borrow::Cow;
use std::sync::Arc;

use super::error::{FormatError, Line};
use crate::csv::split;

/// Column positions found in a header line.
#[derive(Debug)]
pub(crate) struct Header {
    names: Vec<String>,
}

impl Header {
    pub(crate) fn parse(file: &Arc<str>, line: u64, text: &str) -> Result<Self, FormatError> {
        let names = split(text).ok_or_else(|| FormatError::Shape {
            file: file.clone(),
            line: Line(Some(line)),
            reason: "the CSV header has an unterminated quote".into(),
        })?;
        Ok(Header { names: names.iter().map(|n| n.trim().to_string()).collect() })
    }

    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n.eq_ignore_ascii_case(name))
    }

    /// The column's index, or an error naming the columns found and the ones the format needs.
    pub(crate) fn require(&self, file: &Arc<str>, name: &str, needed: &str) -> Result<usize, FormatError> {
        self.find(name).ok_or_else(|| FormatError::Shape {
            file: file.clone(),
            line: Line(Some(1)),
            reason: format!("the header has no column '{name}' (found: {}; needed: {needed})", self.names.join(", ")),
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

/// One record's fields, with typed access that names the file, line and column on failure.
pub(crate) struct Record<'a> {
    pub file: &'a Arc<str>,
    pub line: u64,
    pub fields: Vec<Cow<'a, str>>,
    pub header: &'a Header,
}

impl<'a> Record<'a> {
    pub(crate) fn new(file: &'a Arc<str>, line: u64, text: &'a str, header: &'a Header) -> Result<Self, FormatError> {
        let fields = split(text).ok_or_else(|| FormatError::Shape {
            file: file.clone(),
            line: Line(Some(line)),
            reason: "unterminated quote".into(),
        })?;
        if fields.len() != header.len() {
            return Err(FormatError::Shape {
                file: file.clone(),
                line: Line(Some(line)),
                reason: format!("{} fields, the header has {}", fields.len(), header.len()),
            });
        }
        Ok(Record { file, line, fields, header })
    }

    pub(crate) fn text(&self, col: usize) -> &str {
        self.fields.get(col).map_or("", |f| f.trim())
    }

    pub(crate) fn error(&self, col: usize, expected: &str) -> FormatError {
        FormatError::Field {
            file: self.file.clone(),
            line: Line(Some(self.line)),
            field: self.header.names.get(col).cloned().unwrap_or_default(),
            value: super::error::shown(self.text(col)),
            expected: expected.into(),
        }
    }

    /// A non-negative integer token count.
    pub(crate) fn count(&self, col: usize) -> Result<u64, FormatError> {
        let t = self.text(col);
        t.parse::<u64>()
            .ok()
            .or_else(|| {
                t.parse::<f64>().ok().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15).map(|f| f as u64)
            })
            .ok_or_else(|| self.error(col, "a non-negative integer"))
    }

    /// Seconds (integer or decimal text) as nanoseconds.
    pub(crate) fn seconds_ns(&self, col: usize) -> Result<i64, FormatError> {
        super::sink::seconds_to_ns(self.text(col).parse::<f64>().ok())
            .ok_or_else(|| self.error(col, "a non-negative number of seconds"))
    }
}
