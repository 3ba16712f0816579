//! Streaming, validating JSONL reader for Mooncake traces.
//!
//! Each line is deserialized by a hand-written serde visitor: hot fields (`input_length`,
//! `hash_ids`, `timestamp`, …) go straight into typed values and the id arena, without building a
//! `serde_json::Value` tree. When a field has the wrong type the visitor records which field and
//! why, so the error reads `trace.jsonl:17: field 'input_length': expected an integer, found "abc"`.
//!
//! [`read`] never holds more than [`ParseOptions::max_line_bytes`] of one line: a line without an
//! end (a gzip bomb of zeros, a file with CR-only line endings) stops the read with
//! [`TraceError::LineTooLong`] instead of growing without bound. A UTF-8 byte order mark at the
//! start of the file is skipped (editors on Windows write one); anywhere else it is named in the
//! error, since it is invisible when printed.

use std::cell::RefCell;
use std::fmt;
use std::io::BufRead;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{Input, Number, RareFields, Row, RowError, Trace, TraceError};

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

type FieldError = (Option<String>, String);

/// Parses one non-blank line into `trace`; on error nothing is added.
fn parse_row(text: &str, line: u64, trace: &mut Trace) -> Result<(), FieldError> {
    let start = trace.arena_mut().len();
    if let Some(row) = super::fast::parse(text, trace.arena_mut(), line) {
        trace.push_with_arena_tail(row, start);
        return Ok(());
    }
    trace.arena_mut().truncate(start);
    parse_row_serde(text, line, trace)
}

/// The general path: any row shape, with exact error messages.
fn parse_row_serde(text: &str, line: u64, trace: &mut Trace) -> Result<(), FieldError> {
    if !text.trim_start().starts_with('{') {
        let snippet: String = text.trim().chars().take(30).collect();
        let more = if snippet.len() < text.trim().len() { "…" } else { "" };
        return Err((None, format!("expected a JSON object, found `{snippet}{more}`")));
    }
    let start = trace.arena_mut().len();
    let ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let result = (&mut de)
        .deserialize_any(RowVisitor { ctx: &ctx, ids: trace.arena_mut() })
        .and_then(|raw| de.end().map(|()| raw));
    let raw = match result {
        Ok(Some(raw)) => raw,
        Ok(None) => {
            trace.arena_mut().truncate(start);
            return Err((None, "expected a JSON object".into()));
        }
        Err(e) => {
            trace.arena_mut().truncate(start);
            return Err(match ctx.failure.into_inner() {
                Some(failure) => as_written(text, failure),
                None => (None, format!("invalid JSON: {}", json_error_text(&e))),
            });
        }
    };
    let had_ids = trace.arena_mut().len() > start || raw.hash_ids_present;
    match raw.into_row(had_ids, line) {
        Ok(row) => {
            trace.push_with_arena_tail(row, start);
            Ok(())
        }
        Err(e) => {
            trace.arena_mut().truncate(start);
            Err(e)
        }
    }
}

/// Shows a number in `failure` as the row wrote it: serde_json hands over integers past 64 bits
/// as floats, whose digits would be printed rounded (`99999999999999999999` as `100000000000000000000`).
fn as_written(text: &str, failure: FieldError) -> FieldError {
    let (Some(field), reason) = &failure else { return failure };
    let Some((head, shown)) = reason.rsplit_once("found ") else { return failure };
    let Ok(value) = shown.parse::<f64>() else { return failure };
    match raw_number(text, field) {
        Some(raw) if raw != shown && raw.parse::<f64>() == Ok(value) => {
            (Some(field.clone()), format!("{head}found {raw}"))
        }
        _ => failure,
    }
}

/// The number token of `field` (`input_length`, or a list element like `hash_ids[3]`) in a row.
/// Only used for messages, after the element's predecessors parsed as plain numbers.
fn raw_number<'t>(text: &'t str, field: &str) -> Option<&'t str> {
    let (name, index) = match field.split_once('[') {
        Some((name, i)) => (name, Some(i.strip_suffix(']')?.parse::<usize>().ok()?)),
        None => (field, None),
    };
    let key = format!("\"{name}\"");
    let after_key = &text[text.find(&key)? + key.len()..];
    let mut rest = after_key.trim_start().strip_prefix(':')?.trim_start();
    if let Some(index) = index {
        rest = rest.strip_prefix('[')?;
        for _ in 0..index {
            rest = &rest[rest.find(',')? + 1..];
        }
        rest = rest.trim_start();
    }
    let end =
        rest.find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// serde_json's message without its " at line 1 column N" suffix, with the column kept.
fn json_error_text(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let msg = full.split(" at line ").next().unwrap_or(&full);
    format!("{msg} at column {}", e.column())
}

/// Where a field-level failure is recorded while serde unwinds.
#[derive(Default)]
struct Ctx {
    failure: RefCell<Option<FieldError>>,
}

impl Ctx {
    fn fail<E: de::Error>(&self, field: impl Into<String>, reason: impl Into<String>) -> E {
        let (field, reason) = (field.into(), reason.into());
        let msg = format!("field '{field}': {reason}");
        self.failure.borrow_mut().get_or_insert((Some(field), reason));
        E::custom(msg)
    }
}

/// A row's fields before the cross-field rules are checked.
#[derive(Default)]
struct RawRow {
    input_length: Option<i64>,
    text_input: Option<String>,
    messages: Option<Vec<Value>>,
    payload: Option<Map<String, Value>>,
    output_length: Option<u64>,
    hash_ids_present: bool,
    timestamp: Option<Number>,
    delay: Option<Number>,
    session_id: Option<String>,
    conversation_id: Option<String>,
    tools: Option<Vec<Value>>,
    extra: Option<Map<String, Value>>,
    unknown: Vec<(String, Value)>,
}

impl RawRow {
    fn into_row(self, has_ids: bool, line: u64) -> Result<Row, FieldError> {
        let modes: Vec<&str> = [
            ("input_length", self.input_length.is_some()),
            ("text_input", self.text_input.is_some()),
            ("messages", self.messages.is_some()),
            ("payload", self.payload.is_some()),
        ]
        .iter()
        .filter(|(_, present)| *present)
        .map(|(name, _)| *name)
        .collect();
        if modes.is_empty() {
            return Err((
                None,
                "no input: exactly one of 'input_length', 'text_input', 'messages' or 'payload' is required".into(),
            ));
        }
        if modes.len() > 1 {
            let names = modes.iter().map(|m| format!("'{m}'")).collect::<Vec<_>>().join(" and ");
            return Err((None, format!("{names} are mutually exclusive: give exactly one input")));
        }
        if has_ids && self.input_length.is_none() {
            return Err((
                Some("hash_ids".into()),
                format!("only allowed with 'input_length', not with '{}'", modes[0]),
            ));
        }
        if let Some(messages) = &self.messages {
            if messages.is_empty() {
                return Err((Some("messages".into()), "must be a non-empty list".into()));
            }
            for (i, m) in messages.iter().enumerate() {
                match m {
                    Value::Object(o) if o.contains_key("role") => {}
                    Value::Object(_) => {
                        return Err((Some(format!("messages[{i}]")), "missing 'role'".into()));
                    }
                    other => {
                        return Err((
                            Some(format!("messages[{i}]")),
                            format!("expected an object, found {}", describe(other)),
                        ));
                    }
                }
            }
        }
        if let Some(tools) = &self.tools {
            if self.messages.is_none() {
                return Err((Some("tools".into()), "only allowed with 'messages'".into()));
            }
            if tools.is_empty() {
                return Err((Some("tools".into()), "must be a non-empty list".into()));
            }
        }
        if let Some(payload) = &self.payload
            && payload.is_empty()
        {
            return Err((Some("payload".into()), "must be a non-empty object".into()));
        }
        if let Some(d) = self.delay
            && d.as_f64() < 0.0
        {
            return Err((
                Some("delay".into()),
                format!("must be a non-negative number of milliseconds, found {}", fmt_number(d)),
            ));
        }
        let input = if let Some(n) = self.input_length {
            Input::Length(n)
        } else if let Some(t) = self.text_input {
            Input::Text(t.into_boxed_str())
        } else if let Some(m) = self.messages {
            Input::Messages(m.into_boxed_slice())
        } else if let Some(p) = self.payload {
            Input::Payload(Box::new(p))
        } else {
            unreachable!("one input mode is present")
        };
        let rare = (self.tools.is_some() || self.extra.is_some() || !self.unknown.is_empty())
            .then(|| Box::new(RareFields { tools: self.tools, extra: self.extra, unknown: self.unknown }));
        Ok(Row {
            input,
            output_length: self.output_length,
            timestamp: self.timestamp,
            delay: self.delay,
            session_id: self.session_id.map(String::into_boxed_str),
            conversation: self.conversation_id.map(Arc::from),
            rare,
            line: u32::try_from(line).unwrap_or(u32::MAX),
            ids_start: 0,
            ids_len: 0,
        })
    }
}

fn fmt_number(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Float(f) => f.to_string(),
    }
}

/// A short description of a JSON value for error messages.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let mut shown: String = s.chars().take(40).collect();
            if shown.len() < s.len() {
                shown.push('…');
            }
            format!("{:?}", shown)
        }
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

struct RowVisitor<'a> {
    ctx: &'a Ctx,
    ids: &'a mut Vec<u64>,
}

impl<'de> Visitor<'de> for RowVisitor<'_> {
    type Value = Option<RawRow>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut raw = RawRow::default();
        let mut seen: u32 = 0;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let name = match &key {
                Key::Known(i) => {
                    if seen & (1 << i) != 0 {
                        return Err(ctx.fail(KNOWN[*i], "appears twice in the row"));
                    }
                    seen |= 1 << i;
                    KNOWN[*i]
                }
                Key::Unknown(_) => "",
            };
            match name {
                "input_length" => {
                    raw.input_length =
                        map.next_value_seed(IntSeed { ctx, field: "input_length", signed: true })?.map(|v| v as i64)
                }
                "output_length" => {
                    raw.output_length =
                        map.next_value_seed(IntSeed { ctx, field: "output_length", signed: false })?.map(|v| v as u64)
                }
                "hash_ids" => raw.hash_ids_present = map.next_value_seed(IdsSeed { ctx, ids: &mut *self.ids })?,
                "timestamp" => raw.timestamp = map.next_value_seed(NumberSeed { ctx, field: "timestamp" })?,
                "delay" => raw.delay = map.next_value_seed(NumberSeed { ctx, field: "delay" })?,
                "session_id" => raw.session_id = map.next_value_seed(StringSeed { ctx, field: "session_id" })?,
                "conversation_id" => {
                    raw.conversation_id = map.next_value_seed(StringSeed { ctx, field: "conversation_id" })?
                }
                "text_input" => raw.text_input = map.next_value_seed(StringSeed { ctx, field: "text_input" })?,
                "messages" => raw.messages = value_list(ctx, "messages", map.next_value()?)?,
                "tools" => raw.tools = value_list(ctx, "tools", map.next_value()?)?,
                "payload" => raw.payload = value_object(ctx, "payload", map.next_value()?)?,
                "extra" => raw.extra = value_object(ctx, "extra", map.next_value()?)?,
                _ => {
                    let Key::Unknown(key) = key else { unreachable!("every known key is matched above") };
                    let value: Value = map.next_value()?;
                    if raw.unknown.iter().any(|(k, _)| *k == key) {
                        return Err(ctx.fail(key, "appears twice in the row"));
                    }
                    raw.unknown.push((key, value));
                }
            }
        }
        Ok(Some(raw))
    }

    // Any other JSON value is a well-formed line that is not a row.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// An object key: one of the format's fields (index into [`KNOWN`]) or anything else.
enum Key {
    Known(usize),
    Unknown(String),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(KNOWN.iter().position(|k| *k == v).map_or_else(|| Key::Unknown(v.to_owned()), Key::Known))
    }
}

const KNOWN: [&str; 12] = [
    "input_length",
    "output_length",
    "hash_ids",
    "timestamp",
    "delay",
    "session_id",
    "text_input",
    "messages",
    "tools",
    "payload",
    "extra",
    "conversation_id",
];

fn value_list<E: de::Error>(ctx: &Ctx, field: &str, v: Value) -> Result<Option<Vec<Value>>, E> {
    match v {
        Value::Null => Ok(None),
        Value::Array(a) => Ok(Some(a)),
        other => Err(ctx.fail(field, format!("expected a list, found {}", describe(&other)))),
    }
}

fn value_object<E: de::Error>(ctx: &Ctx, field: &str, v: Value) -> Result<Option<Map<String, Value>>, E> {
    match v {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        other => Err(ctx.fail(field, format!("expected an object, found {}", describe(&other)))),
    }
}

/// Rejects any JSON value with `found <description>`; the typed visitors below call it for the
/// value types they do not accept.
macro_rules! reject_others {
    ($($method:ident($ty:ty) => $desc:expr;)*) => {
        $(fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            let _ = &v;
            Err(self.ctx.fail(self.field_name(), format!("{}, found {}", self.expected(), $desc(v))))
        })*
    };
}

/// Rejects lists and objects for a scalar field.
macro_rules! reject_containers {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.ctx.fail(self.field_name(), format!("{}, found a list", self.expected())))
        }
        fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.ctx.fail(self.field_name(), format!("{}, found an object", self.expected())))
        }
    };
}

/// The rest of a number field's visitor: `null` is the field left out; strings, booleans, lists
/// and objects are refused with what was expected and what was found.
macro_rules! numeric_field_rest {
    () => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        reject_others! {
            visit_str(&str) => quoted;
            visit_bool(bool) => |b: bool| b.to_string();
        }
        reject_containers!();
    };
}

/// A seed for one scalar field: the struct (the context and the field's name), the name and
/// expectation used in messages, and its `DeserializeSeed`; the caller writes the `Visitor`.
macro_rules! field_seed {
    ($(#[$doc:meta])* $name:ident -> $value:ty, $expected:literal) => {
        $(#[$doc])*
        struct $name<'a> {
            ctx: &'a Ctx,
            field: &'static str,
        }

        impl $name<'_> {
            fn field_name(&self) -> &'static str {
                self.field
            }
            fn expected(&self) -> &'static str {
                $expected
            }
        }

        impl<'de> DeserializeSeed<'de> for $name<'_> {
            type Value = $value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

fn quoted(s: &str) -> String {
    describe(&Value::String(s.to_owned()))
}

/// An integer field (`input_length` signed, `output_length` non-negative); whole floats accepted.
struct IntSeed<'a> {
    ctx: &'a Ctx,
    field: &'static str,
    signed: bool,
}

impl IntSeed<'_> {
    fn field_name(&self) -> &'static str {
        self.field
    }
    fn expected(&self) -> &'static str {
        if self.signed { "expected an integer" } else { "expected a non-negative integer" }
    }
    fn check(self, v: i128) -> Result<Option<i128>, String> {
        let ok = if self.signed { i64::try_from(v).is_ok() } else { u64::try_from(v).is_ok() };
        if ok { Ok(Some(v)) } else { Err(format!("{}, found {v}", self.expected())) }
    }
}

impl<'de> DeserializeSeed<'de> for IntSeed<'_> {
    type Value = Option<i128>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IntSeed<'_> {
    type Value = Option<i128>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        let (ctx, field) = (self.ctx, self.field);
        self.check(v.into()).map_err(|r| ctx.fail(field, r))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        let (ctx, field) = (self.ctx, self.field);
        self.check(v.into()).map_err(|r| ctx.fail(field, r))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // Pydantic (the reference) accepts floats with no fractional part as integers.
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            let (ctx, field) = (self.ctx, self.field);
            return self.check(v as i128).map_err(|r| ctx.fail(field, r));
        }
        Err(self.ctx.fail(self.field, format!("{}, found {v}", self.expected())))
    }
    numeric_field_rest!();
}

field_seed! {
    /// A number field (`timestamp`, `delay`), integer or float.
    NumberSeed -> Option<Number>, "expected a number of milliseconds"
}

impl<'de> Visitor<'de> for NumberSeed<'_> {
    type Value = Option<Number>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(i64::try_from(v).map_or(Number::Float(v as f64), Number::Int)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(Number::Int(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(Number::Float(v)))
    }
    numeric_field_rest!();
}

field_seed! {
    /// A string field (`session_id`, `text_input`).
    StringSeed -> Option<String>, "expected a string"
}

impl<'de> Visitor<'de> for StringSeed<'_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    reject_others! {
        visit_u64(u64) => |v: u64| v.to_string();
        visit_i64(i64) => |v: i64| v.to_string();
        visit_f64(f64) => |v: f64| v.to_string();
        visit_bool(bool) => |b: bool| b.to_string();
    }
    reject_containers!();
}

/// `hash_ids`: a list of unsigned integers, pushed straight into the arena.
/// Yields whether the field was present (not null).
struct IdsSeed<'a> {
    ctx: &'a Ctx,
    ids: &'a mut Vec<u64>,
}

impl<'de> DeserializeSeed<'de> for IdsSeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdsSeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of unsigned integers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut i = 0usize;
        while let Some(id) = seq.next_element_seed(IdSeed { ctx: self.ctx, index: i })? {
            self.ids.push(id);
            i += 1;
        }
        Ok(true)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {}", quoted(v))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(self.ctx.fail("hash_ids", "expected a list of unsigned integers, found an object"))
    }
}

struct IdSeed<'a> {
    ctx: &'a Ctx,
    index: usize,
}

impl IdSeed<'_> {
    fn bad<E: de::Error>(&self, found: String) -> E {
        self.ctx.fail(format!("hash_ids[{}]", self.index), format!("expected an unsigned integer, found {found}"))
    }
}

impl<'de> DeserializeSeed<'de> for IdSeed<'_> {
    type Value = u64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an unsigned integer")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| self.bad(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) { Ok(v as u64) } else { Err(self.bad(v.to_string())) }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        Err(self.bad(quoted(v)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<u64, E> {
        Err(self.bad(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
        Err(self.bad("null".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<u64, A::Error> {
        Err(self.bad("a list".into()))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<u64, A::Error> {
        Err(self.bad("an object".into()))
    }
}

#[cfg(test)]
mod tests {
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
