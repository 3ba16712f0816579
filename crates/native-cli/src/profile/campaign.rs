//! Several runs of one `profile`: repeats (`--num-profile-runs`), a sweep (a list on
//! `--request-rate`, `--concurrency` or `--synthesis-speedup-ratio`) and the capacity search
//! (`--search-max`). Each sub-run is [`run_one`], the single run, into its own folder; this
//! module only decides the folders, pauses between sub-runs and writes the summaries (pure
//! serializers of [`aiperf_core::campaign::sweep`] and [`aiperf_core::campaign::search`]).
//!
//! Folders: a sweep or search value `V` runs in `ARTIFACT_DIR/V/`; with repeats, run `k` of it in
//! `ARTIFACT_DIR/V/run_k/` and the aggregate in `ARTIFACT_DIR/V/`; repeats without a sweep in
//! `ARTIFACT_DIR/run_k/` with the aggregate in `ARTIFACT_DIR/`. The summaries are rewritten after
//! every sub-run, so a sweep stopped by a signal keeps the summary of what was done.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aiperf_core::campaign::search::{self, Next, Search, Stop};
use aiperf_core::campaign::sweep::{self, Axis, Figure, SweepPoint};
use anyhow::{Context, Result};

use super::control::Control;
use super::phases::RunOutcome;
use super::plan::{Mode, ProfilePlan, sla};
use super::single::run_one;
use crate::exit;
use crate::io::exports::write_file;

/// What the runs of one value gave.
struct Measured {
    runs: Vec<Vec<Figure>>,
    good_fractions: Vec<f64>,
    cancelled: bool,
    any_success: bool,
}

/// The sub-runs so far, and the pause before the next.
struct Runner<'a> {
    rt: &'a tokio::runtime::Runtime,
    plan: &'a ProfilePlan,
    control: &'a Control,
    started: Instant,
    ran: usize,
    any_success: bool,
    /// What `--concurrency` did to each sub-run's fixed schedule, by value.
    ceiling_notes: Vec<(String, String)>,
}

impl Runner<'_> {
    /// One sub-run at `value` into `dir`, after the cool-down; `None` when a signal came first.
    fn one(&mut self, value: Option<f64>, dir: PathBuf, trial: u32) -> Result<Option<RunOutcome>> {
        if self.control.interrupted() {
            return Ok(None);
        }
        if self.ran > 0 && !self.plan.cooldown.is_zero() && self.rt.block_on(self.control.pause(self.plan.cooldown)) {
            return Ok(None);
        }
        self.ran += 1;
        let label = value.zip(self.plan.axis()).map(|(v, a)| format!(" {} {}", a.flag(), a.format(v)));
        say!("\n=== sub-run {}{}: {}", self.ran, label.unwrap_or_default(), dir.display());
        let plan = self.plan.sub_run(value, dir, trial)?;
        // A later sub-run's start-up is its own, not the time since the process started.
        let started = if self.ran == 1 { self.started } else { Instant::now() };
        let out = run_one(self.rt, &plan, &self.control.child(), started)?;
        self.any_success |= out.status == exit::SUCCESS || out.summary.report.request_count > 0;
        if let Some(n) = &out.ceiling_note {
            let shown = value.zip(self.plan.axis()).map_or_else(String::new, |(v, a)| a.format(v));
            self.ceiling_notes.push((shown, n.clone()));
        }
        Ok(Some(out))
    }

    /// The runs of one value (`repeats` of them, or as many as `more` asks for) in `dir`, with
    /// the aggregate written there when there is more than one.
    fn value(&mut self, value: Option<f64>, dir: &Path, mut more: impl FnMut(&[f64]) -> bool) -> Result<Measured> {
        let repeats = self.plan.repeats;
        let mut m = Measured { runs: Vec::new(), good_fractions: Vec::new(), cancelled: false, any_success: false };
        let mut names = Vec::new();
        for k in 1..=repeats {
            if k > 1 && !more(&m.good_fractions) {
                break;
            }
            let name = format!("run_{k}");
            let sub = if repeats > 1 { dir.join(&name) } else { dir.to_path_buf() };
            let Some(out) = self.one(value, sub, k)? else {
                m.cancelled = true;
                break;
            };
            names.push(name);
            m.cancelled |= out.summary.was_cancelled;
            m.any_success |= out.summary.report.request_count > 0;
            m.good_fractions.push(self.judged(&out.summary.report));
            m.runs.push(sweep::figures(&out.summary.report));
            if repeats > 1 {
                let spreads = sweep::spread(&m.runs, self.plan.confidence);
                write_file(
                    &dir.join(sweep::AGGREGATE_JSON),
                    &sweep::aggregate_json(&names, self.plan.confidence, &spreads),
                )?;
                write_file(&dir.join(sweep::AGGREGATE_CSV), &sweep::aggregate_csv(&spreads))?;
            }
            if m.cancelled {
                break;
            }
        }
        Ok(m)
    }

    /// A run's good fraction as the search judges it: 0 when its share of failed requests reaches
    /// `--error-rate-sla`; without per-request SLOs (an error-rate target alone), 1 for a run
    /// with requests.
    fn judged(&self, r: &aiperf_core::results::aggregate::Report) -> f64 {
        if let Some(max) = self.plan.sla.max_error_rate {
            let rate = sla::error_rate(r.request_count, r.error_request_count);
            if rate >= max {
                say!(
                    "search: error rate {:.2}% reaches --error-rate-sla {:.2}%: the run fails",
                    rate * 100.0,
                    max * 100.0
                );
                return 0.0;
            }
        }
        if self.plan.first.exports.slos.is_empty() {
            return if r.request_count + r.error_request_count > 0 { 1.0 } else { 0.0 };
        }
        sweep::good_fraction(r).unwrap_or(0.0)
    }

    fn status(&self) -> u8 {
        if self.control.interrupted() {
            exit::INTERRUPTED
        } else if self.any_success {
            exit::SUCCESS
        } else {
            exit::NO_SUCCESS
        }
    }
}

/// Runs every sub-run of `plan`; returns the exit status.
pub fn run(rt: &tokio::runtime::Runtime, plan: &ProfilePlan, control: &Control, started: Instant) -> Result<u8> {
    let top = &plan.artifact_dir;
    let summaries: Vec<PathBuf> = [
        sweep::SWEEP_JSON,
        sweep::SWEEP_CSV,
        sweep::AGGREGATE_JSON,
        sweep::AGGREGATE_CSV,
        search::SEARCH_JSON,
        search::SEARCH_CSV,
    ]
    .iter()
    .map(|f| top.join(f))
    .collect();
    let summaries: Vec<&Path> = summaries.iter().map(PathBuf::as_path).collect();
    if let Some(file) = plan.first.source.input.file() {
        crate::io::output::refuse_same_files(&summaries, &[file]).context(crate::exit::BadInput)?;
    }
    std::fs::create_dir_all(top).with_context(|| format!("cannot create {}", top.display()))?;
    let mut r = Runner { rt, plan, control, started, ran: 0, any_success: false, ceiling_notes: Vec::new() };
    match &plan.mode {
        Mode::Single => {
            let m = r.value(None, top, |_| true)?;
            show!("{} run(s) aggregated in {}", m.runs.len(), top.join(sweep::AGGREGATE_CSV).display());
        }
        Mode::Sweep { axis, values } => sweep_values(&mut r, *axis, values)?,
        Mode::Search { axis, params } => capacity_search(&mut r, *axis, *params)?,
    }
    Ok(r.status())
}

fn sweep_values(r: &mut Runner, axis: Axis, values: &[f64]) -> Result<()> {
    let top = r.plan.artifact_dir.clone();
    let mut config = r.plan.first.cli_config().clone();
    // The options as given: the whole list, not the first sub-run's value.
    config[axis.tag()] = serde_json::json!(values);
    let mut points = Vec::new();
    for &v in values {
        let name = axis.format(v);
        let m = r.value(Some(v), &top.join(&name), |_| true)?;
        if !m.runs.is_empty() {
            points.push(SweepPoint::of(v, name, &m.runs, m.cancelled));
            write_file(&top.join(sweep::SWEEP_JSON), &sweep::sweep_json(axis, &points, &config))?;
            write_file(&top.join(sweep::SWEEP_CSV), &sweep::sweep_csv(axis, &points))?;
        }
        if r.control.interrupted() {
            say!("Sweep stopped by a signal after {} of {} value(s)", points.len(), values.len());
            break;
        }
    }
    show!("\nSweep over {} ({} value(s)):", axis.flag(), points.len());
    show!("{:>12} {:>14} {:>12} {:>14} {:>14}", axis.tag(), "req/s", "goodput", "TTFT p99 ms", "latency p99");
    for p in &points {
        let get = |m: &str, s: &str| {
            p.figures
                .iter()
                .find(|f| f.metric == m && f.stat == s)
                .map_or("-".to_owned(), |f| format!("{:.2}", f.value))
        };
        show!(
            "{:>12} {:>14} {:>12} {:>14} {:>14}",
            axis.format(p.value),
            get("request_throughput", "avg"),
            get("goodput", "avg"),
            get("time_to_first_token", "p99"),
            get("request_latency", "p99")
        );
    }
    for (value, note) in &r.ceiling_notes {
        show!("note ({} {value}): {note}", axis.flag());
    }
    show!("Sweep summary written to {}", top.join(sweep::SWEEP_CSV).display());
    Ok(())
}

fn capacity_search(r: &mut Runner, axis: Axis, params: search::SearchParams) -> Result<()> {
    let top = r.plan.artifact_dir.clone();
    let config = r.plan.first.cli_config().clone();
    let mut s = Search::new(params)?;
    let target = params.target;
    let slos: Vec<String> = r
        .plan
        .first
        .exports
        .slos
        .iter()
        .map(|o| format!("{} {} {}", o.metric.tag(), if o.metric.higher_is_better() { "≥" } else { "≤" }, o.threshold))
        .collect();
    say!(
        "search: a run passes when {}{}",
        if slos.is_empty() {
            "it has requests".to_owned()
        } else {
            format!("{:.0}% of its requests meet {}", target * 100.0, slos.join(", "))
        },
        r.plan.sla.max_error_rate.map_or(String::new(), |m| format!(" and under {:.2}% of them fail", m * 100.0))
    );
    let confidence = params.confidence;
    let answer = loop {
        let v = match s.next() {
            Next::Done(a) => break Some(a),
            Next::Measure(v) => v,
        };
        // The search decides after each run whether the point needs another.
        let m = r.value(Some(v), &top.join(axis.format(v)), |fractions| {
            let mut probe = s.clone();
            fractions.iter().for_each(|&f| probe.record(v, f));
            matches!(probe.next(), Next::Measure(w) if w == v)
        })?;
        if m.cancelled && r.control.interrupted() {
            break None;
        }
        for &f in &m.good_fractions {
            s.record(v, f);
        }
        // Every run of the point was used: it is decided now.
        if let Next::Measure(w) = s.next()
            && w == v
        {
            anyhow::bail!("the search did not decide {} {}", axis.flag(), axis.format(v));
        }
        if let Some(pt) = s.points().last() {
            say!(
                "search: {} {} → good fraction {:.3} (CI {:.3}–{:.3} at {:.0}%, {} run(s)): {}",
                axis.flag(),
                axis.format(v),
                pt.mean,
                pt.ci.0,
                pt.ci.1,
                confidence * 100.0,
                pt.fractions.len(),
                if pt.passed {
                    "meets the target"
                } else if pt.saturated {
                    "clearly saturated"
                } else {
                    "misses the target"
                }
            );
        }
        write_file(&top.join(search::SEARCH_JSON), &search::search_json(axis, &s, None, &config))?;
        write_file(&top.join(search::SEARCH_CSV), &search::search_csv(axis, &s))?;
    };
    write_file(&top.join(search::SEARCH_JSON), &search::search_json(axis, &s, answer, &config))?;
    write_file(&top.join(search::SEARCH_CSV), &search::search_csv(axis, &s))?;
    let pct = target * 100.0;
    match answer {
        None => show!("\nCapacity search stopped by a signal after {} point(s)", s.points().len()),
        Some(a) => match (a.stop, a.capacity) {
            (Stop::StartFailed, _) => show!(
                "\nCapacity: below the start: {} {} already misses {pct:.0}% good requests",
                axis.flag(),
                axis.format(params.start)
            ),
            (_, Some(c)) => show!(
                "\nCapacity: {} {} {} (the highest load meeting the SLOs for {pct:.0}% of requests{})",
                axis.flag(),
                axis.format(c),
                axis.unit(),
                match (a.stop, a.failed_at) {
                    (Stop::LimitPassed, _) => " — the search limit; the server may take more".to_owned(),
                    (_, Some(f)) => format!("; {} failed", axis.format(f)),
                    _ => String::new(),
                }
            ),
            (_, None) => show!("\nCapacity: not found"),
        },
    }
    show!(
        "{} point(s) measured; every sub-run is kept under {}; summary in {}",
        s.points().len(),
        top.display(),
        top.join(search::SEARCH_CSV).display()
    );
    Ok(())
}
