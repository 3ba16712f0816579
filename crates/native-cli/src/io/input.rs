//! Reading trace files (plain or gzip) into the core's trace model.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use aiperf_core::trace::{ParseOptions, ParseOutcome, Row, Trace, TraceError, TraceParser, read, read_each};
use anyhow::{Context, Result, bail};

use crate::io::output::is_stdio;

/// An input that can be read only once (standard input, a pipe, `<(zcat …)`): the bytes [`head`]
/// read to detect its format, and the handle it read them from, handed to the reader [`open`]
/// makes next.
struct Peeked {
    path: PathBuf,
    bytes: Vec<u8>,
    /// `None`: standard input.
    file: Option<File>,
}

static PEEKED: Mutex<Vec<Peeked>> = Mutex::new(Vec::new());

/// Whether `path` can be read only once (not a regular file).
fn read_once(path: &Path) -> bool {
    is_stdio(path) || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// Up to `n` bytes of the start of a file (`-`: standard input), decompressed if gzip, without
/// consuming them: [`open`] still reads the whole input, also from a pipe.
pub fn head(path: &Path, n: usize) -> Result<Vec<u8>> {
    if !read_once(path) {
        let mut reader = open(path)?;
        let mut out = Vec::new();
        reader
            .by_ref()
            .take(n as u64)
            .read_to_end(&mut out)
            .with_context(|| format!("cannot read {}", path.display()))?;
        return Ok(out);
    }
    let raw = {
        let mut peeked = PEEKED.lock().map_err(|_| anyhow::anyhow!("{}: a reader failed", path.display()))?;
        if !peeked.iter().any(|p| p.path == path) {
            let file = if is_stdio(path) {
                None
            } else {
                Some(File::open(path).with_context(|| format!("cannot open {}", path.display()))?)
            };
            peeked.push(Peeked { path: path.to_path_buf(), bytes: Vec::new(), file });
        }
        let Some(p) = peeked.iter_mut().find(|p| p.path == path) else { bail!("{}: not kept", path.display()) };
        let mut chunk = vec![0u8; 64 << 10];
        while p.bytes.len() < n {
            let got = match &mut p.file {
                Some(f) => f.read(&mut chunk),
                None => std::io::stdin().read(&mut chunk),
            };
            match got {
                Ok(0) => break,
                Ok(k) => p.bytes.extend_from_slice(&chunk[..k]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            }
        }
        p.bytes.clone()
    };
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    // The head of a gzip stream: as much as it decompresses to (the rest is not read yet).
    let mut out = Vec::new();
    let _ = flate2::read::MultiGzDecoder::new(raw.as_slice()).take(n as u64).read_to_end(&mut out);
    Ok(out)
}

/// Opens a file (`-`: standard input) for buffered reading, decompressing gzip (detected by its
/// magic bytes).
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let peeked = PEEKED.lock().ok().and_then(|mut all| {
        let i = all.iter().position(|p| p.path == path)?;
        Some(all.swap_remove(i))
    });
    let file: Box<dyn Read + Send> = if let Some(p) = peeked {
        let kept = std::io::Cursor::new(p.bytes);
        match p.file {
            Some(f) => Box::new(kept.chain(f)),
            None => Box::new(kept.chain(std::io::stdin())),
        }
    } else if is_stdio(path) {
        Box::new(std::io::stdin())
    } else {
        Box::new(File::open(path).with_context(|| format!("cannot open {}", path.display()))?)
    };
    let mut reader = BufReader::with_capacity(READER_BYTES, file);
    let magic = reader.fill_buf().with_context(|| format!("cannot read {}", path.display()))?;
    if magic.starts_with(&[0x1f, 0x8b]) {
        let gz = flate2::bufread::MultiGzDecoder::new(reader);
        Ok(Box::new(BufReader::with_capacity(READER_BYTES, gz)))
    } else {
        Ok(Box::new(reader))
    }
}

/// Reads and validates a whole trace file, stopping at a line longer than `max_line_bytes`.
pub fn read_trace_limited(path: &Path, skip_invalid: bool, max_line_bytes: usize) -> Result<ParseOutcome> {
    let opts = ParseOptions::new(path.display().to_string()).skip_invalid(skip_invalid).max_line_bytes(max_line_bytes);
    let outcome = read_parallel(open(path)?, opts, parse_workers())
        .with_context(|| format!("cannot read trace {}", path.display()))?;
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
    let outcome = read_each_parallel(open(path)?, opts, parse_workers(), f)
        .with_context(|| format!("cannot read trace {}", path.display()))?;
    warn_skipped(path, &outcome);
    Ok(outcome)
}

/// [`read_trace_limited`] handing the rows to `take` a block of the file at a time, in file
/// order, as traces of their own instead of keeping them (the outcome's trace is empty).
pub fn read_trace_blocks(
    path: &Path,
    skip_invalid: bool,
    max_line_bytes: usize,
    mut take: impl FnMut(&mut Trace),
) -> Result<ParseOutcome> {
    let opts = ParseOptions::new(path.display().to_string()).skip_invalid(skip_invalid).max_line_bytes(max_line_bytes);
    let reader = open(path)?;
    let outcome = match parse_workers() {
        0 => read(reader, opts).map(|mut outcome| {
            take(&mut outcome.trace);
            outcome
        }),
        workers => parse_in_blocks(reader, opts, (workers, BLOCK_BYTES), |all, block| {
            take(block.trace_mut());
            all.absorb(block);
        }),
    }
    .with_context(|| format!("cannot read trace {}", path.display()))?;
    warn_skipped(path, &outcome);
    Ok(outcome)
}

/// Threads that parse blocks of a trace: one per core, up to four; none on one core (the
/// caller parses).
pub fn parse_workers() -> usize {
    match std::thread::available_parallelism().map_or(1, |n| n.get()) {
        1 => 0,
        n => n.min(4),
    }
}

/// A reader's buffer ([`open`]): a read of at least this many bytes bypasses it.
const READER_BYTES: usize = 256 << 10;

/// Bytes of whole lines handed to a parsing thread at a time: read into the block at once,
/// bypassing the reader's buffer ([`READER_BYTES`]).
pub(crate) const BLOCK_BYTES: usize = 1 << 20;

/// Bytes read at least once a block holds `block_bytes` but no line end yet (a long line), or
/// `block_bytes` when fewer.
const MORE_BYTES: usize = 64 << 10;

/// Blocks waiting for a worker, and parsed blocks waiting to be taken, per worker.
const BLOCKS_QUEUED: usize = 4;

/// A block of whole lines for a parsing thread, after the given number of lines: its buffer and
/// how many of its bytes are the lines (or why the reading stopped).
pub(crate) type Block = Result<(u64, Vec<u8>, usize), TraceError>;

/// [`read_each`] with the parsing spread over `workers` threads ([`parse_blocks_in_order`]): the
/// rows reach `f` on the calling thread in file order, with the same rows, line numbers, errors
/// and limits as [`read_each`]. With no workers, [`read_each`].
pub fn read_each_parallel(
    reader: Box<dyn BufRead + Send>,
    opts: ParseOptions,
    workers: usize,
    f: impl FnMut(&Row, &[u64]),
) -> Result<ParseOutcome, TraceError> {
    read_in_blocks(reader, opts, workers, BLOCK_BYTES, f)
}

/// [`read`] with the parsing spread over `workers` threads ([`parse_blocks_in_order`]): the same
/// trace, line numbers, errors and limits. With no workers, [`read`].
pub fn read_parallel(
    reader: Box<dyn BufRead + Send>,
    opts: ParseOptions,
    workers: usize,
) -> Result<ParseOutcome, TraceError> {
    read_kept_in_blocks(reader, opts, workers, BLOCK_BYTES)
}

/// [`read_parallel`] with blocks of `block_bytes`.
fn read_kept_in_blocks(
    reader: Box<dyn BufRead + Send>,
    opts: ParseOptions,
    workers: usize,
    block_bytes: usize,
) -> Result<ParseOutcome, TraceError> {
    if workers == 0 {
        return read(reader, opts);
    }
    parse_in_blocks(reader, opts, (workers, block_bytes), |all, block| all.absorb_rows(block))
}

/// [`read_each_parallel`] with blocks of `block_bytes` (small in tests, to make many blocks).
fn read_in_blocks(
    reader: Box<dyn BufRead + Send>,
    opts: ParseOptions,
    workers: usize,
    block_bytes: usize,
    mut f: impl FnMut(&Row, &[u64]),
) -> Result<ParseOutcome, TraceError> {
    if workers == 0 {
        return read_each(reader, opts, f);
    }
    parse_in_blocks(reader, opts, (workers, block_bytes), |all, block| {
        block.drain_rows(&mut f);
        all.absorb(block);
    })
}

/// Parses `reader` in blocks on `workers` threads, handing each block's parser to `take` in file
/// order with the parser of the whole file.
fn parse_in_blocks(
    reader: Box<dyn BufRead + Send>,
    opts: ParseOptions,
    (workers, block_bytes): (usize, usize),
    mut take: impl FnMut(&mut TraceParser, &mut TraceParser),
) -> Result<ParseOutcome, TraceError> {
    let (source, max) = (opts.source.clone(), opts.max_line_bytes);
    let block_opts = opts.clone();
    let parse = move |block: Result<(u64, &[u8]), TraceError>| {
        let (lines_before, bytes) = block?;
        let mut parser = TraceParser::after_line(block_opts.clone(), lines_before);
        parser.push_block(bytes).map(|()| parser)
    };
    let mut all = TraceParser::new(opts);
    let mut failed = None;
    parse_blocks_in_order(reader, &source, max, (workers, block_bytes), parse, |parsed| match parsed {
        Ok(mut block) => {
            take(&mut all, &mut block);
            true
        }
        Err(e) => {
            failed = Some(e);
            false
        }
    });
    match failed {
        Some(e) => Err(e),
        None => all.finish(),
    }
}

/// Reads `reader` in blocks of whole lines ([`cut_blocks`], on a reader thread), parses them on
/// `workers` threads with `parse` (a block's count of lines before it and its bytes, or why the
/// reading stopped), and hands the results to `take` on the calling thread in file order, until
/// `take` returns false or the input ends. Memory stays bounded: at most nine blocks per worker
/// are in flight (four waiting for it, one it parses, four parsed waiting for `take`: the
/// threads seldom wait for each other), and their buffers go back to the reader. Threads are
/// not joined: after a stop this returns at once, and a thread still blocked (on a pipe that
/// stays open) ends when its next send finds no receiver.
pub(crate) fn parse_blocks_in_order<T: Send + 'static>(
    reader: Box<dyn BufRead + Send>,
    source: &Arc<str>,
    max_line_bytes: usize,
    (workers, block_bytes): (usize, usize),
    parse: impl Fn(Result<(u64, &[u8]), TraceError>) -> T + Send + Clone + 'static,
    mut take: impl FnMut(T) -> bool,
) {
    let workers = workers.max(1);
    let (free_tx, free_rx) = mpsc::channel::<Vec<u8>>();
    let mut to_workers = Vec::with_capacity(workers);
    let mut from_workers = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (block_tx, block_rx) = mpsc::sync_channel::<Block>(BLOCKS_QUEUED);
        let (done_tx, done_rx) = mpsc::sync_channel::<T>(BLOCKS_QUEUED);
        let (parse, free_tx) = (parse.clone(), free_tx.clone());
        std::thread::spawn(move || {
            while let Ok(block) = block_rx.recv() {
                let out = match block {
                    Ok((lines_before, bytes, used)) => {
                        let out = parse(Ok((lines_before, &bytes[..used])));
                        let _ = free_tx.send(bytes);
                        out
                    }
                    Err(e) => parse(Err(e)),
                };
                if done_tx.send(out).is_err() {
                    return;
                }
            }
        });
        to_workers.push(block_tx);
        from_workers.push(done_rx);
    }
    drop(free_tx);
    let source = source.clone();
    std::thread::spawn(move || cut_blocks(reader, &source, max_line_bytes, block_bytes, &to_workers, &free_rx));
    for k in 0.. {
        let Ok(out) = from_workers[k % workers].recv() else { return };
        if !take(out) {
            return;
        }
    }
}

/// The reader thread: blocks of whole lines, at least `block_bytes` each (a longer line makes
/// a longer block, up to the line limit), dealt to the workers in turn. The reader reads into a
/// block's buffer directly; the buffers come back from the workers and keep their length (their
/// bytes past the lines are room, not zeroed again).
fn cut_blocks(
    mut reader: Box<dyn BufRead + Send>,
    source: &Arc<str>,
    max_line_bytes: usize,
    block_bytes: usize,
    to_workers: &[SyncSender<Block>],
    free: &Receiver<Vec<u8>>,
) {
    let mut lines_before = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    // The bytes after the last line end (all of them without one).
    let tail = |used: usize, last_end: Option<usize>| last_end.map_or(used, |e| used - e - 1);
    for k in 0.. {
        let to = &to_workers[k % to_workers.len()];
        let mut block = free.try_recv().unwrap_or_default();
        if block.len() < carry.len() {
            block.resize(carry.len(), 0);
        }
        block[..carry.len()].copy_from_slice(&carry);
        let mut used = carry.len();
        carry.clear();
        // Read until the block holds a line end past `block_bytes`, the file ends, or a line is
        // longer than the limit (the worker then reports it where it starts).
        let mut searched = 0;
        let mut last_end = None;
        let mut eof = false;
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &block[searched..used]) {
                last_end = Some(searched + i);
            }
            searched = used;
            if (last_end.is_some() && used >= block_bytes) || tail(used, last_end) > max_line_bytes {
                break;
            }
            let want = block_bytes.saturating_sub(used).max(MORE_BYTES.min(block_bytes)).max(1);
            if block.len() < used + want {
                block.resize(used + want, 0);
            }
            match reader.read(&mut block[used..used + want]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => used += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => {
                    let line = lines_before + memchr::memchr_iter(b'\n', &block[..used]).count() as u64;
                    let _ = to.send(Err(TraceError::Read { file: source.clone(), line, error }));
                    return;
                }
            }
        }
        // A line over the limit: the worker reports it where it starts, and nothing after it is
        // read. Otherwise the partial last line waits for the next block.
        let too_long = tail(used, last_end) > max_line_bytes;
        if !eof
            && !too_long
            && let Some(end) = last_end
        {
            carry.extend_from_slice(&block[end + 1..used]);
            used = end + 1;
        }
        if used == 0 {
            return;
        }
        let lines = memchr::memchr_iter(b'\n', &block[..used]).count() as u64 + u64::from(block[used - 1] != b'\n');
        let start = lines_before;
        lines_before += lines;
        if to.send(Ok((start, block, used))).is_err() || eof || too_long {
            return;
        }
    }
}

/// Lists the skipped rows on stderr.
fn warn_skipped(path: &Path, outcome: &ParseOutcome) {
    if outcome.skipped_total > 0 {
        say!("warning: skipped {} invalid row(s) of {}:", outcome.skipped_total, path.display());
        for e in &outcome.skipped {
            say!("  {e}");
        }
        if outcome.skipped_total > outcome.skipped.len() as u64 {
            say!("  … and {} more", outcome.skipped_total - outcome.skipped.len() as u64);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lines read, rows skipped and their errors; or the error's text.
    type Outcome = Result<(u64, u64, Vec<String>), String>;

    /// Rows as `f` sees them (line, lengths, ids), and the outcome.
    fn collect(text: &[u8], opts: &ParseOptions, parallel: Option<(usize, usize)>) -> (Vec<String>, Outcome) {
        let mut rows = Vec::new();
        // Everything but the offset into the parser's id arena (each block has its own).
        let push = |row: &Row, ids: &[u64]| {
            let Row { input, output_length, timestamp, delay, session_id, rare, line, .. } = row;
            rows.push(format!(
                "{line} {input:?} {output_length:?} {timestamp:?} {delay:?} {session_id:?} {rare:?} {ids:?}"
            ));
        };
        let reader: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.to_vec()));
        let outcome = match parallel {
            Some((workers, block)) => read_in_blocks(reader, opts.clone(), workers, block, push),
            None => read_each(reader, opts.clone(), push),
        };
        let outcome = outcome
            .map(|o| (o.lines, o.skipped_total, o.skipped.iter().map(ToString::to_string).collect()))
            .map_err(|e| e.to_string());
        (rows, outcome)
    }

    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (0u64..5000, 1i64..900, 0u64..50, proptest::collection::vec(0u64..40, 0..6)).prop_map(|(t, i, o, ids)| {
                format!(r#"{{"timestamp":{t},"input_length":{i},"output_length":{o},"hash_ids":{ids:?}}}"#)
            }),
            1 => Just(String::new()),
            1 => Just("  ".to_string()),
            1 => Just(r#"{"timestamp":1,"input_length":-5}"#.to_string()),
            1 => Just("not json".to_string()),
            1 => Just("\u{feff}{\"input_length\":3}".to_string()),
            1 => Just("{\"input_length\":3}\r".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Blocks parsed on several threads give what one parser gives: rows in order with their
        /// line numbers, the same errors, the same limits.
        #[test]
        fn blocks_on_threads_read_like_one_parser(
            lines in proptest::collection::vec(line(), 0..40),
            final_newline in any::<bool>(),
            skip in any::<bool>(),
            workers in 1usize..4,
            block in 1usize..200,
            max_line in prop_oneof![Just(DEFAULT_MAX), 20usize..120],
            max_errors in 1usize..4,
        ) {
            let mut text = lines.join("\n");
            if final_newline && !lines.is_empty() {
                text.push('\n');
            }
            let mut opts = ParseOptions::new("t.jsonl").skip_invalid(skip).max_line_bytes(max_line);
            opts.max_errors = max_errors;
            let one = collect(text.as_bytes(), &opts, None);
            let many = collect(text.as_bytes(), &opts, Some((workers, block)));
            prop_assert_eq!(&one.1, &many.1);
            if one.1.is_ok() {
                prop_assert_eq!(one.0, many.0);
            }
            // The trace kept from blocks is the one read whole, ids and all.
            let kept = |parallel: bool| {
                let reader: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.clone().into_bytes()));
                let outcome = if parallel { read_kept_in_blocks(reader, opts.clone(), workers, block) } else { read(reader, opts.clone()) };
                outcome.map(|o| (o.trace, o.lines, o.skipped_total)).map_err(|e| e.to_string())
            };
            prop_assert_eq!(kept(false), kept(true));
        }
    }

    const DEFAULT_MAX: usize = aiperf_core::trace::DEFAULT_MAX_LINE_BYTES;

    #[test]
    fn a_read_error_names_the_lines_read_before_it() {
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::Error::other("disk gone"));
                }
                self.0 -= 1;
                let line = b"{\"input_length\":3}\n";
                buf[..line.len()].copy_from_slice(line);
                Ok(line.len())
            }
        }
        let reader: Box<dyn BufRead + Send> = Box::new(BufReader::with_capacity(64, Failing(3)));
        let err = read_in_blocks(reader, ParseOptions::new("t.jsonl"), 2, 1 << 20, |_, _| {}).unwrap_err();
        assert_eq!(err.to_string(), "t.jsonl: read error after line 3: disk gone");
    }
}
