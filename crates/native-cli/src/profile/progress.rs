//! The progress of a run, owned by the records stage: a live bar when stderr is a terminal, and
//! otherwise (a pipe, `| tee run.log`, CI, a Kubernetes pod's log) one line on stderr every
//! `--progress-interval` seconds. A run bounded by `--benchmark-duration` shows time against
//! that duration; one bounded by a request count shows requests against it. `--ui-type
//! dashboard` hands the records to the full-screen dashboard ([`super::dashboard`]) on its own
//! thread, when stdout and stderr are both terminals.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::metrics::{Metric, Slo};
use aiperf_core::results::record::RequestRecord;
use aiperf_core::stats::Distribution;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub use super::dashboard::Bounds;
use super::dashboard::{Dashboard, clock};

/// How a run shows its progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Nothing (`--ui-type none`).
    Off,
    /// A bar on a terminal, lines every `every` otherwise.
    Auto { every: Duration },
    /// The dashboard on a terminal; as `Auto` when stdout or stderr is not one.
    Dashboard { every: Duration },
}

impl Mode {
    /// Whether the dashboard was asked for.
    pub fn is_dashboard(self) -> bool {
        matches!(self, Mode::Dashboard { .. })
    }
}

/// The progress display of one run.
pub struct Progress {
    dashboard: Option<Dashboard>,
    bar: Option<ProgressBar>,
    every: Option<Duration>,
    bounds: Bounds,
    /// Requests handed to the transport (counted by the dispatcher).
    sent: Arc<AtomicU64>,
    start: Instant,
    next_line: Instant,
}

impl Progress {
    /// A display for a run starting now; `sent` is counted by the dispatcher, `server` is the
    /// scraper's view of the server (for the dashboard).
    pub fn new(mode: Mode, bounds: Bounds, sent: Arc<AtomicU64>, server: Option<super::scraper::Live>) -> Progress {
        let stderr = std::io::stderr().is_terminal();
        let mode = match mode {
            Mode::Dashboard { every } if stderr && std::io::stdout().is_terminal() => {
                match Dashboard::start(bounds, sent.clone(), server) {
                    Ok(dashboard) => {
                        let mut p = Progress::with_terminal(Mode::Off, bounds, sent, stderr);
                        p.dashboard = Some(dashboard);
                        return p;
                    }
                    Err(e) => {
                        say!("--ui-type dashboard: cannot draw on this terminal ({e:#}); showing simple progress");
                        Mode::Auto { every }
                    }
                }
            }
            Mode::Dashboard { every } => {
                say!("--ui-type dashboard: stdout or stderr is not a terminal; showing simple progress");
                Mode::Auto { every }
            }
            m => m,
        };
        Progress::with_terminal(mode, bounds, sent, stderr)
    }

    fn with_terminal(mode: Mode, bounds: Bounds, sent: Arc<AtomicU64>, terminal: bool) -> Progress {
        let start = Instant::now();
        let (bar, every) = match mode {
            Mode::Off => (None, None),
            Mode::Auto { .. } | Mode::Dashboard { .. } if terminal => (Some(bar(bounds)), None),
            Mode::Auto { every } | Mode::Dashboard { every } => (None, Some(every)),
        };
        Progress { dashboard: None, bar, every, bounds, sent, start, next_line: start + every.unwrap_or_default() }
    }

    /// Takes one record (its metrics go to the dashboard, when it is shown).
    pub fn record(&mut self, record: &RequestRecord, server_first: bool, slos: &[Slo]) {
        if let Some(d) = self.dashboard.as_mut() {
            d.record(record, server_first, slos);
        }
    }

    /// The longest the records stage may wait for a record before [`Progress::update`] is due.
    pub fn due_in(&self) -> Duration {
        if let Some(d) = &self.dashboard {
            return d.due_in();
        }
        match (self.every, &self.bar) {
            (Some(_), _) => self.next_line.saturating_duration_since(Instant::now()),
            (None, Some(_)) if self.bounds.duration.is_some() => Duration::from_millis(250),
            _ => Duration::from_secs(3600),
        }
    }

    /// Shows the state of `agg` (every record so far): the bar is redrawn, a line is printed
    /// when one is due.
    pub fn update(&mut self, agg: &Aggregate, done: u64) {
        if let Some(d) = self.dashboard.as_mut() {
            d.update();
            return;
        }
        let now = Instant::now();
        if let Some(bar) = &self.bar {
            let failed = agg.error_count();
            match self.bounds.duration {
                Some(_) => bar.set_position(now.duration_since(self.start).as_secs()),
                None => bar.set_position(done),
            }
            let in_flight = self.sent.load(Ordering::Relaxed).saturating_sub(done);
            bar.set_message(format!("{done} done, {failed} failed, {in_flight} in flight"));
        }
        if self.every.is_some() && now >= self.next_line {
            say!("{}", self.line(agg, done, now));
            let every = self.every.unwrap_or_default();
            while self.next_line <= now {
                self.next_line += every.max(Duration::from_millis(10));
            }
        }
    }

    /// One progress line: elapsed, sent/done/failed/in flight, req/s, TTFT p50, what remains.
    fn line(&self, agg: &Aggregate, done: u64, now: Instant) -> String {
        let elapsed = now.duration_since(self.start);
        let sent = self.sent.load(Ordering::Relaxed);
        let failed = agg.error_count();
        let rate = if elapsed.as_secs_f64() > 0.0 { done as f64 / elapsed.as_secs_f64() } else { 0.0 };
        let p50 = |m: Metric| Distribution::of(agg.values(m)).and_then(|d| d.percentile(50.0));
        let latency = match (p50(Metric::TimeToFirstToken), p50(Metric::RequestLatency)) {
            (Some(t), _) => format!(", TTFT p50 {t:.1} ms"),
            (None, Some(l)) => format!(", latency p50 {l:.1} ms"),
            (None, None) => String::new(),
        };
        let left = match (self.bounds.duration, self.bounds.requests) {
            (Some(d), _) => format!("; {} of {} left", clock(d.saturating_sub(elapsed)), clock(d)),

            (None, Some(n)) => format!("; {} of {n} request(s) left", n.saturating_sub(done)),
            (None, None) => String::new(),
        };
        format!(
            "progress {}: sent {sent}, done {done} ({failed} failed), in flight {}, {rate:.1} req/s{latency}{left}",
            clock(elapsed),
            sent.saturating_sub(done)
        )
    }

    /// Removes the bar or the dashboard (the final report follows).
    pub fn finish(&mut self) {
        if let Some(d) = self.dashboard.take() {
            d.finish();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The terminal bar: time against the duration, or requests against their count, or a counter.
fn bar(bounds: Bounds) -> ProgressBar {
    let (len, template) = match (bounds.duration, bounds.requests) {
        (Some(d), _) => {
            (Some(d.as_secs().max(1)), "{elapsed_precise} [{bar:40}] {pos}/{len} s of the duration · {msg}")
        }
        (None, Some(n)) => (Some(n), "{elapsed_precise} [{bar:40}] {pos}/{len} requests · {msg}"),
        (None, None) => (None, "{elapsed_precise} {pos} requests · {msg}"),
    };
    let pb = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr_with_hz(4));
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_what_was_sent_and_what_remains() {
        let sent = Arc::new(AtomicU64::new(7));
        let bounds = Bounds { requests: Some(10), duration: None };
        let p = Progress::with_terminal(Mode::Auto { every: Duration::from_secs(5) }, bounds, sent.clone(), false);
        let line = p.line(&Aggregate::default(), 5, p.start + Duration::from_secs(65));
        assert_eq!(
            line,
            "progress 00:01:05: sent 7, done 5 (0 failed), in flight 2, 0.1 req/s; 5 of 10 request(s) left"
        );
        let line = p.line(&Aggregate::default(), 5, p.start + Duration::from_millis(4250));
        assert!(line.starts_with("progress 4.2 s: "), "{line}");
        let bounds = Bounds { requests: None, duration: Some(Duration::from_secs(90)) };
        let p = Progress::with_terminal(Mode::Auto { every: Duration::from_secs(5) }, bounds, sent, false);
        let line = p.line(&Aggregate::default(), 0, p.start + Duration::from_secs(20));
        assert!(line.ends_with("; 00:01:10 of 00:01:30 left"), "{line}");
        assert!(p.bar.is_none() && p.every.is_some());
    }

    #[test]
    fn off_shows_nothing() {
        let p = Progress::with_terminal(Mode::Off, Bounds::default(), Arc::default(), true);
        assert!(p.bar.is_none() && p.every.is_none());
        assert!(p.due_in() >= Duration::from_secs(60));
    }
}
