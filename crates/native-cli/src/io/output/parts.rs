//! Output formatted in parts on worker threads and written in order as the parts come, so that
//! formatting (and producing) overlaps the writing and the whole text is never held in memory.

use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc;

use aiperf_core::trace::{Trace, write_rows};
use anyhow::Result;

use super::write::write_output_with;

/// Writes `trace` to `path` as Mooncake JSONL (as [`write_output`] writes bytes). Parts of rows
/// are formatted on worker threads and written in order as they come, so formatting overlaps the
/// writing and the whole text is never held in memory at once.
pub fn write_trace_file(path: &Path, trace: &Trace) -> Result<()> {
    write_trace_file_in(path, trace, None)
}

/// [`write_trace_file`] with the rows at positions `order`, in that order (all, in theirs: `None`).
pub fn write_trace_file_in(path: &Path, trace: &Trace, order: Option<&[usize]>) -> Result<()> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    write_output_with(path, |w| write_trace_parts(w, trace, order, workers, PART_ROWS))
}

/// Rows formatted at a time by one thread (a few MB of text).
const PART_ROWS: usize = 16 << 10;

/// [`write_trace_file_in`]'s writing: part `k` is positions `k × part_rows ..` of `order`, or of
/// the rows (see [`write_parts`]).
fn write_trace_parts(
    w: &mut dyn Write,
    trace: &Trace,
    order: Option<&[usize]>,
    workers: usize,
    part_rows: usize,
) -> io::Result<()> {
    let part_rows = part_rows.max(1);
    let n = order.map_or(trace.len(), <[usize]>::len);
    write_parts(w, n.div_ceil(part_rows), workers, |buf, k| {
        let at = k * part_rows..((k + 1) * part_rows).min(n);
        match order {
            Some(order) => write_rows(buf, trace, order[at].iter().copied()),
            None => write_rows(buf, trace, at),
        }
    })
}

/// Writes to `path` (as [`write_output`] writes bytes) the texts `format` appends for parts
/// `0..parts`, in order: formatted on worker threads and written as they come (see
/// [`write_parts`]).
pub fn write_parts_file(path: &Path, parts: usize, format: impl Fn(&mut String, usize) + Sync) -> Result<()> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    write_output_with(path, |w| write_parts(w, parts, workers, format))
}

/// Part `k` (the text `format` appends for it) is formatted by worker `k mod workers`, each
/// worker a part ahead at most, and its buffer comes back to it once written, so formatting
/// overlaps the writing and the whole text is never held in memory at once.
fn write_parts(
    w: &mut dyn Write,
    parts: usize,
    workers: usize,
    format: impl Fn(&mut String, usize) + Sync,
) -> io::Result<()> {
    if workers <= 1 || parts <= 1 {
        let mut buf = String::new();
        for k in 0..parts {
            buf.clear();
            format(&mut buf, k);
            w.write_all(buf.as_bytes())?;
        }
        return Ok(());
    }
    let format = &format;
    std::thread::scope(|scope| {
        let mut links = Vec::with_capacity(workers);
        for first in 0..workers {
            let (part_tx, part_rx) = mpsc::sync_channel::<String>(1);
            let (back_tx, back_rx) = mpsc::channel::<String>();
            scope.spawn(move || {
                for k in (first..parts).step_by(workers) {
                    let mut buf = back_rx.try_recv().unwrap_or_default();
                    buf.clear();
                    format(&mut buf, k);
                    if part_tx.send(buf).is_err() {
                        return;
                    }
                }
            });
            links.push((part_rx, back_tx));
        }
        // On an error the receivers are dropped on return, which stops the workers' next send.
        for k in 0..parts {
            let (part_rx, back_tx) = &links[k % workers];
            let buf = part_rx.recv().map_err(|_| io::Error::other("a formatting thread stopped"))?;
            w.write_all(buf.as_bytes())?;
            let _ = back_tx.send(buf);
        }
        Ok(())
    })
}

/// The producer's end of [`write_produced`]: parts go to the formatting threads, and parts
/// already written come back to be filled again.
pub struct PartSender<P> {
    to: Vec<mpsc::SyncSender<P>>,
    back: mpsc::Receiver<P>,
    sent: usize,
}

impl<P> PartSender<P> {
    /// Hands the next part on; `false` once the writing stopped (an error), when producing
    /// should stop too.
    pub fn send(&mut self, part: P) -> bool {
        let k = self.sent;
        self.sent += 1;
        self.to[k % self.to.len()].send(part).is_ok()
    }

    /// A part already written, to be filled again, if one came back.
    pub fn reuse(&self) -> Option<P> {
        self.back.try_recv().ok()
    }
}

/// Writes to `w` the texts `format` appends for the parts `produce` hands to its [`PartSender`],
/// in order: `produce` runs on a thread of its own, part `k` is formatted by worker `k mod
/// workers`, and the parts are written as they come, so producing, formatting and writing
/// overlap and a few parts at a time are held in memory. `produce` returns whether every part
/// was produced; when it returns an error the writing stops with it.
pub fn write_produced<P: Send>(
    w: &mut dyn Write,
    workers: usize,
    produce: impl FnOnce(&mut PartSender<P>) -> io::Result<()> + Send,
    format: impl Fn(&mut String, &P) + Sync,
) -> io::Result<()> {
    let workers = workers.max(1);
    let format = &format;
    std::thread::scope(|scope| {
        let (recycle_tx, recycle_rx) = mpsc::channel::<P>();
        let mut to = Vec::with_capacity(workers);
        let mut links = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (part_tx, part_rx) = mpsc::sync_channel::<P>(1);
            let (text_tx, text_rx) = mpsc::sync_channel::<(String, P)>(1);
            let (back_tx, back_rx) = mpsc::channel::<String>();
            scope.spawn(move || {
                for part in part_rx {
                    let mut buf = back_rx.try_recv().unwrap_or_default();
                    buf.clear();
                    format(&mut buf, &part);
                    if text_tx.send((buf, part)).is_err() {
                        return;
                    }
                }
            });
            to.push(part_tx);
            links.push((text_rx, back_tx));
        }
        let producer = scope.spawn(move || produce(&mut PartSender { to, back: recycle_rx, sent: 0 }));
        // The workers' channels close once the producer returned and they formatted what it sent;
        // on an error here the receivers are dropped on return, which stops their next send.
        let mut k = 0;
        while let Ok((buf, part)) = links[k % workers].0.recv() {
            w.write_all(buf.as_bytes())?;
            let _ = links[k % workers].1.send(buf);
            let _ = recycle_tx.send(part);
            k += 1;
        }
        producer.join().map_err(|_| io::Error::other("the producing thread stopped"))?
    })
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A trace of `n` rows of varied shapes (ids, sessions, escapes in strings).
    pub(crate) fn trace_of(n: usize) -> Trace {
        let text: String = (0..n)
            .map(|i| match i % 3 {
                0 => format!("{{\"timestamp\":{i},\"input_length\":{},\"hash_ids\":[{i},{}]}}\n", i * 7, i + 1),
                1 => {
                    format!("{{\"session_id\":\"s\\\"{i}\",\"delay\":1.5,\"input_length\":3,\"output_length\":{i}}}\n")
                }
                _ => format!("{{\"timestamp\":{i},\"text_input\":\"t\\n{i}\"}}\n"),
            })
            .collect();
        aiperf_core::trace::parse_str(&text, aiperf_core::trace::ParseOptions::default()).unwrap().trace
    }

    /// A writer that fails once it has taken `left` bytes.
    struct FailAfter {
        left: usize,
        got: Vec<u8>,
    }

    impl Write for FailAfter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.left == 0 {
                return Err(io::Error::other("disk full"));
            }
            let n = buf.len().min(self.left);
            self.left -= n;
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn trace_parts_written_on_threads_join_to_the_whole_text() {
        for n in [0, 1, 2, 5, 17, 100] {
            let trace = trace_of(n);
            let whole = aiperf_core::trace::write_trace(&trace);
            for workers in [0, 1, 2, 3, 4] {
                for part_rows in [0, 1, 2, 7, 1000] {
                    let mut out = Vec::new();
                    write_trace_parts(&mut out, &trace, None, workers, part_rows).unwrap();
                    assert_eq!(String::from_utf8(out).unwrap(), whole, "{n} rows, {workers} workers, {part_rows}");
                    // The rows in another order: as the trace moved into it.
                    let order: Vec<usize> = (0..n).rev().filter(|k| k % 4 != 1).collect();
                    let mut out = Vec::new();
                    write_trace_parts(&mut out, &trace, Some(&order), workers, part_rows).unwrap();
                    let moved = aiperf_core::trace::write_trace(&trace.clone().reordered(Some(&order)));
                    assert_eq!(String::from_utf8(out).unwrap(), moved, "{n} rows in another order");
                }
            }
        }
    }

    #[test]
    fn a_failing_writer_stops_the_parts_and_returns_its_error() {
        let trace = trace_of(500);
        let whole = aiperf_core::trace::write_trace(&trace);
        for left in [0, 1, 100, whole.len() / 2, whole.len() - 1] {
            for workers in [1, 2, 4] {
                let mut out = FailAfter { left, got: Vec::new() };
                let e = write_trace_parts(&mut out, &trace, None, workers, 3).unwrap_err();
                assert_eq!(e.to_string(), "disk full");
                assert_eq!(out.got, whole.as_bytes()[..left]);
            }
        }
    }
}
