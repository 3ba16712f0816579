//! Files that are one document (WEKA JSON): read whole, parsed on their own
//! ([`aiperf_core::formats::parse_document`]), several at once on worker threads, and handed to
//! the converter in file order.

use std::io::{BufRead, Read as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use aiperf_core::formats::{DocumentReader, Format, ParsedDocument, parse_document};
use anyhow::{Context, Result, bail};

use crate::io::input::open;

/// The whole text of `path` (plain or gzip, `-`: standard input), with the limits of reading it
/// line by line: a line longer than `max_line_bytes` (so a one-line file longer than that) or
/// bytes that are not UTF-8 stop it, with the first such line's number, and reading stops at a
/// line over the limit.
pub fn read_document(path: &Path, max_line_bytes: usize) -> Result<String> {
    let source = path.display();
    read_limited(open(path)?, &source.to_string(), file_size(path), max_line_bytes)
}

/// The size of a regular file (a first guess of its text's).
fn file_size(path: &Path) -> usize {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map_or(0, |m| usize::try_from(m.len()).unwrap_or(0))
}

/// [`read_document`] from a reader: in pieces read straight into the text (no copy through the
/// reader's buffer), each checked for a line over the limit before the next is read.
fn read_limited(mut reader: Box<dyn BufRead + Send>, source: &str, size: usize, max: usize) -> Result<String> {
    let mut buf = Vec::with_capacity(size.saturating_add(1));
    let piece = max.saturating_add(1).clamp(64 << 10, 16 << 20) as u64;
    let (mut line, mut line_start) = (1u64, 0usize);
    loop {
        let base = buf.len();
        let n = (&mut reader).take(piece).read_to_end(&mut buf).with_context(|| format!("cannot read {source}"))?;
        if n == 0 {
            break;
        }
        for end in memchr::memchr_iter(b'\n', &buf[base..]).map(|i| base + i) {
            if end - line_start > max {
                return Err(too_long(&buf[..line_start], source, line, max));
            }
            line += 1;
            line_start = end + 1;
        }
        if buf.len() - line_start > max {
            return Err(too_long(&buf[..line_start], source, line, max));
        }
    }
    String::from_utf8(buf).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        not_utf8(&e.into_bytes()[..at], source)
    })
}

/// Line `line` is too long, unless a line before it is not UTF-8 (`before`: the lines before it).
fn too_long(before: &[u8], source: &str, line: u64, max: usize) -> anyhow::Error {
    match std::str::from_utf8(before) {
        Err(e) => not_utf8(&before[..e.valid_up_to()], source),
        Ok(_) => {
            anyhow::anyhow!("{source}:{line}: the line is longer than {max} bytes (--max-line-bytes raises the limit)")
        }
    }
}

/// The line after `valid` (the text before the first byte that is not UTF-8) is not UTF-8.
fn not_utf8(valid: &[u8], source: &str) -> anyhow::Error {
    let line = memchr::memchr_iter(b'\n', valid).count() + 1;
    anyhow::anyhow!("{source}:{line}: not valid UTF-8")
}

/// Reads and parses one file of a document format (its text is dropped once parsed).
pub fn read_and_parse(path: &Path, format: Format, max_line_bytes: usize) -> Result<ParsedDocument> {
    let text = read_document(path, max_line_bytes)?;
    let source: Arc<str> = path.display().to_string().into();
    let parsed = parse_document(format, &source, &text);
    if text.len() >= 64 << 20 {
        // Unmapping hundreds of MB takes a while: not on the way to the conversion.
        let _ = std::thread::Builder::new().name("free".into()).spawn(move || drop(text));
    }
    Ok(parsed?)
}

/// Requests in a part of a document converted while the rest is read.
const PART_REQUESTS: usize = 1 << 16;

/// Reads and parses one file on another thread, in parts handed to `take` on the calling thread
/// as they come (the first converted while the rest is read): the same as taking
/// [`read_and_parse`]'s document at once. At most two parts wait to be taken.
pub fn parse_in_parts(
    path: &Path,
    format: Format,
    max_line_bytes: usize,
    mut take: impl FnMut(ParsedDocument) -> Result<()>,
) -> Result<()> {
    let (tx, rx) = mpsc::sync_channel::<Result<ParsedDocument>>(2);
    let path = path.to_path_buf();
    std::thread::Builder::new()
        .name("parse".into())
        .spawn(move || {
            let text = match read_document(&path, max_line_bytes) {
                Ok(text) => text,
                Err(e) => return drop(tx.send(Err(e))),
            };
            let source: Arc<str> = path.display().to_string().into();
            let mut reader = match DocumentReader::new(format, &source, &text) {
                Ok(reader) => reader,
                Err(e) => return drop(tx.send(Err(e.into()))),
            };
            while let Some(part) = reader.next_part(PART_REQUESTS) {
                if tx.send(Ok(part)).is_err() {
                    return;
                }
            }
        })
        .context("cannot start a parsing thread")?;
    for part in rx {
        take(part?)?;
    }
    Ok(())
}

/// Reads and parses `paths` on `workers` threads (file `k` on thread `k % workers`) and hands
/// them to `take` in file order on the calling thread, until `take` returns false or the files
/// end: each one its parsed document or why it could not be read. Memory stays bounded: a
/// thread parses one file and holds at most one more that is waiting to be taken. Threads are not
/// joined: after a stop this returns, and each ends at its next send.
pub fn parse_in_order(
    paths: &[PathBuf],
    format: Format,
    max_line_bytes: usize,
    workers: usize,
    mut take: impl FnMut(usize, Result<ParsedDocument>) -> Result<bool>,
) -> Result<()> {
    let workers = workers.clamp(1, paths.len().max(1));
    let mut from_workers = Vec::with_capacity(workers);
    for w in 0..workers {
        let (tx, rx) = mpsc::sync_channel::<Result<ParsedDocument>>(1);
        let mine: Vec<PathBuf> = paths.iter().skip(w).step_by(workers).cloned().collect();
        std::thread::Builder::new()
            .name(format!("parse-{w}"))
            .spawn(move || {
                for path in mine {
                    if tx.send(read_and_parse(&path, format, max_line_bytes)).is_err() {
                        return;
                    }
                }
            })
            .context("cannot start a parsing thread")?;
        from_workers.push(rx);
    }
    for k in 0..paths.len() {
        let Ok(parsed) = from_workers[k % workers].recv() else {
            bail!("{}: the parsing thread stopped", paths[k].display());
        };
        if !take(k, parsed)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(text: &[u8], max: usize) -> Result<String, String> {
        let reader: Box<dyn BufRead + Send> =
            Box::new(std::io::BufReader::with_capacity(7, std::io::Cursor::new(text.to_vec())));
        read_limited(reader, "w.json", 0, max).map_err(|e| e.to_string())
    }

    #[test]
    fn a_document_keeps_the_line_limits_and_names_the_first_bad_line() {
        assert_eq!(read(b"{\"a\":\n 1}", 6).unwrap(), "{\"a\":\n 1}");
        assert_eq!(read(b"", 6).unwrap(), "");
        let long = "w.json:2: the line is longer than 6 bytes (--max-line-bytes raises the limit)";
        assert_eq!(read(b"{\"a\":\n 1234567\n", 6).unwrap_err(), long);
        assert_eq!(read(b"{\"a\":\n 1234567", 6).unwrap_err(), long);
        assert_eq!(read(b"abcdef\n", 6).unwrap(), "abcdef\n");
        assert_eq!(read(b"1\n\xff\n 1234567", 6).unwrap_err(), "w.json:2: not valid UTF-8");
        assert_eq!(read(b"1\n2\n\xe2\x82", 6).unwrap_err(), "w.json:3: not valid UTF-8");
        assert_eq!(read(b"1\n 1234567\xff", 6).unwrap_err(), long);
    }
}
