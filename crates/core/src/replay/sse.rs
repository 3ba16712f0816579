//! Server-sent events: an incremental parser and the interpretation of OpenAI streaming chunks.
//!
//! [`SseParser`] takes the response body in whatever pieces the network delivers and yields
//! complete events; it handles `\n`, `\r\n` and `\r` line ends (also split across pieces),
//! comments, multi-line `data:` and events without a trailing blank line at the end of the stream.
//! [`interpret_chunk`] turns one event's data into what the replay measures: generated text,
//! usage, finish reason, the `[DONE]` sentinel, or an in-stream error.

use std::borrow::Cow;
use std::fmt;

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// One dispatched server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server set one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental SSE parser: feed bytes as they arrive, collect events.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous piece ended with `\r`: a `\n` starting the next piece belongs to that line end.
    after_cr: bool,
    current: SseEvent,
    has_data: bool,
    /// Most bytes of one line or one event's data; `None` = no limit.
    limit: Option<usize>,
    overflowed: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser that stops (see [`SseParser::overflowed`]) once a line or an event's data would
    /// hold more than `max_bytes`, instead of growing without bound.
    pub fn with_limit(max_bytes: usize) -> Self {
        SseParser { limit: Some(max_bytes), ..Self::default() }
    }

    /// Whether a line or an event exceeded the limit: the parser then ignores all further input.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    fn fits(&mut self, have: usize, more: usize) -> bool {
        if self.limit.is_some_and(|l| have.saturating_add(more) > l) {
            self.overflowed = true;
            self.line = Vec::new();
            self.current = SseEvent::default();
            self.has_data = false;
            return false;
        }
        true
    }

    /// Feeds the next piece of the byte stream, appending every event it completes to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.feed_with(bytes, &mut |e| out.push(e.clone()));
    }

    /// Ends the stream: a last line without its line end and a pending event are dispatched.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.finish_with(&mut |e| out.push(e.clone()));
    }

    /// Like [`SseParser::feed`], handing each event to `on_event` without allocating.
    pub fn feed_with(&mut self, mut bytes: &[u8], on_event: &mut dyn FnMut(&SseEvent)) {
        if self.overflowed {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', bytes) {
            let end_len = if bytes[pos] == b'\r' {
                match bytes.get(pos + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    None => {
                        self.after_cr = true;
                        1
                    }
                }
            } else {
                1
            };
            if self.line.is_empty() {
                self.process_line(&bytes[..pos], on_event);
            } else {
                if !self.fits(self.line.len(), pos) {
                    return;
                }
                self.line.extend_from_slice(&bytes[..pos]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, on_event);
                self.line = line;
                self.line.clear();
            }
            if self.overflowed {
                return;
            }
            bytes = &bytes[pos + end_len..];
        }
        if self.fits(self.line.len(), bytes.len()) {
            self.line.extend_from_slice(bytes);
        }
    }

    /// Like [`SseParser::finish`], handing each event to `on_event`.
    pub fn finish_with(&mut self, on_event: &mut dyn FnMut(&SseEvent)) {
        if self.overflowed {
            return;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, on_event);
        }
        self.dispatch(on_event);
    }

    fn process_line(&mut self, line: &[u8], on_event: &mut dyn FnMut(&SseEvent)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if !self.fits(self.current.data.len(), value.len() + 1) {
                    return;
                }
                if self.has_data {
                    self.current.data.push('\n');
                }
                match std::str::from_utf8(value) {
                    Ok(v) => self.current.data.push_str(v),
                    Err(_) => self.current.data.push_str(&String::from_utf8_lossy(value)),
                }
                self.has_data = true;
            }
            b"event" => self.current.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut dyn FnMut(&SseEvent)) {
        if self.has_data {
            on_event(&self.current);
        }
        self.has_data = false;
        self.current.event = None;
        // Keep the buffer's capacity for the next event.
        self.current.data.clear();
    }
}

/// Token usage reported by the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
}

/// What one streaming event (or a whole non-streaming response) says; text borrows from the input
/// when it has no escapes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// Generated text of this chunk (`delta.content`, `delta.reasoning_content`, `text`,
    /// `message.content`); empty for role-only, usage-only and finish chunks.
    pub text: Cow<'a, str>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
}

/// A streaming event interpreted as an OpenAI chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamItem<'a> {
    /// The `[DONE]` sentinel.
    Done,
    Chunk(Chunk<'a>),
}

/// A response the client cannot accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    #[error("malformed JSON in response: {0}")]
    Json(String),
    #[error("server reported an error: {0}")]
    Server(String),
}

#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(default, borrow)]
    choices: Option<FirstChoice<'a>>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// The first element of `choices`; the others are skipped without being stored.
struct FirstChoice<'a>(Option<RawChoice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<RawChoice<'a>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct RawChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<RawMessage<'a>>,
    #[serde(default, borrow)]
    message: Option<RawMessage<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<RawDetails>,
}

#[derive(Deserialize)]
struct RawDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Interprets the data of one streaming event.
pub fn interpret_chunk(data: &str) -> Result<StreamItem<'_>, ChunkError> {
    if data.trim() == "[DONE]" {
        return Ok(StreamItem::Done);
    }
    interpret_response(data).map(StreamItem::Chunk)
}

/// Interprets a complete JSON object: a streaming chunk or a whole non-streaming response.
pub fn interpret_response(json: &str) -> Result<Chunk<'_>, ChunkError> {
    let raw: RawChunk<'_> = serde_json::from_str(json).map_err(|e| ChunkError::Json(short(&e.to_string())))?;
    if let Some(err) = raw.error {
        let msg = match &err {
            serde_json::Value::Object(m) => m.get("message").and_then(|v| v.as_str()).map(str::to_owned),
            serde_json::Value::String(s) => Some(s.clone()),
            _ => None,
        };
        return Err(ChunkError::Server(short(&msg.unwrap_or_else(|| err.to_string()))));
    }
    let mut chunk = Chunk::default();
    if let Some(choice) = raw.choices.and_then(|c| c.0) {
        let pieces = [choice.delta, choice.message]
            .into_iter()
            .flatten()
            .flat_map(|m| [m.reasoning_content, m.content])
            .chain([choice.text])
            .flatten()
            .filter(|p| !p.is_empty());
        for piece in pieces {
            if chunk.text.is_empty() {
                chunk.text = piece;
            } else {
                chunk.text.to_mut().push_str(&piece);
            }
        }
        chunk.finish_reason = choice.finish_reason;
    }
    chunk.usage = raw.usage.map(|u| Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
    });
    Ok(chunk)
}

fn short(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, &mut out);
        }
        p.finish(&mut out);
        out
    }

    fn ev(data: &str) -> SseEvent {
        SseEvent { event: None, data: data.into() }
    }

    #[test]
    fn line_ends_comments_and_multiline_data() {
        let body = b": keep-alive\r\ndata: a\r\ndata:b\r\n\r\nevent: x\rdata: {\"k\":1}\r\rdata: [DONE]\n\n";
        let out = parse_all(&[body]);
        assert_eq!(out, vec![ev("a\nb"), SseEvent { event: Some("x".into()), data: "{\"k\":1}".into() }, ev("[DONE]")]);
    }

    #[test]
    fn last_event_without_blank_line_is_kept() {
        assert_eq!(parse_all(&[b"data: x\n\ndata: y"]), vec![ev("x"), ev("y")]);
    }

    #[test]
    fn crlf_split_across_pieces() {
        assert_eq!(parse_all(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]), vec![ev("a"), ev("b")]);
    }

    #[test]
    fn chat_role_chunk_is_not_text() {
        let c = interpret_response(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#).unwrap();
        assert_eq!(c.text, "");
        let c = interpret_response(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#).unwrap();
        assert_eq!(c.text, "");
    }

    #[test]
    fn usage_chunk_with_empty_choices() {
        let c = interpret_chunk(r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}},"timings":{"x":1}}"#).unwrap();
        let StreamItem::Chunk(c) = c else { panic!() };
        assert_eq!(
            c.usage,
            Some(Usage { prompt_tokens: Some(10), completion_tokens: Some(3), cached_tokens: Some(8) })
        );
    }

    #[test]
    fn completions_usage_on_last_chunk() {
        let c = interpret_response(
            r#"{"choices":[{"text":"!","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        )
        .unwrap();
        assert_eq!((&*c.text, c.finish_reason.as_deref()), ("!", Some("length")));
        assert_eq!(c.usage.and_then(|u| u.completion_tokens), Some(2));
    }

    #[test]
    fn reasoning_content_counts_as_text() {
        let c = interpret_response(r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#).unwrap();
        assert_eq!(c.text, "hm");
    }

    #[test]
    fn done_malformed_and_error() {
        assert_eq!(interpret_chunk("[DONE]"), Ok(StreamItem::Done));
        assert!(matches!(interpret_chunk("{not json"), Err(ChunkError::Json(_))));
        assert_eq!(
            interpret_chunk(r#"{"error":{"message":"boom","code":500}}"#),
            Err(ChunkError::Server("boom".into()))
        );
    }

    #[test]
    fn a_limit_stops_endless_lines_and_huge_events_without_growth() {
        let mut p = SseParser::with_limit(100);
        let mut out = Vec::new();
        p.feed(b"data: {\"a\":1}\n\n", &mut out);
        assert_eq!(out.len(), 1);
        for _ in 0..1000 {
            p.feed(&[b'x'; 64], &mut out);
        }
        assert!(p.overflowed());
        assert!(p.line.capacity() <= 128);
        p.feed(b"\n\ndata: late\n\n", &mut out);
        p.finish(&mut out);
        assert_eq!(out.len(), 1);
        // Many short data lines that add up to a big event.
        let mut p = SseParser::with_limit(100);
        for _ in 0..50 {
            p.feed(b"data: 0123456789\n", &mut out);
        }
        assert!(p.overflowed());
        // Events under the limit are unaffected.
        let mut p = SseParser::with_limit(100);
        let mut out = Vec::new();
        for _ in 0..1000 {
            p.feed(b"data: 0123456789\n\n", &mut out);
        }
        assert!(!p.overflowed());
        assert_eq!(out.len(), 1000);
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(
            events in proptest::collection::vec("[a-z{}\":, \\[\\]]{0,20}", 1..6),
            ends in proptest::collection::vec(0usize..3, 1..6),
            cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let mut body = Vec::new();
            for (i, e) in events.iter().enumerate() {
                let end: &[u8] = [&b"\n"[..], b"\r\n", b"\r"][ends[i % ends.len()]];
                body.extend_from_slice(b": c");
                body.extend_from_slice(end);
                body.extend_from_slice(b"data: ");
                body.extend_from_slice(e.as_bytes());
                body.extend_from_slice(end);
                body.extend_from_slice(end);
            }
            let whole = parse_all(&[&body]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (body.len() + 1)).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut last = 0;
            for c in cuts {
                pieces.push(&body[last..c]);
                last = c;
            }
            pieces.push(&body[last..]);
            prop_assert_eq!(&parse_all(&pieces), &whole);
            let bytewise: Vec<&[u8]> = body.chunks(1).collect();
            prop_assert_eq!(&parse_all(&bytewise), &whole);
            prop_assert_eq!(whole.len(), events.len());
        }
    }
}
