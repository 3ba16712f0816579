//! Streaming ingestion of a trace file's bytes, chunk by chunk as the browser delivers them:
//! gzip detection and decompression, format detection (the core's [`detect`] on the first
//! [`DETECT_BYTES`] of the content), line splitting, and the core's validating parser (Mooncake)
//! or [`Converter`] (every other format). Lines are the same as the CLI's reader sees them, so
//! line numbers in errors match, and a converted trace is the one `aiperf-cli convert-trace`
//! writes with default settings. A WEKA JSON document is held whole while it is read, up to
//! [`MAX_DOCUMENT_BYTES`].

use std::io::Write;
use std::sync::Arc;

use aiperf_core::formats::{ConvertOptions, Converted, Converter, Detection, FileOptions, Format, FormatError, detect};
use aiperf_core::trace::{ParseOptions, ParseOutcome, TraceError, TraceParser};
use flate2::write::MultiGzDecoder;

/// The format is told from this many bytes of the (decompressed) content.
pub const DETECT_BYTES: usize = 64 * 1024;

/// A JSON document (WEKA) is held whole while read; larger ones are refused with an error.
pub const MAX_DOCUMENT_BYTES: u64 = 512 << 20;

/// Where the lines go.
enum Sink {
    /// The format is not known yet: the first bytes are held.
    Detecting(Vec<u8>),
    Mooncake(TraceParser),
    /// The converter and the first error it raised (reading stops there).
    Convert(Box<Converter>, Detection, Option<String>),
}

/// A file read: a Mooncake trace (with its invalid rows) or a converted one.
#[derive(Debug)]
pub enum Read {
    Mooncake(ParseOutcome),
    Converted { detection: Detection, converted: Box<Converted> },
}

/// Why the content could not be read.
#[derive(Debug)]
pub enum ReadError {
    Trace(TraceError),
    Convert(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Trace(e) => e.fmt(f),
            ReadError::Convert(e) => f.write_str(e),
        }
    }
}

/// Splits bytes into `\n`-terminated lines and parses each one. A line longer than the parse
/// options' `max_line_bytes` stops the reading with the CLI's error (a newline-less file, a gzip
/// bomb of zeros), so memory stays bounded.
struct Lines {
    sink: Sink,
    opts: ParseOptions,
    /// The format named by the user (`None`: detected from the content).
    format: Option<Format>,
    /// How a non-Mooncake format is converted.
    convert: ConvertOptions,
    /// Where this file goes in a merged trace (offset, conversation prefix); `None`: alone.
    place: Option<FileOptions>,
    /// Bytes of content handed to a converter (bounded for JSON documents).
    content: u64,
    carry: Vec<u8>,
    source: Arc<str>,
    max: usize,
    /// Lines handed to the parser.
    lines: u64,
    /// The line that was too long, and whether it held a carriage return (CR-only endings).
    too_long: Option<(u64, bool)>,
}

impl Lines {
    fn new(opts: ParseOptions, format: Option<Format>) -> Lines {
        let (source, max) = (opts.source.clone(), opts.max_line_bytes);
        let sink = Sink::Detecting(Vec::new());
        let convert = ConvertOptions::default();
        Lines {
            sink,
            opts,
            format,
            convert,
            place: None,
            content: 0,
            carry: Vec::new(),
            source,
            max,
            lines: 0,
            too_long: None,
        }
    }

    /// Chooses the sink from the first bytes (or the format the user named), then reads them.
    fn decide(&mut self) {
        let Sink::Detecting(head) = &mut self.sink else { return };
        let head = std::mem::take(head);
        let detection = match self.format {
            Some(format) => Detection { format, evidence: "chosen by the user".into() },
            // Like the CLI: content no detector recognises goes to Mooncake's parser, whose row
            // errors say what is wrong.
            None => detect(&head)
                .unwrap_or(Detection { format: Format::Mooncake, evidence: "no other format recognised".into() }),
        };
        self.sink = if detection.format == Format::Mooncake {
            Sink::Mooncake(TraceParser::new(self.opts.clone()))
        } else {
            let file = match self.place.take() {
                Some(place) => FileOptions { format: detection.format, ..place },
                None => FileOptions {
                    source: self.source.clone(),
                    format: detection.format,
                    start_offset_ms: 0,
                    conversation_prefix: String::new(),
                },
            };
            match Converter::new(self.convert.clone()).and_then(|mut c| c.start_file(file).map(|()| c)) {
                Ok(c) => Sink::Convert(Box::new(c), detection, None),
                Err(e) => {
                    let c = Converter::new(ConvertOptions::default()).ok();
                    match c {
                        Some(c) => Sink::Convert(Box::new(c), detection, Some(e.to_string())),
                        None => Sink::Mooncake(TraceParser::new(self.opts.clone())),
                    }
                }
            }
        };
        self.split(&head);
    }

    fn line(&mut self, line: &[u8]) {
        match &mut self.sink {
            Sink::Mooncake(p) => p.push_line_bytes(line),
            Sink::Convert(c, d, err) => {
                if err.is_some() {
                    return;
                }
                self.content += line.len() as u64 + 1;
                if d.format == Format::Weka && self.content > MAX_DOCUMENT_BYTES {
                    *err = Some(format!(
                        "{}: a JSON document larger than {} MiB is not read in the browser (convert it with aiperf-cli convert-trace)",
                        self.source,
                        MAX_DOCUMENT_BYTES >> 20
                    ));
                    return;
                }
                let result = match std::str::from_utf8(line) {
                    Ok(text) => c.push_line(text).map_err(|e| e.to_string()),
                    Err(_) => Err(format!("{}:{}: not valid UTF-8", self.source, self.lines)),
                };
                if let Err(e) = result {
                    *err = Some(e);
                }
            }
            Sink::Detecting(_) => {}
        }
    }

    fn push(&mut self, buf: &[u8]) {
        if let Sink::Detecting(head) = &mut self.sink {
            head.extend_from_slice(buf);
            if head.len() >= DETECT_BYTES {
                self.decide();
            }
            return;
        }
        self.split(buf);
    }

    fn rows(&self) -> (usize, u64) {
        match &self.sink {
            Sink::Mooncake(p) => (p.rows(), p.error_count()),
            Sink::Convert(c, _, _) => (c.rows(), 0),
            Sink::Detecting(_) => (0, 0),
        }
    }

    fn stop(&mut self, rest: &[u8]) {
        let cr = self.carry.contains(&b'\r') || rest.contains(&b'\r');
        self.too_long = Some((self.lines + 1, cr));
        self.carry = Vec::new();
    }

    fn split(&mut self, mut buf: &[u8]) {
        if self.too_long.is_some() {
            return;
        }
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            if self.carry.len().saturating_add(nl) > self.max {
                return self.stop(&buf[..nl]);
            }
            self.lines += 1;
            if self.carry.is_empty() {
                self.line(&buf[..nl]);
            } else {
                let mut carry = std::mem::take(&mut self.carry);
                carry.extend_from_slice(&buf[..nl]);
                self.line(&carry);
                carry.clear();
                self.carry = carry;
            }
            buf = &buf[nl + 1..];
        }
        if self.carry.len().saturating_add(buf.len()) > self.max {
            return self.stop(buf);
        }
        self.carry.extend_from_slice(buf);
    }

    /// Reads what is left of the file (a last line without a newline).
    fn drain(&mut self) -> Result<(), ReadError> {
        self.decide();
        if let Some((line, cr_only)) = self.too_long {
            let e = TraceError::LineTooLong { file: self.source.clone(), line, limit: self.max, cr_only };
            return Err(ReadError::Trace(e));
        }
        if !self.carry.is_empty() {
            let last = std::mem::take(&mut self.carry);
            self.lines += 1;
            self.line(&last);
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Read, ReadError> {
        self.drain()?;
        match self.sink {
            Sink::Mooncake(p) => p.finish().map(Read::Mooncake).map_err(ReadError::Trace),
            Sink::Convert(_, _, Some(e)) => Err(ReadError::Convert(e)),
            Sink::Convert(mut c, detection, None) => {
                let converted = c.end_file().and_then(|()| c.finish()).map_err(|e: FormatError| e.to_string());
                let converted = converted.map_err(ReadError::Convert)?;
                Ok(Read::Converted { detection, converted: Box::new(converted) })
            }
            Sink::Detecting(_) => Err(ReadError::Convert("the format was not decided".into())),
        }
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
    /// `format`: the format the user named; `None` detects it from the content.
    pub fn new(opts: ParseOptions, format: Option<Format>) -> Self {
        let lines = Lines::new(opts, format);
        Ingest { stage: Some(Stage::Sniffing(lines, Vec::new())), bytes: 0, stopped: None }
    }

    /// Converts a non-Mooncake format with these options (default: `convert-trace`'s defaults).
    pub fn convert_options(mut self, convert: ConvertOptions) -> Self {
        match &mut self.stage {
            Some(Stage::Sniffing(l, _)) => l.convert = convert,
            _ => debug_assert!(false, "convert options set after reading began"),
        }
        self
    }

    /// Places this (first) file in a merged trace: its offset and conversation prefix.
    pub fn first_file(mut self, place: FileOptions) -> Self {
        match &mut self.stage {
            Some(Stage::Sniffing(l, _)) => l.place = Some(place),
            _ => debug_assert!(false, "the file's place set after reading began"),
        }
        self
    }

    /// Compressed (file) bytes consumed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Rows accepted and rows rejected so far.
    pub fn counts(&self) -> (usize, u64) {
        match &self.stage {
            Some(Stage::Sniffing(l, _)) | Some(Stage::Plain(l)) => l.rows(),
            Some(Stage::Gzip(d)) => d.get_ref().rows(),
            None => (0, 0),
        }
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
    pub fn finish(self) -> Result<Result<Read, ReadError>, IngestError> {
        Ok(self.into_lines()?.and_then(Lines::finish))
    }

    /// Ends this file and goes on with the next one of the same conversion: several files of one
    /// (non-Mooncake) format merged into one trace, as `convert-trace A B …` does.
    pub fn next_file(self, opts: ParseOptions, file: FileOptions) -> Result<Result<Ingest, ReadError>, IngestError> {
        let bytes = self.bytes;
        let mut lines = match self.into_lines()? {
            Ok(l) => l,
            Err(e) => return Ok(Err(e)),
        };
        if let Err(e) = lines.drain() {
            return Ok(Err(e));
        }
        let (c, detection) = match lines.sink {
            Sink::Convert(_, _, Some(e)) => return Ok(Err(ReadError::Convert(e))),
            Sink::Convert(c, d, None) => (c, d),
            _ => {
                return Ok(Err(ReadError::Convert(format!(
                    "{}: only files of a production format are merged (a Mooncake trace is one file)",
                    lines.source
                ))));
            }
        };
        let mut c = c;
        let format = file.format;
        if let Err(e) = c.start_file(file) {
            return Ok(Err(ReadError::Convert(e.to_string())));
        }
        let mut next = Lines::new(opts, Some(format));
        next.convert = lines.convert;
        next.sink = Sink::Convert(c, detection, None);
        Ok(Ok(Ingest { stage: Some(Stage::Sniffing(next, Vec::new())), bytes, stopped: None }))
    }

    /// The line reader once the bytes are all in.
    fn into_lines(mut self) -> Result<Result<Lines, ReadError>, IngestError> {
        if let Some(e) = self.stopped.take() {
            return Ok(Err(ReadError::Trace(e)));
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
        Ok(Ok(lines))
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

    fn ingest(bytes: &[u8], chunk: usize) -> Result<Result<ParseOutcome, ReadError>, IngestError> {
        let mut ing = Ingest::new(ParseOptions::new("t.jsonl").skip_invalid(true), None);
        for c in bytes.chunks(chunk.max(1)) {
            ing.push(c)?;
        }
        Ok(ing.finish()?.map(|r| match r {
            Read::Mooncake(o) => o,
            Read::Converted { .. } => panic!("a Mooncake file was converted"),
        }))
    }

    fn fixture(rel: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/fixtures/traces/formats/{rel}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// What `aiperf-cli convert-trace FILE` writes: the core converter fed the file's lines.
    fn cli_convert(bytes: &[u8], format: Format, source: &str) -> String {
        let mut c = Converter::new(ConvertOptions::default()).unwrap();
        let file =
            FileOptions { source: source.into(), format, start_offset_ms: 0, conversation_prefix: String::new() };
        c.start_file(file).unwrap();
        let text = std::str::from_utf8(bytes).unwrap();
        for line in text.split_inclusive('\n') {
            c.push_line(line.strip_suffix('\n').unwrap_or(line)).unwrap();
        }
        c.end_file().unwrap();
        write_trace(&c.finish().unwrap().trace)
    }

    #[test]
    fn every_format_is_detected_and_converted_as_the_cli_does_in_any_chunking() {
        for (rel, format) in [
            ("azure-llm-2023/AzureLLMInferenceTrace_code.csv.head2000", Format::Azure),
            ("constructed/azure2024_constructed.csv", Format::Azure),
            ("burstgpt/BurstGPT_3.csv.head400", Format::BurstGpt),
            ("servegen-offline/trace_a.jsonl.head180", Format::ServeGen),
            ("constructed/bailian_constructed.jsonl", Format::Bailian),
            ("weka-kv-cache-tester/trace_0291.json", Format::Weka),
        ] {
            let bytes = fixture(rel);
            let want = cli_convert(&bytes, format, "f");
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&bytes).unwrap();
            let gz = gz.finish().unwrap();
            for (input, chunk) in [(&bytes, 1000), (&bytes, 1 << 20), (&gz, 777)] {
                let mut ing = Ingest::new(ParseOptions::new("f").skip_invalid(true), None);
                for c in input.chunks(chunk) {
                    ing.push(c).unwrap();
                }
                let Read::Converted { detection, converted } = ing.finish().unwrap().unwrap() else {
                    panic!("{rel} read as Mooncake");
                };
                assert_eq!(detection.format, format, "{rel}");
                assert_eq!(write_trace(&converted.trace), want, "{rel}");
                assert!(!converted.notes.is_empty(), "{rel}");
            }
        }
    }

    #[test]
    fn several_weka_files_merge_as_convert_trace_does() {
        let (a, b) = (fixture("weka-kv-cache-tester/trace_0291.json"), fixture("weka-kv-cache-tester/trace_0504.json"));
        let file = |source: &str, k: u64| FileOptions {
            source: source.into(),
            format: Format::Weka,
            start_offset_ms: k * 2000,
            conversation_prefix: format!("{k}:"),
        };
        let mut c = Converter::new(ConvertOptions::default()).unwrap();
        for (k, (bytes, name)) in [(&a, "a"), (&b, "b")].into_iter().enumerate() {
            c.start_file(file(name, k as u64)).unwrap();
            for line in std::str::from_utf8(bytes).unwrap().split_inclusive('\n') {
                c.push_line(line.strip_suffix('\n').unwrap_or(line)).unwrap();
            }
            c.end_file().unwrap();
        }
        let want = write_trace(&c.finish().unwrap().trace);
        let mut ing = Ingest::new(ParseOptions::new("a"), Some(Format::Weka));
        ing = ing.first_file(file("a", 0));
        for chunk in a.chunks(5000) {
            ing.push(chunk).unwrap();
        }
        let mut ing = ing.next_file(ParseOptions::new("b"), file("b", 1)).unwrap().unwrap();
        for chunk in b.chunks(333) {
            ing.push(chunk).unwrap();
        }
        let Read::Converted { converted, .. } = ing.finish().unwrap().unwrap() else { panic!("not converted") };
        assert_eq!(write_trace(&converted.trace), want);
    }

    #[test]
    fn a_named_format_overrides_detection_and_conversion_errors_name_the_line() {
        let mut ing = Ingest::new(ParseOptions::new("f.csv"), Some(Format::BurstGpt));
        ing.push(&fixture("constructed/azure2024_constructed.csv")).unwrap();
        let e = ing.finish().unwrap().unwrap_err().to_string();
        assert!(e.contains("f.csv"), "{e}");
        let mut bytes = fixture("constructed/azure2024_constructed.csv");
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        bytes.extend_from_slice(b"not,a,row\n");
        let mut ing = Ingest::new(ParseOptions::new("f.csv"), None);
        ing.push(&bytes).unwrap();
        let e = ing.finish().unwrap().unwrap_err().to_string();
        assert!(e.contains(&format!("f.csv:{}", lines + 1)), "{e}");
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
        let mut ing = Ingest::new(opts(), None);
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
        let mut ing = Ingest::new(opts(), None);
        for c in gz.chunks(4096) {
            ing.push(c).unwrap();
        }
        let e = ing.finish().unwrap().unwrap_err();
        assert!(matches!(e, ReadError::Trace(TraceError::LineTooLong { line: 1, limit: 64, .. })), "{e}");
        // CR-only line endings are named.
        let mut ing = Ingest::new(opts(), None);
        ing.push("{\"input_length\":1}\r".repeat(10).as_bytes()).unwrap();
        assert!(ing.finish().unwrap().unwrap_err().to_string().contains("CR-only"));
    }

    #[test]
    fn tiny_and_empty_files() {
        assert_eq!(ingest(b"", 1).unwrap().unwrap().trace.len(), 0);
        assert_eq!(ingest(b"{", 1).unwrap().unwrap().skipped_total, 1);
    }
}
