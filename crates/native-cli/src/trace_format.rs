//! `--trace-format`: reading a trace in any format the core knows (Mooncake, Bailian, ServeGen,
//! Azure, BurstGPT, WEKA), detected by content or named, into the core's trace model.
//!
//! Every command that reads a trace flattens [`TraceFormatArgs`] and calls [`read_trace_any`];
//! `convert-trace` calls [`convert_files`] to merge several files. The detected format is printed
//! on stderr (`detected format: X (evidence)`), with what the conversion invented or dropped.

use std::path::{Path, PathBuf};

use aiperf_core::formats::{ConvertOptions, Converted, Converter, FileOptions, Format, detect};
use aiperf_core::trace::{LineRead, Trace, read_line_capped};
use anyhow::{Context, Result, bail};

use crate::input::{open, read_trace_limited};

/// The `--trace-format` flag.
#[derive(Clone, Debug, clap::Args)]
pub struct TraceFormatArgs {
    /// Input format: auto (detect by content), mooncake, bailian, servegen, azure, burstgpt, weka.
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
    /// For `profile` (to be wired by its owner): what was read.
    #[allow(dead_code)]
    pub format: Format,
}

/// The format of a file: the named one, or detected from its first bytes (printed on stderr).
pub fn format_of(path: &Path, choice: FormatChoice) -> Result<Format> {
    if let FormatChoice::Is(f) = choice {
        return Ok(f);
    }
    let head = crate::input::head(path, 1 << 20)?;
    match detect(&head) {
        Ok(d) => {
            eprintln!("detected format: {} ({}) in {}", d.format, d.evidence, path.display());
            Ok(d.format)
        }
        Err(e) => {
            // The Mooncake parser's row errors say more than "unknown format" for a broken trace.
            eprintln!("warning: {}: {e}; reading it as Mooncake (--trace-format names the format)", path.display());
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
    let format = format_of(path, flags.trace_format)?;
    if format == Format::Mooncake {
        return Ok(Loaded { trace: read_trace_limited(path, skip_invalid, max_line_bytes)?.trace, format });
    }
    let converted = convert_files(&[path.to_path_buf()], format, &ConvertOptions::default(), max_line_bytes, |_| 0)?;
    Ok(Loaded { trace: converted.trace, format })
}

/// Converts files of one (non-Mooncake) format into one trace; file `k` starts at `offset_ms(k)`.
/// Prints the conversion's notes and counts on stderr.
pub fn convert_files(
    paths: &[PathBuf],
    format: Format,
    opts: &ConvertOptions,
    max_line_bytes: usize,
    offset_ms: impl Fn(usize) -> u64,
) -> Result<Converted> {
    let mut conv = Converter::new(opts.clone())?;
    for (k, path) in paths.iter().enumerate() {
        let prefix = if paths.len() > 1 { format!("{k}:") } else { String::new() };
        let source = path.display().to_string();
        conv.start_file(FileOptions {
            source: source.as_str().into(),
            format,
            start_offset_ms: offset_ms(k),
            conversation_prefix: prefix,
        })?;
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
    let converted = conv.finish()?;
    for note in &converted.notes {
        eprintln!("note: {note}");
    }
    let s = &converted.stats;
    if s.failed_dropped > 0 || s.failed_kept > 0 {
        eprintln!(
            "failed rows: {} dropped, {} kept{}",
            s.failed_dropped,
            s.failed_kept,
            if s.failed_kept > 0 { " (--drop-failed drops them)" } else { "" }
        );
    }
    if s.other_models > 0 {
        eprintln!("rows of other models dropped: {}", s.other_models);
    }
    eprintln!("converted {} of {} records", converted.trace.len(), s.records);
    Ok(converted)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn format_names_parse_and_unknown_ones_list_the_choices() {
        assert_eq!(parse_choice("AUTO").unwrap(), FormatChoice::Auto);
        assert_eq!(parse_choice("burstgpt").unwrap(), FormatChoice::Is(Format::BurstGpt));
        let e = parse_choice("csv").unwrap_err();
        assert!(e.contains("auto, mooncake, bailian, servegen, azure, burstgpt, weka"), "{e}");
    }
}
