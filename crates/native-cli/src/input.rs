//! Reading trace files (plain or gzip) into the core's trace model.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use aiperf_core::trace::{ParseOptions, ParseOutcome, Row, read, read_each};
use anyhow::{Context, Result};

use crate::output::is_stdio;

/// Opens a file (`-`: standard input) for buffered reading, decompressing gzip (detected by its
/// magic bytes).
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let file: Box<dyn Read> = if is_stdio(path) {
        Box::new(std::io::stdin())
    } else {
        Box::new(File::open(path).with_context(|| format!("cannot open {}", path.display()))?)
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let magic = reader.fill_buf().with_context(|| format!("cannot read {}", path.display()))?;
    if magic.starts_with(&[0x1f, 0x8b]) {
        let gz = flate2::bufread::MultiGzDecoder::new(reader);
        Ok(Box::new(BufReader::with_capacity(1 << 20, gz)))
    } else {
        Ok(Box::new(reader))
    }
}

/// Reads and validates a whole trace file, stopping at a line longer than `max_line_bytes`.
pub fn read_trace_limited(path: &Path, skip_invalid: bool, max_line_bytes: usize) -> Result<ParseOutcome> {
    let opts = ParseOptions::new(path.display().to_string()).skip_invalid(skip_invalid).max_line_bytes(max_line_bytes);
    let outcome = read(open(path)?, opts).with_context(|| format!("cannot read trace {}", path.display()))?;
    warn_skipped(path, &outcome);
    Ok(outcome)
}

/// [`read_trace_limited`] handing each row to `f` as it is read instead of keeping the trace
/// (the outcome's trace is empty).
pub fn read_trace_each(
    path: &Path,
    skip_invalid: bool,
    max_line_bytes: usize,
    f: impl FnMut(&Row, &[u64]),
) -> Result<ParseOutcome> {
    let opts = ParseOptions::new(path.display().to_string()).skip_invalid(skip_invalid).max_line_bytes(max_line_bytes);
    let outcome = read_each(open(path)?, opts, f).with_context(|| format!("cannot read trace {}", path.display()))?;
    warn_skipped(path, &outcome);
    Ok(outcome)
}

/// Lists the skipped rows on stderr.
fn warn_skipped(path: &Path, outcome: &ParseOutcome) {
    if outcome.skipped_total > 0 {
        eprintln!("warning: skipped {} invalid row(s) of {}:", outcome.skipped_total, path.display());
        for e in &outcome.skipped {
            eprintln!("  {e}");
        }
        if outcome.skipped_total > outcome.skipped.len() as u64 {
            eprintln!("  … and {} more", outcome.skipped_total - outcome.skipped.len() as u64);
        }
    }
}

/// The former name of [`crate::output::write_output`], kept while `profile` still calls it.
pub use crate::output::write_output as write_atomically;
