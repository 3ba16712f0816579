//! WEKA kv-cache-tester traces (Claude Code sessions): one JSON object per file, one conversation
//! per file. Requests have `t` (seconds from the conversation start), `model`, `in`, `out` and
//! 64-token `hash_ids` with `len == floor(in / 64)` (the partial tail is unhashed); ids are local
//! to the file. A `"subagent"` entry nests requests on its own clock starting at the entry's `t`;
//! its requests share the parent's id space but form their own conversation
//! (`<conversation>/<agent_id>`).
//!
//! The document is buffered line by line and parsed when the file ends (it is one JSON value).
//! Its requests are converted one at a time as they are parsed (a million requests never sit in
//! memory as structures) once `id` and `block_size` are known; a document that names them after
//! its requests is read whole first, with the same result.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::error::{FormatError, Line};
use super::{Record, Sink, SourceIds, check_id_count, seconds_to_ns};

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
}

#[derive(Default)]
struct Counts {
    requests: u64,
    kept: u64,
    subagents: u64,
}

/// The conversion of one document while serde reads it.
struct Doc<'d, 's, 'a> {
    sink: &'s mut Sink<'a>,
    counts: Counts,
    id: Option<String>,
    block: Option<u32>,
    /// Requests met before `id` and `block_size`: converted when the document ends.
    early: Option<Vec<Entry<'d>>>,
    /// Why the conversion stopped inside serde (its own error then only says "stopped").
    failed: Option<FormatError>,
    /// The document has a `requests` list.
    has_requests: bool,
}

impl Doc<'_, '_, '_> {
    fn conversation(&self) -> String {
        let name = self.id.clone().unwrap_or_else(|| self.sink.file().to_string());
        format!("{}{name}", self.sink.prefix())
    }

    fn block(&self) -> Result<u32, FormatError> {
        match self.block.unwrap_or(64) {
            0 => Err(field_error(self.sink, "block_size", "0", "a positive number of tokens")),
            b => Ok(b),
        }
    }
}

pub(super) fn convert(sink: &mut Sink<'_>, text: &str) -> Result<String, FormatError> {
    let mut doc =
        Doc { sink, counts: Counts::default(), id: None, block: None, early: None, failed: None, has_requests: false };
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de.deserialize_map(DocVisitor(&mut doc)).and_then(|()| de.end());
    if let Some(e) = doc.failed.take() {
        return Err(e);
    }
    read.map_err(|e| FormatError::Shape {
        file: doc.sink.file().clone(),
        line: Line(Some(e.line() as u64)),
        reason: format!("not a WEKA trace object (`id`, `block_size`, `requests`): {e}"),
    })?;
    if !doc.has_requests {
        return Err(FormatError::Shape {
            file: doc.sink.file().clone(),
            line: Line(None),
            reason: "not a WEKA trace object (`id`, `block_size`, `requests`): missing field `requests`".into(),
        });
    }
    let block = doc.block()?;
    if let Some(early) = doc.early.take() {
        let conversation = doc.conversation();
        let list = List { base_ns: 0, conversation: &conversation, path: "requests", block };
        walk(doc.sink, &early, &list, &mut doc.counts)?;
    }
    let name = doc.id.clone().unwrap_or_else(|| doc.sink.file().to_string());
    let counts = &doc.counts;
    Ok(format!(
        "WEKA trace {name}: {} requests ({} kept), {} sub-agents; {block}-token hash ids re-blocked to {}, \
         one conversation per file and per sub-agent",
        counts.requests, counts.kept, counts.subagents, doc.sink.opts.block_size
    ))
}

/// The document's top-level object.
struct DocVisitor<'v, 'd, 's, 'a>(&'v mut Doc<'d, 's, 'a>);

impl<'de> Visitor<'de> for DocVisitor<'_, 'de, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a WEKA trace object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let doc = self.0;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => doc.id = map.next_value()?,
                "block_size" => doc.block = map.next_value()?,
                "requests" if doc.id.is_some() && doc.block.is_some() => {
                    doc.has_requests = true;
                    let block = doc.block().map_err(|e| stop(doc, e))?;
                    let conversation = doc.conversation();
                    map.next_value_seed(Requests { doc: &mut *doc, block, conversation })?;
                }
                "requests" => {
                    doc.has_requests = true;
                    doc.early = Some(map.next_value()?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Keeps a conversion error for after serde returns, and gives serde one to stop with.
fn stop<E: de::Error>(doc: &mut Doc<'_, '_, '_>, e: FormatError) -> E {
    doc.failed = Some(e);
    E::custom("stopped")
}

/// The top-level `requests` list, converted as it is read.
struct Requests<'v, 'd, 's, 'a> {
    doc: &'v mut Doc<'d, 's, 'a>,
    block: u32,
    conversation: String,
}

impl<'de> DeserializeSeed<'de> for Requests<'_, '_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Requests<'_, '_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of requests")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while let Some(e) = seq.next_element::<Entry<'de>>()? {
            let doc = &mut *self.doc;
            let list = List { base_ns: 0, conversation: &self.conversation, path: "requests", block: self.block };
            entry(doc.sink, &e, i, &list, &mut doc.counts).map_err(|err| stop(doc, err))?;
            i += 1;
        }
        Ok(())
    }
}

fn field_error(sink: &Sink<'_>, field: &str, value: &str, expected: &str) -> FormatError {
    FormatError::Field {
        file: sink.file().clone(),
        line: Line(None),
        field: field.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

/// Where a list of entries sits: its conversation, its clock's start, its path in the document.
struct List<'p> {
    base_ns: i64,
    conversation: &'p str,
    path: &'p str,
    block: u32,
}

fn walk(sink: &mut Sink<'_>, entries: &[Entry<'_>], list: &List<'_>, counts: &mut Counts) -> Result<(), FormatError> {
    for (i, e) in entries.iter().enumerate() {
        entry(sink, e, i, list, counts)?;
    }
    Ok(())
}

/// Converts entry `i` of `list`: a request, or a sub-agent's requests.
fn entry(
    sink: &mut Sink<'_>,
    e: &Entry<'_>,
    i: usize,
    list: &List<'_>,
    counts: &mut Counts,
) -> Result<(), FormatError> {
    let List { base_ns, conversation, path, block } = *list;
    let here = || format!("{path}[{i}]");
    let at_ns = seconds_to_ns(Some(e.t)).and_then(|t| t.checked_add(base_ns)).ok_or_else(|| {
        field_error(sink, &format!("{}.t", here()), &e.t.to_string(), "a non-negative number of seconds")
    })?;
    if e.kind.as_deref() == Some("subagent") || e.requests.is_some() {
        counts.subagents += 1;
        let agent = e.agent_id.as_deref().map_or_else(|| format!("agent{i}"), str::to_string);
        let sub = format!("{conversation}/{agent}");
        let nested = e.requests.as_deref().unwrap_or_default();
        let path = format!("{}.requests", here());
        return walk(sink, nested, &List { base_ns: at_ns, conversation: &sub, path: &path, block }, counts);
    }
    counts.requests += 1;
    sink.out.stats.records += 1;
    let input =
        e.input.ok_or_else(|| field_error(sink, &format!("{}.in", here()), "nothing", "a non-negative integer"))?;
    let ids = e.hash_ids.as_deref().unwrap_or_default();
    if let Err(err) = check_id_count(sink.file(), Line(None), "hash_ids", ids.len(), input, block, false) {
        // Named with the request's place in the document.
        return Err(match err {
            FormatError::Field { file, line, value, expected, .. } => {
                FormatError::Field { file, line, field: format!("{}.hash_ids", here()), value, expected }
            }
            other => other,
        });
    }
    if !sink.keeps_model(e.model.as_deref().unwrap_or("")) {
        return Ok(());
    }
    counts.kept += 1;
    sink.push(Record {
        at_ns,
        input,
        output: e.out,
        conversation: Some(conversation.into()),
        ids: Some(SourceIds { ids, block, complete: ids.len() }),
        line: 0,
    })
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
}
