//! `--trace-format`: reading a trace in any format the core knows (Mooncake, Bailian, ServeGen,
//! Azure, BurstGPT, WEKA, Baseten Parquet), detected by content or named, into the core's trace model.
//!
//! Every command that reads a trace flattens [`TraceFormatArgs`] and calls [`read_trace_any`];
//! `convert-trace` calls [`convert_files`] to merge several files. The detected format is printed
//! on stderr (`detected format: X (evidence)`), with what the conversion invented or dropped.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aiperf_core::formats::{
    ConvertOptions, Converted, Converter, FileOptions, Format, ParsedDocument, ParsedLine, detect, parse_line,
};
use aiperf_core::trace::{LineRead, Trace, TraceError, read_line_capped};
use anyhow::{Context, Result, bail};

use crate::io::document::{parse_in_order, parse_in_parts, read_and_parse};
use crate::io::input::{BLOCK_BYTES, open, parse_blocks_in_order, parse_workers, read_trace_blocks};

/// The `--trace-format` flag.
#[derive(Clone, Debug, clap::Args)]
pub struct TraceFormatArgs {
    /// Input format: auto (detect by content), mooncake, bailian, servegen, azure, burstgpt, weka, baseten.
    #[arg(long, default_value = "auto", value_parser = parse_choice)]
    pub trace_format: FormatChoice,
}

/// A named format, or detection by content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatChoice {
    Auto,
    Is(Format),
}

fn parse_choice(s: &str) -> Result<FormatChoice, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(FormatChoice::Auto);
    }
    Format::from_name(s).map(FormatChoice::Is).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        format!("unknown trace format '{s}' (accepted: auto, {})", names.join(", "))
    })
}

/// A trace read from one file, in whatever format it was.
#[derive(Debug)]
pub struct Loaded {
    pub trace: Trace,
    /// What was read.
    pub format: Format,
}

/// The format of a file: the named one, or detected from its first bytes (printed on stderr).
pub fn format_of(path: &Path, choice: FormatChoice) -> Result<Format> {
    if let FormatChoice::Is(f) = choice {
        return Ok(f);
    }
    let head = crate::io::input::head(path, 1 << 20)?;
    match detect(&head) {
        Ok(d) => {
            say!("detected format: {} ({}) in {}", d.format, d.evidence, path.display());
            Ok(d.format)
        }
        Err(e @ aiperf_core::formats::FormatError::NotATrace { .. }) => {
            Err(anyhow::Error::new(e).context(format!("{}", path.display())))
        }
        Err(e) => {
            // The Mooncake parser's row errors say more than "unknown format" for a broken trace.
            say!("warning: {}: {e}; reading it as Mooncake (--trace-format names the format)", path.display());
            Ok(Format::Mooncake)
        }
    }
}

/// Reads one trace file: Mooncake with the validating parser, any other format converted with
/// default options (ServeGen arrivals all at 0; see `convert-trace` for the choices).
/// Lines longer than `max_line_bytes` stop the reading with a `file:line` error.
pub fn read_trace_any(
    path: &Path,
    flags: &TraceFormatArgs,
    skip_invalid: bool,
    max_line_bytes: usize,
) -> Result<Loaded> {
    read_trace_with(path, flags, skip_invalid, max_line_bytes, &ConvertOptions::default())
}

/// [`read_trace_any`] converting with `opts`.
pub fn read_trace_with(
    path: &Path,
    flags: &TraceFormatArgs,
    skip_invalid: bool,
    max_line_bytes: usize,
    opts: &ConvertOptions,
) -> Result<Loaded> {
    let mut trace = Trace::new();
    let format = read_trace_taking(path, flags, skip_invalid, max_line_bytes, opts, |block| trace.append(block))?;
    Ok(Loaded { trace, format })
}

/// [`read_trace_with`] handing the rows to `take` instead of keeping the trace: a Mooncake
/// file's a block of the file at a time, in file order; another format's converted trace at once.
pub fn read_trace_taking(
    path: &Path,
    flags: &TraceFormatArgs,
    skip_invalid: bool,
    max_line_bytes: usize,
    opts: &ConvertOptions,
    mut take: impl FnMut(&mut Trace),
) -> Result<Format> {
    let format = format_of(path, flags.trace_format)?;
    if format == Format::Mooncake {
        read_trace_blocks(path, skip_invalid, max_line_bytes, take)?;
    } else {
        let (converted, order) = convert_files(&[path.to_path_buf()], format, opts, max_line_bytes, |_| 0)?;
        take(&mut converted.trace.reordered(order.as_deref()));
    }
    Ok(format)
}

/// Reads AIPerf's `dag_jsonl` file (`--custom-dataset-type dag_jsonl`) into rows whose turns
/// start and join sub-agent sessions ([`aiperf_core::formats::dag_jsonl`]).
pub fn read_dag_jsonl(path: &Path, max_line_bytes: usize) -> Result<Trace> {
    let source = path.display().to_string();
    let mut reader = open(path)?;
    let mut dag = aiperf_core::formats::dag_jsonl::DagReader::new();
    let mut buf = Vec::with_capacity(4096);
    let mut line = 0u32;
    loop {
        buf.clear();
        let read =
            read_line_capped(&mut reader, &mut buf, max_line_bytes).with_context(|| format!("cannot read {source}"))?;
        line = line.saturating_add(1);
        match read {
            LineRead::End => break,
            LineRead::TooLong => {
                bail!(
                    "{source}:{line}: the line is longer than {max_line_bytes} bytes (--max-line-bytes raises the limit)"
                )
            }
            LineRead::Line => {}
        }
        let Ok(text) = std::str::from_utf8(&buf) else {
            bail!("{source}:{line}: not valid UTF-8");
        };
        dag.push_line(text, line).with_context(|| format!("{source}: not an AIPerf dag_jsonl file"))?;
    }
    dag.finish().with_context(|| format!("{source}: not an AIPerf dag_jsonl file"))
}

/// Converts files of one (non-Mooncake) format into one trace; file `k` starts at `offset_ms(k)`.
/// Prints the conversion's notes and counts on stderr. The rows come in the order they were
/// converted, with the positions that put them in time order (see `Converter::finish_unordered`).
pub fn convert_files(
    paths: &[PathBuf],
    format: Format,
    opts: &ConvertOptions,
    max_line_bytes: usize,
    offset_ms: impl Fn(usize) -> u64,
) -> Result<(Converted, Option<Vec<usize>>)> {
    if format.is_columnar() {
        let [path] = paths else {
            bail!("Baseten traces: give one file (merging Baseten traces is not supported)");
        };
        let (trace, report) = crate::io::baseten::load(path, &opts.baseten.unwrap_or_default())?;
        say!("{report}");
        if trace.is_empty() {
            bail!("{}: no request to replay ({} record(s) read): {report}", path.display(), report.records);
        }
        let stats = aiperf_core::formats::ConvertStats { records: report.records, ..Default::default() };
        return Ok((Converted { trace, stats, notes: Vec::new(), has_prefix_info: false }, None));
    }
    let (converted, order) = convert_quietly(paths, format, opts, max_line_bytes, offset_ms, parse_workers())?;
    for note in &converted.notes {
        say!("note: {note}");
    }
    let s = &converted.stats;
    if s.failed_dropped > 0 || s.failed_kept > 0 {
        say!(
            "failed rows: {} dropped, {} kept{}",
            s.failed_dropped,
            s.failed_kept,
            if s.failed_kept > 0 { " (--drop-failed drops them)" } else { "" }
        );
    }
    if s.other_models > 0 {
        say!("rows of other models dropped: {} ({})", s.other_models, models_seen(s));
    }
    say!("converted {} of {} records", converted.trace.len(), s.records);
    if converted.trace.is_empty() {
        let files = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        if s.other_models > 0 && !opts.models.is_empty() {
            bail!(
                "--model {} kept none of the {} record(s) of {files} (models are matched without regard to case): the models there are {}",
                opts.models.join(","),
                s.records,
                models_seen(s)
            );
        }
        if s.failed_dropped > 0 {
            bail!("--drop-failed dropped all {} record(s) of {files}: every one of them failed", s.records);
        }
        if let Some(why) = aiperf_core::formats::no_eligible_trace(s, 0, opts.weka.and_then(|w| w.max_context_length)) {
            bail!("{files}: {why}");
        }
        bail!("{files}: no request to convert ({} record(s) read)", s.records);
    }
    Ok((converted, order))
}

/// The models of the rows a `--model` filter dropped, most rows first: `GPT-4 (300), ChatGPT (100)`.
fn models_seen(s: &aiperf_core::formats::ConvertStats) -> String {
    let mut models: Vec<(&String, &u64)> = s.other_model_names.iter().collect();
    models.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut shown: Vec<String> = models.iter().take(20).map(|(m, n)| format!("{m} ({n})")).collect();
    let named: u64 = s.other_model_names.values().sum();
    if models.len() > 20 || named < s.other_models {
        shown.push("…".to_owned());
    }
    shown.join(", ")
}

/// [`convert_files`] without printing, with `workers` parsing threads (0: none). Files that are
/// one document (WEKA) are read whole and parsed on the threads when there are several, and
/// converted on this thread in file order; a single one is converted in parts while a thread
/// reads the rest. Either way: the same trace, or the same first error, as one by one.
fn convert_quietly(
    paths: &[PathBuf],
    format: Format,
    opts: &ConvertOptions,
    max_line_bytes: usize,
    offset_ms: impl Fn(usize) -> u64,
    workers: usize,
) -> Result<(Converted, Option<Vec<usize>>)> {
    let mut conv = Converter::new(opts.clone())?;
    let file = |k: usize| FileOptions {
        source: paths[k].display().to_string().into(),
        format,
        start_offset_ms: offset_ms(k),
        conversation_prefix: if paths.len() > 1 { format!("{k}:") } else { String::new() },
    };
    if format.is_document() {
        let mut push = |k: usize, parsed: Result<ParsedDocument>| -> Result<bool> {
            conv.start_file(file(k))?;
            conv.push_parsed_document(parsed?)?;
            conv.end_file()?;
            Ok(true)
        };
        if paths.len() > 1 && workers > 0 {
            parse_in_order(paths, format, max_line_bytes, workers, push)?;
        } else if workers > 0 {
            // One document: its parts converted while the rest is read.
            for (k, path) in paths.iter().enumerate() {
                conv.start_file(file(k))?;
                parse_in_parts(path, format, max_line_bytes, |part| Ok(conv.push_parsed_document(part)?))?;
                conv.end_file()?;
            }
        } else {
            for (k, path) in paths.iter().enumerate() {
                push(k, read_and_parse(path, format, max_line_bytes))?;
            }
        }
        return Ok(conv.finish_unordered()?);
    }
    for (k, path) in paths.iter().enumerate() {
        let source = path.display().to_string();
        conv.start_file(file(k))?;
        if format.parses_lines_apart() && workers > 0 {
            let reader = open(path)?;
            let source: Arc<str> = source.as_str().into();
            convert_lines_in_parallel(&mut conv, reader, &source, format, max_line_bytes, workers, BLOCK_BYTES)?;
            conv.end_file()?;
            continue;
        }
        let mut reader = open(path)?;
        let mut buf = Vec::with_capacity(4096);
        let mut line = 0u64;
        loop {
            buf.clear();
            let read = read_line_capped(&mut reader, &mut buf, max_line_bytes)
                .with_context(|| format!("cannot read {source}"))?;
            line += 1;
            match read {
                LineRead::End => break,
                LineRead::TooLong => bail!(
                    "{source}:{line}: the line is longer than {max_line_bytes} bytes (--max-line-bytes raises the limit)"
                ),
                LineRead::Line => {}
            }
            let Ok(text) = std::str::from_utf8(&buf) else {
                bail!("{source}:{line}: not valid UTF-8");
            };
            conv.push_line(text)?;
        }
        conv.end_file()?;
    }
    Ok(conv.finish_unordered()?)
}

/// The lines of a block parsed on a worker thread, with their hash ids in one buffer, and what
/// stopped it at the first line refused (the lines before it are converted first, since one of
/// them may be refused by the converter before).
type ParsedBlock = (Vec<ParsedLine>, Vec<u64>, Option<anyhow::Error>);

/// Converts one file of a format whose lines read apart: `workers` threads parse its blocks of
/// lines (`input::parse_blocks_in_order` over `formats::parse_line`), and the converter takes
/// the lines in file order on this thread: the same rows and the same first error as reading line
/// by line.
fn convert_lines_in_parallel(
    conv: &mut Converter,
    reader: Box<dyn BufRead + Send>,
    source: &Arc<str>,
    format: Format,
    max_line_bytes: usize,
    workers: usize,
    block_bytes: usize,
) -> Result<()> {
    let src = source.clone();
    let parse = move |block: Result<(u64, &[u8]), TraceError>| parse_block(format, &src, max_line_bytes, block);
    let mut result = Ok(());
    parse_blocks_in_order(reader, source, max_line_bytes, (workers, block_bytes), parse, |(lines, ids, stop)| {
        conv.prefetch(&lines, &ids);
        for line in lines {
            if let Err(e) = conv.push_parsed(line, &ids) {
                result = Err(e.into());
                return false;
            }
        }
        match stop {
            Some(e) => {
                result = Err(e);
                false
            }
            None => true,
        }
    });
    result
}

/// The lines of one block, each parsed on its own.
fn parse_block(format: Format, source: &Arc<str>, max: usize, block: Result<(u64, &[u8]), TraceError>) -> ParsedBlock {
    let (mut out, mut ids) = (Vec::new(), Vec::new());
    let (lines_before, bytes) = match block {
        Ok(b) => b,
        Err(e) => return (out, ids, Some(e.into())),
    };
    let (mut rest, mut line) = (bytes, lines_before);
    let mut stop = None;
    while !rest.is_empty() {
        let (text, next) = match memchr::memchr(b'\n', rest) {
            Some(end) => (&rest[..end], &rest[end + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        line += 1;
        rest = next;
        if text.len() > max {
            stop = Some(anyhow::anyhow!(
                "{source}:{line}: the line is longer than {max} bytes (--max-line-bytes raises the limit)"
            ));
            break;
        }
        let Ok(text) = std::str::from_utf8(text) else {
            stop = Some(anyhow::anyhow!("{source}:{line}: not valid UTF-8"));
            break;
        };
        match parse_line(format, source, line, text, &mut ids) {
            Ok(parsed) => out.push(parsed),
            Err(e) => {
                stop = Some(e.into());
                break;
            }
        }
    }
    (out, ids, stop)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Converts `text` line by line (`push_line`) or with its lines parsed on threads in blocks.
    fn convert(text: &str, format: Format, parallel: Option<(usize, usize)>) -> Result<String, String> {
        let mut conv = Converter::new(ConvertOptions::default()).map_err(|e| e.to_string())?;
        let source: Arc<str> = "t.jsonl".into();
        conv.start_file(FileOptions {
            source: source.clone(),
            format,
            start_offset_ms: 0,
            conversation_prefix: String::new(),
        })
        .map_err(|e| e.to_string())?;
        match parallel {
            Some((workers, block)) => {
                let reader: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
                convert_lines_in_parallel(&mut conv, reader, &source, format, 200, workers, block)
                    .map_err(|e| e.to_string())?;
            }
            None => {
                let body = text.strip_suffix('\n').unwrap_or(text);
                for (k, line) in body.split('\n').enumerate().filter(|_| !text.is_empty()) {
                    if line.len() > 200 {
                        return Err(format!(
                            "t.jsonl:{}: the line is longer than 200 bytes (--max-line-bytes raises the limit)",
                            k + 1
                        ));
                    }
                    conv.push_line(line).map_err(|e| e.to_string())?;
                }
            }
        }
        conv.end_file().map_err(|e| e.to_string())?;
        let done = conv.finish().map_err(|e| e.to_string())?;
        Ok(format!("{}{:?}", aiperf_core::trace::write_trace(&done.trace), done.notes))
    }

    fn bailian_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (0i64..30, -1i64..30, 0u32..100_000, 1u64..80, proptest::collection::vec(0u64..50, 0..6)).prop_map(
                |(chat, parent, ms, out, ids)| {
                    let input = (ids.len() as u64 * 16).max(1);
                    let ids = if ids.is_empty() { vec![7] } else { ids };
                    let input = input.max(ids.len() as u64 * 16 - 15);
                    format!(r#"{{"chat_id": {chat}, "parent_chat_id": {parent}, "timestamp": {}, "input_length": {input}, "output_length": {out}, "hash_ids": {ids:?}}}"#, f64::from(ms) / 1000.0)
                }
            ),
            1 => Just(String::new()),
            1 => Just("{\"chat_id\": 1, \"timestamp\": 2.5, \"input_length\": 16, \"hash_ids\": [3]}\r".to_string()),
            1 => Just("{\"chat_id\": \"x\"}".to_string()),
            1 => Just("{\"chat_id\": 2, \"timestamp\": 1, \"input_length\": 100, \"hash_ids\": [1]}".to_string()),
            1 => Just("x".repeat(250)),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 150, ..Default::default() })]
        /// Lines parsed on threads convert exactly as lines read one by one: the same trace and
        /// notes, or the same first error.
        #[test]
        fn lines_parsed_on_threads_convert_like_one_by_one(
            lines in proptest::collection::vec(bailian_line(), 0..30),
            workers in 1usize..4,
            block in 1usize..400,
        ) {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            proptest::prop_assert_eq!(convert(&text, Format::Bailian, None), convert(&text, Format::Bailian, Some((workers, block))));
        }
    }

    #[test]
    fn weka_files_parsed_on_threads_convert_as_one_by_one() {
        use std::io::Write as _;
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/formats/weka-kv-cache-tester");
        let a = std::fs::read_to_string(fixtures.join("trace_0291.json")).unwrap();
        let b = std::fs::read_to_string(fixtures.join("trace_0504.json")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b.as_bytes()).unwrap();
        let (a, b, b_gz) =
            (file("a.json", a.as_bytes()), file("b.json", b.as_bytes()), file("b.json.gz", &gz.finish().unwrap()));
        let wrong = std::fs::read_to_string(&b).unwrap().replacen("\"in\":11300", "\"in\":11200", 1);
        let wrong = file("wrong.json", wrong.as_bytes());
        let broken = file("broken.json", b"{\"id\": \"x\", \"requests\": [}\n");
        let long = file("long.json", format!("{{\"id\": \"x\",\n\"requests\": [{}]}}", " ".repeat(250_000)).as_bytes());
        let convert = |paths: &[&PathBuf], workers: usize, max: usize| {
            let paths: Vec<PathBuf> = paths.iter().map(|p| (*p).clone()).collect();
            convert_quietly(&paths, Format::Weka, &ConvertOptions::default(), max, |k| k as u64 * 700, workers)
                .map(|(c, order)| {
                    format!("{}{order:?}{:?}{:?}", aiperf_core::trace::write_trace(&c.trace), c.notes, c.stats)
                })
                .map_err(|e| format!("{e:#}"))
        };
        for single in [&a, &b_gz, &wrong, &broken, &long] {
            assert_eq!(convert(&[single], 2, 200_000), convert(&[single], 0, 200_000), "{}", single.display());
        }
        let good = [&a, &b, &b_gz, &a, &b];
        let one = convert(&good, 0, 1 << 20);
        assert!(one.as_ref().is_ok_and(|t| t.contains("4:trace_0504")), "{one:?}");
        for workers in [1, 2, 4] {
            assert_eq!(convert(&good, workers, 1 << 20), one, "{workers} threads");
        }
        for (bad, why) in [
            (&wrong, "requests[1].hash_ids"),
            (&broken, "not a WEKA trace object"),
            (&long, "long.json:2: the line is longer than 200000 bytes"),
        ] {
            let files = [&a, &b_gz, bad, &b, &wrong];
            let one = convert(&files, 0, 200_000);
            assert!(one.as_ref().is_err_and(|e| e.contains(why)), "{:?}", one.as_ref().err());
            for workers in [1, 2, 4] {
                assert_eq!(convert(&files, workers, 200_000), one, "{workers} threads");
            }
        }
    }

    #[test]
    fn format_names_parse_and_unknown_ones_list_the_choices() {
        assert_eq!(parse_choice("AUTO").unwrap(), FormatChoice::Auto);
        assert_eq!(parse_choice("burstgpt").unwrap(), FormatChoice::Is(Format::BurstGpt));
        let e = parse_choice("csv").unwrap_err();
        assert!(e.contains("auto, mooncake, bailian, servegen, azure, burstgpt, weka"), "{e}");
    }
}
