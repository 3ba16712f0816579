//! The line parser: [`TraceParser`] takes a trace's lines one by one (or in blocks parsed apart),
//! each read as one row by the row rules, and keeps the rows and the errors named by file and
//! line.

use std::sync::Arc;

use crate::trace::error::{RowError, TraceError};
use crate::trace::model::{Row, Trace};
use crate::trace::row::{parse_plain_row, parse_row, parse_row_serde};

/// How to read a trace.
#[derive(Clone, Debug)]
pub struct ParseOptions {
    /// Name used in error messages (usually the file path).
    pub source: Arc<str>,
    /// Keep going past invalid rows, reporting them as skipped.
    pub skip_invalid: bool,
    /// At most this many row errors are kept (the total is still counted).
    pub max_errors: usize,
    /// [`read`](crate::trace::read) stops with [`TraceError::LineTooLong`] at a line longer than this many bytes.
    pub max_line_bytes: usize,
}

/// Default of [`ParseOptions::max_line_bytes`]: 64 MiB, far above any real row (a row with a
/// million hash ids is about 10 MB).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// The UTF-8 byte order mark (U+FEFF), as it appears at the start of a line.
const BOM: char = '\u{feff}';

impl ParseOptions {
    pub fn new(source: impl Into<Arc<str>>) -> Self {
        ParseOptions {
            source: source.into(),
            skip_invalid: false,
            max_errors: 50,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }

    /// Sets [`ParseOptions::max_line_bytes`].
    pub fn max_line_bytes(mut self, max: usize) -> Self {
        self.max_line_bytes = max;
        self
    }

    pub fn skip_invalid(mut self, skip: bool) -> Self {
        self.skip_invalid = skip;
        self
    }
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self::new("<trace>")
    }
}

/// A parsed trace plus what was skipped on the way.
#[derive(Debug)]
pub struct ParseOutcome {
    pub trace: Trace,
    /// Rejected rows (only non-empty with `skip_invalid`), at most `max_errors` of them.
    pub skipped: Vec<RowError>,
    /// Number of rejected rows, including those not kept in `skipped`.
    pub skipped_total: u64,
    /// Lines read, blank ones included.
    pub lines: u64,
}

/// Incremental parser: feed it lines, then [`TraceParser::finish`].
#[derive(Debug)]
pub struct TraceParser {
    pub(super) opts: ParseOptions,
    trace: Trace,
    errors: Vec<RowError>,
    error_total: u64,
    line: u64,
}

impl TraceParser {
    pub fn new(opts: ParseOptions) -> Self {
        TraceParser { opts, trace: Trace::new(), errors: Vec::new(), error_total: 0, line: 0 }
    }

    /// Parses the next line (without its line terminator; a trailing `\r` is ignored).
    pub fn push_line(&mut self, line: &str) {
        self.push_text(line, false);
    }

    /// [`TraceParser::push_line`]; `not_plain`: the line (after the first, its `\r` stripped) is
    /// known not to be a plain row, so only the general path reads it.
    fn push_text(&mut self, line: &str, not_plain: bool) {
        self.line += 1;
        let mut text = line.strip_suffix('\r').unwrap_or(line);
        if self.line == 1 {
            text = text.strip_prefix(BOM).unwrap_or(text);
        } else if text.starts_with(BOM) {
            let reason = "starts with a UTF-8 byte order mark (bytes EF BB BF, invisible in editors): \
                          one is only allowed at the start of the file; remove it";
            self.record_error(None, reason.into());
            return;
        }
        if text.trim().is_empty() {
            return;
        }
        let parsed = match not_plain {
            true => parse_row_serde(text, self.line, &mut self.trace),
            false => parse_row(text, self.line, &mut self.trace),
        };
        if let Err((field, mut reason)) = parsed {
            if text.contains('\r') {
                reason.push_str(CR_HINT);
            }
            self.record_error(field, reason);
        }
    }

    /// Parses the next line given as bytes, rejecting invalid UTF-8 with a row error. A plain
    /// row after the first line (which may start with a byte order mark) is read from its bytes
    /// at once: its strings are checked as it takes them.
    pub fn push_line_bytes(&mut self, line: &[u8]) {
        let tried = self.line > 0;
        if tried && parse_plain_row(line.strip_suffix(b"\r").unwrap_or(line), self.line + 1, &mut self.trace) {
            self.line += 1;
            return;
        }
        match std::str::from_utf8(line) {
            Ok(s) => self.push_text(s, tried),
            Err(e) => {
                self.line += 1;
                self.record_error(None, format!("not valid UTF-8 (byte {})", e.valid_up_to() + 1));
            }
        }
    }

    fn record_error(&mut self, field: Option<String>, reason: String) {
        self.error_total += 1;
        if self.errors.len() < self.opts.max_errors {
            self.errors.push(RowError { file: self.opts.source.clone(), line: self.line, field, reason });
        }
    }

    /// A parser for a block of lines that starts after line `lines_before` of a file: its errors
    /// and rows carry the file's line numbers. Blocks of one file can be parsed apart (on several
    /// threads) and their results taken in order with [`TraceParser::absorb`].
    pub fn after_line(opts: ParseOptions, lines_before: u64) -> Self {
        TraceParser { line: lines_before, ..TraceParser::new(opts) }
    }

    /// Parses a block of whole lines, each ended by `\n` but the last, which may be the end of
    /// the file. Stops with [`TraceError::LineTooLong`] at a line longer than the maximum, like
    /// [`read`](crate::trace::read).
    pub fn push_block(&mut self, block: &[u8]) -> Result<(), TraceError> {
        let max = self.opts.max_line_bytes;
        let mut rest = block;
        while !rest.is_empty() {
            let (line, next) = match memchr::memchr(b'\n', rest) {
                Some(end) => (&rest[..end], &rest[end + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            if line.len() > max {
                return Err(TraceError::LineTooLong {
                    file: self.opts.source.clone(),
                    line: self.line + 1,
                    limit: max,
                    cr_only: line[..max].contains(&b'\r'),
                });
            }
            self.push_line_bytes(line);
            rest = next;
        }
        Ok(())
    }

    /// Takes in the errors and line count of the parser of the block that follows this one (its
    /// rows are the caller's to drain first): the errors kept are the file's first ones.
    pub fn absorb(&mut self, block: &mut TraceParser) {
        let room = self.opts.max_errors.saturating_sub(self.errors.len());
        self.errors.extend(block.errors.drain(..).take(room));
        self.error_total += block.error_total;
        self.line = block.line;
    }

    /// [`TraceParser::absorb`] taking the block's rows too, after this parser's: the blocks of a
    /// file parsed apart give the trace one parser reading it whole gives.
    pub fn absorb_rows(&mut self, block: &mut TraceParser) {
        self.trace.append(&mut block.trace);
        self.absorb(block);
    }

    /// The rows accepted so far, for a caller that takes them away (a block's, before
    /// [`TraceParser::absorb`]).
    pub fn trace_mut(&mut self) -> &mut Trace {
        &mut self.trace
    }

    /// Lines seen so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// Rows accepted so far.
    pub fn rows(&self) -> usize {
        self.trace.len()
    }

    /// Hands the rows accepted since the last call to `f` (with their hash ids) and forgets them:
    /// a caller that keeps only what it needs of each row (the analysis) holds one line's rows at
    /// a time instead of the whole trace. [`TraceParser::finish`] then returns an empty trace.
    pub fn drain_rows(&mut self, mut f: impl FnMut(&Row, &[u64])) {
        for (row, ids) in self.trace.iter() {
            f(row, ids);
        }
        self.trace.clear();
    }

    /// Invalid rows seen so far.
    pub fn error_count(&self) -> u64 {
        self.error_total
    }

    /// The trace, or every error if some rows were invalid and skipping was not asked for.
    pub fn finish(self) -> Result<ParseOutcome, TraceError> {
        if self.error_total > 0 && !self.opts.skip_invalid {
            return Err(TraceError::InvalidRows {
                file: self.opts.source,
                errors: self.errors,
                total: self.error_total,
            });
        }
        Ok(ParseOutcome { trace: self.trace, skipped: self.errors, skipped_total: self.error_total, lines: self.line })
    }
}

/// Parses a whole trace held in memory.
pub fn parse_str(text: &str, opts: ParseOptions) -> Result<ParseOutcome, TraceError> {
    let mut parser = TraceParser::new(opts);
    for line in text.split('\n') {
        parser.push_line(line);
    }
    // `split` yields a final empty piece after a trailing newline; it is not a line of the file.
    if text.ends_with('\n') {
        parser.line -= 1;
    }
    parser.finish()
}

/// Added to the error of a line that holds a carriage return inside it.
const CR_HINT: &str = " (the line holds a carriage return (CR, \\r) inside it: the file seems to use CR-only \
                       line endings; convert them to LF, e.g. with `tr '\\r' '\\n'`)";
