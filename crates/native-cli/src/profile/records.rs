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

use super::plan::replay::TokenCounting;
use super::prompt::PromptBuilder;
use super::request::Finished;

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
        loop {
            // Under load, drain in batches a millisecond apart: while this thread sleeps instead
            // of waiting on the channel, a finishing request's send wakes nobody, so no context
            // switch per record competes with pacing. When idle, wait on the channel.
            let f = match rx.try_recv() {
                Ok(f) => f,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) if busy => {
                    // The batch is written: its lines reach the file before this thread pauses.
                    self.out.flush().context("cannot write profile_export.jsonl")?;
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
            let Finished { mut record, text, mock_ttft_ms } = f;
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
            c.records += 1;
            self.progress.update(&c.aggregate, c.records);
        }
        self.out.flush().context("cannot write profile_export.jsonl")?;
        self.progress.finish();
        c.slices = self.slicer.take();
        Ok(c)
    }
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
