//! Reading trace files (plain or gzip) into the core's trace model, and writing files atomically.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use aiperf_core::trace::{ParseOptions, ParseOutcome, read};
use anyhow::{Context, Result};

/// Opens a file for buffered reading, decompressing gzip (detected by its magic bytes).
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let magic = reader.fill_buf().with_context(|| format!("cannot read {}", path.display()))?;
    if magic.starts_with(&[0x1f, 0x8b]) {
        let gz = flate2::bufread::MultiGzDecoder::new(reader);
        Ok(Box::new(BufReader::with_capacity(1 << 20, gz)))
    } else {
        Ok(Box::new(reader))
    }
}

/// Reads and validates a whole trace file.
pub fn read_trace(path: &Path, skip_invalid: bool) -> Result<ParseOutcome> {
    let opts = ParseOptions::new(path.display().to_string()).skip_invalid(skip_invalid);
    let outcome = read(open(path)?, opts).with_context(|| format!("cannot read trace {}", path.display()))?;
    if outcome.skipped_total > 0 {
        eprintln!("warning: skipped {} invalid row(s) of {}:", outcome.skipped_total, path.display());
        for e in &outcome.skipped {
            eprintln!("  {e}");
        }
        if outcome.skipped_total > outcome.skipped.len() as u64 {
            eprintln!("  … and {} more", outcome.skipped_total - outcome.skipped.len() as u64);
        }
    }
    Ok(outcome)
}

/// Writes `contents` to `path` through a temporary file in the same folder and a rename, so a
/// failure never leaves a half-written file behind.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().with_context(|| format!("{} is not a file path", path.display()))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(contents).with_context(|| format!("cannot write {}", tmp.display()))?;
        f.sync_all().with_context(|| format!("cannot flush {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
