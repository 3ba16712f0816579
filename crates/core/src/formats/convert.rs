//! Converting production records into one trace: [`Converter`] takes the lines (or documents) of
//! one or more files, each format's adapter writes its records into a [`Sink`], and the converter
//! orders, re-blocks and counts them.

use std::sync::Arc;

use super::error::FormatError;
use super::format::Format;
use super::options::{Arrivals, ConvertOptions};
use super::parsed::{Parsed, ParsedDocument, ParsedLine, parse_document, parse_line};
use super::sink::{ConvertStats, FileOptions, Output, Sink, per_block};
use super::{azure, bailian, burstgpt, servegen, weka};
use crate::trace::{Number, Trace};

/// A converted trace with what the conversion invented, dropped and found.
#[derive(Clone, Debug, PartialEq)]
pub struct Converted {
    pub trace: Trace,
    pub stats: ConvertStats,
    /// One line per thing the user should know: the format variant, and what was invented
    /// (arrivals, output lengths) or is missing (prefix information).
    pub notes: Vec<String>,
    /// False when no source had prefix hashes: the trace carries no `hash_ids` at all.
    pub has_prefix_info: bool,
}

/// Format-specific state of the file being read.
#[derive(Debug)]
enum State {
    Bailian(bailian::State),
    ServeGen(servegen::State),
    Azure(azure::State),
    BurstGpt(burstgpt::State),
    Weka(Weka),
}

/// A WEKA file: its lines so far, the parts of its document converted so far, or the note of
/// its document, converted.
#[derive(Debug)]
enum Weka {
    Lines(String),
    Parts(weka::Progress),
    Done(String),
}

#[derive(Debug)]
struct Current {
    opts: FileOptions,
    namespace: u64,
    first_row: usize,
    line: u64,
    state: State,
}

/// Incremental converter: `start_file`, then `push_line` for each line, `end_file`; repeat for
/// more files; then [`Converter::finish`].
#[derive(Debug)]
pub struct Converter {
    opts: ConvertOptions,
    out: Output,
    notes: Vec<String>,
    current: Option<Current>,
    /// The hash ids of the line being read (a buffer kept from line to line).
    ids: Vec<u64>,
}

impl Converter {
    pub fn new(opts: ConvertOptions) -> Result<Self, FormatError> {
        if opts.block_size == 0 {
            return Err(FormatError::Options("the block size must be at least 1".into()));
        }
        if let Arrivals::Rate { per_second } = opts.arrivals
            && !(per_second.is_finite() && per_second > 0.0)
        {
            return Err(FormatError::Options(format!("the arrival rate must be a positive number, got {per_second}")));
        }
        Ok(Converter { opts, out: Output::default(), notes: Vec::new(), current: None, ids: Vec::new() })
    }

    /// Begins a file (ending the previous one if it was not ended).
    pub fn start_file(&mut self, file: FileOptions) -> Result<(), FormatError> {
        self.end_file()?;
        let state = match file.format {
            Format::Mooncake => {
                return Err(FormatError::Options(format!(
                    "{}: a Mooncake trace needs no conversion; read it with the trace parser",
                    file.source
                )));
            }
            Format::Bailian => State::Bailian(bailian::State::default()),
            Format::ServeGen => State::ServeGen(servegen::State::default()),
            Format::Azure => State::Azure(azure::State::default()),
            Format::BurstGpt => State::BurstGpt(burstgpt::State::default()),
            Format::Weka => State::Weka(Weka::Lines(String::new())),
            Format::Baseten => {
                return Err(FormatError::Options(format!(
                    "{}: a Baseten trace is a Parquet file, read by aiperf-cli (convert-trace turns it into Mooncake JSONL)",
                    file.source
                )));
            }
        };
        if let Some(src) = file.format.source_block_size() {
            self.per_block(&file.source, src)?;
        }
        let namespace = self.out.reblock.namespace();
        self.current = Some(Current { opts: file, namespace, first_row: self.out.trace.len(), line: 0, state });
        Ok(())
    }

    fn per_block(&self, file: &Arc<str>, source: u32) -> Result<usize, FormatError> {
        per_block(file, source, self.opts.block_size)
    }

    /// Reads the next line of the current file (without its terminator; a trailing `\r` is ignored).
    pub fn push_line(&mut self, line: &str) -> Result<(), FormatError> {
        let Some(cur) = self.current.as_mut() else {
            return Err(FormatError::Options("push_line before start_file".into()));
        };
        if cur.opts.format.parses_lines_apart() {
            let mut ids = std::mem::take(&mut self.ids);
            ids.clear();
            let parsed = parse_line(cur.opts.format, &cur.opts.source, cur.line + 1, line, &mut ids);
            let result = parsed.and_then(|p| self.push_parsed(p, &ids));
            self.ids = ids;
            return result;
        }
        cur.line += 1;
        let text = line.strip_suffix('\r').unwrap_or(line);
        let mut sink = Sink::new(&cur.opts, cur.namespace, &self.opts, &mut self.out);
        match &mut cur.state {
            State::Weka(Weka::Lines(buf)) => {
                buf.push_str(text);
                buf.push('\n');
                Ok(())
            }
            State::Weka(Weka::Parts(_) | Weka::Done(_)) => Err(already_read(&cur.opts.source)),
            _ if text.trim().is_empty() => Ok(()),
            State::Bailian(_) | State::ServeGen(_) => Err(FormatError::Options("a line read apart".into())),
            State::Azure(s) => s.line(&mut sink, cur.line, text),
            State::BurstGpt(s) => s.line(&mut sink, cur.line, text),
        }
    }

    /// Takes the next line of the current file, parsed on its own by [`parse_line`] (possibly on
    /// another thread): the same as [`Converter::push_line`] with that line's text.
    pub fn push_parsed(&mut self, parsed: ParsedLine, ids: &[u64]) -> Result<(), FormatError> {
        let Some(cur) = self.current.as_mut() else {
            return Err(FormatError::Options("push_parsed before start_file".into()));
        };
        cur.line += 1;
        let mut sink = Sink::new(&cur.opts, cur.namespace, &self.opts, &mut self.out);
        match (&mut cur.state, parsed.0) {
            (_, Parsed::Blank) => Ok(()),
            (State::Bailian(s), Parsed::Bailian(raw, r)) => s.row(&mut sink, cur.line, raw, ids.get(r).unwrap_or(&[])),
            (State::ServeGen(s), Parsed::ServeGen(raw, r)) => {
                s.row(&mut sink, cur.line, raw, ids.get(r).unwrap_or(&[]))
            }
            _ => Err(FormatError::Options(format!("{}: a line parsed as another format", cur.opts.source))),
        }
    }

    /// Reads ahead for `lines` (parsed by [`parse_line`], their ids in `ids`) about to be pushed
    /// by [`Converter::push_parsed`]: the re-blocking table's entries for their blocks are
    /// loaded together, so that their cache misses overlap instead of coming one by one. A hint:
    /// the conversion is the same without it.
    pub fn prefetch(&mut self, lines: &[ParsedLine], ids: &[u64]) {
        let Some(cur) = self.current.as_ref() else { return };
        // Both formats read apart have 16-token source blocks.
        let Ok(per_block) = per_block(&cur.opts.source, 16, self.opts.block_size) else { return };
        let sources = lines.iter().filter_map(|l| match &l.0 {
            Parsed::Bailian(_, r) | Parsed::ServeGen(_, r) => ids.get(r.clone()),
            Parsed::Blank => None,
        });
        self.out.reblock.touch_rows(cur.namespace, per_block, sources);
        if let State::Bailian(s) = &cur.state {
            s.touch(lines.iter().filter_map(|l| match &l.0 {
                Parsed::Bailian(raw, _) => Some(raw),
                _ => None,
            }));
        }
    }

    /// Reads the whole (rest of the) current file at once: the same as [`Converter::push_line`]
    /// for each of its lines (a final line end is optional), and faster for a document format
    /// (WEKA), whose document is converted here rather than at [`Converter::end_file`].
    pub fn push_document(&mut self, text: &str) -> Result<(), FormatError> {
        let Some(cur) = self.current.as_ref() else {
            return Err(FormatError::Options("push_document before start_file".into()));
        };
        if matches!(&cur.state, State::Weka(Weka::Lines(buf)) if buf.is_empty()) {
            let parsed = parse_document(Format::Weka, &cur.opts.source, text)?;
            return self.push_parsed_document(parsed);
        }
        if text.is_empty() {
            return Ok(());
        }
        for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            self.push_line(line)?;
        }
        Ok(())
    }

    /// Takes the current file's document, or its next part, read on its own by
    /// [`parse_document`] or a [`DocumentReader`](super::DocumentReader) (possibly on another thread): the same as
    /// [`Converter::push_document`] with its text once the last part is in.
    pub fn push_parsed_document(&mut self, parsed: ParsedDocument) -> Result<(), FormatError> {
        let Some(cur) = self.current.as_mut() else {
            return Err(FormatError::Options("push_parsed_document before start_file".into()));
        };
        let mut progress = match &mut cur.state {
            State::Weka(Weka::Lines(buf)) if buf.is_empty() => weka::Progress::default(),
            State::Weka(Weka::Parts(p)) => std::mem::take(p),
            State::Weka(_) => return Err(already_read(&cur.opts.source)),
            _ => return Err(FormatError::Options(format!("{}: a document parsed as another format", cur.opts.source))),
        };
        let mut sink = Sink::new(&cur.opts, cur.namespace, &self.opts, &mut self.out);
        let note = weka::convert(&mut sink, &mut progress, parsed.0)?;
        cur.state = State::Weka(note.map_or(Weka::Parts(progress), Weka::Done));
        Ok(())
    }

    /// Ends the current file: resolves what needs the whole file and places it on the merged clock.
    pub fn end_file(&mut self) -> Result<(), FormatError> {
        let Some(cur) = self.current.take() else { return Ok(()) };
        let mut sink = Sink::new(&cur.opts, cur.namespace, &self.opts, &mut self.out);
        let note = match cur.state {
            State::Bailian(s) => s.end(&mut sink, cur.first_row),
            State::ServeGen(s) => s.end(&mut sink),
            State::Azure(s) => s.end(),
            State::BurstGpt(s) => s.end(),
            State::Weka(Weka::Lines(text)) => {
                let parsed = weka::parse(&cur.opts.source, &text);
                weka::convert(&mut sink, &mut weka::Progress::default(), parsed)?
                    .ok_or_else(|| cut_short(&cur.opts.source))
            }
            State::Weka(Weka::Parts(_)) => Err(cut_short(&cur.opts.source)),
            State::Weka(Weka::Done(note)) => Ok(note),
        }?;
        self.notes.push(format!("{}: {note}", cur.opts.source));
        let times = &mut self.out.times[cur.first_row..];
        let offset = i64::try_from(cur.opts.start_offset_ms).ok().and_then(|ms| ms.checked_mul(1_000_000));
        let offset = offset.ok_or_else(|| FormatError::Options("the start offset is too large".into()))?;
        if let Some(&min) = times.iter().min() {
            for t in times {
                *t = (*t - min).saturating_add(offset);
            }
        }
        Ok(())
    }

    /// Rows converted so far.
    pub fn rows(&self) -> usize {
        self.out.trace.len()
    }

    /// The merged trace: integer ms from the first row, rows in time order (stable).
    pub fn finish(self) -> Result<Converted, FormatError> {
        let (mut done, order) = self.finish_unordered()?;
        done.trace = done.trace.reordered(order.as_deref());
        Ok(done)
    }

    /// [`Converter::finish`] without moving the rows: each row has its time, the rows stay in
    /// the order they were converted, and the positions that put them in time order (stable)
    /// come along, `None` when they are in it already. For writing them in that order without a
    /// second copy of a million rows.
    pub fn finish_unordered(mut self) -> Result<(Converted, Option<Vec<usize>>), FormatError> {
        self.end_file()?;
        let out = std::mem::take(&mut self.out);
        let min = out.times.iter().copied().min().unwrap_or(0);
        let ms: Vec<i64> = out.times.iter().map(|&t| (t - min).saturating_add(500_000) / 1_000_000).collect();
        let mut trace = out.trace;
        set_times(&mut trace, &ms);
        let order = (!ms.windows(2).all(|w| w[0] <= w[1])).then(|| {
            let mut order: Vec<usize> = (0..ms.len()).collect();
            order.sort_by_key(|&i| ms[i]);
            order
        });
        if !out.has_prefix_info {
            self.notes.push("no prefix information: no source has hash ids, so rows carry none".into());
        }
        Ok((Converted { trace, stats: out.stats, notes: self.notes, has_prefix_info: out.has_prefix_info }, order))
    }
}

fn set_times(trace: &mut Trace, ms: &[i64]) {
    for (row, &t) in trace.rows_mut().iter_mut().zip(ms) {
        row.timestamp = Some(Number::Int(t));
    }
}

/// A document whose last part never came.
fn cut_short(source: &Arc<str>) -> FormatError {
    FormatError::Options(format!("{source}: the WEKA document ended before its last part"))
}

/// A document pushed after (part of) its file was already read.
fn already_read(source: &Arc<str>) -> FormatError {
    FormatError::Options(format!("{source}: the WEKA document was already read (one document per file)"))
}
