//! WEKA kv-cache-tester traces (Claude Code sessions): one JSON object per file, one conversation
//! per file. Requests have `t` (seconds from the conversation start), `model`, `in`, `out` and
//! 64-token `hash_ids` with `len == floor(in / 64)` (the partial tail is unhashed); ids are local
//! to the file. A `"subagent"` entry nests requests on its own clock starting at the entry's `t`;
//! its requests share the parent's id space but form their own conversation
//! (`<conversation>/<agent_id>`).
//!
//! A document is read in two steps: [`parse`] turns its text into a compact [`Parsed`] form (the
//! requests, checked, with their hash ids in one buffer), which needs nothing from the converter
//! and so can run on any thread; [`convert`] then hands the requests to the converter. Parsing
//! tries a hand-written scanner first ([`scan::Reader`]: flat request objects, the values of other
//! keys skipped), which gives way, per request, to serde for a request it does not read (a
//! sub-agent, escapes, nulls, unusual numbers) and, for the whole document, to the serde reading
//! ([`serde_read::parse_serde`]) at anything wrong or unusual, so that every error is serde's,
//! worded and placed as serde words and places it. A test checks that both give the same result.
//! A big document is read in parts ([`scan::Reader::next_part`]), converted one after the other,
//! so that its first requests can be converted while the rest is read.

pub(super) mod scan;
mod serde_read;
mod timing;

pub use timing::{WekaTiming, fits_context, no_eligible_trace, time_turns};

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;

use super::error::{FormatError, Line};
use super::{Record, Sink, SourceIds, check_id_count, seconds_to_ns};
use scan::Reader;

/// One request, or a sub-agent with its requests. Strings without escapes are borrowed from the
/// document.
#[derive(Deserialize)]
struct Entry<'a> {
    t: f64,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(rename = "in")]
    input: Option<u64>,
    out: Option<u64>,
    hash_ids: Option<Vec<u64>>,
    #[serde(borrow)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    requests: Option<Vec<Entry<'a>>>,
    /// Read when a number, else taken as absent (the converter only ever skipped it).
    #[serde(default, deserialize_with = "timing::lenient_seconds")]
    api_time: Option<f64>,
    #[serde(default, deserialize_with = "timing::lenient_seconds")]
    think_time: Option<f64>,
}

/// A part of a document read into its requests, ready for [`convert`]: what the converter
/// needs and nothing of the text. A document is one part, or several in order ([`Reader`]).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Parsed {
    reqs: Vec<Req>,
    /// The requests' hash ids, one after the other.
    ids: Vec<u64>,
    /// The conversations (without the file's prefix) and models first met in this part,
    /// numbered after those of the parts before.
    convs: Vec<Conv>,
    models: Vec<Box<str>>,
    /// In the document's last part: how it ends.
    end: Option<End>,
}

impl Parsed {
    pub(super) fn is_last(&self) -> bool {
        self.end.is_some()
    }
}

/// How a document ends: its name (its `id`, else the file's) and block size for the note, its
/// counts, or why the reading stopped after the requests (converted first: the converter may
/// refuse one of them before).
#[derive(Debug, Default, PartialEq)]
struct End {
    name: String,
    block: u32,
    requests: u64,
    subagents: u64,
    stop: Option<FormatError>,
}

#[derive(Clone, Debug, PartialEq)]
struct Conv {
    name: String,
    block: u32,
}

#[derive(Debug, PartialEq)]
struct Req {
    at_ns: i64,
    input: u64,
    output: Option<u64>,
    /// The end of its ids in [`Parsed::ids`] (they start where the previous request's end).
    ids_end: usize,
    conv: u32,
    model: u32,
    /// The recorded `api_time` and `think_time` in seconds (AIPerf's re-timed turns).
    api: Option<f64>,
    think: Option<f64>,
}

/// Reads a whole document (the text as [`super::Converter::push_line`] would join its lines:
/// each followed by `\n`, a trailing `\r` dropped; other text is read as if it were so) as one
/// part. Its errors are those of converting it, in the same order.
pub(super) fn parse(source: &Arc<str>, text: &str) -> Parsed {
    Reader::new(source, text).next_part(usize::MAX).unwrap_or_default()
}

/// The text as pushed line by line: `\r\n` as `\n`, and a final line end (serde's error
/// positions count lines and columns).
fn as_lines(text: &str) -> Cow<'_, str> {
    if text.is_empty() || (text.ends_with('\n') && !text.contains('\r')) {
        return Cow::Borrowed(text);
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut out = String::with_capacity(text.len() + 1);
    for line in body.split('\n') {
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    Cow::Owned(out)
}

/// What the converter keeps of a document's parts: their conversations (with the file's
/// prefix) and models, and the requests kept so far.
#[derive(Debug, Default)]
pub(super) struct Progress {
    convs: Vec<(Arc<str>, u32)>,
    models: Vec<Box<str>>,
    kept: u64,
    /// With [`WekaTiming`]: the parts read so far, converted when the document ends.
    held: Vec<Parsed>,
}

/// Requests read ahead at a time (see [`Sink::touch`]).
const AHEAD: usize = 64;

/// Reads ahead for the first [`AHEAD`] of `reqs` (whose ids start at `start` in `ids`).
fn touch_ahead(sink: &mut Sink<'_>, progress: &Progress, reqs: &[Req], ids: &[u64], start: usize) {
    let reqs = reqs.iter().take(AHEAD);
    let Some(first) = reqs.clone().next() else { return };
    let Some(&(_, block)) = progress.convs.get(first.conv as usize) else { return };
    let mut from = start;
    let sources = reqs.take_while(|r| progress.convs.get(r.conv as usize).is_some_and(|c| c.1 == block)).map(|r| {
        let these = ids.get(from..r.ids_end).unwrap_or_default();
        from = r.ids_end;
        these
    });
    sink.touch(block, sources);
}

/// Hands a part's requests to the converter: after the last part the note, or the first error.
pub(super) fn convert(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    part: Parsed,
) -> Result<Option<String>, FormatError> {
    let prefix = sink.prefix().to_string();
    progress.convs.extend(part.convs.iter().map(|c| (format!("{prefix}{}", c.name).into(), c.block)));
    progress.models.extend(part.models.iter().cloned());
    if let Some(timing) = sink.opts.weka {
        return timing::convert_whole(sink, progress, part, &timing);
    }
    let mut start = 0;
    for (k, r) in part.reqs.iter().enumerate() {
        if k % AHEAD == 0 {
            touch_ahead(sink, progress, part.reqs.get(k..).unwrap_or_default(), &part.ids, start);
        }
        let ids = part.ids.get(start..r.ids_end).unwrap_or_default();
        start = r.ids_end;
        push_request(sink, progress, r, ids, r.at_ns, None)?;
    }
    let Some(end) = part.end else { return Ok(None) };
    note(sink, progress, end)
}

/// One request into the converter, sent at `at_ns` (`turn`: as [`Record::turn`]), unless its
/// model is filtered out.
#[inline]
fn push_request(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    r: &Req,
    ids: &[u64],
    at_ns: i64,
    turn: Option<Option<f64>>,
) -> Result<(), FormatError> {
    sink.count_record();
    if !sink.keeps_model(progress.models.get(r.model as usize).map_or("", |m| m)) {
        return Ok(());
    }
    progress.kept += 1;
    let Some((name, block)) = progress.convs.get(r.conv as usize) else {
        return Err(FormatError::Options(format!("{}: a request without its conversation", sink.file())));
    };
    sink.push(Record {
        at_ns,
        input: r.input,
        output: r.output,
        conversation: Some(name.clone()),
        ids: Some(SourceIds { ids, block: *block, complete: ids.len() }),
        line: 0,
        turn,
    })
}

/// The note of a document that ended (or its error).
fn note(sink: &Sink<'_>, progress: &Progress, end: End) -> Result<Option<String>, FormatError> {
    if let Some(e) = end.stop {
        return Err(e);
    }
    Ok(Some(format!(
        "WEKA trace {}: {} requests ({} kept), {} sub-agents; {}-token hash ids re-blocked to {}, \
         one conversation per file and per sub-agent",
        end.name, end.requests, progress.kept, end.subagents, end.block, sink.opts.block_size
    )))
}

fn field_error(file: &Arc<str>, field: &str, value: &str, expected: &str) -> FormatError {
    FormatError::Field {
        file: file.clone(),
        line: Line(None),
        field: field.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

fn block_of(file: &Arc<str>, block: Option<u32>) -> Result<u32, FormatError> {
    match block.unwrap_or(64) {
        0 => Err(field_error(file, "block_size", "0", "a positive number of tokens")),
        b => Ok(b),
    }
}

/// Where a list of entries sits: its conversation, its clock's start, its path in the document.
struct List<'p> {
    base_ns: i64,
    conv: u32,
    path: &'p str,
    block: u32,
}

/// A request's fields as read.
struct Request<'a> {
    t: f64,
    input: Option<u64>,
    output: Option<u64>,
    model: &'a str,
    api: Option<f64>,
    think: Option<f64>,
}

/// Builds the parts of a document: the checks of each request, in document order.
struct Builder {
    file: Arc<str>,
    /// The part being built (its `convs` and `models` stay empty until it is handed out).
    part: Parsed,
    convs: Vec<Conv>,
    models: Vec<Box<str>>,
    model_index: HashMap<Box<str>, u32>,
    last_model: Option<u32>,
    requests: u64,
    subagents: u64,
    /// Requests, conversations and models handed out in parts so far.
    sent: (usize, usize, usize),
}

impl Builder {
    fn new(file: &Arc<str>) -> Self {
        Builder {
            file: file.clone(),
            part: Parsed::default(),
            convs: Vec::new(),
            models: Vec::new(),
            model_index: HashMap::new(),
            last_model: None,
            requests: 0,
            subagents: 0,
            sent: (0, 0, 0),
        }
    }

    fn conv(&mut self, name: String, block: u32) -> u32 {
        self.convs.push(Conv { name, block });
        (self.convs.len() - 1) as u32
    }

    fn model(&mut self, name: &str) -> u32 {
        if let Some(k) = self.last_model
            && self.models.get(k as usize).is_some_and(|m| **m == *name)
        {
            return k;
        }
        let k = match self.model_index.get(name) {
            Some(&k) => k,
            None => {
                let k = self.models.len() as u32;
                self.models.push(name.into());
                self.model_index.insert(name.into(), k);
                k
            }
        };
        self.last_model = Some(k);
        k
    }

    /// The time of entry `i` of `list`, checked.
    fn at(&self, t: f64, i: usize, list: &List<'_>) -> Result<i64, FormatError> {
        seconds_to_ns(Some(t)).and_then(|ns| ns.checked_add(list.base_ns)).ok_or_else(|| {
            field_error(
                &self.file,
                &format!("{}[{i}].t", list.path),
                &t.to_string(),
                "a non-negative number of seconds",
            )
        })
    }

    /// Request `i` of `list` at `at_ns`, whose hash ids were appended to the part's ids.
    fn request(&mut self, at_ns: i64, r: &Request<'_>, i: usize, list: &List<'_>) -> Result<(), FormatError> {
        self.requests += 1;
        let here = || format!("{}[{i}]", list.path);
        let input = r
            .input
            .ok_or_else(|| field_error(&self.file, &format!("{}.in", here()), "nothing", "a non-negative integer"))?;
        let start = self.part.reqs.last().map_or(0, |q| q.ids_end);
        let found = self.part.ids.len() - start;
        if let Err(err) = check_id_count(&self.file, Line(None), "hash_ids", found, input, list.block, false) {
            // Named with the request's place in the document.
            return Err(match err {
                FormatError::Field { file, line, value, expected, .. } => {
                    FormatError::Field { file, line, field: format!("{}.hash_ids", here()), value, expected }
                }
                other => other,
            });
        }
        let model = self.model(r.model);
        let ids_end = self.part.ids.len();
        self.part.reqs.push(Req {
            at_ns,
            input,
            output: r.output,
            ids_end,
            conv: list.conv,
            model,
            api: r.api,
            think: r.think,
        });
        Ok(())
    }

    /// Entry `i` of `list` as serde read it: a request, or a sub-agent's requests.
    fn entry(&mut self, e: &Entry<'_>, i: usize, list: &List<'_>) -> Result<(), FormatError> {
        let at_ns = self.at(e.t, i, list)?;
        if e.kind.as_deref() == Some("subagent") || e.requests.is_some() {
            self.subagents += 1;
            let agent = e.agent_id.as_deref().map_or_else(|| format!("agent{i}"), str::to_string);
            let name = format!("{}/{agent}", self.convs.get(list.conv as usize).map_or("", |c| &c.name));
            let conv = self.conv(name, list.block);
            let path = format!("{}[{i}].requests", list.path);
            let sub = List { base_ns: at_ns, conv, path: &path, block: list.block };
            for (k, e) in e.requests.as_deref().unwrap_or_default().iter().enumerate() {
                self.entry(e, k, &sub)?;
            }
            return Ok(());
        }
        self.part.ids.extend_from_slice(e.hash_ids.as_deref().unwrap_or_default());
        let r = Request {
            t: e.t,
            input: e.input,
            output: e.out,
            model: e.model.as_deref().unwrap_or(""),
            api: e.api_time,
            think: e.think_time,
        };
        self.request(at_ns, &r, i, list)
    }

    /// Hands out the requests read since the last part, with the conversations and models met
    /// since.
    fn take_part(&mut self) -> Parsed {
        let mut part = std::mem::take(&mut self.part);
        part.convs = self.convs.get(self.sent.1..).unwrap_or_default().to_vec();
        part.models = self.models.get(self.sent.2..).unwrap_or_default().to_vec();
        self.sent = (self.sent.0 + part.reqs.len(), self.convs.len(), self.models.len());
        part
    }

    /// The last part of the document read (or stopped) with this name and block size.
    fn finish(mut self, name: String, block: u32, stop: Option<FormatError>) -> Parsed {
        let mut part = self.take_part();
        part.end = Some(End { name, block, requests: self.requests, subagents: self.subagents, stop });
        part
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::formats::{ConvertOptions, Converted, Converter, FileOptions, Format, FormatError};
    use crate::trace::write_trace;

    fn convert(text: &str) -> Result<Converted, FormatError> {
        let mut c = Converter::new(ConvertOptions::default())?;
        c.start_file(FileOptions {
            source: "w.json".into(),
            format: Format::Weka,
            start_offset_ms: 0,
            conversation_prefix: String::new(),
        })?;
        for line in text.split('\n') {
            c.push_line(line)?;
        }
        c.end_file()?;
        c.finish()
    }

    const REQUESTS: &str = r#""requests": [
        {"t": 0.0, "model": "m", "in": 130, "out": 5, "hash_ids": [1, 2]},
        {"t": 1.5, "type": "subagent", "agent_id": "a", "requests": [{"t": 0.5, "in": 64, "out": 1, "hash_ids": [1]}]},
        {"t": 2.0, "model": "m", "in": 200, "out": 7, "hash_ids": [1, 2, 3]}
    ]"#;

    #[test]
    fn requests_before_or_after_the_header_convert_alike() {
        let streamed = convert(&format!("{{\"id\": \"c\", \"block_size\": 64, {REQUESTS}}}")).unwrap();
        let buffered = convert(&format!("{{{REQUESTS}, \"block_size\": 64, \"id\": \"c\"}}")).unwrap();
        assert_eq!(streamed.trace.len(), 3);
        assert_eq!(write_trace(&streamed.trace), write_trace(&buffered.trace));
        assert_eq!(streamed.notes, buffered.notes);
    }

    #[test]
    fn errors_name_the_request_and_the_document_must_be_one() {
        let bad = REQUESTS.replace(r#""in": 200, "out": 7, "hash_ids": [1, 2, 3]"#, r#""in": 200, "hash_ids": [1]"#);
        let e = convert(&format!("{{\"id\": \"c\", \"block_size\": 64, {bad}}}")).unwrap_err().to_string();
        assert!(e.contains("requests[2].hash_ids") && e.contains("1 ids"), "{e}");
        let e = convert("{\"id\": \"c\", \"block_size\": 64}").unwrap_err().to_string();
        assert!(e.contains("missing field `requests`"), "{e}");
        let e = convert(&format!("{{\"id\": \"c\", \"block_size\": 0, {REQUESTS}}}")).unwrap_err().to_string();
        assert!(e.contains("block_size") && e.contains("positive"), "{e}");
        let e = convert(&format!("{{\"id\": \"c\", \"block_size\": 64, {REQUESTS}}} x")).unwrap_err().to_string();
        assert!(e.contains("not a WEKA trace object"), "{e}");
    }

    /// How a test hands a document to the converter.
    #[derive(Clone, Copy, Debug)]
    enum Push {
        Lines,
        Document,
        /// Parts of at most this many requests.
        Parts(usize),
    }

    /// Converts `text` pushed as `how` says: the trace and notes, or the error's text.
    fn convert_with(text: &str, opts: &ConvertOptions, how: Push) -> String {
        let run = || -> Result<Converted, FormatError> {
            let mut c = Converter::new(opts.clone())?;
            c.start_file(FileOptions {
                source: "w.json".into(),
                format: Format::Weka,
                start_offset_ms: 0,
                conversation_prefix: "p:".into(),
            })?;
            match how {
                Push::Document => c.push_document(text)?,
                Push::Lines if text.is_empty() => {}
                Push::Lines => {
                    for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
                        c.push_line(line)?;
                    }
                }
                Push::Parts(n) => {
                    let mut reader = crate::formats::DocumentReader::new(Format::Weka, &"w.json".into(), text)?;
                    while let Some(part) = reader.next_part(n) {
                        c.push_parsed_document(part)?;
                    }
                }
            }
            c.end_file()?;
            c.finish()
        };
        match run() {
            Ok(done) => format!("{}{:?}{:?}", write_trace(&done.trace), done.notes, done.stats),
            Err(e) => format!("error: {e}"),
        }
    }

    /// Reads `text` in parts of `n` requests: the parts, and whether serde read any of it.
    fn parts(text: &str, n: usize) -> (Vec<super::Parsed>, bool) {
        let mut reader = super::scan::Reader::new(&"w.json".into(), text);
        let parts = std::iter::from_fn(|| reader.next_part(n)).collect();
        (parts, reader.serde_read)
    }

    #[test]
    fn real_files_take_the_fast_path_and_convert_as_line_by_line() {
        let source: std::sync::Arc<str> = "w.json".into();
        for text in [
            include_str!("../../../../../tests/fixtures/traces/formats/weka-kv-cache-tester/trace_0291.json"),
            include_str!("../../../../../tests/fixtures/traces/formats/weka-kv-cache-tester/trace_0504.json"),
        ] {
            // trace_0291 has sub-agents: read by serde, each within the fast reading.
            let (whole, serde_read) = parts(text, usize::MAX);
            assert!(!serde_read, "read by the fast path");
            assert_eq!(whole, vec![super::serde_read::parse_serde(&source, &super::as_lines(text))]);
            let (some, _) = parts(text, 3);
            let (last, before) = some.split_last().unwrap();
            assert!(last.is_last() && before.iter().all(|p| p.reqs.len() >= 3 && !p.is_last()));
            assert_eq!(some.iter().map(|p| p.reqs.len()).sum::<usize>(), whole[0].reqs.len());
            let opts = ConvertOptions::default();
            let lines = convert_with(text, &opts, Push::Lines);
            assert_eq!(convert_with(text, &opts, Push::Document), lines);
            assert_eq!(convert_with(text, &opts, Push::Parts(3)), lines);
        }
    }

    #[test]
    fn a_document_pushed_twice_or_after_lines_is_refused_or_joined() {
        let doc = format!("{{\"id\": \"c\", \"block_size\": 64, {REQUESTS}}}\n");
        let (head, tail) = doc.split_once('\n').unwrap();
        let mut c = Converter::new(ConvertOptions::default()).unwrap();
        let file = FileOptions {
            source: "w.json".into(),
            format: Format::Weka,
            start_offset_ms: 0,
            conversation_prefix: String::new(),
        };
        c.start_file(file.clone()).unwrap();
        c.push_line(head).unwrap();
        c.push_document(tail).unwrap();
        c.end_file().unwrap();
        assert_eq!(c.rows(), 3);
        c.start_file(file).unwrap();
        c.push_document(&doc).unwrap();
        let e = c.push_document(&doc).unwrap_err().to_string();
        assert!(e.contains("already read"), "{e}");
        assert!(c.push_line("{}").is_err());
    }

    use proptest::prelude::*;

    /// Some whitespace between tokens.
    fn ws() -> impl Strategy<Value = &'static str> {
        prop_oneof![6 => Just(""), 3 => Just(" "), 1 => Just("\n"), 1 => Just("\r\n"), 1 => Just("\t")]
    }

    /// A value for `t`: plain seconds mostly, and (weight 1 against `k` times the others) what the fast path leaves to
    /// serde.
    fn seconds(k: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            8 * k => (0u32..100_000, 0u32..4).prop_map(|(ms, form)| match form {
                0 => format!("{}", ms / 1000),
                1 => format!("{}.{:03}", ms / 1000, ms % 1000),
                2 => format!("{}.0", ms / 1000),
                _ => format!("{}.{}", ms / 1000, ms % 10),
            }),
            1 => prop_oneof![
                Just("1e2"), Just("2.5E-1"), Just("-1"), Just("-0.0"), Just("01"), Just("1."), Just(".5"),
                Just("null"), Just("\"1\""), Just("123456789012345678"), Just("1e400"), Just("0.1234567890123456789"),
            ].prop_map(str::to_string),
        ]
    }

    /// An odd value for `in` or `out`.
    fn odd_count() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null"),
            Just("-5"),
            Just("1.0"),
            Just("007"),
            Just("\"3\""),
            Just("1e3"),
            Just("0"),
            Just("18446744073709551616"),
            Just("9999999999999999999"),
        ]
        .prop_map(str::to_string)
    }

    /// A value of a key the converter does not read; (weight 1 against `k` times the others) not JSON.
    fn other_value(k: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            4 * k => Just("[\"text\", \"tool_use\"]"), 2 * k => Just("\"end_turn\""), k => Just("\"a\\\"b\\\\c\\n\\u00e9\""),
            k => Just("{\"a\": [1, {\"b\": null}], \"c\": true}"), k => Just("-1.5e-3"), k => Just("false"),
            k => Just("[]"), k => Just("{}"), k => Just("0"), k => Just("[[[{\"x\": [\"\\/\"]}]]]"),
            // Not JSON: serde refuses these, and so must the fast path.
            1 => prop_oneof![
                Just("tru"), Just("1.2.3"), Just("\"raw\u{1}control\""), Just("\"bad \\x escape\""), Just("[1,]"),
                Just("{\"a\" 1}"), Just("01"), Just("\"\\u12G4\""), Just("nul"), Just("-"), Just("1e"), Just("[1 2]"),
            ],
        ]
        .prop_map(str::to_string)
    }

    /// A request object: fields in any order, (weight 1 against `k` times the others) some odd or repeated.
    fn request(k: u32) -> impl Strategy<Value = String> {
        let ids = prop::collection::vec(1u64..40, 0..6);
        (
            seconds(k),
            prop_oneof![4 * k => Just(None), 4 * k => Just(Some("\"s\"")), 2 * k => Just(Some("\"n\"")), 1 => Just(Some("null")), 1 => Just(Some("\"\\u0073\""))],
            prop_oneof![6 * k => Just(Some("\"m\"")), 2 * k => Just(Some("\"other\"")), 2 * k => Just(None), 1 => Just(Some("\"m\\u0021\"")), 1 => Just(Some("null"))],
            (ids, 0u64..64, prop_oneof![16 * k => Just(None), 1 => odd_count().prop_map(Some)]),
            prop_oneof![4 * k => Just(None), 4 * k => (0u64..900).prop_map(|o| Some(o.to_string())), 1 => odd_count().prop_map(Some)],
            (prop::collection::vec(("[a-z_]{1,6}", other_value(k)), 0..3), prop::collection::vec(timing_field(k), 0..2)),
            (any::<bool>(), prop_oneof![
                16 * k => Just(None), 1 => Just(Some("null")), 1 => Just(Some("[1, -2]")), 1 => Just(Some("[01]")),
                1 => Just(Some("\"x\"")), 1 => Just(Some("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]")),
            ]),
            (ws(), ws(), any::<prop::sample::Index>(), prop_oneof![20 * k => Just(false), 1 => Just(true)]),
        )
            .prop_map(|(t, kind, model, (ids, rest, input), out, (extra, timing), (has_ids, odd_ids), (w1, w2, shuffle, dup))| {
                let input = input.unwrap_or_else(|| (ids.len() as u64 * 64 + rest).to_string());
                let mut fields = vec![format!("\"t\":{w1}{t}"), format!("\"in\":{w2}{input}")];
                if let Some(k) = kind {
                    fields.push(format!("\"type\": {k}"));
                }
                if let Some(m) = model {
                    fields.push(format!("\"model\": {m}"));
                }
                if let Some(o) = out {
                    fields.push(format!("\"out\": {o}"));
                }
                if let Some(bad) = odd_ids {
                    fields.push(format!("\"hash_ids\": {bad}"));
                } else if has_ids || !ids.is_empty() {
                    fields.push(format!("\"hash_ids\":{w1}{ids:?}"));
                }
                for (k, v) in extra {
                    fields.push(format!("\"{k}\": {v}"));
                }
                fields.extend(timing);
                if dup {
                    fields.push("\"in\": 3".into());
                }
                let k = shuffle.index(fields.len());
                fields.swap(0, k);
                format!("{{{w2}{}{w1}}}", fields.join(&format!(",{w2}")))
            })
    }

    /// An `api_time` or `think_time` field: seconds mostly, (weight 1 against `k` times the
    /// others) what the fast path leaves to serde.
    fn timing_field(k: u32) -> impl Strategy<Value = String> {
        (
            prop_oneof![Just("api_time"), Just("think_time")],
            prop_oneof![
                8 * k => (0u32..100_000).prop_map(|ms| format!("{}.{:03}", ms / 1000, ms % 1000)),
                1 => prop_oneof![Just("null"), Just("\"x\""), Just("-1.5"), Just("1e2"), Just("[1]"), Just("{}")].prop_map(str::to_string),
            ],
        )
            .prop_map(|(key, v)| format!("\"{key}\": {v}"))
    }

    /// A request or, sometimes, a sub-agent with requests of its own.
    fn entry(k: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            8 * k => request(k),
            k => (seconds(k), prop::option::of("[a-z]{1,3}"), prop::collection::vec(request(k), 0..3), any::<bool>()).prop_map(
                |(t, agent, reqs, typed)| {
                    let agent = agent.map_or(String::new(), |a| format!(", \"agent_id\": \"{a}\""));
                    let kind = if typed { ", \"type\": \"subagent\"" } else { "" };
                    format!("{{\"t\": {t}{kind}{agent}, \"requests\": [{}]}}", reqs.join(", "))
                }
            ),
        ]
    }

    /// A document; (weight 1 against `k` times the others) the header after the requests, odd headers, trailing text.
    fn document(k: u32) -> impl Strategy<Value = String> {
        (
            prop::collection::vec(entry(k), 0..8),
            prop_oneof![6 * k => Just("\"c\""), 1 => Just("null"), 1 => Just("\"c\\td\""), 1 => Just("5")],
            prop_oneof![
                6 * k => Just(Some("64")), k => Just(Some("32")), k => Just(Some("100")),
                1 => Just(Some("0")), 1 => Just(None), 1 => Just(Some("64.0")),
            ],
            prop_oneof![8 * k => Just(4u8), 1 => 0u8..4],
            prop_oneof![8 * k => Just(""), k => Just("\n"), k => Just("\r\n"), 1 => Just(" x"), k => Just("\n\n")],
            (ws(), other_value(k)),
        )
            .prop_map(|(entries, id, block, order, tail, (w, extra))| {
                let requests = format!("\"requests\":{w}[{w}{}{w}]", entries.join(&format!(",{w}")));
                let block = block.map_or(String::new(), |b| format!("\"block_size\": {b}, "));
                let header = format!("\"id\": {id}, {block}\"models\": {extra}");
                match order {
                    0 => format!("{{{requests}, {header}}}{tail}"),
                    1 => format!("{{{header}}}{tail}"),
                    2 => format!("{{{header}, {requests}, \"id\": \"again\"}}{tail}"),
                    3 => format!("[{requests}]{tail}"),
                    _ => format!("{{{w}{header},{w}{requests}{w}}}{tail}"),
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
        /// The fast reading gives what serde's gives (the same requests, the same first error),
        /// and a document pushed whole, or in parts, converts as its lines pushed one by one.
        #[test]
        fn fast_path_reads_as_serde(
            doc in prop_oneof![document(1000), document(1), document(20)],
            block_size in prop_oneof![Just(512u32), Just(128), Just(64)],
            model in prop_oneof![Just(None), Just(Some("m"))],
            part in 1usize..4,
        ) {
            let source: std::sync::Arc<str> = "w.json".into();
            let serde = super::serde_read::parse_serde(&source, &super::as_lines(&doc));
            let (whole, serde_read) = parts(&doc, usize::MAX);
            if !serde_read {
                prop_assert!(whole[0].end.as_ref().is_some_and(|e| e.stop.is_none()));
            }
            prop_assert_eq!(whole, vec![serde]);
            let opts = ConvertOptions { block_size, models: model.into_iter().map(str::to_string).collect(), ..ConvertOptions::default() };
            let lines = convert_with(&doc, &opts, Push::Lines);
            prop_assert_eq!(&convert_with(&doc, &opts, Push::Document), &lines);
            prop_assert_eq!(&convert_with(&doc, &opts, Push::Parts(part)), &lines);
            // Re-timed (held until the document ends), the same whichever way it is pushed.
            let timed = ConvertOptions {
                weka: Some(crate::formats::WekaTiming {
                    think_time_only: part == 2,
                    idle_gap_cap_s: (part == 3).then_some(5.0),
                    max_context_length: Some(400),
                    ..crate::formats::WekaTiming::default()
                }),
                ..opts
            };
            let lines = convert_with(&doc, &timed, Push::Lines);
            prop_assert_eq!(&convert_with(&doc, &timed, Push::Document), &lines);
            prop_assert_eq!(&convert_with(&doc, &timed, Push::Parts(part)), &lines);
        }
    }
}
