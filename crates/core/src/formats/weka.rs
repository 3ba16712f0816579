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
//! tries a hand-written scanner first ([`Reader`]: flat request objects, the values of other
//! keys skipped), which gives way, per request, to serde for a request it does not read (a
//! sub-agent, escapes, nulls, unusual numbers) and, for the whole document, to the serde reading
//! ([`parse_serde`]) at anything wrong or unusual, so that every error is serde's, worded and
//! placed as before. A test checks that both give the same result. A big document is read in
//! parts ([`Reader::next_part`]), converted one after the other, so that its first requests can
//! be converted while the rest is read.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::error::{FormatError, Line};
use super::flat::{self, Val};
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
    progress.convs.extend(part.convs.into_iter().map(|c| (format!("{prefix}{}", c.name).into(), c.block)));
    progress.models.extend(part.models);
    let mut start = 0;
    for (k, r) in part.reqs.iter().enumerate() {
        if k % AHEAD == 0 {
            touch_ahead(sink, progress, part.reqs.get(k..).unwrap_or_default(), &part.ids, start);
        }
        let ids = part.ids.get(start..r.ids_end).unwrap_or_default();
        start = r.ids_end;
        sink.out.stats.records += 1;
        if !sink.keeps_model(progress.models.get(r.model as usize).map_or("", |m| m)) {
            continue;
        }
        progress.kept += 1;
        let Some((name, block)) = progress.convs.get(r.conv as usize) else {
            return Err(FormatError::Options(format!("{}: a request without its conversation", sink.file())));
        };
        sink.push(Record {
            at_ns: r.at_ns,
            input: r.input,
            output: r.output,
            conversation: Some(name.clone()),
            ids: Some(SourceIds { ids, block: *block, complete: ids.len() }),
            line: 0,
        })?;
    }
    let Some(end) = part.end else { return Ok(None) };
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
        self.part.reqs.push(Req { at_ns, input, output: r.output, ids_end, conv: list.conv, model });
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
        let r = Request { t: e.t, input: e.input, output: e.out, model: e.model.as_deref().unwrap_or("") };
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

// ---------------------------------------------------------------------------------------------
// The serde reading: every document, and every error.

/// The state of a document while serde reads it.
struct Doc<'d> {
    b: Builder,
    id: Option<String>,
    block: Option<u32>,
    /// Requests met before `id` and `block_size`: read when the document ends.
    early: Option<Vec<Entry<'d>>>,
    /// Why the reading stopped inside serde (its own error then only says "stopped").
    failed: Option<FormatError>,
    /// The document has a `requests` list.
    has_requests: bool,
}

impl Doc<'_> {
    fn conversation(&self) -> String {
        self.id.clone().unwrap_or_else(|| self.b.file.to_string())
    }
}

/// Reads a document with serde (errors included).
fn parse_serde(file: &Arc<str>, text: &str) -> Parsed {
    let mut doc = Doc { b: Builder::new(file), id: None, block: None, early: None, failed: None, has_requests: false };
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de.deserialize_map(DocVisitor(&mut doc)).and_then(|()| de.end());
    let stop = match (doc.failed.take(), read) {
        (Some(e), _) => Some(e),
        (None, Err(e)) => Some(FormatError::Shape {
            file: file.clone(),
            line: Line(Some(e.line() as u64)),
            reason: format!("not a WEKA trace object (`id`, `block_size`, `requests`): {e}"),
        }),
        (None, Ok(())) => finish_serde(&mut doc).err(),
    };
    let name = doc.conversation();
    let block = doc.block.unwrap_or(64);
    doc.b.finish(name, block, stop)
}

/// What follows a document serde read whole: the requests met before the header.
fn finish_serde(doc: &mut Doc<'_>) -> Result<(), FormatError> {
    if !doc.has_requests {
        return Err(FormatError::Shape {
            file: doc.b.file.clone(),
            line: Line(None),
            reason: "not a WEKA trace object (`id`, `block_size`, `requests`): missing field `requests`".into(),
        });
    }
    let block = block_of(&doc.b.file, doc.block)?;
    if let Some(early) = doc.early.take() {
        let conv = doc.b.conv(doc.conversation(), block);
        let list = List { base_ns: 0, conv, path: "requests", block };
        for (i, e) in early.iter().enumerate() {
            doc.b.entry(e, i, &list)?;
        }
    }
    Ok(())
}

/// The document's top-level object.
struct DocVisitor<'v, 'd>(&'v mut Doc<'d>);

impl<'de> Visitor<'de> for DocVisitor<'_, 'de> {
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
                    let block = block_of(&doc.b.file, doc.block).map_err(|e| stop(doc, e))?;
                    let conv = doc.b.conv(doc.conversation(), block);
                    map.next_value_seed(Requests { doc: &mut *doc, block, conv })?;
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
fn stop<E: de::Error>(doc: &mut Doc<'_>, e: FormatError) -> E {
    doc.failed = Some(e);
    E::custom("stopped")
}

/// The top-level `requests` list, read as it comes.
struct Requests<'v, 'd> {
    doc: &'v mut Doc<'d>,
    block: u32,
    conv: u32,
}

impl<'de> DeserializeSeed<'de> for Requests<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Requests<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of requests")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        let list = List { base_ns: 0, conv: self.conv, path: "requests", block: self.block };
        while let Some(e) = seq.next_element::<Entry<'de>>()? {
            let doc = &mut *self.doc;
            doc.b.entry(&e, i, &list).map_err(|err| stop(doc, err))?;
            i += 1;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The fast path, part by part: gives way to serde whenever it is not sure to read what serde reads.

/// Reads a document in parts of a given number of requests, so that the first can be converted
/// while the rest is read. The fast path reads a well-formed document whose header (`id`,
/// `block_size`) comes before its one `requests` list; at anything else, and at any error, serde
/// reads the whole document and the requests not yet handed out come from its reading (the same
/// requests, checked the same way, so the parts together are what serde alone gives).
pub(super) struct Reader<'t> {
    text: &'t str,
    bld: Builder,
    step: Step<'t>,
    /// Whether serde read the document (for tests: the fast path must read the usual ones).
    serde_read: bool,
}

enum Step<'t> {
    /// Before the `requests` list.
    Start,
    /// In it: the next entry (or the list's end) at `i`, the `k`-th.
    List {
        i: usize,
        k: usize,
        conv: u32,
        block: u32,
        id: &'t str,
        seen: u8,
    },
    Done,
}

impl<'t> Reader<'t> {
    pub(super) fn new(file: &Arc<str>, text: &'t str) -> Self {
        Reader { text, bld: Builder::new(file), step: Step::Start, serde_read: false }
    }

    /// The next part, of at least one and at most `max` requests unless it is the last; `None`
    /// after the last.
    pub(super) fn next_part(&mut self, max: usize) -> Option<Parsed> {
        let max = max.max(1);
        if matches!(self.step, Step::Start) {
            match header(self.text, &mut self.bld) {
                Some(list) => self.step = list,
                None => return Some(self.serde()),
            }
        }
        let Step::List { mut i, mut k, conv, block, id, seen } = self.step else { return None };
        let list = List { base_ns: 0, conv, path: "requests", block };
        let Some(ended) = entries(self.text, &mut self.bld, (&mut i, &mut k), &list, max) else {
            return Some(self.serde());
        };
        if !ended {
            self.step = Step::List { i, k, conv, block, id, seen };
            return Some(self.bld.take_part());
        }
        if tail(self.text, i, seen).is_none() {
            return Some(self.serde());
        }
        self.step = Step::Done;
        let file = self.bld.file.clone();
        Some(std::mem::replace(&mut self.bld, Builder::new(&file)).finish(id.to_string(), block, None))
    }

    /// The rest of the document from serde's reading of it all.
    fn serde(&mut self) -> Parsed {
        self.step = Step::Done;
        self.serde_read = true;
        let (reqs, convs, models) = self.bld.sent;
        let mut all = parse_serde(&self.bld.file, &as_lines(self.text));
        let base = reqs.checked_sub(1).and_then(|r| all.reqs.get(r)).map_or(0, |r| r.ids_end);
        let mut rest = Parsed {
            reqs: all.reqs.split_off(reqs.min(all.reqs.len())),
            ids: all.ids.split_off(base.min(all.ids.len())),
            convs: all.convs.split_off(convs.min(all.convs.len())),
            models: all.models.split_off(models.min(all.models.len())),
            end: all.end,
        };
        for r in &mut rest.reqs {
            r.ids_end -= base;
        }
        rest
    }
}

/// Reads the document's header up to its `requests` list (at its first entry): `None` for a
/// document the fast path does not read.
fn header<'t>(text: &'t str, bld: &mut Builder) -> Option<Step<'t>> {
    let b = text.as_bytes();
    let (mut id, mut block, mut seen) = (None, None, 0u8);
    let mut i = flat::skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = flat::skip_ws(b, i + 1);
    loop {
        let (key, next) = flat::string(text, i)?;
        i = flat::skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = flat::skip_ws(b, i + 1);
        match key {
            "id" => {
                first_time(&mut seen, 1)?;
                let (s, next) = flat::string(text, i)?;
                id = Some(s);
                i = next;
            }
            "block_size" => {
                first_time(&mut seen, 2)?;
                let end = flat::json_number(b, i)?;
                block = Some(plain_u64(&text[i..end]).and_then(|n| u32::try_from(n).ok())?);
                i = end;
            }
            "requests" => {
                first_time(&mut seen, 4)?;
                let (id, block) = (id?, block_of(&bld.file, Some(block?)).ok()?);
                if b.get(i) != Some(&b'[') {
                    return None;
                }
                let conv = bld.conv(id.to_string(), block);
                // Room for what the text is likely to hold (growing by copies is much of a big
                // document's memory traffic): an id takes at least 2 bytes, 8 in kv-cache-tester's
                // files; a request at least 30, hundreds with its ids.
                bld.part.ids.reserve(text.len() / 8);
                bld.part.reqs.reserve(text.len() / 256);
                return Some(Step::List { i: flat::skip_ws(b, i + 1), k: 0, conv, block, id, seen });
            }
            _ => i = flat::skip_value(b, i, 0)?,
        }
        i = flat::skip_ws(b, i);
        match *b.get(i)? {
            b',' => i = flat::skip_ws(b, i + 1),
            _ => return None,
        }
    }
}

/// Reads entries of the `requests` list from entry `k` at `i` until the part holds `max`
/// requests (`false`) or the list ends (`true`, `i` after it).
fn entries(
    text: &str,
    bld: &mut Builder,
    (i, k): (&mut usize, &mut usize),
    list: &List<'_>,
    max: usize,
) -> Option<bool> {
    let b = text.as_bytes();
    if *k == 0 && b.get(*i) == Some(&b']') {
        *i += 1;
        return Some(true);
    }
    loop {
        let next = entry(bld, text, *i, *k, list)?;
        *k += 1;
        *i = flat::skip_ws(b, next);
        match *b.get(*i)? {
            b',' => *i = flat::skip_ws(b, *i + 1),
            b']' => {
                *i += 1;
                return Some(true);
            }
            _ => return None,
        }
        if bld.part.reqs.len() >= max {
            return Some(false);
        }
    }
}

/// The rest of the document after its `requests` list (at `i`): other keys, then its end.
fn tail(text: &str, mut i: usize, mut seen: u8) -> Option<()> {
    let b = text.as_bytes();
    loop {
        i = flat::skip_ws(b, i);
        match *b.get(i)? {
            b',' => i = flat::skip_ws(b, i + 1),
            b'}' => return (flat::skip_ws(b, i + 1) == b.len()).then_some(()),
            _ => return None,
        }
        let (key, next) = flat::string(text, i)?;
        match key {
            "id" => first_time(&mut seen, 1)?,
            "block_size" => first_time(&mut seen, 2)?,
            "requests" => first_time(&mut seen, 4)?,
            _ => {}
        }
        i = flat::skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = flat::skip_value(b, flat::skip_ws(b, i + 1), 0)?;
    }
}

/// Keys a request's fast reading reads (`requests` and `agent_id` only to give way to serde).
const READS: [&str; 8] = ["t", "type", "model", "in", "out", "hash_ids", "requests", "agent_id"];

/// Entry `k` of `list` at `text[i]`: a flat request read by the scanner, else the entry read by
/// serde. The index after it.
fn entry(bld: &mut Builder, text: &str, i: usize, k: usize, list: &List<'_>) -> Option<usize> {
    let start = bld.part.ids.len();
    if let Some((r, end)) = flat_request(text, i, &mut bld.part.ids) {
        let at_ns = bld.at(r.t, k, list).ok()?;
        bld.request(at_ns, &r, k, list).ok()?;
        return Some(end);
    }
    bld.part.ids.truncate(start);
    let mut stream = serde_json::Deserializer::from_str(text.get(i..)?).into_iter::<Entry<'_>>();
    let e = stream.next()?.ok()?;
    bld.entry(&e, k, list).ok()?;
    Some(i + stream.byte_offset())
}

/// A request object at `text[i]` whose fields the scanner reads as serde would (a sub-agent,
/// escapes, nulls, repeated keys and unusual numbers give `None`); its ids appended to `ids`.
fn flat_request<'a>(text: &'a str, i: usize, ids: &mut Vec<u64>) -> Option<(Request<'a>, usize)> {
    let (mut t, mut input, mut output, mut model, mut seen) = (None, None, None, "", 0u8);
    let end = flat::object(
        text,
        i,
        ids,
        |key| READS.contains(&key),
        |key, val| {
            let bit = match key {
                "t" => {
                    let Val::Num(n) = val else { return None };
                    t = Some(plain_seconds(n)?);
                    1
                }
                "type" => {
                    let Val::Str(s) = val else { return None };
                    if s == "subagent" {
                        return None;
                    }
                    2
                }
                "model" => {
                    let Val::Str(s) = val else { return None };
                    model = s;
                    4
                }
                "in" | "out" => {
                    let Val::Num(n) = val else { return None };
                    let slot = if key == "in" { &mut input } else { &mut output };
                    *slot = Some(plain_u64(n)?);
                    if key == "in" { 8 } else { 16 }
                }
                "hash_ids" if val == Val::List => 32,
                _ => return None,
            };
            first_time(&mut seen, bit)
        },
    )?;
    Some((Request { t: t?, input, output, model }, end))
}

/// Marks `bit` in `seen`; `None` when it was already (a repeated key).
fn first_time(seen: &mut u8, bit: u8) -> Option<()> {
    let fresh = *seen & bit == 0;
    *seen |= bit;
    fresh.then_some(())
}

/// An unsigned integer written plainly (as JSON writes it, at most 19 digits).
fn plain_u64(n: &str) -> Option<u64> {
    let b = n.as_bytes();
    let ok = !b.is_empty() && b.len() <= 19 && b.iter().all(u8::is_ascii_digit) && (b[0] != b'0' || b.len() == 1);
    ok.then(|| n.parse().ok()).flatten()
}

/// Seconds written plainly: `int[.frac]` of at most 16 digits (15 without a fraction), which
/// `str::parse` and serde (with `float_roundtrip`, as the workspace builds it) read to the same,
/// correctly rounded `f64`.
fn plain_seconds(n: &str) -> Option<f64> {
    // Without a fraction: as if it were ".1", for the digit count.
    let (int, frac) = n.split_once('.').unwrap_or((n, "1"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let ok = digits(int) && digits(frac) && (int == "0" || !int.starts_with('0')) && int.len() + frac.len() <= 16;
    ok.then(|| n.parse().ok()).flatten()
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
        let mut reader = super::Reader::new(&"w.json".into(), text);
        let parts = std::iter::from_fn(|| reader.next_part(n)).collect();
        (parts, reader.serde_read)
    }

    #[test]
    fn real_files_take_the_fast_path_and_convert_as_line_by_line() {
        let source: std::sync::Arc<str> = "w.json".into();
        for text in [
            include_str!("../../../../tests/fixtures/traces/formats/weka-kv-cache-tester/trace_0291.json"),
            include_str!("../../../../tests/fixtures/traces/formats/weka-kv-cache-tester/trace_0504.json"),
        ] {
            // trace_0291 has sub-agents: read by serde, each within the fast reading.
            let (whole, serde_read) = parts(text, usize::MAX);
            assert!(!serde_read, "read by the fast path");
            assert_eq!(whole, vec![super::parse_serde(&source, &super::as_lines(text))]);
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
            prop::collection::vec(("[a-z_]{1,6}", other_value(k)), 0..3),
            (any::<bool>(), prop_oneof![
                16 * k => Just(None), 1 => Just(Some("null")), 1 => Just(Some("[1, -2]")), 1 => Just(Some("[01]")),
                1 => Just(Some("\"x\"")), 1 => Just(Some("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]")),
            ]),
            (ws(), ws(), any::<prop::sample::Index>(), prop_oneof![20 * k => Just(false), 1 => Just(true)]),
        )
            .prop_map(|(t, kind, model, (ids, rest, input), out, extra, (has_ids, odd_ids), (w1, w2, shuffle, dup))| {
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
                if dup {
                    fields.push("\"in\": 3".into());
                }
                let k = shuffle.index(fields.len());
                fields.swap(0, k);
                format!("{{{w2}{}{w1}}}", fields.join(&format!(",{w2}")))
            })
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
            let serde = super::parse_serde(&source, &super::as_lines(&doc));
            let (whole, serde_read) = parts(&doc, usize::MAX);
            if !serde_read {
                prop_assert!(whole[0].end.as_ref().is_some_and(|e| e.stop.is_none()));
            }
            prop_assert_eq!(whole, vec![serde]);
            let opts = ConvertOptions { block_size, models: model.into_iter().map(str::to_string).collect(), ..ConvertOptions::default() };
            let lines = convert_with(&doc, &opts, Push::Lines);
            prop_assert_eq!(&convert_with(&doc, &opts, Push::Document), &lines);
            prop_assert_eq!(&convert_with(&doc, &opts, Push::Parts(part)), &lines);
        }
    }
}
