//! [`RunLoader`]: `profile_export.jsonl` read as its bytes arrive, each record added to the
//! run's aggregate and kept as a [`Point`].

use std::collections::HashMap;

use super::error::RunError;
use super::run::{MAX_LINE_BYTES, NONE, Point, Run, opt, opt_ms};
use super::summary::RunSettings;
use crate::fork::{Fork, InTurn};
use crate::hashing::FastMap;
use crate::results::aggregate::Aggregate;
use crate::results::line;
use crate::results::metrics::Metric;
use crate::results::record::RequestRecord;

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
        }
    }

    /// Records read so far.
    pub fn records(&self) -> usize {
        self.points.len()
    }

    /// Feeds the next bytes of the file.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), RunError> {
        while let Some(nl) = memchr::memchr(b'\n', bytes) {
            if self.partial.is_empty() {
                self.line(&bytes[..nl])?;
            } else {
                self.check_len(nl)?;
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&bytes[..nl]);
                self.line(&line)?;
            }
            bytes = &bytes[nl + 1..];
        }
        self.check_len(bytes.len())?;
        self.partial.extend_from_slice(bytes);
        Ok(())
    }

    fn check_len(&self, more: usize) -> Result<(), RunError> {
        if self.partial.len() + more > MAX_LINE_BYTES {
            return Err(RunError::LineTooLong { file: self.file.clone(), line: self.line + 1, limit: MAX_LINE_BYTES });
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), RunError> {
        self.line += 1;
        let mut scratch = std::mem::take(&mut self.scratch);
        let read = line::read_line(raw, &mut scratch).map_err(|e| {
            let reason = e.to_string();
            // serde names the field in its message ("missing field `sent_ns`"); point at it.
            let field = reason.split('`').nth(1).map_or("metadata", |f| f).to_string();
            RunError::Line { file: self.file.clone(), line: self.line, field, reason }
        });
        if let Ok(true) = read {
            self.record(&scratch);
        }
        self.scratch = scratch;
        read.map(|_| ())
    }

    fn record(&mut self, r: &RequestRecord) {
        let m = self.aggregate.add(r, self.settings.server_token_count, &self.settings.slos);
        let session = match &r.session_id {
            Some(s) => match self.session_index.get(s) {
                Some(&i) => i,
                None => {
                    let i = self.sessions.len() as u32;
                    self.sessions.push(s.clone());
                    self.session_index.insert(s.clone(), i);
                    i
                }
            },
            None => NONE,
        };
        let instance = match r.correlation_id.as_deref().or(r.session_id.as_deref()) {
            Some(id) => {
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(id, &mut h);
                let next = self.instances.len() as u32;
                *self.instances.entry(std::hash::Hasher::finish(&h)).or_insert(next)
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

    /// The run, once every byte was pushed.
    pub fn finish(self, label: &str) -> Result<Run, RunError> {
        self.finish_on(label, &InTurn)
    }

    /// [`finish`](Self::finish) with the report's parts given to `fork`
    /// ([`Aggregate::into_report_over_on`]).
    pub fn finish_on(mut self, label: &str, fork: &impl Fork) -> Result<Run, RunError> {
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            self.line(&last)?;
        }
        if self.points.is_empty() {
            return Err(RunError::Empty { file: self.file });
        }
        // AIPerf's phase window, when it holds every record (a summary written in another time
        // zone than UTC, or one of ours, does not).
        let window = self
            .settings
            .phase_window_ns
            .filter(|&(a, b)| self.aggregate.timeline.window().is_some_and(|(first, last)| a <= first && last <= b));
        let adjusted = self
            .settings
            .network_rtt_ms
            .map(|ms| crate::results::network::adjusted_metrics(&self.aggregate, ms * 1e6))
            .unwrap_or_default();
        let mut report =
            std::mem::take(&mut self.aggregate).into_report_over_on(!self.settings.slos.is_empty(), window, fork);
        report.metrics.extend(adjusted);
        Ok(Run {
            label: label.into(),
            settings: self.settings,
            report,
            points: self.points,
            sessions: self.sessions,
            failures: self.failures,
            server: None,
            gpus: None,
            gpu_energy: Vec::new(),
        })
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
