//! Production trace formats turned into the Mooncake trace model.
//!
//! Bailian/Qwen JSONL, ServeGen offline JSONL, Azure LLM 2023/2024 CSV, BurstGPT v1/v2 CSV and
//! WEKA kv-cache-tester JSON are read record by record by a [`Converter`] (lines are pushed, as
//! with [`crate::trace::TraceParser`], so the browser can feed chunks) into one [`Trace`]:
//!
//! - timestamps become integer milliseconds from the first kept row, ties kept, rows in time order
//!   (a stable sort, so each conversation keeps its source order);
//! - hash ids are re-blocked to the target block size by [`Reblocker`] (equal ids ⇔ equal
//!   prefixes; partial tails get fresh ids; each file its own id namespace); sources without
//!   hashes get none, and the analysis then reports "no prefix information";
//! - a conversation's identity travels as `conversation_id` (see
//!   [`crate::trace::Row::conversation`]): each row already carries its full input.
//!
//! [`detect`] tells the format from a file's first bytes; [`transform`] holds the transforms long
//! production traces need (time window, idle-gap cap, conversation sampling, turn-gap cap).

mod azure;
mod bailian;
pub mod baseten;
mod burstgpt;
mod columns;
mod convert;
pub mod dag_jsonl;
mod detect;
mod error;
mod flat;
mod reblock;
mod servegen;
pub mod settings;
pub mod transform;
mod weka;

use std::sync::Arc;

pub use convert::{ConvertStats, Converted, Converter, FileOptions, MAX_MODELS_NAMED};
pub(crate) use convert::{Record, Sink, SourceIds, seconds_to_ns};
pub use detect::{Detection, detect};
pub use error::{FormatError, Line};
pub use reblock::Reblocker;
pub use weka::{WekaTiming, fits_context, no_eligible_trace, time_turns};

/// A trace format this crate reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Mooncake,
    Bailian,
    ServeGen,
    Azure,
    BurstGpt,
    Weka,
    /// Baseten completion traces: Parquet files, read by the CLI into [`baseten::Record`]s.
    Baseten,
}

impl Format {
    pub const ALL: [Format; 7] = [
        Format::Mooncake,
        Format::Bailian,
        Format::ServeGen,
        Format::Azure,
        Format::BurstGpt,
        Format::Weka,
        Format::Baseten,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Mooncake => "mooncake",
            Format::Bailian => "bailian",
            Format::ServeGen => "servegen",
            Format::Azure => "azure",
            Format::BurstGpt => "burstgpt",
            Format::Weka => "weka",
            Format::Baseten => "baseten",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// Tokens per source hash id (`None`: the format has no hashes or keeps Mooncake's).
    pub fn source_block_size(self) -> Option<u32> {
        match self {
            Format::Bailian | Format::ServeGen => Some(16),
            Format::Weka => Some(64),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Arrival times for a source that has none (ServeGen offline batches).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Arrivals {
    /// Every request at 0 ms (the batch submitted at once).
    AllAtZero,
    /// One request every `1/per_second` seconds, in file order.
    Rate { per_second: f64 },
}

/// How to convert.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConvertOptions {
    /// Tokens per target hash id (Mooncake: 512); a multiple of the source block size.
    pub block_size: u32,
    /// Arrivals for ServeGen offline traces.
    pub arrivals: Arrivals,
    /// Output length for sources without one (ServeGen a–c); `None` leaves rows without.
    pub output_length: Option<u64>,
    /// Keep only rows of these models (BurstGPT `Model`, WEKA `model`); empty keeps all.
    pub models: Vec<String>,
    /// Drop failed rows (BurstGPT: `Response tokens == 0`) instead of keeping them.
    pub drop_failed: bool,
    /// WEKA documents re-timed and selected as AIPerf's `weka_trace` loader does (replay only).
    #[serde(skip)]
    pub weka: Option<WekaTiming>,
    /// Baseten traces converted with AIPerf's `baseten_trace` replay options (defaults: `None`).
    #[serde(skip)]
    pub baseten: Option<baseten::BasetenReplay>,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            block_size: crate::analysis::DEFAULT_BLOCK_SIZE,
            arrivals: Arrivals::AllAtZero,
            output_length: None,
            models: Vec::new(),
            drop_failed: false,
            weka: None,
            baseten: None,
        }
    }
}

/// A line of a Bailian or ServeGen file read on its own ([`parse_line`]), for
/// [`Converter::push_parsed`]: reading lines is most of the conversion of these formats, and it
/// needs nothing from the lines before.
#[derive(Debug)]
pub struct ParsedLine(Parsed);

#[derive(Debug)]
enum Parsed {
    Blank,
    Bailian(bailian::Raw, std::ops::Range<usize>),
    ServeGen(servegen::Raw, std::ops::Range<usize>),
}

impl Format {
    /// Whether [`parse_line`] reads this format's lines apart (the others need their file's
    /// state from line to line, or are one document).
    pub fn parses_lines_apart(self) -> bool {
        matches!(self, Format::Bailian | Format::ServeGen)
    }
}

/// Reads line `line` (1-based, without its terminator) of `source`, a file of `format`, as
/// [`Converter::push_line`] would, without the converter: the errors are the same. The line's
/// hash ids are appended to `ids` (one buffer for many lines), to be handed to
/// [`Converter::push_parsed`] with it.
pub fn parse_line(
    format: Format,
    source: &Arc<str>,
    line: u64,
    text: &str,
    ids: &mut Vec<u64>,
) -> Result<ParsedLine, FormatError> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(ParsedLine(Parsed::Blank));
    }
    let start = ids.len();
    let parsed = match format {
        Format::Bailian => bailian::parse(source, line, text, ids).map(|raw| Parsed::Bailian(raw, start..ids.len())),
        Format::ServeGen => servegen::parse(source, line, text, ids).map(|raw| Parsed::ServeGen(raw, start..ids.len())),
        _ => Err(FormatError::Options(format!("{source}: {format} lines are not read apart"))),
    };
    parsed.map(ParsedLine)
}

/// A whole document, or a part of one, read on its own ([`parse_document`], [`DocumentReader`]),
/// for [`Converter::push_parsed_document`]: its requests checked, their hash ids in one buffer,
/// none of its text.
#[derive(Debug, PartialEq)]
pub struct ParsedDocument(weka::Parsed);

impl Format {
    /// Whether the format is one document per file, read whole by [`parse_document`].
    pub fn is_document(self) -> bool {
        self == Format::Weka
    }

    /// Whether the format is a columnar binary file (Baseten's Parquet), read by its own reader
    /// into records and converted by [`baseten::convert`], not by the [`Converter`].
    pub fn is_columnar(self) -> bool {
        self == Format::Baseten
    }
}

/// Reads the whole text of `source`, a file of a document `format` (WEKA), as
/// [`Converter::push_document`] would, without the converter (so on any thread). Its errors
/// (the first of them) come out of [`Converter::push_parsed_document`], after the requests
/// before it, exactly as converting the text would give them.
pub fn parse_document(format: Format, source: &Arc<str>, text: &str) -> Result<ParsedDocument, FormatError> {
    let mut reader = DocumentReader::new(format, source, text)?;
    Ok(reader.next_part(usize::MAX).unwrap_or(ParsedDocument(weka::Parsed::default())))
}

/// Reads a document in parts ([`DocumentReader::next_part`]), for
/// [`Converter::push_parsed_document`] one after the other: a big document's first requests can
/// be converted while the rest is read. The parts together convert exactly as the whole
/// document ([`parse_document`]), errors included.
pub struct DocumentReader<'t>(weka::scan::Reader<'t>);

impl<'t> DocumentReader<'t> {
    pub fn new(format: Format, source: &Arc<str>, text: &'t str) -> Result<Self, FormatError> {
        match format {
            Format::Weka => Ok(DocumentReader(weka::scan::Reader::new(source, text))),
            _ => Err(FormatError::Options(format!("{source}: {format} files are not one document"))),
        }
    }

    /// The next part: at most `max_requests` requests (at least one) unless it is the last;
    /// `None` after the last.
    pub fn next_part(&mut self, max_requests: usize) -> Option<ParsedDocument> {
        self.0.next_part(max_requests).map(ParsedDocument)
    }
}

impl ParsedDocument {
    /// Whether this is its document's last part (a whole document is one).
    pub fn is_last(&self) -> bool {
        self.0.is_last()
    }
}

/// A JSON record's fields read by serde, with a precise error when a field is wrong: serde's
/// own message lacks the field name, so on failure the line is read again as a `Value` and the
/// first field that breaks its rule is named.
pub(crate) mod json {
    use std::sync::Arc;

    use serde::de::DeserializeOwned;

    /// A flat JSONL record: the fast path ([`super::flat::scan`] through `fast`), else serde,
    /// whose failure is diagnosed field by field against `spec`; its hash ids are appended to
    /// `ids`.
    pub fn flat_record<R: DeserializeOwned>(
        (file, line, text): (&Arc<str>, u64, &str),
        ids: &mut Vec<u64>,
        spec: &[(&str, Kind, bool)],
        fast: fn(&str, &mut Vec<u64>) -> Option<R>,
        ids_of: fn(&R) -> &[u64],
    ) -> Result<R, FormatError> {
        let start = ids.len();
        if let Some(raw) = fast(text, ids) {
            return Ok(raw);
        }
        ids.truncate(start);
        let raw: R = serde_json::from_str(text).map_err(|e| diagnose(file, line, text, spec, &e))?;
        ids.extend_from_slice(ids_of(&raw));
        Ok(raw)
    }

    use serde_json::Value;

    use super::error::{FormatError, Line, shown};

    /// What a field must hold.
    #[derive(Clone, Copy)]
    pub enum Kind {
        Count,
        Int,
        Seconds,
        IdList,
    }

    impl Kind {
        fn expected(self) -> &'static str {
            match self {
                Kind::Count => "a non-negative integer",
                Kind::Int => "an integer",
                Kind::Seconds => "a non-negative number of seconds",
                Kind::IdList => "a list of non-negative integers",
            }
        }

        fn accepts(self, v: &Value) -> bool {
            match self {
                Kind::Count => v.is_u64(),
                Kind::Int => v.is_i64() || v.is_u64(),
                Kind::Seconds => v.as_f64().is_some_and(|f| f.is_finite() && f >= 0.0),
                Kind::IdList => v.as_array().is_some_and(|a| a.iter().all(Value::is_u64)),
            }
        }
    }

    /// The error for a line serde rejected, given the fields the format reads.
    pub fn diagnose(
        file: &Arc<str>,
        line: u64,
        text: &str,
        spec: &[(&str, Kind, bool)],
        serde_error: &serde_json::Error,
    ) -> FormatError {
        let at = Line(Some(line));
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) => {
                return FormatError::Shape {
                    file: file.clone(),
                    line: at,
                    reason: format!("invalid JSON: {serde_error}"),
                };
            }
        };
        let Some(obj) = value.as_object() else {
            return FormatError::Shape { file: file.clone(), line: at, reason: "expected a JSON object".into() };
        };
        for &(name, kind, required) in spec {
            match obj.get(name) {
                None | Some(Value::Null) if required => {
                    return FormatError::Field {
                        file: file.clone(),
                        line: at,
                        field: name.into(),
                        value: "nothing".into(),
                        expected: kind.expected().into(),
                    };
                }
                Some(v) if !v.is_null() && !kind.accepts(v) => {
                    return FormatError::Field {
                        file: file.clone(),
                        line: at,
                        field: name.into(),
                        value: shown(&v.to_string()),
                        expected: kind.expected().into(),
                    };
                }
                _ => {}
            }
        }
        FormatError::Shape { file: file.clone(), line: at, reason: serde_error.to_string() }
    }
}

/// Checks `len(hash_ids)` against the format's edge rule.
pub(crate) fn check_id_count(
    file: &Arc<str>,
    line: Line,
    field: &str,
    found: usize,
    input: u64,
    block: u32,
    ceil: bool,
) -> Result<(), FormatError> {
    let b = u64::from(block);
    let want = if ceil { input.div_ceil(b) } else { input / b };
    if found as u64 == want {
        return Ok(());
    }
    let rule = if ceil { "ceil" } else { "floor" };
    Err(FormatError::Field {
        file: file.clone(),
        line,
        field: field.into(),
        value: format!("{found} ids"),
        expected: format!("{rule}(input length {input} / {block}) = {want} ids"),
    })
}
