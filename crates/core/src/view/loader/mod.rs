//! [`RunLoader`]: `profile_export.jsonl` read as its bytes arrive, each record added to the
//! run's aggregate and kept as a [`Point`]. The lines can instead be parsed apart (on another
//! thread) by a [`RecordReader`], whose [`RecordBatch`]es the loader [adds](RunLoader::add); or
//! the file read in two parts at once (`part`), the second part's loader [added](RunLoader::add_part).

mod part;

pub use part::{LoadedPart, RestOfFile};

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::error::RunError;
use super::run::{MAX_LINE_BYTES, NONE, Point, Run, opt, opt_ms};
use super::summary::RunSettings;
use crate::fork::{Fork, InTurn};
use crate::hashing::FastMap;
use crate::results::aggregate::{Aggregate, Pending};
use crate::results::line;
use crate::results::metrics::Metric;
use crate::results::record::RequestRecord;
use crate::results::timeline::{Metrics, Timeline};

/// Streaming reader of `profile_export.jsonl`: push bytes as they arrive, then [`finish`](Self::finish).
pub struct RunLoader {
    file: String,
    settings: RunSettings,
    partial: Vec<u8>,
    line: u64,
    aggregate: Aggregate,
    points: Vec<Point>,
    sessions: Vec<String>,
    session_index: FastMap<String, u32>,
    /// Hash of a correlation id (else session id) to its [`Point::instance`].
    instances: HashMap<u64, u32>,
    failures: Vec<(String, String)>,
    /// The record each line is parsed into (its allocations reused, see [`line::read_line`]).
    scratch: RequestRecord,
    /// Whether the bytes up to and including the next newline are skipped (the end of a line
    /// another loader reads: [`RestOfFile::loader`]).
    skipping: bool,
}

impl RunLoader {
    pub fn new(file: &str, settings: RunSettings) -> RunLoader {
        RunLoader {
            file: file.into(),
            settings,
            partial: Vec::new(),
            line: 0,
            aggregate: Aggregate::default(),
            points: Vec::new(),
            sessions: Vec::new(),
            session_index: FastMap::default(),
            instances: HashMap::new(),
            failures: Vec::new(),
            scratch: RequestRecord::default(),
            skipping: false,
        }
    }

    /// Records read so far.
    pub fn records(&self) -> usize {
        self.points.len()
    }

    /// Feeds the next bytes of the file.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), RunError> {
        if self.skipping {
            let Some(nl) = memchr::memchr(b'\n', bytes) else { return Ok(()) };
            bytes = &bytes[nl + 1..];
            self.skipping = false;
        }
        let mut partial = std::mem::take(&mut self.partial);
        let read = whole_lines(&mut partial, bytes, |raw| self.line(raw));
        self.partial = partial;
        read.map_err(|stop| stop.or_too_long(&self.file, self.line + 1))
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), RunError> {
        self.line += 1;
        let mut scratch = std::mem::take(&mut self.scratch);
        let read = parse_line(&self.file, self.line, raw, &mut scratch);
        if let Ok(true) = read {
            self.record(&scratch);
        }
        self.scratch = scratch;
        read.map(|_| ())
    }

    /// Adds the records a [`RecordReader`] parsed, in the file's order.
    pub fn add(&mut self, batch: &RecordBatch) {
        for r in batch.records() {
            self.record(r);
        }
    }

    fn record(&mut self, r: &RequestRecord) {
        let m = self.aggregate.add(r, self.settings.server_token_count, &self.settings.slos);
        let session = r.session_id.as_deref().map_or(NONE, |s| self.session_of(s));
        let instance = match r.correlation_id.as_deref().or(r.session_id.as_deref()) {
            Some(id) => {
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(id, &mut h);
                self.instance_of(std::hash::Hasher::finish(&h))
            }
            None => NONE,
        };
        let ttft_failed = (r.streaming && r.error.is_some())
            .then(|| r.chunk_ns.first().map(|&f| f.saturating_sub(r.sent_ns) as f64 / 1e6))
            .flatten();
        let get = |k: Metric| m.as_ref().and_then(|m| m.get(k));
        let error = match &r.error {
            Some(e) => {
                self.failures.push((e.kind.clone(), e.message.clone()));
                (self.failures.len() - 1) as u32
            }
            None => NONE,
        };
        let count = |k: Metric| get(k).map(|v| v as u64);
        self.points.push(Point {
            trace_line: r.trace_line,
            session_num: r.session_num,
            turn: r.turn,
            session,
            instance,
            scheduled_ns: r.scheduled_ns,
            sent_ns: r.sent_ns,
            end_ns: r.end_ns,
            ttft_ms: opt_ms(get(Metric::TimeToFirstToken).or(ttft_failed)),
            latency_ms: opt_ms(get(Metric::RequestLatency)),
            itl_ms: opt_ms(get(Metric::InterTokenLatency)),
            isl: opt(count(Metric::InputSequenceLength).or(r.input_tokens)),
            osl: opt(count(Metric::OutputSequenceLength)),
            cached: opt(r.usage.cached_tokens),
            expected_cached: opt(r.expected_cached_tokens),
            error,
        });
    }

    /// The number of session `s`, numbered in order of first appearance.
    fn session_of(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.session_index.get(s) {
            return i;
        }
        let i = self.sessions.len() as u32;
        self.sessions.push(s.to_owned());
        self.session_index.insert(s.to_owned(), i);
        i
    }

    /// The number of the instance whose id hashes to `hash`, numbered in order of first appearance.
    fn instance_of(&mut self, hash: u64) -> u32 {
        let next = self.instances.len() as u32;
        *self.instances.entry(hash).or_insert(next)
    }

    /// Reads the last line when the file does not end with a newline.
    fn finish_line(&mut self) -> Result<(), RunError> {
        if self.partial.is_empty() {
            return Ok(());
        }
        let last = std::mem::take(&mut self.partial);
        self.line(&last)
    }

    /// The run, once every byte was pushed.
    pub fn finish(self, label: &str) -> Result<Run, RunError> {
        self.finish_on(label, &InTurn)
    }

    /// [`finish`](Self::finish) with the report's parts given to `fork`
    /// ([`Aggregate::into_report_over_on`]).
    pub fn finish_on(self, label: &str, fork: &impl Fork) -> Result<Run, RunError> {
        Ok(self.finish_apart(label, fork, &[])?.complete(None))
    }

    /// [`finish_on`](Self::finish_on) but for the groups of the summary's time-weighted curves
    /// `apart`, which another worker computes meanwhile from [`RunLoader::curves_apart`]
    /// ([`Aggregate::into_report_apart`]); [`PendingRun::complete`] takes their figures.
    pub fn finish_apart(mut self, label: &str, fork: &impl Fork, apart: &[usize]) -> Result<PendingRun, RunError> {
        self.finish_line()?;
        if self.points.is_empty() {
            return Err(RunError::Empty { file: self.file });
        }
        let window = self.phase_window(self.aggregate.timeline.window());
        let adjusted = self
            .settings
            .network_rtt_ms
            .map(|ms| crate::results::network::adjusted_metrics(&self.aggregate, ms * 1e6))
            .unwrap_or_default();
        let (mut report, pending) =
            std::mem::take(&mut self.aggregate).into_report_apart(!self.settings.slos.is_empty(), window, fork, apart);
        report.metrics.extend(adjusted);
        Ok(PendingRun {
            pending,
            run: Run {
                label: label.into(),
                settings: self.settings,
                report,
                points: self.points,
                sessions: self.sessions,
                failures: self.failures,
                server: None,
                gpus: None,
                gpu_energy: Vec::new(),
            },
        })
    }

    /// The timeline and the summary's window as [`finish_apart`](Self::finish_apart) will see
    /// them, with the groups `apart`: what another worker needs to compute those groups while
    /// this one finishes. `None` before any record.
    pub fn curves_apart(&self, apart: &[usize]) -> Option<CurvesApart<'_>> {
        let records = self.aggregate.timeline.window();
        let window = self.phase_window(records).or(records)?;
        Some(CurvesApart {
            timeline: Cow::Borrowed(&self.aggregate.timeline),
            windows: vec![window],
            groups: apart.to_vec(),
        })
    }

    /// AIPerf's phase window from the run's summary file, when it holds every record (`records`:
    /// the records' own window; a summary written in another time zone than UTC, or one of
    /// ours, does not).
    fn phase_window(&self, records: Option<(u64, u64)>) -> Option<(u64, u64)> {
        self.settings.phase_window_ns.filter(|&(a, b)| records.is_some_and(|(first, last)| a <= first && last <= b))
    }
}

/// A run whose summary waits for the groups of curves computed apart
/// ([`RunLoader::finish_apart`]).
#[derive(Debug)]
pub struct PendingRun {
    run: Run,
    pending: Pending,
}

impl PendingRun {
    /// The run, its summary but its time-weighted metrics (its request counts, every
    /// distribution).
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// [`run`](Self::run), to add what the records do not hold (the server's metrics, GPUs).
    pub fn run_mut(&mut self) -> &mut Run {
        &mut self.run
    }

    /// The run, with `given` as the figures of the groups apart (as [`CurvesApart::compute`]
    /// gives them); `None`, or figures of another shape, and they are computed here.
    pub fn complete(self, given: Option<Vec<Metrics>>) -> Run {
        let PendingRun { mut run, pending } = self;
        pending.complete(&mut run.report, given);
        run
    }
}

/// What another worker needs to compute groups of a run's time-weighted curves: the timeline,
/// the windows and the groups (serialized to cross; owned once deserialized).
#[derive(Debug, Serialize, Deserialize)]
pub struct CurvesApart<'a> {
    pub timeline: Cow<'a, Timeline>,
    pub windows: Vec<(u64, u64)>,
    pub groups: Vec<usize>,
}

impl CurvesApart<'_> {
    /// The groups' figures, in their order ([`Timeline::groups_over`]).
    pub fn compute(&self) -> Vec<Metrics> {
        self.timeline.groups_over(&self.windows, &self.groups)
    }
}

impl Run {
    /// Reads a whole `profile_export.jsonl` text (see [`RunLoader`] for streaming).
    pub fn from_jsonl(label: &str, file: &str, text: &[u8], settings: RunSettings) -> Result<Run, RunError> {
        let mut l = RunLoader::new(file, settings);
        l.push(text)?;
        l.finish(label)
    }
}

/// The records of `profile_export.jsonl` parsed from its bytes as they arrive, in batches that a
/// [`RunLoader`] [adds](RunLoader::add): the same lines, records and errors as
/// [`RunLoader::push`], the parse apart from the run's aggregate.
#[derive(Debug, Default)]
pub struct RecordReader {
    file: String,
    partial: Vec<u8>,
    line: u64,
}

impl RecordReader {
    pub fn new(file: &str) -> RecordReader {
        RecordReader { file: file.into(), ..RecordReader::default() }
    }

    /// Parses every whole line of the next bytes into `batch` (after the records it holds).
    pub fn push(&mut self, bytes: &[u8], batch: &mut RecordBatch) -> Result<(), RunError> {
        let (file, line) = (&self.file, &mut self.line);
        let read = whole_lines(&mut self.partial, bytes, |raw| {
            *line += 1;
            batch.parse(file, *line, raw)
        });
        read.map_err(|stop| stop.or_too_long(&self.file, self.line + 1))
    }

    /// Parses the last line when the file does not end with a newline.
    pub fn finish(&mut self, batch: &mut RecordBatch) -> Result<(), RunError> {
        if self.partial.is_empty() {
            return Ok(());
        }
        let last = std::mem::take(&mut self.partial);
        self.line += 1;
        batch.parse(&self.file, self.line, &last)
    }
}

/// Records parsed in the file's order; cleared, a batch keeps their allocations for the next.
#[derive(Debug, Default)]
pub struct RecordBatch {
    /// The first `len` are this batch's records; the others are allocations kept for reuse.
    records: Vec<RequestRecord>,
    len: usize,
}

impl RecordBatch {
    pub fn records(&self) -> &[RequestRecord] {
        &self.records[..self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the batch, its records' allocations kept.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Parses line `line` into the next record (none for a blank line or a warm-up request).
    fn parse(&mut self, file: &str, line: u64, raw: &[u8]) -> Result<(), RunError> {
        if self.len == self.records.len() {
            self.records.push(RequestRecord::default());
        }
        if parse_line(file, line, raw, &mut self.records[self.len])? {
            self.len += 1;
        }
        Ok(())
    }
}

/// One line of `profile_export.jsonl` (line `line` of `file`) read into `into` (its allocations
/// reused): `Ok(false)` for a blank line or a warm-up request, else the record, or an error naming
/// the line and field.
fn parse_line(file: &str, line: u64, raw: &[u8], into: &mut RequestRecord) -> Result<bool, RunError> {
    line::read_line(raw, into).map_err(|e| {
        let reason = e.to_string();
        // serde names the field in its message ("missing field `sent_ns`"); point at it.
        let field = reason.split('`').nth(1).map_or("metadata", |f| f).to_string();
        RunError::Line { file: file.into(), line, field, reason }
    })
}

/// Why [`whole_lines`] stopped.
enum Stop {
    /// The error of a line.
    Line(RunError),
    /// The next line is longer than [`MAX_LINE_BYTES`].
    TooLong,
}

impl Stop {
    /// The error, where a line too long is line `next` of `file`.
    fn or_too_long(self, file: &str, next: u64) -> RunError {
        match self {
            Stop::Line(e) => e,
            Stop::TooLong => RunError::LineTooLong { file: file.into(), line: next, limit: MAX_LINE_BYTES },
        }
    }
}

/// Calls `each` with every whole line of `bytes` (without its newline), in order: `partial` holds
/// the start of a line from the bytes before and keeps the end of these, at most
/// [`MAX_LINE_BYTES`] in all.
fn whole_lines(
    partial: &mut Vec<u8>,
    mut bytes: &[u8],
    mut each: impl FnMut(&[u8]) -> Result<(), RunError>,
) -> Result<(), Stop> {
    while let Some(nl) = memchr::memchr(b'\n', bytes) {
        if partial.is_empty() {
            each(&bytes[..nl]).map_err(Stop::Line)?;
        } else {
            if partial.len() + nl > MAX_LINE_BYTES {
                return Err(Stop::TooLong);
            }
            let mut line = std::mem::take(partial);
            line.extend_from_slice(&bytes[..nl]);
            each(&line).map_err(Stop::Line)?;
        }
        bytes = &bytes[nl + 1..];
    }
    if partial.len() + bytes.len() > MAX_LINE_BYTES {
        return Err(Stop::TooLong);
    }
    partial.extend_from_slice(bytes);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::RunSettings;
    use super::super::tests::{jsonl, record};
    use super::*;
    use proptest::prelude::*;

    /// A file of `n` records with a blank line and, at `bad`, a line without `sent_ns`; its
    /// last newline kept or not; the bad line's number.
    fn file(n: u64, bad: Option<usize>, last_newline: bool) -> (Vec<u8>, Option<u64>) {
        let records: Vec<_> = (0..n).map(|i| record(i, i % 4 == 1)).collect();
        let (text, _) = jsonl(&records, true, &[]);
        let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        lines.insert(lines.len() / 2, b"  ");
        let bad = bad.map(|k| {
            let at = k % (lines.len() + 1);
            lines.insert(at, br#"{"metadata": {"turn": 1}}"#);
            at as u64 + 1
        });
        let mut out = lines.join(&b'\n');
        if last_newline {
            out.push(b'\n');
        }
        (out, bad)
    }

    /// The file pushed at the cuts into a [`RunLoader`].
    fn pushed(text: &[u8], cuts: &[usize]) -> Result<Run, RunError> {
        let mut l = RunLoader::new("f", RunSettings::default());
        let mut at = 0;
        for &c in cuts.iter().chain([&text.len()]) {
            l.push(&text[at..c])?;
            at = c;
        }
        l.finish("x")
    }

    /// The file parsed at the cuts by a [`RecordReader`], a batch per piece (one batch reused),
    /// its batches added to a [`RunLoader`].
    fn batched(text: &[u8], cuts: &[usize]) -> Result<Run, RunError> {
        let mut reader = RecordReader::new("f");
        let mut l = RunLoader::new("f", RunSettings::default());
        let mut batch = RecordBatch::default();
        let mut at = 0;
        for &c in cuts.iter().chain([&text.len()]) {
            reader.push(&text[at..c], &mut batch)?;
            l.add(&batch);
            batch.clear();
            at = c;
        }
        reader.finish(&mut batch)?;
        l.add(&batch);
        l.finish("x")
    }

    proptest! {
        /// Parsed apart and added, the records make the run (or the error) that pushing makes.
        #[test]
        fn batches_make_the_run_that_pushes_make(
            n in 1u64..40,
            bad in proptest::option::of(0usize..50),
            last_newline: bool,
            cuts in proptest::collection::vec(0usize..6000, 0..8),
        ) {
            let (text, bad) = file(n, bad, last_newline);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (text.len() + 1)).collect();
            cuts.sort_unstable();
            match (pushed(&text, &cuts), batched(&text, &cuts)) {
                (Ok(a), Ok(b)) => {
                    prop_assert!(bad.is_none());
                    prop_assert_eq!(a.points.len() as u64, n);
                    prop_assert_eq!(&a.report, &b.report);
                    // Debug, where NaN (no such metric) equals NaN.
                    prop_assert_eq!(format!("{:?}", a.points), format!("{:?}", b.points));
                    prop_assert_eq!(&a.sessions, &b.sessions);
                    prop_assert_eq!(&a.failures, &b.failures);
                }
                (Err(a), Err(b)) => {
                    prop_assert!(matches!(&a, RunError::Line { line, .. } if Some(*line) == bad), "{}", a);
                    prop_assert_eq!(a, b);
                }
                (a, b) => prop_assert!(false, "{:?} / {:?}", a.map(|r| r.points.len()), b.map(|r| r.points.len())),
            }
        }
    }

    #[test]
    fn a_line_too_long_is_named_by_both() {
        let (mut text, _) = file(3, None, true);
        let line = text.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        text.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES / 2));
        let mut l = RunLoader::new("f", RunSettings::default());
        let mut reader = RecordReader::new("f");
        let mut batch = RecordBatch::default();
        let half = vec![b' '; MAX_LINE_BYTES / 2 + 1];
        let want = RunError::LineTooLong { file: "f".into(), line, limit: MAX_LINE_BYTES };
        l.push(&text).unwrap();
        assert_eq!(l.push(&half), Err(want.clone()));
        reader.push(&text, &mut batch).unwrap();
        assert_eq!(batch.len(), 3);
        assert_eq!(reader.push(&half, &mut batch), Err(want));
    }
}
