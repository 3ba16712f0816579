//! Reading a trace in the worker: streamed from the page's file(s) with progress, converted from
//! its format, transformed, kept, then analysed.

use std::cell::RefCell;
use std::rc::Rc;

use aiperf_core::formats::settings::ConversionSettings;
use aiperf_core::formats::{FileOptions, Format};
use aiperf_core::trace::{ParseOptions, Trace};
use yew_agent::worker::{HandlerId, WorkerScope};

use super::files::{next_chunk, reader};
use super::model::{Inner, TraceWorker};
use crate::engine::{analysis_view, bad_rows};
use crate::ingest::{Ingest, Read};
use crate::protocol::{FileRef, FileSummary, FromWorker, Progress};
use crate::web::now_ms;

/// Progress is reported at most every this many bytes.
const PROGRESS_EVERY: u64 = 2 << 20;

/// The file(s) to read: `more` are merged after the first.
pub(super) struct Source {
    pub file: FileRef,
    pub name: String,
    pub size: u64,
    pub more: Vec<(FileRef, String)>,
}

pub(super) struct Load {
    pub inner: Rc<RefCell<Inner>>,
    pub scope: WorkerScope<TraceWorker>,
    pub id: HandlerId,
    pub generation: u64,
}

impl Load {
    fn current(&self) -> bool {
        self.inner.borrow().load_generation == self.generation
    }

    pub(super) async fn run(
        self,
        source: Source,
        block_size: u32,
        format: Option<String>,
        conversion: ConversionSettings,
    ) {
        let Source { file, name, size, more } = source;
        let file = &file;
        let t0 = now_ms();
        let transforms = conversion.transforms.clone();
        let result = match format.as_deref().map(|f| (f, Format::from_name(f))) {
            Some((f, None)) => Err(format!("unknown trace format {f:?} (accepted: {})", format_names())),
            Some((_, Some(f))) => self.read(file, &name, size, Some(f), &conversion, &more).await,
            None => self.read(file, &name, size, None, &conversion, &more).await,
        };
        if !self.current() {
            return;
        }
        let read = match result {
            Ok(o) => o,
            Err(message) => {
                self.scope.respond(self.id, FromWorker::LoadFailed { message, bad_rows: Vec::new(), bad_total: 0 });
                return;
            }
        };
        let (outcome, format, evidence, notes, has_prefix_info) = match read {
            Read::Mooncake(o) => {
                // A Mooncake trace without any hash id has no prefix information either.
                let ids = o.trace.rows().iter().any(|r| !o.trace.hash_ids(r).is_empty());
                (o, None, "Mooncake JSONL".to_string(), Vec::new(), ids)
            }
            Read::Converted { detection, converted } => {
                let c = *converted;
                let mut notes = c.notes;
                let s = &c.stats;
                notes.push(format!("converted {} of {} records", c.trace.len(), s.records));
                if s.failed_dropped > 0 {
                    notes.push(format!("{} failed rows dropped", s.failed_dropped));
                }
                if s.failed_kept > 0 {
                    notes.push(format!("{} failed rows kept", s.failed_kept));
                }
                if s.other_models > 0 {
                    notes.push(format!("{} rows of other models dropped", s.other_models));
                }
                let o = aiperf_core::trace::ParseOutcome {
                    trace: c.trace,
                    lines: s.records,
                    skipped: Vec::new(),
                    skipped_total: 0,
                };
                (o, Some(detection.format), detection.evidence, notes, c.has_prefix_info)
            }
        };
        let (mut outcome, mut notes) = (outcome, notes);
        let transformed = !transforms.is_identity();
        if transformed {
            match aiperf_core::formats::transform::apply(&outcome.trace, &transforms) {
                Ok((trace, r)) => {
                    notes.push(r.to_string());
                    outcome.trace = trace;
                }
                Err(e) => {
                    let msg = FromWorker::LoadFailed { message: e.to_string(), bad_rows: Vec::new(), bad_total: 0 };
                    self.scope.respond(self.id, msg);
                    return;
                }
            }
        }
        let bad = bad_rows(&outcome.skipped);
        if outcome.trace.is_empty() {
            let message = if outcome.skipped_total > 0 {
                format!("no valid row: all {} non-empty lines are invalid", outcome.skipped_total)
            } else {
                "the file holds no rows".to_string()
            };
            let msg = FromWorker::LoadFailed { message, bad_rows: bad, bad_total: outcome.skipped_total };
            self.scope.respond(self.id, msg);
            return;
        }
        let trace = Rc::new(outcome.trace);
        {
            let mut inner = self.inner.borrow_mut();
            inner.trace = Some(trace.clone());
            inner.name = name.clone();
            inner.converted = format.is_some() || transformed;
        }
        let summary = FileSummary {
            name,
            size,
            lines: outcome.lines,
            rows: trace.len() as u64,
            bad_rows: bad,
            bad_total: outcome.skipped_total,
            parse_ms: now_ms() - t0,
            format: format.unwrap_or(Format::Mooncake).name().to_string(),
            evidence,
            notes,
            has_prefix_info,
            downloadable: format.is_some() || transformed,
        };
        self.scope.respond(self.id, FromWorker::Loaded(summary));
        self.scope.respond(self.id, analyze(&trace, block_size));
    }

    /// Reads `file` (and the `more` files merged after it) into one trace.
    async fn read(
        &self,
        file: &FileRef,
        name: &str,
        size: u64,
        format: Option<Format>,
        conversion: &ConversionSettings,
        more: &[(FileRef, String)],
    ) -> Result<Read, String> {
        let convert = conversion.options.clone();
        let mut ingest = Ingest::new(ParseOptions::new(name).skip_invalid(true), format).convert_options(convert);
        if !more.is_empty() {
            let place = FileOptions {
                source: name.into(),
                format: format.unwrap_or(Format::Weka),
                start_offset_ms: conversion.file_offset_ms(0),
                conversation_prefix: "0:".into(),
            };
            ingest = ingest.first_file(place);
        }
        let mut reported = 0;
        self.stream(file, &mut ingest, size, &mut reported).await?;
        for (k, (file, name)) in more.iter().enumerate() {
            let k = k + 1;
            let place = FileOptions {
                source: name.as_str().into(),
                format: format.unwrap_or(Format::Weka),
                start_offset_ms: conversion.file_offset_ms(k),
                conversation_prefix: format!("{k}:"),
            };
            ingest = ingest
                .next_file(ParseOptions::new(name.as_str()), place)
                .map_err(|e| e.0)?
                .map_err(|e| e.to_string())?;
            self.stream(file, &mut ingest, size, &mut reported).await?;
        }
        ingest.finish().map_err(|e| e.0)?.map_err(|e| e.to_string())
    }

    async fn stream(&self, file: &FileRef, ingest: &mut Ingest, size: u64, reported: &mut u64) -> Result<(), String> {
        let reader = reader(file)?;
        let mut buf = Vec::new();
        loop {
            let more = next_chunk(&reader, &mut buf).await?;
            if !self.current() {
                let _ = reader.cancel();
                return Err("superseded".into());
            }
            if !more {
                return Ok(());
            }
            ingest.push(&buf).map_err(|e| e.0)?;
            if ingest.bytes() - *reported >= PROGRESS_EVERY {
                *reported = ingest.bytes();
                let (rows, invalid) = ingest.counts();
                let p = Progress { bytes: *reported, total: size, rows: rows as u64, invalid };
                self.scope.respond(self.id, FromWorker::Progress(p));
            }
        }
    }
}

fn format_names() -> String {
    Format::ALL.iter().filter(|f| !f.is_columnar()).map(|f| f.name()).collect::<Vec<_>>().join(", ")
}

/// The analysis of `trace`, timed.
pub(super) fn analyze(trace: &Trace, block_size: u32) -> FromWorker {
    let t0 = now_ms();
    let mut view = analysis_view(trace, block_size);
    view.compute_ms = now_ms() - t0;
    FromWorker::Analysis(Box::new(view))
}
