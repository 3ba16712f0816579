//! The record of one request ([`RequestRecord`]: raw times, token counts, the error if any) and
//! its line of `profile_export.jsonl`, written ([`record_line`]) and read back ([`read_line`]);
//! [`RequestRecord::rebase`] moves a record to another time zero (a shard's records merged).
//!
//! [`parse_fast`] reads the compact form the CLI writes (`{"metadata":{…},"metrics":{…}}`, no
//! whitespace, strings without escapes) into a reused record: no JSON tree, no `String` per
//! record (the record's strings and `chunk_ns` keep their allocations from line to line), the
//! `metrics` object only checked, not kept. It gives up (`false`) on anything it does not fully
//! understand — whitespace between tokens, escapes, unknown or repeated keys, numbers that are not
//! plain integers where integers are expected, nesting deeper than [`MAX_DEPTH`] — and the caller
//! then parses the line with serde ([`parse_serde`]), which also words the error. Whatever it
//! accepts, serde accepts with the same record (a differential property test and the
//! `parse_run_line` fuzz target check it), so the fast path is never wrong, only sometimes skipped.

use serde::{Deserialize, Serialize};

use crate::results::metrics::{Metric, RequestMetrics};

/// Token usage as the server reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerUsage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// Why a request failed: a short kind (`http_status`, `timeout`, …) and a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordError {
    pub kind: String,
    pub message: String,
}

/// Everything measured about one request; times are nanoseconds from the benchmark start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The trace's session id, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Index of the session run in the schedule.
    pub session_run: u32,
    /// 0-based turn within the session.
    pub turn: u32,
    /// 1-based line of the trace row.
    pub trace_line: u32,
    pub scheduled_ns: u64,
    /// When the dispatcher handed the request to the async runtime (diagnoses where lateness
    /// arises: pacing before it, task start-up after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched_ns: Option<u64>,
    pub sent_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_ns: Option<u64>,
    /// Arrival time of every content chunk (chunks with generated text).
    pub chunk_ns: Vec<u64>,
    pub end_ns: u64,
    pub streaming: bool,
    /// Prompt tokens by the client's tokenizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens by the client's tokenizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The `max_completion_tokens` asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub usage: ServerUsage,
    /// Prompt tokens the trace predicts a prefix cache could reuse (shared leading hash ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_cached_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordError>,
    /// Which `--url` the request went to (0-based, in the order given), when several were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_index: Option<u32>,
}

impl RequestRecord {
    /// Moves every time later by `shift_ns` (a shard's records onto the merged run's zero).
    pub fn rebase(&mut self, shift_ns: u64) {
        let s = |t: u64| t.saturating_add(shift_ns);
        self.scheduled_ns = s(self.scheduled_ns);
        self.dispatched_ns = self.dispatched_ns.map(s);
        self.sent_ns = s(self.sent_ns);
        self.first_byte_ns = self.first_byte_ns.map(s);
        for c in &mut self.chunk_ns {
            *c = s(*c);
        }
        self.end_ns = s(self.end_ns);
    }
}

/// The name of the per-request export.
pub const RECORDS_FILE: &str = "profile_export.jsonl";

/// One line of `profile_export.jsonl` (with its newline): the raw record and its metrics.
pub fn record_line(rec: &RequestRecord, metrics: Option<&RequestMetrics>) -> Vec<u8> {
    let mut out = serde_json::to_vec(&Line { metadata: rec, metrics: Metrics(metrics) }).unwrap_or_default();
    out.push(b'\n');
    out
}

/// One line of the JSONL, serialized without building a JSON tree.
#[derive(Serialize)]
struct Line<'a> {
    metadata: &'a RequestRecord,
    metrics: Metrics<'a>,
}

struct Metrics<'a>(Option<&'a RequestMetrics>);

impl serde::Serialize for Metrics<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if let Some(m) = self.0 {
            for &(k, v) in m.values() {
                map.serialize_entry(k.tag(), &v)?;
            }
            if !m.inter_chunk_ms.is_empty() {
                map.serialize_entry(Metric::InterChunkLatency.tag(), &m.inter_chunk_ms)?;
            }
        }
        map.end()
    }
}

/// Deepest nesting the fast path skips in `metrics` (serde's own limit is 128).
pub const MAX_DEPTH: usize = 32;

/// The part of a JSONL line the run reads (`metrics` is recomputed, not trusted).
#[derive(Deserialize)]
struct LineIn {
    metadata: RequestRecord,
}

/// The line through serde: the reference the fast path must agree with.
pub fn parse_serde(raw: &[u8]) -> Result<RequestRecord, serde_json::Error> {
    serde_json::from_slice::<LineIn>(raw).map(|l| l.metadata)
}

/// Reads one line of `profile_export.jsonl` into `rec`: `Ok(false)` for a blank line, else the
/// record, by the fast path when it reads the line ([`parse_fast`], `rec`'s allocations reused),
/// by serde otherwise, whose error says what is wrong.
pub fn read_line(raw: &[u8], rec: &mut RequestRecord) -> Result<bool, serde_json::Error> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(false);
    }
    if !parse_fast(raw, rec) {
        *rec = parse_serde(raw)?;
    }
    Ok(true)
}

/// Parses `raw` into `rec` (its previous content is overwritten, its allocations reused).
/// `false`: not understood here, `rec` is unspecified and the line must go through
/// [`parse_serde`].
pub fn parse_fast(raw: &[u8], rec: &mut RequestRecord) -> bool {
    let mut c = Cur { b: raw, i: 0 };
    parse_line(&mut c, rec).is_some()
}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

// Field bits of the metadata object (duplicates and missing required fields give up).
const SESSION_ID: u32 = 1;
const SESSION_RUN: u32 = 1 << 1;
const TURN: u32 = 1 << 2;
const TRACE_LINE: u32 = 1 << 3;
const SCHEDULED: u32 = 1 << 4;
const DISPATCHED: u32 = 1 << 5;
const SENT: u32 = 1 << 6;
const FIRST_BYTE: u32 = 1 << 7;
const CHUNKS: u32 = 1 << 8;
const END: u32 = 1 << 9;
const STREAMING: u32 = 1 << 10;
const INPUT: u32 = 1 << 11;
const OUTPUT: u32 = 1 << 12;
const MAX_TOKENS: u32 = 1 << 13;
const USAGE: u32 = 1 << 14;
const EXPECTED: u32 = 1 << 15;
const ERROR: u32 = 1 << 16;
const URL: u32 = 1 << 17;
const REQUIRED: u32 = SESSION_RUN | TURN | TRACE_LINE | SCHEDULED | SENT | CHUNKS | END | STREAMING;

fn parse_line(c: &mut Cur, rec: &mut RequestRecord) -> Option<()> {
    c.eat(b'{')?;
    let (mut metadata, mut metrics) = (false, false);
    loop {
        match c.key()? {
            b"metadata" if !metadata => {
                metadata = true;
                metadata_object(c, rec)?;
            }
            b"metrics" if !metrics => {
                metrics = true;
                c.skip_value(0)?;
            }
            _ => return None,
        }
        if !c.more(b'}')? {
            break;
        }
    }
    if !metadata {
        return None;
    }
    while let Some(&b) = c.b.get(c.i) {
        if !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            return None;
        }
        c.i += 1;
    }
    Some(())
}

fn metadata_object(c: &mut Cur, rec: &mut RequestRecord) -> Option<()> {
    c.eat(b'{')?;
    let mut seen = 0u32;
    // Reused allocations; put back (or dropped to `None`) below.
    let mut session = rec.session_id.take();
    let mut error = rec.error.take();
    rec.chunk_ns.clear();
    let (mut has_session, mut has_error) = (false, false);
    let mut usage = ServerUsage::default();
    let (mut dispatched, mut first_byte, mut input, mut output, mut max_tokens, mut expected, mut url) =
        (None, None, None, None, None, None, None);
    if c.peek()? == b'}' {
        c.i += 1;
        return None; // required fields missing
    }
    loop {
        let key = c.key()?;
        let bit = match key {
            b"session_id" => SESSION_ID,
            b"session_run" => SESSION_RUN,
            b"turn" => TURN,
            b"trace_line" => TRACE_LINE,
            b"scheduled_ns" => SCHEDULED,
            b"dispatched_ns" => DISPATCHED,
            b"sent_ns" => SENT,
            b"first_byte_ns" => FIRST_BYTE,
            b"chunk_ns" => CHUNKS,
            b"end_ns" => END,
            b"streaming" => STREAMING,
            b"input_tokens" => INPUT,
            b"output_tokens" => OUTPUT,
            b"max_tokens" => MAX_TOKENS,
            b"usage" => USAGE,
            b"expected_cached_tokens" => EXPECTED,
            b"error" => ERROR,
            b"url_index" => URL,
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match bit {
            SESSION_ID => {
                if c.null() {
                    has_session = false;
                } else {
                    let s = c.str()?;
                    let mut owned = session.take().unwrap_or_default();
                    owned.clear();
                    owned.push_str(s);
                    session = Some(owned);
                    has_session = true;
                }
            }
            SESSION_RUN => rec.session_run = c.u32()?,
            TURN => rec.turn = c.u32()?,
            TRACE_LINE => rec.trace_line = c.u32()?,
            SCHEDULED => rec.scheduled_ns = c.u64()?,
            DISPATCHED => dispatched = c.opt_u64()?,
            SENT => rec.sent_ns = c.u64()?,
            FIRST_BYTE => first_byte = c.opt_u64()?,
            CHUNKS => {
                c.eat(b'[')?;
                if c.peek()? == b']' {
                    c.i += 1;
                } else {
                    loop {
                        rec.chunk_ns.push(c.u64()?);
                        if !c.more(b']')? {
                            break;
                        }
                    }
                }
            }
            END => rec.end_ns = c.u64()?,
            STREAMING => {
                rec.streaming = if c.lit(b"true") {
                    true
                } else if c.lit(b"false") {
                    false
                } else {
                    return None;
                }
            }
            INPUT => input = c.opt_u64()?,
            OUTPUT => output = c.opt_u64()?,
            MAX_TOKENS => max_tokens = c.opt_u64()?,
            USAGE => usage = usage_object(c)?,
            EXPECTED => expected = c.opt_u64()?,
            ERROR => {
                if c.null() {
                    has_error = false;
                } else {
                    let mut e = error.take().unwrap_or(RecordError { kind: String::new(), message: String::new() });
                    error_object(c, &mut e)?;
                    error = Some(e);
                    has_error = true;
                }
            }
            _ => {
                url = match c.opt_u64()? {
                    None => None,
                    Some(v) => Some(u32::try_from(v).ok()?),
                }
            }
        }
        if !c.more(b'}')? {
            break;
        }
    }
    if seen & REQUIRED != REQUIRED {
        return None;
    }
    rec.session_id = if has_session { session } else { None };
    rec.error = if has_error { error } else { None };
    rec.dispatched_ns = dispatched;
    rec.first_byte_ns = first_byte;
    rec.input_tokens = input;
    rec.output_tokens = output;
    rec.max_tokens = max_tokens;
    rec.usage = usage;
    rec.expected_cached_tokens = expected;
    rec.url_index = url;
    Some(())
}

fn usage_object(c: &mut Cur) -> Option<ServerUsage> {
    c.eat(b'{')?;
    let mut u = ServerUsage::default();
    if c.peek()? == b'}' {
        c.i += 1;
        return Some(u);
    }
    let mut seen = 0u8;
    loop {
        let (bit, slot) = match c.key()? {
            b"prompt_tokens" => (1, &mut u.prompt_tokens),
            b"completion_tokens" => (2, &mut u.completion_tokens),
            b"cached_tokens" => (4, &mut u.cached_tokens),
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        *slot = c.opt_u64()?;
        if !c.more(b'}')? {
            return Some(u);
        }
    }
}

fn error_object(c: &mut Cur, e: &mut RecordError) -> Option<()> {
    c.eat(b'{')?;
    let mut seen = 0u8;
    if c.peek()? == b'}' {
        return None;
    }
    loop {
        let (bit, slot) = match c.key()? {
            b"kind" => (1, &mut e.kind),
            b"message" => (2, &mut e.message),
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        let s = c.str()?;
        slot.clear();
        slot.push_str(s);
        if !c.more(b'}')? {
            break;
        }
    }
    (seen == 3).then_some(())
}

impl<'a> Cur<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.peek()? == want).then(|| self.i += 1)
    }

    /// After a member: `true` on `,` (another follows), `false` on `close`.
    fn more(&mut self, close: u8) -> Option<bool> {
        let b = self.peek()?;
        self.i += 1;
        if b == b',' {
            Some(true)
        } else if b == close {
            Some(false)
        } else {
            None
        }
    }

    fn lit(&mut self, word: &[u8]) -> bool {
        let hit = self.b[self.i..].starts_with(word);
        if hit {
            self.i += word.len();
        }
        hit
    }

    fn null(&mut self) -> bool {
        self.lit(b"null")
    }

    /// A string without escapes or control characters, valid UTF-8.
    fn raw_str(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let rest = &self.b[self.i..];
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' {
            return None;
        }
        let s = &rest[..end];
        if s.iter().any(|&b| b < 0x20) {
            return None;
        }
        self.i += end + 1;
        Some(s)
    }

    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.raw_str()?).ok()
    }

    /// `"key":`
    fn key(&mut self) -> Option<&'a [u8]> {
        let k = self.raw_str()?;
        self.eat(b':')?;
        Some(k)
    }

    /// A plain non-negative integer (no sign, fraction, exponent or leading zero) that fits.
    fn u64(&mut self) -> Option<u64> {
        let first = self.peek()?;
        if !first.is_ascii_digit() {
            return None;
        }
        self.i += 1;
        let mut v = u64::from(first - b'0');
        if first == b'0' {
            return (!self.peek().is_some_and(|b| b.is_ascii_digit())).then_some(0);
        }
        while let Some(b) = self.peek().filter(u8::is_ascii_digit) {
            v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            self.i += 1;
        }
        Some(v)
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u64()?).ok()
    }

    fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.null() { Some(None) } else { self.u64().map(Some) }
    }

    /// A JSON number by the strict grammar, not converted.
    fn skip_number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.i += 1;
        }
        let digits = |c: &mut Cur| {
            let from = c.i;
            while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                c.i += 1;
            }
            (c.i > from).then_some(c.i - from)
        };
        let lead = self.peek()?;
        let n = digits(self)?;
        if lead == b'0' && n > 1 {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            digits(self)?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            digits(self)?;
        }
        Some(())
    }

    /// Any value of the subset (no whitespace, no escapes), checked and skipped.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => {
                self.i += 1;
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.key()?;
                    self.skip_value(depth + 1)?;
                    if !self.more(b'}')? {
                        return Some(());
                    }
                }
            }
            b'[' => {
                self.i += 1;
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if !self.more(b']')? {
                        return Some(());
                    }
                }
            }
            b'"' => self.str().map(|_| ()),
            b'n' => self.null().then_some(()),
            b't' => self.lit(b"true").then_some(()),
            b'f' => self.lit(b"false").then_some(()),
            _ => self.skip_number(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::aggregate::Aggregate;
    use crate::results::record::record_line;
    use proptest::prelude::*;

    /// The fast path, if it accepts, agrees with serde; returns whether it accepted.
    fn agree(raw: &[u8]) -> bool {
        let mut rec = crate::view::tests::record(99, true); // stale content must not leak
        let fast = parse_fast(raw, &mut rec);
        let slow = parse_serde(raw);
        if fast {
            assert_eq!(slow.as_ref().ok(), Some(&rec), "{}", String::from_utf8_lossy(raw));
        }
        fast
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9_-]{0,12}", any::<String>(), "[\"\\\\/\n\t\u{0}\u{1f}é€😀a]{0,8}",]
    }

    fn opt_u64() -> impl Strategy<Value = Option<u64>> {
        prop_oneof![Just(None), any::<u64>().prop_map(Some), (0u64..1000).prop_map(Some)]
    }

    prop_compose! {
        fn record()(
            session_id in proptest::option::of(text()),
            session_run in any::<u32>(), turn in 0u32..100, trace_line in any::<u32>(),
            scheduled_ns in any::<u64>(), dispatched_ns in opt_u64(), sent_ns in 0u64..u64::MAX / 2,
            first_byte_ns in opt_u64(),
            gaps in proptest::collection::vec(0u64..10_000_000, 0..6),
            extra in 0u64..1_000_000, streaming in any::<bool>(),
            input_tokens in opt_u64(), output_tokens in opt_u64(), max_tokens in opt_u64(),
            usage in (opt_u64(), opt_u64(), opt_u64()), expected in opt_u64(),
            error in proptest::option::of((text(), text())), url_index in proptest::option::of(any::<u32>()),
        ) -> RequestRecord {
            let mut t = sent_ns;
            let chunk_ns: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
            RequestRecord {
                session_id, session_run, turn, trace_line, scheduled_ns, dispatched_ns, sent_ns,
                first_byte_ns, chunk_ns, end_ns: t + extra, streaming, input_tokens, output_tokens,
                max_tokens,
                usage: ServerUsage { prompt_tokens: usage.0, completion_tokens: usage.1, cached_tokens: usage.2 },
                expected_cached_tokens: expected,
                error: error.map(|(kind, message)| RecordError { kind, message }),
                url_index,
            }
        }
    }

    /// A line as the CLI writes it (with its metrics when the record has any).
    fn line(r: &RequestRecord) -> Vec<u8> {
        let mut agg = Aggregate::default();
        let m = agg.add(r, true, &[]);
        let mut l = record_line(r, m.as_ref());
        l.pop();
        l
    }

    #[test]
    fn the_clis_lines_take_the_fast_path() {
        for i in 0..40 {
            let r = crate::view::tests::record(i, i % 3 == 0);
            let raw = line(&r);
            let mut got = RequestRecord::default();
            assert!(parse_fast(&raw, &mut got), "{}", String::from_utf8_lossy(&raw));
            assert_eq!(got, r);
            assert!(agree(&raw));
        }
    }

    #[test]
    fn gives_up_on_what_it_does_not_know() {
        let r = crate::view::tests::record(3, true);
        let raw = String::from_utf8(line(&r)).unwrap();
        let cases = [
            raw.replacen("{\"metadata\":{", "{ \"metadata\":{", 1), // whitespace
            raw.replacen("\"turn\":", "\"turn\":-", 1),             // sign
            raw.replacen("\"sent_ns\":", "\"sent_ns\":0", 1),       // leading zero
            raw.replacen("\"too slow\"", "\"too\\u0020slow\"", 1),  // escape
            raw.replacen("\"turn\":0,", "", 1),                     // missing required
            raw.replacen("\"turn\":0,", "\"turn\":0,\"turn\":0,", 1), // duplicate
            raw.replacen("\"turn\":0,", "\"turn\":0,\"novel\":1,", 1), // unknown key
            raw.replacen("\"turn\":0,", "\"turn\":0.0,", 1),        // float for u32
            raw.replacen("\"streaming\":true", "\"streaming\":1", 1), // wrong type
            raw.replacen("{\"metadata\"", "{\"extra\":[],\"metadata\"", 1), // unknown top key
            format!("{raw}x"),                                      // trailing
            raw[..raw.len() - 1].to_string(),                       // truncated
        ];
        for case in &cases {
            assert_ne!(case, &raw);
            assert!(!agree(case.as_bytes()), "{case}");
        }
        // serde still reads the ones that are valid (escape, whitespace, unknown key).
        assert_eq!(parse_serde(cases[3].as_bytes()).unwrap(), r);
        assert_eq!(parse_serde(cases[0].as_bytes()).unwrap(), r);
        assert_eq!(parse_serde(cases[6].as_bytes()).unwrap(), r);
        assert!(parse_serde(cases[4].as_bytes()).is_err());
        // Trailing whitespace, nulls and an absent usage are fine on both paths.
        assert!(agree(format!("{raw} \r").as_bytes()));
        let nulls = raw.replacen("\"turn\":0,", "\"turn\":0,\"session_id\":null,\"url_index\":null,", 1);
        let nulls = nulls.replacen("\"session_id\":\"s3\",", "", 1);
        assert!(agree(nulls.as_bytes()), "{nulls}");
        assert!(agree(b"{\"metadata\":{\"session_run\":0,\"turn\":0,\"trace_line\":1,\"scheduled_ns\":0,\"sent_ns\":0,\"chunk_ns\":[],\"end_ns\":0,\"streaming\":false}}"));
    }

    proptest! {
        /// Generated records (escapes, unicode, control characters, nulls, errors): the CLI's line
        /// goes through the fast path whenever its strings need no escape, and agrees with serde.
        #[test]
        fn fast_path_is_serde(r in record()) {
            let raw = line(&r);
            let plain = |s: &str| !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
            let escapes = r.session_id.as_deref().is_some_and(|s| !plain(s))
                || r.error.as_ref().is_some_and(|e| !plain(&e.kind) || !plain(&e.message));
            let fast = agree(&raw);
            prop_assert_eq!(fast, !escapes);
            prop_assert_eq!(parse_serde(&raw).unwrap(), r);
        }

        /// Damaged lines (a byte changed, cut, or a field nulled): whatever the fast
        /// path accepts, serde accepts with the same record.
        #[test]
        fn damaged_lines_agree(r in record(), at in any::<usize>(), byte in any::<u8>(), how in 0u8..4) {
            let mut raw = line(&r);
            let at = at % raw.len();
            match how {
                0 => raw[at] = byte,
                1 => raw.truncate(at),
                2 => raw.insert(at, byte),
                _ => {
                    // Null the value after the next colon.
                    if let Some(k) = raw[at..].iter().position(|&b| b == b':') {
                        let from = at + k + 1;
                        let to = raw[from..].iter().position(|&b| b == b',' || b == b'}').map_or(raw.len(), |e| from + e);
                        raw.splice(from..to, b"null".iter().copied());
                    }
                }
            }
            agree(&raw);
        }
    }

    #[test]
    fn lines_are_read_back_and_rebased() {
        let r = crate::view::tests::record(4, true);
        let mut rec = RequestRecord::default();
        assert_eq!(read_line(&line(&r), &mut rec).ok(), Some(true));
        assert_eq!(rec, r);
        let spaced = String::from_utf8(line(&r)).unwrap().replacen("{\"metadata\":", "{ \"metadata\": ", 1);
        assert_eq!(read_line(spaced.as_bytes(), &mut rec).ok(), Some(true));
        assert_eq!(rec, r);
        assert_eq!(read_line(b" \r", &mut rec).ok(), Some(false));
        assert!(read_line(b"{\"metadata\": 1}", &mut rec).is_err());
        rec.rebase(1_000);
        assert_eq!(
            (rec.scheduled_ns, rec.sent_ns, rec.end_ns),
            (r.scheduled_ns + 1_000, r.sent_ns + 1_000, r.end_ns + 1_000)
        );
        assert_eq!(rec.chunk_ns, r.chunk_ns.iter().map(|c| c + 1_000).collect::<Vec<_>>());
        rec.rebase(u64::MAX);
        assert_eq!(rec.end_ns, u64::MAX);
    }

    #[test]
    fn record_line_snapshot() {
        let rec = RequestRecord {
            session_id: Some("s1".into()),
            turn: 1,
            trace_line: 7,
            scheduled_ns: 1_000,
            sent_ns: 2_000,
            chunk_ns: vec![5_000_000, 7_000_000],
            end_ns: 7_500_000,
            streaming: true,
            output_tokens: Some(2),
            ..Default::default()
        };
        let m = RequestMetrics::of(&rec, false);
        let line = String::from_utf8(record_line(&rec, Some(&m))).unwrap();
        assert!(line.ends_with("}\n"));
        insta::assert_snapshot!(line);
    }
}
