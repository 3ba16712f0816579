//! Streaming, validating JSONL reader for Mooncake traces: lines in, rows out, each line read as
//! one row by [`super::row`] (the fast path, else serde with the visitors of [`super::visit`]),
//! each error named by file and line: `trace.jsonl:17: field 'input_length': expected an
//! integer, found "abc"`.
//!
//! [`read`] never holds more than [`ParseOptions::max_line_bytes`] of one line: a line without an
//! end (a gzip bomb of zeros, a file with CR-only line endings) stops the read with
//! [`TraceError::LineTooLong`] instead of growing without bound. A UTF-8 byte order mark at the
//! start of the file is skipped (editors on Windows write one); anywhere else it is named in the
//! error, since it is invisible when printed.

use std::io::BufRead;
use std::sync::Arc;

use super::row::parse_row;
use super::{Row, RowError, Trace, TraceError};

/// How to read a trace.
#[derive(Clone, Debug)]
pub struct ParseOptions {
    /// Name used in error messages (usually the file path).
    pub source: Arc<str>,
    /// Keep going past invalid rows, reporting them as skipped.
    pub skip_invalid: bool,
    /// At most this many row errors are kept (the total is still counted).
    pub max_errors: usize,
    /// [`read`] stops with [`TraceError::LineTooLong`] at a line longer than this many bytes.
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
    opts: ParseOptions,
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
        if let Err((field, mut reason)) = parse_row(text, self.line, &mut self.trace) {
            if text.contains('\r') {
                reason.push_str(CR_HINT);
            }
            self.record_error(field, reason);
        }
    }

    /// Parses the next line given as bytes, rejecting invalid UTF-8 with a row error.
    pub fn push_line_bytes(&mut self, line: &[u8]) {
        match std::str::from_utf8(line) {
            Ok(s) => self.push_line(s),
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
    /// [`read`].
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

/// Parses a trace from any buffered reader, holding at most
/// [`ParseOptions::max_line_bytes`] of a line in memory.
pub fn read(reader: impl BufRead, opts: ParseOptions) -> Result<ParseOutcome, TraceError> {
    read_with(reader, opts, |_| {})
}

/// [`read`] that hands each row to `f` as soon as it is parsed, keeping none: the outcome's
/// trace is empty (errors, skipped rows and line counts are as with [`read`]).
pub fn read_each(
    reader: impl BufRead,
    opts: ParseOptions,
    mut f: impl FnMut(&Row, &[u64]),
) -> Result<ParseOutcome, TraceError> {
    read_with(reader, opts, |parser| parser.drain_rows(&mut f))
}

/// The reading loop of [`read`] and [`read_each`]; `after_line` runs after every line.
fn read_with(
    mut reader: impl BufRead,
    opts: ParseOptions,
    mut after_line: impl FnMut(&mut TraceParser),
) -> Result<ParseOutcome, TraceError> {
    let mut parser = TraceParser::new(opts);
    let mut buf = Vec::with_capacity(4096);
    loop {
        // A line held whole in the reader's buffer is parsed in place, without a copy.
        if let Ok(chunk) = reader.fill_buf()
            && let Some(end) = memchr::memchr(b'\n', chunk).filter(|&end| end <= parser.opts.max_line_bytes)
        {
            parser.push_line_bytes(&chunk[..end]);
            after_line(&mut parser);
            reader.consume(end + 1);
            continue;
        }
        buf.clear();
        match read_line_capped(&mut reader, &mut buf, parser.opts.max_line_bytes) {
            Ok(LineRead::Line) => {
                parser.push_line_bytes(&buf);
                after_line(&mut parser);
            }
            Ok(LineRead::TooLong) => {
                return Err(TraceError::LineTooLong {
                    file: parser.opts.source.clone(),
                    line: parser.line + 1,
                    limit: parser.opts.max_line_bytes,
                    cr_only: buf.contains(&b'\r'),
                });
            }
            Ok(LineRead::End) => break,
            Err(error) => {
                return Err(TraceError::Read { file: parser.opts.source.clone(), line: parser.line, error });
            }
        }
    }
    parser.finish()
}

/// What [`read_line_capped`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineRead {
    /// A whole line (the last one may lack its `\n`).
    Line,
    /// More than the maximum without a line end; the buffer holds the first `max` bytes and the
    /// rest of the line is left unread.
    TooLong,
    /// The end of the input: no more lines.
    End,
}

/// Appends one line of `reader` to `buf`, without its `\n`, holding at most `max` bytes of it:
/// a `BufRead::read_until` that cannot be made to grow without bound.
pub fn read_line_capped(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<LineRead> {
    let max = max.saturating_add(buf.len());
    let mut any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if any { LineRead::Line } else { LineRead::End });
        }
        any = true;
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        if take > room {
            buf.extend_from_slice(&chunk[..room]);
            return Ok(LineRead::TooLong);
        }
        buf.extend_from_slice(&chunk[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            return Ok(LineRead::Line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::raw::FieldError;
    use super::super::row::parse_row_serde;
    use super::super::{Input, Number};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn read_each_hands_over_the_rows_that_read_keeps() {
        let text = "{\"input_length\":5,\"hash_ids\":[1,2]}\n\n{\"input_length\":\"x\"}\n{\"text_input\":\"hi\"}\n{\"input_length\":3,\"hash_ids\":[3]}\n";
        let opts = || ParseOptions::new("t.jsonl").skip_invalid(true);
        let whole = read(text.as_bytes(), opts()).unwrap();
        let mut seen: Trace = Trace::new();
        let each = read_each(text.as_bytes(), opts(), |row, ids| seen.push(row.clone(), ids.iter().copied())).unwrap();
        assert_eq!(seen, whole.trace);
        assert_eq!((seen.len(), seen.total_hash_ids()), (3, 3));
        assert!(each.trace.is_empty());
        assert_eq!((each.lines, each.skipped_total), (whole.lines, whole.skipped_total));
        assert_eq!(each.skipped, whole.skipped);
        // Without skipping, the bad row still fails the read.
        assert!(read_each(text.as_bytes(), ParseOptions::new("t.jsonl"), |_, _| {}).is_err());
    }

    fn via(text: &str, fast: bool) -> Result<Trace, FieldError> {
        let mut t = Trace::new();
        if fast { parse_row(text, 1, &mut t) } else { parse_row_serde(text, 1, &mut t) }.map(|()| t)
    }

    fn mooncake_value() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..1 << 40).prop_map(|v| v.to_string()),
            (-1000i64..1000).prop_map(|v| v.to_string()),
            Just("-0".to_string()),
            Just("007".to_string()),
            Just("1.5".to_string()),
            Just("2e3".to_string()),
            Just("null".to_string()),
            Just("99999999999999999999".to_string()),
            Just("\"s-1\"".to_string()),
            Just("\"a\\\"b\"".to_string()),
            prop::collection::vec(0u64..1 << 62, 0..6).prop_map(|v| format!("{v:?}")),
            Just("[1, -2]".to_string()),
            Just("[1.0]".to_string()),
        ]
    }

    proptest! {
        /// Whatever the fast path accepts, the serde path parses to the same row.
        #[test]
        fn fast_path_agrees_with_serde(
            fields in prop::collection::vec((prop::sample::select(vec!["timestamp", "input_length", "output_length", "hash_ids", "delay", "session_id", "conversation_id", "other"]), mooncake_value()), 0..6),
            ws in prop::sample::select(vec!["", " ", "  ", "\t"]),
        ) {
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}")).collect();
            let text = format!("{ws}{{{}}}{ws}", body.join(","));
            let mut fast = Trace::new();
            if let Some(row) = super::super::fast::parse(&text, fast.arena_mut(), 1) {
                fast.push_with_arena_tail(row, 0);
                prop_assert_eq!(Ok(fast), via(&text, false), "{}", text);
            }
            // And the combined path always equals the serde path.
            prop_assert_eq!(via(&text, true), via(&text, false), "{}", text);
        }
    }

    #[test]
    fn fast_path_takes_plain_mooncake_rows() {
        let mut t = Trace::new();
        let row = super::super::fast::parse(
            r#"{"timestamp": 27, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2]}"#,
            t.arena_mut(),
            3,
        );
        assert!(row.is_some());
        assert_eq!(t.all_hash_ids(), &[0, 1, 2]);
    }

    fn parse(text: &str) -> Result<ParseOutcome, TraceError> {
        parse_str(text, ParseOptions::new("t.jsonl"))
    }

    fn error_of(line: &str) -> String {
        match parse(line) {
            Err(TraceError::InvalidRows { errors, .. }) => errors[0].to_string(),
            other => panic!("expected an error for {line}, got {other:?}"),
        }
    }

    #[test]
    fn parses_a_mooncake_row() {
        let out =
            parse(r#"{"timestamp": 27, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2]}"#).unwrap();
        let (row, ids) = out.trace.iter().next().unwrap();
        assert_eq!(row.input, Input::Length(6755));
        assert_eq!(row.output_length, Some(500));
        assert_eq!(row.timestamp, Some(Number::Int(27)));
        assert_eq!(ids, &[0, 1, 2]);
        assert_eq!(row.line, 1);
    }

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let out = parse("\n{\"input_length\": 3}\r\n\n{\"input_length\": 4}\n").unwrap();
        assert_eq!(out.trace.len(), 2);
        assert_eq!(out.trace.rows()[1].line, 4);
        assert_eq!(out.lines, 4);
    }

    #[test]
    fn unknown_fields_are_kept_in_order() {
        let out = parse(r#"{"zeta": 1, "input_length": 3, "alpha": {"b": 2, "a": 1}}"#).unwrap();
        let row = &out.trace.rows()[0];
        let names: Vec<&str> = row.unknown_fields().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"]);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        assert_eq!(
            error_of(r#"{"input_length": "abc"}"#),
            "t.jsonl:1: field 'input_length': expected an integer, found \"abc\""
        );
        assert_eq!(
            error_of(r#"{"input_length": 10, "hash_ids": [1, "a"]}"#),
            "t.jsonl:1: field 'hash_ids[1]': expected an unsigned integer, found \"a\""
        );
        assert_eq!(
            error_of(r#"{"input_length": 1, "output_length": -2}"#),
            "t.jsonl:1: field 'output_length': expected a non-negative integer, found -2"
        );
        assert_eq!(
            error_of(r#"{"input_length": 1, "session_id": 7}"#),
            "t.jsonl:1: field 'session_id': expected a string, found 7"
        );
        assert_eq!(
            error_of(r#"{"input_length": 1, "timestamp": "soon"}"#),
            "t.jsonl:1: field 'timestamp': expected a number of milliseconds, found \"soon\""
        );
        assert_eq!(error_of("this is not json"), "t.jsonl:1: expected a JSON object, found `this is not json`");
        assert!(error_of("{\"input_length\": 1").contains("invalid JSON"));
        assert_eq!(error_of("[1, 2]"), "t.jsonl:1: expected a JSON object, found `[1, 2]`");
        assert_eq!(error_of("{\"input_length\": 1} x"), "t.jsonl:1: invalid JSON: trailing characters at column 21");
        assert_eq!(
            error_of(r#"{"input_length": 1, "input_length": 2}"#),
            "t.jsonl:1: field 'input_length': appears twice in the row"
        );
    }

    #[test]
    fn cross_field_rules() {
        assert!(error_of("{}").contains("no input"));
        assert!(
            error_of(r#"{"input_length": 10, "text_input": "hi"}"#)
                .contains("'input_length' and 'text_input' are mutually exclusive")
        );
        assert!(
            error_of(r#"{"text_input": "hi", "hash_ids": [1]}"#)
                .contains("field 'hash_ids': only allowed with 'input_length'")
        );
        assert!(error_of(r#"{"messages": []}"#).contains("field 'messages': must be a non-empty list"));
        assert!(error_of(r#"{"messages": [{"content": "x"}]}"#).contains("field 'messages[0]': missing 'role'"));
        assert!(
            error_of(r#"{"input_length": 5, "tools": [{"type": "function"}]}"#)
                .contains("field 'tools': only allowed with 'messages'")
        );
        assert!(
            error_of(r#"{"messages": [{"role": "user"}], "tools": []}"#)
                .contains("field 'tools': must be a non-empty list")
        );
        assert!(error_of(r#"{"payload": {}}"#).contains("field 'payload': must be a non-empty object"));
        assert!(error_of(r#"{"input_length": 10, "delay": -5}"#).contains("field 'delay': must be a non-negative"));
    }

    #[test]
    fn whole_floats_are_integers_and_nulls_are_absent() {
        let out =
            parse(r#"{"input_length": 10.0, "output_length": null, "hash_ids": null, "timestamp": 1.5}"#).unwrap();
        let row = &out.trace.rows()[0];
        assert_eq!(row.input, Input::Length(10));
        assert_eq!(row.output_length, None);
        assert_eq!(row.timestamp, Some(Number::Float(1.5)));
        assert!(error_of(r#"{"input_length": 10.5}"#).contains("found 10.5"));
    }

    #[test]
    fn all_errors_are_listed_up_to_the_limit_and_skipping_keeps_the_rest() {
        let text = "{\"input_length\": 1}\n{}\n{\"input_length\": \"x\"}\n{\"input_length\": 2}\n";
        match parse(text) {
            Err(TraceError::InvalidRows { errors, total, .. }) => {
                assert_eq!(total, 2);
                assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [2, 3]);
            }
            other => panic!("{other:?}"),
        }
        let mut opts = ParseOptions::new("t.jsonl").skip_invalid(true);
        opts.max_errors = 1;
        let out = parse_str(text, opts).unwrap();
        assert_eq!(out.trace.len(), 2);
        assert_eq!(out.skipped_total, 2);
        assert_eq!(out.skipped.len(), 1);
    }

    #[test]
    fn a_failed_row_leaves_no_ids_behind() {
        let out = parse_str("{\"input_length\": 1, \"hash_ids\": [5, 6], \"text_input\": \"x\"}\n{\"input_length\": 1, \"hash_ids\": [7]}", ParseOptions::default().skip_invalid(true)).unwrap();
        assert_eq!(out.trace.all_hash_ids(), &[7]);
    }

    #[test]
    fn reader_and_str_agree_and_reject_bad_utf8() {
        let text = "{\"input_length\": 1, \"hash_ids\": [1]}\n{\"input_length\": 2}";
        let a = parse(text).unwrap().trace;
        let b = read(text.as_bytes(), ParseOptions::new("t.jsonl")).unwrap().trace;
        assert_eq!(a, b);
        let bad: &[u8] = b"{\"input_length\": 1}\n{\"text_input\": \"\xff\"}\n";
        match read(bad, ParseOptions::new("t.jsonl")) {
            Err(TraceError::InvalidRows { errors, .. }) => {
                assert_eq!(errors[0].to_string(), "t.jsonl:2: not valid UTF-8 (byte 17)")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_line_past_the_limit_stops_the_read_with_its_line_number() {
        let opts = || ParseOptions::new("t.jsonl").max_line_bytes(32);
        let text = "{\"input_length\": 1}\n{\"input_length\": 1, \"output_length\": 123456789}\n";
        match read(text.as_bytes(), opts()) {
            Err(e @ TraceError::LineTooLong { line: 2, limit: 32, cr_only: false, .. }) => {
                assert!(e.to_string().starts_with("t.jsonl:2: the line is longer than 32 bytes"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        // Exactly at the limit is fine, with or without a final line end.
        let row = "{\"input_length\": 12345678901234}";
        assert_eq!(row.len(), 32);
        assert_eq!(read(format!("{row}\n{row}").as_bytes(), opts()).unwrap().trace.len(), 2);
        // An endless line is cut at the limit: the reader is never drained further.
        let mut endless = std::io::BufReader::with_capacity(8, std::io::repeat(b'0'));
        assert!(matches!(read(&mut endless, opts()), Err(TraceError::LineTooLong { line: 1, .. })));
    }

    #[test]
    fn cr_only_line_endings_are_named() {
        let text = "{\"input_length\": 1}\r{\"input_length\": 2}\r";
        let e = error_of(text);
        assert!(e.contains("carriage return") && e.contains("CR-only"), "{e}");
        let long = "{\"input_length\": 1}\r".repeat(4);
        match read(long.as_bytes(), ParseOptions::new("t.jsonl").max_line_bytes(40)) {
            Err(e @ TraceError::LineTooLong { cr_only: true, .. }) => assert!(e.to_string().contains("CR-only"), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_leading_bom_is_skipped_and_any_other_is_named() {
        let text = "\u{feff}{\"input_length\": 1}\n{\"input_length\": 2}\n";
        assert_eq!(parse(text).unwrap().trace.len(), 2);
        assert_eq!(read(text.as_bytes(), ParseOptions::new("t.jsonl")).unwrap().trace.len(), 2);
        let e = error_of("{\"input_length\": 1}\n\u{feff}{\"input_length\": 2}\n");
        assert!(e.starts_with("t.jsonl:2: starts with a UTF-8 byte order mark"), "{e}");
    }

    #[test]
    fn big_integers_are_shown_as_written() {
        assert_eq!(
            error_of(r#"{"input_length": 99999999999999999999}"#),
            "t.jsonl:1: field 'input_length': expected an integer, found 99999999999999999999"
        );
        assert_eq!(
            error_of(r#"{"input_length": 1, "hash_ids": [1, 2.0, 123456789012345678901234]}"#),
            "t.jsonl:1: field 'hash_ids[2]': expected an unsigned integer, found 123456789012345678901234"
        );
        assert!(error_of(r#"{"input_length": 1, "output_length": 1e30}"#).ends_with("found 1e30"));
    }
}
