//! Streaming ingestion of a trace file's bytes, chunk by chunk as the browser delivers them:
//! gzip detection and decompression, line splitting, and the core's validating parser. Lines are
//! the same as the CLI's reader sees them, so line numbers in errors match.

use std::io::Write;
use std::sync::Arc;

use aiperf_core::trace::{ParseOptions, ParseOutcome, TraceError, TraceParser};
use flate2::write::MultiGzDecoder;

/// Splits bytes into `\n`-terminated lines and parses each one. A line longer than the parse
/// options' `max_line_bytes` stops the reading with the CLI's error (a newline-less file, a gzip
/// bomb of zeros), so memory stays bounded.
struct Lines {
    parser: TraceParser,
    carry: Vec<u8>,
    source: Arc<str>,
    max: usize,
    /// Lines handed to the parser.
    lines: u64,
    /// The line that was too long, and whether it held a carriage return (CR-only endings).
    too_long: Option<(u64, bool)>,
}

impl Lines {
    fn new(opts: ParseOptions) -> Lines {
        let (source, max) = (opts.source.clone(), opts.max_line_bytes);
        Lines { parser: TraceParser::new(opts), carry: Vec::new(), source, max, lines: 0, too_long: None }
    }

    fn stop(&mut self, rest: &[u8]) {
        let cr = self.carry.contains(&b'\r') || rest.contains(&b'\r');
        self.too_long = Some((self.lines + 1, cr));
        self.carry = Vec::new();
    }

    fn push(&mut self, mut buf: &[u8]) {
        if self.too_long.is_some() {
            return;
        }
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            if self.carry.len().saturating_add(nl) > self.max {
                return self.stop(&buf[..nl]);
            }
            self.lines += 1;
            if self.carry.is_empty() {
                self.parser.push_line_bytes(&buf[..nl]);
            } else {
                self.carry.extend_from_slice(&buf[..nl]);
                self.parser.push_line_bytes(&self.carry);
                self.carry.clear();
            }
            buf = &buf[nl + 1..];
        }
        if self.carry.len().saturating_add(buf.len()) > self.max {
            return self.stop(buf);
        }
        self.carry.extend_from_slice(buf);
    }

    fn finish(mut self) -> Result<ParseOutcome, TraceError> {
        if let Some((line, cr_only)) = self.too_long {
            return Err(TraceError::LineTooLong { file: self.source, line, limit: self.max, cr_only });
        }
        if !self.carry.is_empty() {
            let last = std::mem::take(&mut self.carry);
            self.parser.push_line_bytes(&last);
        }
        self.parser.finish()
    }
}

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.push(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Stage {
    /// Fewer than two bytes seen: plain or gzip is not known yet.
    Sniffing(Lines, Vec<u8>),
    Plain(Lines),
    Gzip(Box<MultiGzDecoder<Lines>>),
}

/// Feed it the file's bytes in any chunking, then [`Ingest::finish`].
pub struct Ingest {
    stage: Option<Stage>,
    bytes: u64,
    /// A compressed file's line that was too long (the decoder is not finished then).
    stopped: Option<TraceError>,
}

/// Why a file could not be read at all (as opposed to invalid rows).
#[derive(Debug, PartialEq, Eq)]
pub struct IngestError(pub String);

impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Ingest {
    pub fn new(opts: ParseOptions) -> Self {
        let lines = Lines::new(opts);
        Ingest { stage: Some(Stage::Sniffing(lines, Vec::new())), bytes: 0, stopped: None }
    }

    /// Compressed (file) bytes consumed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Rows accepted and rows rejected so far.
    pub fn counts(&self) -> (usize, u64) {
        let p = match &self.stage {
            Some(Stage::Sniffing(l, _)) | Some(Stage::Plain(l)) => &l.parser,
            Some(Stage::Gzip(d)) => &d.get_ref().parser,
            None => return (0, 0),
        };
        (p.rows(), p.error_count())
    }

    /// Consumes the next chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), IngestError> {
        self.bytes += chunk.len() as u64;
        let stage = self.stage.take().ok_or_else(|| IngestError("the file was already finished".into()))?;
        self.stage = Some(match stage {
            Stage::Sniffing(lines, mut head) => {
                head.extend_from_slice(chunk);
                if head.len() < 2 { Stage::Sniffing(lines, head) } else { Self::start(lines, &head)? }
            }
            Stage::Plain(mut lines) => {
                lines.push(chunk);
                Stage::Plain(lines)
            }
            // Past a line that is too long nothing more is read (not even decompressed).
            Stage::Gzip(d) if d.get_ref().too_long.is_some() => Stage::Gzip(d),
            Stage::Gzip(mut d) => {
                d.write_all(chunk).map_err(gzip_error)?;
                Stage::Gzip(d)
            }
        });
        if let (None, Some(Stage::Gzip(d))) = (&self.stopped, &self.stage)
            && let Some((line, cr_only)) = d.get_ref().too_long
        {
            let l = d.get_ref();
            self.stopped = Some(TraceError::LineTooLong { file: l.source.clone(), line, limit: l.max, cr_only });
        }
        Ok(())
    }

    fn start(mut lines: Lines, head: &[u8]) -> Result<Stage, IngestError> {
        if head.starts_with(&[0x1f, 0x8b]) {
            let mut d = Box::new(MultiGzDecoder::new(lines));
            d.write_all(head).map_err(gzip_error)?;
            Ok(Stage::Gzip(d))
        } else {
            lines.push(head);
            Ok(Stage::Plain(lines))
        }
    }

    /// The parsed trace (invalid rows listed when `skip_invalid`), or why the file is unreadable.
    pub fn finish(mut self) -> Result<Result<ParseOutcome, TraceError>, IngestError> {
        if let Some(e) = self.stopped.take() {
            return Ok(Err(e));
        }
        let lines = match self.stage.take() {
            Some(Stage::Sniffing(mut lines, head)) => {
                lines.push(&head);
                lines
            }
            Some(Stage::Plain(lines)) => lines,
            Some(Stage::Gzip(d)) => d.finish().map_err(gzip_error)?,
            None => return Err(IngestError("the file was already finished".into())),
        };
        Ok(lines.finish())
    }
}

fn gzip_error(e: std::io::Error) -> IngestError {
    IngestError(format!("the file starts like gzip but cannot be decompressed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::trace::{parse_str, write_trace};

    const TEXT: &str = "{\"input_length\":10,\"hash_ids\":[1]}\n\n{\"input_length\":\"x\"}\r\n{\"input_length\":20,\"hash_ids\":[1,2]}";

    fn ingest(bytes: &[u8], chunk: usize) -> Result<Result<ParseOutcome, TraceError>, IngestError> {
        let mut ing = Ingest::new(ParseOptions::new("t.jsonl").skip_invalid(true));
        for c in bytes.chunks(chunk.max(1)) {
            ing.push(c)?;
        }
        ing.finish()
    }

    #[test]
    fn any_chunking_gives_the_core_parse() {
        let want = parse_str(TEXT, ParseOptions::new("t.jsonl").skip_invalid(true)).unwrap();
        for chunk in [1, 2, 3, 7, 1000] {
            let got = ingest(TEXT.as_bytes(), chunk).unwrap().unwrap();
            assert_eq!(write_trace(&got.trace), write_trace(&want.trace));
            assert_eq!((got.lines, got.skipped_total), (want.lines, 1));
            assert_eq!(got.skipped[0].line, 3);
        }
    }

    #[test]
    fn gzip_is_detected_and_decompressed() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(TEXT.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        for chunk in [1, 5, 100_000] {
            let got = ingest(&gz, chunk).unwrap().unwrap();
            assert_eq!(got.trace.len(), 2);
            assert_eq!(got.skipped[0].line, 3);
        }
        let broken = [&gz[..10], b"garbage garbage garbage"].concat();
        assert!(ingest(&broken, 4).unwrap_err().0.contains("gzip"));
    }

    #[test]
    fn a_line_past_the_limit_stops_the_reading_in_bounded_memory() {
        let opts = || ParseOptions::new("t.jsonl").skip_invalid(true).max_line_bytes(64);
        // Plain: a newline-less tail of a megabyte.
        let mut ing = Ingest::new(opts());
        ing.push(b"{\"input_length\":10,\"hash_ids\":[1]}\n").unwrap();
        for _ in 0..1024 {
            ing.push(&[b'x'; 1024]).unwrap();
        }
        let e = ing.finish().unwrap().unwrap_err();
        assert!(e.to_string().starts_with("t.jsonl:2: the line is longer than 64 bytes"), "{e}");
        // A gzip bomb of zeros: reading stops without growing.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&vec![0u8; 8 << 20]).unwrap();
        let gz = gz.finish().unwrap();
        let mut ing = Ingest::new(opts());
        for c in gz.chunks(4096) {
            ing.push(c).unwrap();
        }
        let e = ing.finish().unwrap().unwrap_err();
        assert!(matches!(e, TraceError::LineTooLong { line: 1, limit: 64, .. }), "{e}");
        // CR-only line endings are named.
        let mut ing = Ingest::new(opts());
        ing.push("{\"input_length\":1}\r".repeat(10).as_bytes()).unwrap();
        assert!(ing.finish().unwrap().unwrap_err().to_string().contains("CR-only"));
    }

    #[test]
    fn tiny_and_empty_files() {
        assert_eq!(ingest(b"", 1).unwrap().unwrap().trace.len(), 0);
        assert_eq!(ingest(b"{", 1).unwrap().unwrap().skipped_total, 1);
    }
}
