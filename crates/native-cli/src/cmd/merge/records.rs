//! A shard's records: a first pass checks every line (and finds a truncated last one), a second
//! reads them one at a time, rebased to the merged run's zero.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use aiperf_core::results::record::RequestRecord;
use aiperf_core::trace::{LineRead, read_line_capped};
use anyhow::{Context, Result, bail, ensure};

/// What a first pass over a shard's records found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Scan {
    /// Valid records.
    pub(super) records: u64,
    /// Lines to read in the second pass (a truncated last line excluded).
    pub(super) complete_lines: u64,
    pub(super) truncated_last_line: bool,
}

/// Checks every line of a shard's records: invalid JSON is a `file:line` error, except on a last
/// line without its newline (a write the process did not finish), which is reported.
pub(super) fn scan_records(path: &Path, max_line_bytes: usize) -> Result<Scan> {
    let mut reader = crate::io::input::open(path)?;
    let mut buf = Vec::new();
    let mut scan = Scan::default();
    let mut line = 0u64;
    loop {
        buf.clear();
        let read = read_line_capped(&mut reader, &mut buf, max_line_bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let at_end = reader.fill_buf().map(<[u8]>::is_empty).unwrap_or(true);
        match read {
            LineRead::End => break,
            LineRead::TooLong => bail!(
                "{}:{}: the line is longer than {max_line_bytes} bytes (merge --max-line-bytes raises the limit)",
                path.display(),
                line + 1
            ),
            LineRead::Line => {}
        }
        line += 1;
        let unterminated = at_end && !ends_with_newline(path)?;
        match parse_record(&buf) {
            _ if unterminated => {
                scan.truncated_last_line = true;
                break;
            }
            Ok(None) => {}
            Ok(Some(_)) => scan.records += 1,
            Err(e) => bail!("{}:{line}: {e}", path.display()),
        }
        scan.complete_lines = line;
    }
    Ok(scan)
}

/// Whether a file's last byte is a newline (an empty file counts as ended).
fn ends_with_newline(path: &Path) -> Result<bool> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return Ok(true);
    }
    let mut last = [0u8];
    f.seek(SeekFrom::Start(len - 1))
        .and_then(|_| f.read_exact(&mut last))
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(last[0] == b'\n')
}

/// One line of `profile_export.jsonl`: its `metadata` record (`None` for a blank line).
fn parse_record(line: &[u8]) -> Result<Option<RequestRecord>> {
    let mut rec = RequestRecord::default();
    let read = aiperf_core::results::line::read_line(line, &mut rec)
        .context("not a record of profile_export.jsonl (field 'metadata')")?;
    Ok(read.then_some(rec))
}

/// A shard's records, rebased, read one at a time.
pub(super) struct Records {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    buf: Vec<u8>,
    max_line_bytes: usize,
    line: u64,
    lines: u64,
    shift_ns: u64,
}

impl Records {
    pub(super) fn open(path: &Path, max_line_bytes: usize, lines: u64, shift_ns: u64) -> Result<Records> {
        Ok(Records {
            path: path.to_owned(),
            reader: crate::io::input::open(path)?,
            buf: Vec::new(),
            max_line_bytes,
            line: 0,
            lines,
            shift_ns,
        })
    }

    /// The next record with its times moved to the merged run's zero.
    pub(super) fn next(&mut self) -> Result<Option<RequestRecord>> {
        while self.line < self.lines {
            self.buf.clear();
            let read = read_line_capped(&mut self.reader, &mut self.buf, self.max_line_bytes)
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            self.line += 1;
            ensure!(read == LineRead::Line, "{}:{}: changed while merging", self.path.display(), self.line);
            if let Some(mut r) =
                parse_record(&self.buf).with_context(|| format!("{}:{}", self.path.display(), self.line))?
            {
                r.rebase(self.shift_ns);
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}
