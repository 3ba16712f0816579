//! The fast path, part by part: a hand-written scanner of WEKA documents that gives way to serde
//! whenever it is not sure to read what serde reads.

use std::sync::Arc;

use super::build::{Builder, List, Request, block_of};
use super::model::{Entry, Parsed, as_lines};
use super::serde_read::parse_serde;
use crate::formats::flat::{self, Val};
use crate::json_scan::Cursor;

/// Reads a document in parts of a given number of requests, so that the first can be converted
/// while the rest is read. The fast path reads a well-formed document whose header (`id`,
/// `block_size`) comes before its one `requests` list; at anything else, and at any error, serde
/// reads the whole document and the requests not yet handed out come from its reading (the same
/// requests, checked the same way, so the parts together are what serde alone gives).
pub(in crate::formats) struct Reader<'t> {
    text: &'t str,
    bld: Builder,
    step: Step<'t>,
    /// Whether serde read the document (for tests: the fast path must read the usual ones).
    pub(super) serde_read: bool,
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
    pub(in crate::formats) fn new(file: &Arc<str>, text: &'t str) -> Self {
        Reader { text, bld: Builder::new(file), step: Step::Start, serde_read: false }
    }

    /// The next part, of at least one and at most `max` requests unless it is the last; `None`
    /// after the last.
    pub(in crate::formats) fn next_part(&mut self, max: usize) -> Option<Parsed> {
        let max = max.max(1);
        if matches!(self.step, Step::Start) {
            match header(self.text, &mut self.bld) {
                Some(list) => self.step = list,
                None => return Some(self.serde()),
            }
        }
        let Step::List { mut i, mut k, conv, block, id, seen } = self.step else { return None };
        let list = List { base_ns: 0, base_s: 0.0, conv, path: "requests", block };
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
    let (mut id, mut block, mut seen) = (None, None, 0u8);
    let mut c = Cursor::new(text.as_bytes());
    c.ws();
    c.eat(b'{')?;
    c.ws();
    loop {
        match c.key()? {
            b"id" => {
                first_time(&mut seen, 1)?;
                id = Some(flat::plain_str(text, &mut c)?);
            }
            b"block_size" => {
                first_time(&mut seen, 2)?;
                let at = c.i;
                c.skip_number()?;
                block = Some(plain_u64(&text[at..c.i]).and_then(|n| u32::try_from(n).ok())?);
            }
            b"requests" => {
                first_time(&mut seen, 4)?;
                let (id, block) = (id?, block_of(&bld.file, Some(block?)).ok()?);
                if c.peek() != Some(b'[') {
                    return None;
                }
                let conv = bld.conv(id.to_string(), block);
                // Room for what the text is likely to hold (growing by copies is much of a big
                // document's memory traffic): an id takes at least 2 bytes, 8 in kv-cache-tester's
                // files; a request at least 30, hundreds with its ids.
                bld.part.ids.reserve(text.len() / 8);
                bld.part.reqs.reserve(text.len() / 256);
                c.i += 1;
                c.ws();
                return Some(Step::List { i: c.i, k: 0, conv, block, id, seen });
            }
            _ => c.skip_value(0)?,
        }
        // The header ends with the `requests` list, never before it.
        if !c.more(b'}')? {
            return None;
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
        let mut c = Cursor::at(b, entry(bld, text, *i, *k, list)?);
        *k += 1;
        let more = c.more(b']')?;
        *i = c.i;
        if !more {
            return Some(true);
        }
        if bld.part.reqs.len() >= max {
            return Some(false);
        }
    }
}

/// The rest of the document after its `requests` list (at `i`): other keys, then its end.
fn tail(text: &str, i: usize, mut seen: u8) -> Option<()> {
    let mut c = Cursor::at(text.as_bytes(), i);
    loop {
        if !c.more(b'}')? {
            return c.at_end().then_some(());
        }
        match c.key()? {
            b"id" => first_time(&mut seen, 1)?,
            b"block_size" => first_time(&mut seen, 2)?,
            b"requests" => first_time(&mut seen, 4)?,
            _ => {}
        }
        c.skip_value(0)?;
    }
}

/// Keys a request's fast reading reads (`requests` and `agent_id` only to give way to serde).
const READS: [&str; 10] =
    ["t", "type", "model", "in", "out", "hash_ids", "requests", "agent_id", "api_time", "think_time"];

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
    let (mut api, mut think) = (None, None);
    let end = flat::object(
        text,
        Cursor::at(text.as_bytes(), i),
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
                // Other values (null, strings, odd numbers) are serde's to read.
                "api_time" | "think_time" => {
                    let Val::Num(n) = val else { return None };
                    let slot = if key == "api_time" { &mut api } else { &mut think };
                    *slot = Some(plain_seconds(n)?);
                    if key == "api_time" { 64 } else { 128 }
                }
                _ => return None,
            };
            first_time(&mut seen, bit)
        },
    )?;
    Some((Request { t: t?, input, output, model, api, think }, end.i))
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
