//! Reading a trace from any `BufRead` through the line parser, never holding more than
//! [`ParseOptions::max_line_bytes`] of one line.

use std::io::BufRead;

use super::parser::{ParseOptions, ParseOutcome, TraceParser};
use crate::trace::error::TraceError;
use crate::trace::model::Row;

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
                    line: parser.lines() + 1,
                    limit: parser.opts.max_line_bytes,
                    cr_only: buf.contains(&b'\r'),
                });
            }
            Ok(LineRead::End) => break,
            Err(error) => {
                return Err(TraceError::Read { file: parser.opts.source.clone(), line: parser.lines(), error });
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
    use super::super::parser::parse_str;
    use super::*;
    use crate::trace::model::Trace;

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

    #[test]
    fn reader_and_str_agree_and_reject_bad_utf8() {
        let text = "{\"input_length\": 1, \"hash_ids\": [1]}\n{\"input_length\": 2}";
        let a = parse_str(text, ParseOptions::new("t.jsonl")).unwrap().trace;
        let b = read(text.as_bytes(), ParseOptions::new("t.jsonl")).unwrap().trace;
        assert_eq!(a, b);
        let bad: &[u8] = b"{\"input_length\": 1}\n{\"text_input\": \"\xff\"}\n";
        match read(bad, ParseOptions::new("t.jsonl")) {
            Err(TraceError::InvalidRows { errors, .. }) => {
                assert_eq!(errors[0].to_string(), "t.jsonl:2: not valid UTF-8 (byte 17)")
            }
            other => panic!("{other:?}"),
        }
        // Plain rows read from their bytes: a bad byte in a session id or outside any string is
        // refused as above; the good rows around it are read as their text is.
        for (bad, byte) in [
            (&b"{\"input_length\": 1, \"session_id\": \"a\xff\"}"[..], 37),
            (&b"{\"input_length\": 1, \xff\"hash_ids\": [2]}"[..], 21),
            (&b"{\"input_length\": 1, \"hash_ids\": [2]}\xc3"[..], 37),
        ] {
            let text =
                [&b"{\"input_length\": 1}\n"[..], bad, b"\r\n{\"input_length\": 3, \"hash_ids\": [4]}\n"].concat();
            let skipping = ParseOptions::new("t.jsonl").skip_invalid(true);
            let read_back = read(&text[..], skipping.clone()).unwrap();
            assert_eq!(read_back.skipped[0].to_string(), format!("t.jsonl:2: not valid UTF-8 (byte {byte})"));
            let good = "{\"input_length\": 1}\n\n{\"input_length\": 3, \"hash_ids\": [4]}\n";
            let want = parse_str(good, skipping).unwrap().trace;
            assert_eq!(read_back.trace, want);
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
}
