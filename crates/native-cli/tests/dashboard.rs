//! `--ui-type dashboard`: in a pipe it says once that it shows simple progress and writes no
//! escape code; in a real terminal (tmux, `#[ignore]`d: scripts/test.sh runs it) it draws its
//! panels with the run's numbers, gives the terminal back, and the run's files are complete,
//! after the run's end as after Ctrl-C.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

fn trace(dir: &Path, rows: usize) -> PathBuf {
    let lines: Vec<String> =
        (0..rows).map(|i| format!(r#"{{"timestamp": {}, "input_length": 40, "output_length": 8}}"#, i * 20)).collect();
    write_trace(dir, &lines)
}

#[test]
fn in_a_pipe_the_dashboard_falls_back_to_simple_progress_without_escape_codes() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), 20);
    let art = dir.path().join("art");
    let out =
        profile_streaming(&mock.url, &trace, &art, &["--ui-type", "dashboard", "--progress-interval", "0.1"], LIMIT);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let fallback = "--ui-type dashboard: stdout or stderr is not a terminal; showing simple progress";
    assert_eq!(err.matches(fallback).count(), 1, "{err}");
    assert!(err.contains("progress "), "{err}");
    assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b), "an escape code in a pipe:\n{err}");
    assert_eq!(summary(&art)["request_count"]["avg"], 20.0);
}

/// Runs `tmux` with `args` on the test's own server (socket `sock`).
fn tmux(sock: &Path, args: &[&str]) -> String {
    let out = Command::new("tmux").arg("-S").arg(sock).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The run in a tmux pane of 160×60: the pane, and the file its exit status goes to.
fn start_in_tmux(dir: &Path, argv: &[String]) -> (PathBuf, PathBuf) {
    let sock = dir.join("tmux.sock");
    let status = dir.join("status");
    let quoted: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
    // The pane stays after the run (a shell waits), so that what it left can be read; the shell
    // outlives a Ctrl-C (its trap) to write the run's exit status.
    let script = format!("trap : INT; {}; echo $? > {}; sleep 600", quoted.join(" "), status.display());
    let made = Command::new("tmux")
        .arg("-S")
        .arg(&sock)
        .args(["-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "60", "sh", "-c", &script])
        .env("TERM", "xterm-256color")
        .status()
        .unwrap();
    assert!(made.success(), "tmux could not start");
    (sock, status)
}

/// What the pane shows, with its history.
fn screen(sock: &Path) -> String {
    tmux(sock, &["capture-pane", "-p", "-S", "-300"])
}

fn argv(mock: &Mock, trace: &Path, art: &Path, extra: &[&str]) -> Vec<String> {
    let mut v = vec![BIN.to_owned(), "profile".to_owned()];
    v.extend(profile_args(&mock.url, trace, art));
    v.extend(["--streaming", "--ui-type", "dashboard"].iter().chain(extra).map(|s| s.to_string()));
    v
}

/// The number on the screen after `label` (`done 12` → 12).
fn number_after(screen: &str, label: &str) -> Option<f64> {
    let at = screen.find(label)? + label.len();
    screen[at..].split_whitespace().next()?.trim_end_matches('%').parse().ok()
}

fn records(art: &Path) -> usize {
    std::fs::read_to_string(art.join("profile_export.jsonl")).map_or(0, |t| t.lines().count())
}

#[test]
#[ignore = "needs tmux (scripts/test.sh runs it)"]
fn in_a_terminal_the_dashboard_shows_the_run_and_gives_the_terminal_back() {
    let mock = Mock::start(&["--ttft-ms", "20", "--itl-ms", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), 2000);
    let art = dir.path().join("art");
    let argv = argv(&mock, &trace, &art, &["--request-rate", "40", "--benchmark-duration", "4"]);
    let (sock, status) = start_in_tmux(dir.path(), &argv);
    // Mid-run: every panel, with numbers that fit the load.
    let mut mid = String::new();
    wait_for("the dashboard with 20 requests done", LIMIT, || {
        mid = screen(&sock);
        number_after(&mid, "done").is_some_and(|d| d >= 20.0)
    });
    for panel in [" aiperf-cli profile ", " Requests ", " Latency and throughput ", " Server ", "TTFT (ms)", "ITL (ms)"]
    {
        assert!(mid.contains(panel), "no {panel:?} on the screen:\n{mid}");
    }
    assert!(mid.contains("s of 4.0 s left"), "{mid}");
    let rate = number_after(&mid, "requests/s").unwrap();
    assert!(rate > 5.0 && rate < 200.0, "{rate} requests/s at 40 sessions/s:\n{mid}");
    let ttft = number_after(&mid, "TTFT (ms)").unwrap();
    assert!((20.0..2000.0).contains(&ttft), "TTFT p50 {ttft} ms of a 20 ms mock:\n{mid}");
    assert!(mid.contains("KV cache"), "the mock's metrics are scraped:\n{mid}");
    // After the run: the main screen is back with the console table, the files are complete.
    wait_for("the run's end", LIMIT, || status.exists() && std::fs::read_to_string(&status).unwrap().ends_with('\n'));
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0");
    let after = screen(&sock);
    assert!(!after.contains(" Latency and throughput "), "the dashboard stayed:\n{after}");
    assert!(after.contains("Time to First Token") && after.contains("Exports written to"), "{after}");
    assert!(after.contains("Replaying requests for 4.0 s"), "the lines before the dashboard are kept:\n{after}");
    let s = summary(&art);
    let n = s["request_count"]["avg"].as_f64().unwrap();
    assert!(n >= 20.0, "{s}");
    assert_eq!(records(&art) as f64, n);
    tmux(&sock, &["kill-server"]);
}

#[test]
#[ignore = "needs tmux (scripts/test.sh runs it)"]
fn ctrl_c_in_the_dashboard_drains_the_run_writes_its_files_and_gives_the_terminal_back() {
    let mock = Mock::start(&["--ttft-ms", "5", "--itl-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path(), 2000);
    let art = dir.path().join("art");
    let argv = argv(&mock, &trace, &art, &["--request-rate", "40", "--benchmark-duration", "600"]);
    let (sock, status) = start_in_tmux(dir.path(), &argv);
    wait_for("10 requests done", LIMIT, || number_after(&screen(&sock), "done").is_some_and(|d| d >= 10.0));
    tmux(&sock, &["send-keys", "C-c"]);
    wait_for("the run's end", LIMIT, || status.exists() && std::fs::read_to_string(&status).unwrap().ends_with('\n'));
    let after = screen(&sock);
    assert!(!after.contains(" Latency and throughput "), "the dashboard stayed:\n{after}");
    assert!(after.contains("Exports written to"), "{after}");
    let s = summary(&art);
    assert_eq!(s["was_cancelled"], true, "{s}");
    let n = s["request_count"]["avg"].as_f64().unwrap();
    assert!(n >= 10.0, "{s}");
    assert_eq!(records(&art) as f64, n);
    tmux(&sock, &["kill-server"]);
}
