//! `--ui-type dashboard`: the full-screen view of a run, drawn with ratatui on stderr's
//! alternate screen by a thread of its own.
//!
//! The records stage only adds each record to a small pending [`Aggregate`] and, four times a
//! second, hands it over a channel ([`Dashboard::update`]); the dispatcher and the transport
//! never see the dashboard. The thread merges the deltas into the core's
//! [`aiperf_core::results::live::Live`] (the last window and the whole run), reads the requests
//! sent from the dispatcher's counter and the server from the scraper, and redraws. The terminal
//! is given back (main screen, cursor shown) when the run ends, however it ends: the end of
//! the records, a signal's drain, an error or a panic of the thread drop the [`Dashboard`].
//! Raw mode is never entered, so Ctrl-C stays a signal that drains the run and writes its files.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::live::{LIVE_METRICS, Live, LiveView, Panel};
use aiperf_core::results::metrics::{Metric, Slo};
use aiperf_core::results::record::RequestRecord;
use aiperf_core::server::live::ServerNow;
use anyhow::{Context, Result};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Gauge, Paragraph, Row, Table};

use super::scraper::Live as ServerLive;

/// What bounds the run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    /// Requests the run sends, when known.
    pub requests: Option<u64>,
    /// `--benchmark-duration`.
    pub duration: Option<Duration>,
}

/// `hh:mm:ss`, or seconds with a decimal below a minute (`4.2 s`).
pub fn clock(d: Duration) -> String {
    if d < Duration::from_secs(60) {
        return format!("{:.1} s", d.as_secs_f64());
    }
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// How often the records stage hands its records over, and the dashboard redraws.
pub const REFRESH: Duration = Duration::from_millis(250);
/// The span of the "last window" columns.
pub const WINDOW: Duration = Duration::from_secs(10);

/// The records since the last hand-over, taken at `at` (since the dashboard started).
struct Delta {
    at: Duration,
    records: Aggregate,
}

/// The records stage's end of the dashboard.
pub struct Dashboard {
    pending: Aggregate,
    next: Instant,
    start: Instant,
    tx: Option<mpsc::Sender<Delta>>,
    thread: Option<JoinHandle<()>>,
}

impl Dashboard {
    /// Takes the terminal (alternate screen, hidden cursor) and starts the drawing thread.
    pub fn start(bounds: Bounds, sent: Arc<AtomicU64>, server: Option<ServerLive>) -> Result<Dashboard> {
        let screen = Screen::take()?;
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        let view = View { bounds, sent, server, start, live: Live::new(duration_ns(WINDOW)), done: 0 };
        let thread = std::thread::Builder::new()
            .name("dashboard".into())
            .spawn(move || view.run(screen, rx))
            .context("cannot start the dashboard thread")?;
        Ok(Dashboard {
            pending: Aggregate::default(),
            next: start + REFRESH,
            start,
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Adds one record to those handed over next.
    pub fn record(&mut self, record: &RequestRecord, server_first: bool, slos: &[Slo]) {
        self.pending.add(record, server_first, slos);
    }

    /// The longest the records stage may wait before [`Dashboard::update`] is due.
    pub fn due_in(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Hands the pending records over when a refresh is due.
    pub fn update(&mut self) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + REFRESH;
        self.hand_over(now);
    }

    fn hand_over(&mut self, now: Instant) {
        let records = std::mem::take(&mut self.pending);
        if let Some(tx) = &self.tx {
            let _ = tx.send(Delta { at: now.duration_since(self.start), records });
        }
    }

    /// Hands the last records over, waits for the last frame and gives the terminal back.
    pub fn finish(mut self) {
        self.hand_over(Instant::now());
        self.close();
    }

    fn close(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.close();
    }
}

/// The terminal while the dashboard holds it; given back when dropped.
struct Screen {
    terminal: Terminal<CrosstermBackend<std::io::Stderr>>,
}

impl Screen {
    fn take() -> Result<Screen> {
        let mut err = std::io::stderr();
        execute!(err, EnterAlternateScreen, Hide).context("cannot enter the alternate screen")?;
        let screen = Terminal::new(CrosstermBackend::new(std::io::stderr()))
            .map(|terminal| Screen { terminal })
            .context("cannot draw on the terminal");
        if screen.is_err() {
            let _ = execute!(err, Show, LeaveAlternateScreen);
        }
        screen
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let mut err = std::io::stderr();
        let _ = execute!(err, Show, LeaveAlternateScreen);
        let _ = err.flush();
    }
}

/// The drawing thread's state.
struct View {
    bounds: Bounds,
    sent: Arc<AtomicU64>,
    server: Option<ServerLive>,
    start: Instant,
    live: Live,
    done: u64,
}

impl View {
    fn run(mut self, mut screen: Screen, rx: mpsc::Receiver<Delta>) {
        let mut next_draw = Instant::now();
        loop {
            match rx.recv_timeout(next_draw.saturating_duration_since(Instant::now())) {
                Ok(d) => self.take(d),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            while let Ok(d) = rx.try_recv() {
                self.take(d);
            }
            let now = Instant::now();
            if now >= next_draw {
                self.draw(&mut screen, now);
                next_draw = now + REFRESH;
            }
        }
        self.draw(&mut screen, Instant::now());
    }

    fn take(&mut self, d: Delta) {
        self.done += d.records.ok + d.records.error_count();
        self.live.add(duration_ns(d.at), d.records);
    }

    fn draw(&self, screen: &mut Screen, now: Instant) {
        let elapsed = now.duration_since(self.start);
        let view = self.live.view(duration_ns(elapsed));
        let sent = self.sent.load(Ordering::Relaxed);
        let server = self.server.as_ref().and_then(|s| s.lock().ok().map(|l| l.now()));
        let _ = screen.terminal.draw(|f| {
            let [top, counts, stats, bottom] = Layout::vertical([
                Constraint::Length(3),
                Constraint::Length(3),
                Constraint::Length(9),
                Constraint::Length(3),
            ])
            .areas(f.area());
            f.render_widget(self.progress(elapsed, &view), top);
            f.render_widget(requests(sent, &view.total), counts);
            f.render_widget(table(&view), stats);
            f.render_widget(server_panel(server), bottom);
        });
    }

    /// Elapsed time and what remains, as a gauge.
    fn progress(&self, elapsed: Duration, view: &LiveView) -> Gauge<'static> {
        let (ratio, label) = match (self.bounds.duration, self.bounds.requests) {
            (Some(d), _) => (
                elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9),
                format!("{} elapsed, {} of {} left", clock(elapsed), clock(d.saturating_sub(elapsed)), clock(d)),
            ),
            (None, Some(n)) => (
                view.total.done as f64 / (n.max(1)) as f64,
                format!("{} elapsed, {} of {n} requests left", clock(elapsed), n.saturating_sub(self.done)),
            ),
            (None, None) => (0.0, format!("{} elapsed", clock(elapsed))),
        };
        Gauge::default()
            .block(Block::bordered().title(" aiperf-cli profile "))
            .gauge_style(Style::default().fg(Color::Green))
            .ratio(ratio.clamp(0.0, 1.0))
            .label(label)
    }
}

/// Requests sent, done, in flight and failed.
fn requests(sent: u64, total: &Panel) -> Paragraph<'static> {
    let line = format!(
        "sent {sent}   done {}   in flight {}   failed {}",
        total.done,
        sent.saturating_sub(total.done),
        total.failed
    );
    Paragraph::new(Line::from(line)).block(Block::bordered().title(" Requests "))
}

/// Throughput and the quantiles, over the last window and the whole run.
fn table(view: &LiveView) -> Table<'static> {
    let w = &view.window;
    let t = &view.total;
    let mut rows = vec![
        Row::new(vec![
            Cell::from("requests/s"),
            Cell::from(format!("{:.1}", w.requests_per_s)),
            Cell::from(""),
            Cell::from(format!("{:.1}", t.requests_per_s)),
            Cell::from(""),
        ]),
        Row::new(vec![
            Cell::from("output tokens/s"),
            Cell::from(format!("{:.1}", w.output_tokens_per_s)),
            Cell::from(""),
            Cell::from(format!("{:.1}", t.output_tokens_per_s)),
            Cell::from(""),
        ]),
    ];
    for (i, m) in LIVE_METRICS.iter().enumerate() {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
        rows.push(Row::new(vec![
            Cell::from(format!("{} (ms)", name(*m))),
            Cell::from(ms(w.quantiles[i].p50)),
            Cell::from(ms(w.quantiles[i].p99)),
            Cell::from(ms(t.quantiles[i].p50)),
            Cell::from(ms(t.quantiles[i].p99)),
        ]));
    }
    let window = format!("last {} s", WINDOW.as_secs());
    let header = Row::new(vec![
        "".to_owned(),
        format!("{window} p50"),
        format!("{window} p99"),
        "run p50".to_owned(),
        "run p99".to_owned(),
    ])
    .bold();
    Table::new(
        rows,
        [
            Constraint::Length(22),
            Constraint::Length(14),
            Constraint::Length(14),
            Constraint::Length(12),
            Constraint::Length(12),
        ],
    )
    .header(header)
    .block(Block::bordered().title(" Latency and throughput "))
}

fn name(m: Metric) -> &'static str {
    match m {
        Metric::TimeToFirstToken => "TTFT",
        Metric::InterTokenLatency => "ITL",
        Metric::RequestLatency => "request latency",
        Metric::SendLateness => "send lateness",
        _ => "",
    }
}

/// The server's KV-cache usage, queue and prefix-cache hit rate at the last scrape.
fn server_panel(server: Option<ServerNow>) -> Paragraph<'static> {
    let line = match server {
        None => "not scraped (--server-metrics, or --no-server-metrics was given)".to_owned(),
        Some(s) if s.scrapes == 0 => "waiting for the first scrape".to_owned(),
        Some(s) => {
            let v = |x: Option<f64>, unit: &str| x.map_or_else(|| "-".to_owned(), |x| format!("{x:.1}{unit}"));
            format!(
                "KV cache {}   waiting {}   running {}   prefix-cache hit rate {}",
                v(s.kv_usage_pct, " %"),
                v(s.waiting, ""),
                v(s.running, ""),
                v(s.hit_rate_pct, " %")
            )
        }
    };
    Paragraph::new(Line::from(line)).block(Block::bordered().title(" Server "))
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;

    #[test]
    fn panels_show_the_numbers() {
        let mut live = Live::new(duration_ns(WINDOW));
        let mut delta = Aggregate::default();
        for i in 0..10u64 {
            let r = RequestRecord {
                scheduled_ns: i * 1_000_000,
                sent_ns: i * 1_000_000 + 50_000,
                first_byte_ns: Some(i * 1_000_000 + 20_000_000),
                chunk_ns: vec![i * 1_000_000 + 20_000_000, i * 1_000_000 + 30_000_000],
                end_ns: i * 1_000_000 + 30_000_000,
                output_tokens: Some(2),
                streaming: true,
                ..RequestRecord::default()
            };
            delta.add(&r, false, &[]);
        }
        live.add(1_000_000_000, delta);
        let view = live.view(2_000_000_000);
        let mut terminal = Terminal::new(TestBackend::new(90, 20)).unwrap();
        let server = ServerNow { kv_usage_pct: Some(12.5), waiting: Some(2.0), scrapes: 3, ..ServerNow::default() };
        terminal
            .draw(|f| {
                let [a, b, c] = Layout::vertical([Constraint::Length(3), Constraint::Length(9), Constraint::Length(3)])
                    .areas(f.area());
                f.render_widget(requests(12, &view.total), a);
                f.render_widget(table(&view), b);
                f.render_widget(server_panel(Some(server)), c);
            })
            .unwrap();
        let text: String = terminal
            .backend()
            .buffer()
            .content()
            .chunks(90)
            .map(|row| row.iter().map(|c| c.symbol()).collect::<String>() + "\n")
            .collect();
        assert!(text.contains("sent 12   done 10   in flight 2   failed 0"), "{text}");
        assert!(text.contains("requests/s"), "{text}");
        assert!(text.contains("TTFT (ms)"), "{text}");
        assert!(text.contains("19.95"), "{text}");
        assert!(text.contains("KV cache 12.5 %   waiting 2.0   running -"), "{text}");
    }
}
