//! The records stage, on its own thread: counts output tokens (off the I/O workers), checks
//! `max_tokens`, masks secrets a server echoed back, computes each request's metrics, aggregates
//! them and writes the request's line to `profile_export.jsonl`; each batch is flushed before the
//! thread pauses (at most a millisecond after a request ends), so nothing measured is lost if the
//! run is stopped.

use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::line::record_line;
use aiperf_core::results::metrics::Slo;
use aiperf_core::results::record::RecordError;
use aiperf_core::results::timeslices::Slicer;
use anyhow::{Context, Result};

use super::plan::model::TokenCounting;
use super::prompt::PromptBuilder;
use super::request::Finished;
use super::transport::RawCapture;
use aiperf_core::results::raw::{RawExchange, Responses};

/// Pause between batches of records under load.
const BATCH_PAUSE: Duration = Duration::from_millis(1);

/// What the records stage needs.
pub struct RecordsStage {
    pub counting: TokenCounting,
    pub prompts: Arc<PromptBuilder>,
    pub slos: Vec<Slo>,
    /// Values masked in error messages before they are written.
    pub secrets: Vec<String>,
    pub out: Box<dyn Write + Send>,
    pub progress: super::progress::Progress,
    /// `--slice-duration`: the records also go to their time slice.
    pub slicer: Option<Slicer>,
    /// The run's time zero on the wall clock (ns since the Unix epoch), for AIPerf's times.
    pub t0_unix_ns: u64,
    /// `--export-http-trace`: each line also has the record's `trace_data`.
    pub http_trace: bool,
    /// `--export-level raw`: `profile_export_raw.jsonl`, a line per record as it completes.
    pub raw_out: Option<Box<dyn Write + Send>>,
}

/// What the records stage hands to the exports.
#[derive(Debug, Default)]
pub struct Collected {
    pub aggregate: Aggregate,
    /// The TTFT a mock server said it was programmed with.
    pub mock_ttft_ms: Option<f64>,
    pub records: u64,
    pub slices: Option<Slicer>,
}

impl RecordsStage {
    /// Processes records until every sender is gone.
    pub fn run(mut self, rx: Receiver<Finished>) -> Result<Collected> {
        let mut c = Collected::default();
        let server_first = self.counting.server_first();
        let mut busy = false;
        let masks = if self.raw_out.is_some() { raw_masks(&self.secrets) } else { Vec::new() };
        loop {
            // Under load, drain in batches a millisecond apart: while this thread sleeps instead
            // of waiting on the channel, a finishing request's send wakes nobody, so no context
            // switch per record competes with pacing. When idle, wait on the channel.
            let f = match rx.try_recv() {
                Ok(f) => f,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) if busy => {
                    // The batch is written: its lines reach the file before this thread pauses.
                    self.flush()?;
                    busy = false;
                    self.progress.update(&c.aggregate, c.records);
                    std::thread::sleep(BATCH_PAUSE);
                    continue;
                }
                Err(TryRecvError::Empty) => match rx.recv_timeout(self.progress.due_in()) {
                    Ok(f) => f,
                    Err(RecvTimeoutError::Timeout) => {
                        self.progress.update(&c.aggregate, c.records);
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                },
            };
            busy = true;
            let Finished { mut record, text, mock_ttft_ms, raw } = f;
            let skip_client = self.counting == TokenCounting::ServerOnly && record.usage.completion_tokens.is_some();
            if !skip_client {
                if !text.is_empty() {
                    record.output_tokens = self.prompts.count(&text).ok();
                } else if record.error.is_none() {
                    record.output_tokens = Some(0);
                }
            }
            if record.error.is_none()
                && let Some(max) = record.max_tokens
            {
                let produced = record.usage.completion_tokens.or(record.output_tokens).unwrap_or(0);
                if produced > max {
                    record.error = Some(RecordError {
                        kind: "max_tokens_exceeded".into(),
                        message: format!("the server produced {produced} tokens for max_tokens {max}"),
                    });
                }
            }
            if let Some(e) = record.error.as_mut() {
                e.message = mask(&e.message, &self.secrets);
            }
            c.mock_ttft_ms = c.mock_ttft_ms.or(mock_ttft_ms);
            let metrics = c.aggregate.add(&record, server_first, &self.slos);
            self.progress.record(&record, server_first, &self.slos);
            if let Some(s) = self.slicer.as_mut() {
                s.add(&record, server_first, &self.slos);
            }
            let mut line = record_line(&record, metrics.as_ref(), self.t0_unix_ns);
            if self.http_trace {
                aiperf_core::results::http_trace::add_to_line(&mut line, &record, self.t0_unix_ns);
            }
            self.out.write_all(&line).context("cannot write profile_export.jsonl")?;
            if let Some(out) = self.raw_out.as_mut() {
                let line = raw_line(&record, metrics.as_ref(), self.t0_unix_ns, raw.as_deref(), &masks);
                out.write_all(&line).context("cannot write profile_export_raw.jsonl")?;
            }
            c.records += 1;
            self.progress.update(&c.aggregate, c.records);
        }
        self.flush()?;
        self.progress.finish();
        c.slices = self.slicer.take();
        Ok(c)
    }
}

impl RecordsStage {
    fn flush(&mut self) -> Result<()> {
        self.out.flush().context("cannot write profile_export.jsonl")?;
        if let Some(out) = self.raw_out.as_mut() {
            out.flush().context("cannot write profile_export_raw.jsonl")?;
        }
        Ok(())
    }
}

/// A record's line of `profile_export_raw.jsonl`, every secret masked wherever it appears
/// (headers, the body, a response echoing it), as written and as JSON escapes it.
fn raw_line(
    rec: &aiperf_core::results::record::RequestRecord,
    metrics: Option<&aiperf_core::results::metrics::RequestMetrics>,
    t0_unix_ns: u64,
    raw: Option<&RawCapture>,
    masks: &[String],
) -> Vec<u8> {
    let none = Responses::None;
    let ex = match raw {
        Some(r) => RawExchange { payload: &r.payload, headers: &r.headers, status: r.status, responses: &r.responses },
        None => RawExchange { payload: b"", headers: &[], status: None, responses: &none },
    };
    let line = aiperf_core::results::raw::raw_line(rec, metrics, t0_unix_ns, ex);
    if !masks.iter().any(|s| !s.is_empty() && memchr::memmem::find(&line, s.as_bytes()).is_some()) {
        return line;
    }
    mask(&String::from_utf8_lossy(&line), masks).into_bytes()
}

/// The secrets as written and as JSON escapes them (a quote or a backslash in one).
fn raw_masks(secrets: &[String]) -> Vec<String> {
    let escaped =
        secrets.iter().filter_map(|s| serde_json::to_string(s).ok()?.get(1..)?.strip_suffix('"').map(str::to_owned));
    let mut all: Vec<String> = secrets.iter().cloned().chain(escaped).collect();
    all.sort();
    all.dedup();
    // The longest first, so that a secret holding another is masked whole.
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    all
}

/// `text` with every secret replaced by `<redacted>`.
pub fn mask(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "<redacted>");
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_wherever_they_appear() {
        let s = vec!["sk-123456".to_owned(), "hunter22".to_owned()];
        assert_eq!(
            mask("echo: Bearer sk-123456 / hunter22 and sk-123456", &s),
            "echo: Bearer <redacted> / <redacted> and <redacted>"
        );
        assert_eq!(mask("nothing here", &s), "nothing here");
    }
}
