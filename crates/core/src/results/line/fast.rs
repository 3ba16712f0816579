//! The fast reader: the common form of a line (strings without escapes) read with
//! [`crate::json_scan`] into a reused record, `None` on anything it does not fully understand.

use super::assemble::{HTTP_KEYS, Said, UNTYPED, assemble, ms_to_ns};
use crate::json_scan::Cursor;
use crate::results::record::{RecordError, RequestRecord, ServerUsage};

/// Parses `raw` into `rec` (its previous content is overwritten, its allocations reused):
/// `Some(true)` a record, `Some(false)` a warm-up request; `None`: not understood here, `rec` is
/// unspecified and the line must go through [`parse_serde`](super::parse_serde).
pub fn parse_fast(raw: &[u8], rec: &mut RequestRecord) -> Option<bool> {
    let mut c = Cursor::new(raw);
    let said = parse_line(&mut c, rec)?;
    assemble(said, rec).ok()
}

// Field bits of the metadata object (a key given twice gives up, as serde refuses it).
const SESSION_NUM: u64 = 1;
const TURN: u64 = 1 << 1;
const TRACE_LINE: u64 = 1 << 2;
const SCHEDULED: u64 = 1 << 3;
const DISPATCHED: u64 = 1 << 4;
const SENT: u64 = 1 << 5;
const FIRST_BYTE: u64 = 1 << 6;
const CHUNKS: u64 = 1 << 7;
const END: u64 = 1 << 8;
const STREAMING: u64 = 1 << 9;
const INPUT: u64 = 1 << 10;
const OUTPUT: u64 = 1 << 11;
const MAX_TOKENS: u64 = 1 << 12;
const USAGE: u64 = 1 << 13;
const EXPECTED: u64 = 1 << 14;
const OLD_ERROR: u64 = 1 << 15;
const URL: u64 = 1 << 16;
const SESSION_ID: u64 = 1 << 17;
const REQUEST_ID: u64 = 1 << 18;
const CORRELATION_ID: u64 = 1 << 19;
const CREDIT: u64 = 1 << 20;
const START: u64 = 1 << 21;
const ACK: u64 = 1 << 22;
const REQUEST_END: u64 = 1 << 23;
const PHASE: u64 = 1 << 24;
const CANCELLED_BIT: u64 = 1 << 25;

fn parse_line(c: &mut Cursor, rec: &mut RequestRecord) -> Option<Said> {
    let mut said = Said::default();
    c.ws();
    c.eat(b'{')?;
    c.ws();
    let (mut metadata, mut metrics, mut error) = (false, false, false);
    // The metadata's strings, reused; the error is filled by the old metadata `error` or by
    // the top-level one.
    let mut strings = Strings::take(rec);
    let mut error_message: Option<String> = None;
    let mut ttft = None;
    let mut gaps_pending = false;
    loop {
        match c.key()? {
            b"metadata" if !metadata => {
                metadata = true;
                metadata_object(c, rec, &mut said, &mut strings)?;
            }
            b"metrics" if !metrics => {
                metrics = true;
                if !c.lit(b"null") {
                    metrics_object(c, rec, &mut said, &mut ttft, &mut gaps_pending)?;
                }
            }
            b"error" if !error => {
                error = true;
                if !c.lit(b"null") {
                    let mut msg = strings.error.take().map(|e| e.message).unwrap_or_default();
                    let kind = top_error(c, &mut msg)?;
                    error_message = Some(msg);
                    said.error_type = Some(kind);
                }
            }
            b"metadata" | b"metrics" | b"error" => return None,
            other => skip_member(c, other, 0)?,
        }
        if !c.more(b'}')? {
            break;
        }
    }
    if !(metadata && c.at_end()) {
        return None;
    }
    said.ttft_ms = ttft;
    // Gaps read before the metadata said it had its own chunk times are dropped.
    said.gaps_given = gaps_pending && !said.chunks_given;
    strings.put(rec);
    if let Some(message) = error_message {
        rec.error = Some(RecordError { kind: String::new(), message });
    }
    Some(said)
}

/// The record's strings, taken out to be refilled (their allocations reused).
struct Strings {
    session: Option<String>,
    request: Option<String>,
    correlation: Option<String>,
    error: Option<RecordError>,
    has: u8,
}

impl Strings {
    fn take(rec: &mut RequestRecord) -> Strings {
        Strings {
            session: rec.session_id.take(),
            request: rec.request_id.take(),
            correlation: rec.correlation_id.take(),
            error: rec.error.take(),
            has: 0,
        }
    }

    fn put(self, rec: &mut RequestRecord) {
        let has = |bit: u8| self.has & bit != 0;
        rec.session_id = self.session.filter(|_| has(1));
        rec.request_id = self.request.filter(|_| has(2));
        rec.correlation_id = self.correlation.filter(|_| has(4));
        rec.error = self.error.filter(|_| has(8));
    }
}

/// A string (or null) into a reused slot; `has` says whether one was read.
fn opt_string(c: &mut Cursor, slot: &mut Option<String>, has: &mut u8, bit: u8) -> Option<()> {
    if c.lit(b"null") {
        *has &= !bit;
        return Some(());
    }
    let s = str_of(c)?;
    let owned = slot.get_or_insert_with(String::new);
    owned.clear();
    owned.push_str(s);
    *has |= bit;
    Some(())
}

fn metadata_object(c: &mut Cursor, rec: &mut RequestRecord, said: &mut Said, strings: &mut Strings) -> Option<()> {
    let mut seen = 0u64;
    if !c.open(b'{', b'}')? {
        return Some(());
    }
    loop {
        let key = c.key()?;
        let bit = match key {
            b"session_num" | b"session_run" => SESSION_NUM,
            b"turn_index" | b"turn" => TURN,
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
            b"error" => OLD_ERROR,
            b"url_index" => URL,
            b"conversation_id" | b"session_id" => SESSION_ID,
            b"x_request_id" => REQUEST_ID,
            b"x_correlation_id" => CORRELATION_ID,
            b"credit_issued_ns" => CREDIT,
            b"request_start_ns" => START,
            b"request_ack_ns" => ACK,
            b"request_end_ns" => REQUEST_END,
            b"benchmark_phase" => PHASE,
            b"was_cancelled" => CANCELLED_BIT,
            _ => 0,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match bit {
            0 => skip_member(c, key, 1)?,
            SESSION_NUM => said.session_num = opt_u32(c)?,
            TURN => said.turn = opt_u32(c)?,
            TRACE_LINE => said.trace_line = opt_u32(c)?,
            SCHEDULED => said.scheduled = opt_u64(c)?,
            DISPATCHED => said.dispatched = opt_u64(c)?,
            SENT => said.sent = opt_u64(c)?,
            FIRST_BYTE => said.first_byte = opt_u64(c)?,
            CHUNKS => {
                if c.lit(b"null") {
                    said.chunks_given = false;
                } else {
                    rec.chunk_ns.clear();
                    said.chunks_given = true;
                    if c.open(b'[', b']')? {
                        loop {
                            rec.chunk_ns.push(c.uint()?);
                            if !c.more(b']')? {
                                break;
                            }
                        }
                    }
                }
            }
            END => said.end = opt_u64(c)?,
            STREAMING => said.streaming = opt_bool(c)?,
            INPUT => said.input = opt_u64(c)?,
            OUTPUT => said.output = opt_u64(c)?,
            MAX_TOKENS => said.max_tokens = opt_u64(c)?,
            USAGE => said.usage = if c.lit(b"null") { None } else { Some(usage_object(c)?) },
            EXPECTED => said.expected = opt_u64(c)?,
            OLD_ERROR => {
                if c.lit(b"null") {
                    strings.has &= !8;
                } else {
                    let mut e =
                        strings.error.take().unwrap_or(RecordError { kind: String::new(), message: String::new() });
                    error_object(c, &mut e)?;
                    strings.error = Some(e);
                    strings.has |= 8;
                }
            }
            URL => said.url_index = opt_u32(c)?,
            SESSION_ID => opt_string(c, &mut strings.session, &mut strings.has, 1)?,
            REQUEST_ID => opt_string(c, &mut strings.request, &mut strings.has, 2)?,
            CORRELATION_ID => opt_string(c, &mut strings.correlation, &mut strings.has, 4)?,
            CREDIT => said.credit_issued = opt_u64(c)?,
            START => said.request_start = opt_u64(c)?,
            ACK => said.request_ack = opt_u64(c)?,
            REQUEST_END => said.request_end = opt_u64(c)?,
            PHASE => said.warmup = if c.lit(b"null") { false } else { str_of(c)? == "warmup" },
            _ => said.was_cancelled = opt_bool(c)?.unwrap_or(false),
        }
        if !c.more(b'}')? {
            return Some(());
        }
    }
}

/// The metrics a record is rebuilt from; the others skipped (checked as serde checks them).
fn metrics_object(
    c: &mut Cursor,
    rec: &mut RequestRecord,
    said: &mut Said,
    ttft: &mut Option<f64>,
    gaps: &mut bool,
) -> Option<()> {
    if !c.open(b'{', b'}')? {
        return Some(());
    }
    let mut seen = 0u16;
    loop {
        let key = c.key()?;
        let bit = match key {
            b"time_to_first_token" => 1,
            b"inter_chunk_latency" => 2,
            b"input_sequence_length" => 4,
            b"output_sequence_length" => 8,
            b"usage_prompt_tokens" => 16,
            b"usage_completion_tokens" => 32,
            b"usage_prompt_cache_read_tokens" => 64,
            // The `http_req_*` of HTTP_KEYS: bits 7 to 15.
            _ => HTTP_KEYS.iter().position(|k| k.as_bytes() == key).map_or(0, |i| 128 << i),
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        if bit == 0 {
            skip_member(c, key, 1)?;
        } else if c.lit(b"null") {
            if bit == 2 {
                *gaps = false;
            }
        } else {
            // `{"value": V, "unit": U}` (AIPerf's) or a bare `V`.
            let valued = c.peek()? == b'{';
            if valued {
                c.open(b'{', b'}')?.then_some(())?;
                let mut have_value = false;
                loop {
                    let inner = c.key()?;
                    if inner == b"value" {
                        if have_value {
                            return None;
                        }
                        have_value = true;
                        metric_value(c, bit, rec, said, ttft, gaps)?;
                    } else if inner == b"unit" {
                        // serde holds the whole object while it tries its forms: the unit is
                        // read as a string, not skipped.
                        str_of(c)?;
                    } else {
                        return None;
                    }
                    if !c.more(b'}')? {
                        break;
                    }
                }
                if !have_value {
                    return None;
                }
            } else {
                metric_value(c, bit, rec, said, ttft, gaps)?;
            }
        }
        if !c.more(b'}')? {
            return Some(());
        }
    }
}

fn metric_value(
    c: &mut Cursor,
    bit: u16,
    rec: &mut RequestRecord,
    said: &mut Said,
    ttft: &mut Option<f64>,
    gaps: &mut bool,
) -> Option<()> {
    match bit {
        1 => *ttft = Some(c.float()?),
        2 => {
            // The metadata's own chunk times, when it has them, win: the list is only checked.
            let keep = !said.chunks_given;
            if keep {
                rec.chunk_ns.clear();
            }
            *gaps = true;
            if c.open(b'[', b']')? {
                loop {
                    let ms = c.float()?;
                    if keep {
                        rec.chunk_ns.push(ms_to_ns(ms)?);
                    }
                    if !c.more(b']')? {
                        break;
                    }
                }
            }
        }
        _ => {
            let n = Some(c.float()?);
            match bit {
                4 => said.isl = n,
                8 => said.osl = n,
                16 => said.usage_prompt = n,
                32 => said.usage_completion = n,
                64 => said.usage_cached = n,
                _ => said.http[bit.trailing_zeros() as usize - 7] = n,
            }
        }
    }
    Some(())
}

/// AIPerf's top-level `error`: its `type` ([`UNTYPED`] when it has none) and its message in
/// `msg`.
fn top_error(c: &mut Cursor, msg: &mut String) -> Option<String> {
    let mut kind = String::new();
    let (mut has_kind, mut has_message, mut has_type_text) = (false, false, false);
    if !c.open(b'{', b'}')? {
        return None;
    }
    loop {
        match c.key()? {
            b"type" => {
                if has_kind {
                    return None;
                }
                has_kind = true;
                if !c.lit(b"null") {
                    kind.push_str(str_of(c)?);
                    has_type_text = true;
                }
            }
            b"message" => {
                if has_message {
                    return None;
                }
                has_message = true;
                msg.clear();
                msg.push_str(str_of(c)?);
            }
            other => skip_member(c, other, 2)?,
        }
        if !c.more(b'}')? {
            break;
        }
    }
    if !has_type_text {
        kind.push_str(UNTYPED);
    }
    has_message.then_some(kind)
}

fn usage_object(c: &mut Cursor) -> Option<ServerUsage> {
    let mut u = ServerUsage::default();
    if !c.open(b'{', b'}')? {
        return Some(u);
    }
    let mut seen = 0u8;
    loop {
        let (bit, slot) = match c.key()? {
            b"prompt_tokens" => (1, &mut u.prompt_tokens),
            b"completion_tokens" => (2, &mut u.completion_tokens),
            b"cached_tokens" => (4, &mut u.cached_tokens),
            b"first_chunk_tokens" => (8, &mut u.first_chunk_tokens),
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        *slot = opt_u64(c)?;
        if !c.more(b'}')? {
            return Some(u);
        }
    }
}

fn error_object(c: &mut Cursor, e: &mut RecordError) -> Option<()> {
    let mut seen = 0u8;
    if !c.open(b'{', b'}')? {
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
        let s = str_of(c)?;
        slot.clear();
        slot.push_str(s);
        if !c.more(b'}')? {
            break;
        }
    }
    (seen == 3).then_some(())
}

/// The value of a member this reader does not use, skipped; its key must be UTF-8, as serde
/// reads every key.
fn skip_member(c: &mut Cursor, key: &[u8], depth: usize) -> Option<()> {
    std::str::from_utf8(key).ok()?;
    c.skip_value(depth)
}

/// A string without escapes, valid UTF-8.
fn str_of<'a>(c: &mut Cursor<'a>) -> Option<&'a str> {
    std::str::from_utf8(c.plain_str()?).ok()
}

fn opt_u32(c: &mut Cursor) -> Option<Option<u32>> {
    match opt_u64(c)? {
        None => Some(None),
        Some(v) => u32::try_from(v).ok().map(Some),
    }
}

fn opt_u64(c: &mut Cursor) -> Option<Option<u64>> {
    if c.lit(b"null") { Some(None) } else { c.uint().map(Some) }
}

fn opt_bool(c: &mut Cursor) -> Option<Option<bool>> {
    if c.lit(b"null") {
        Some(None)
    } else if c.lit(b"true") {
        Some(Some(true))
    } else if c.lit(b"false") {
        Some(Some(false))
    } else {
        None
    }
}
