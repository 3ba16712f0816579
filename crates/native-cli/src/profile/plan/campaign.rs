//! What `profile` runs: one replay, repeats of it, a sweep over one load option, or a capacity
//! search, each sub-run a complete [`ReplayPlan`].

use std::path::PathBuf;
use std::time::Duration;

use aiperf_core::campaign::search::{Search, SearchParams};
use aiperf_core::campaign::sweep::Axis;
use anyhow::{Context, Result, bail, ensure};

use super::limits::{MAX_PROFILE_RUNS, MAX_SWEEP_VALUES, in_range, seconds};
use super::model::ReplayPlan;
use super::sla::{self, Targets};
use crate::profile::artifacts;
use crate::profile::options::Args;

/// What `profile` runs: one replay, repeats of it, a sweep over one load option, or a capacity
/// search; each sub-run is a complete [`ReplayPlan`] with its own artifact folder.
#[derive(Clone, Debug)]
pub struct ProfilePlan {
    /// The options with the swept option at its first value.
    base: Args,
    pub mode: Mode,
    /// Runs per value (`--num-profile-runs`).
    pub repeats: u32,
    /// `--confidence-level`.
    pub confidence: f64,
    /// Pause between sub-runs.
    pub cooldown: Duration,
    /// Repeats 2..N of a value run without the warm-up (`--profile-run-disable-warmup-after-first`,
    /// AIPerf's default).
    pub warmup_first_only: bool,
    /// The top folder (sub-runs go below it).
    pub artifact_dir: PathBuf,
    /// The first sub-run's plan (also the single run's).
    pub first: ReplayPlan,
    /// AIPerf's SLA targets beyond the SLOs folded into `--goodput`.
    pub sla: Targets,
}

/// How the runs of a `profile` relate.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// One value (run `repeats` times).
    Single,
    /// One sub-run (or `repeats`) per value, in order.
    Sweep { axis: Axis, values: Vec<f64> },
    /// The capacity search.
    Search { axis: Axis, params: SearchParams },
}

impl ProfilePlan {
    /// Validates the flags: lists, repeats, search settings, and the sub-run of every value known
    /// in advance (so that a bad value fails before anything runs).
    pub fn from_args(mut args: Args) -> Result<ProfilePlan> {
        let sla = sla::fold(&mut args)?;
        args.system_prompt_text = super::system_prompt::resolve(&args)?;
        ensure!(
            args.search_max.is_none() || args.goodput.is_some() || sla.max_error_rate.is_some(),
            "--search-max needs targets: --goodput SLOS, or AIPerf's --ttft-sla-ms, --itl-sla-ms/--tpot-sla-ms, --e2e-sla-ms or --error-rate-sla"
        );
        let mut lists: Vec<(Axis, Vec<f64>)> = Vec::new();
        if args.request_rate.len() > 1 {
            lists.push((Axis::RequestRate, args.request_rate.clone()));
        }
        if args.concurrency.len() > 1 {
            lists.push((Axis::Concurrency, args.concurrency.iter().map(|&c| c as f64).collect()));
        }
        if let Some(v) = args.synthesis.list(aiperf_core::synthesis::Param::SpeedupRatio) {
            let values = v
                .iter()
                .filter_map(|x| match x {
                    aiperf_core::synthesis::settings::Value::Float(f) => Some(*f),
                    _ => None,
                })
                .collect();
            lists.push((Axis::SpeedupRatio, values));
        }
        ensure!(
            lists.len() <= 1,
            "{} and {} are both lists: a sweep varies one option",
            lists[0].0.flag(),
            lists.get(1).map_or("", |l| l.0.flag())
        );
        let repeats = in_range(args.num_profile_runs, "--num-profile-runs", 1, MAX_PROFILE_RUNS)?;
        let confidence = args.confidence_level;
        ensure!(
            confidence > 0.0 && confidence < 1.0,
            "--confidence-level {confidence}: accepted is a number between 0 and 1 (excluded)"
        );
        let cooldown = seconds(args.parameter_sweep_cooldown_seconds, "--parameter-sweep-cooldown-seconds", true)?;
        let search = args.search_max;
        let mode = match (search, lists.pop()) {
            (Some(_), Some((axis, _))) => {
                bail!("{} is a list and --search-max is given: choose a sweep or a search", axis.flag())
            }
            (Some(axis), None) => {
                let params = SearchParams {
                    start: args.search_start.unwrap_or(1.0),
                    limit: args.search_limit.unwrap_or(if axis.integer() { 1024.0 } else { 1000.0 }),
                    growth: args.search_growth,
                    resolution: args.search_resolution,
                    target: args.search_goodput_fraction,
                    integer: axis.integer(),
                    repeats,
                    confidence,
                };
                Search::new(params)?;
                Mode::Search { axis, params }
            }
            (None, Some((axis, values))) => {
                ensure!(
                    values.len() <= MAX_SWEEP_VALUES,
                    "{} has {} values: accepted is at most {MAX_SWEEP_VALUES}",
                    axis.flag(),
                    values.len()
                );
                let mut seen: Vec<String> = Vec::new();
                for v in &values {
                    let name = axis.format(*v);
                    ensure!(!seen.contains(&name), "{} lists {name} twice", axis.flag());
                    seen.push(name);
                }
                Mode::Sweep { axis, values }
            }
            (None, None) => Mode::Single,
        };
        let artifact_dir = {
            let load = match &mode {
                Mode::Single => artifacts::load_of(&args, || {
                    args.input_file.as_deref().is_some_and(artifacts::first_row_has_timestamp)
                }),
                Mode::Sweep { axis, values } => artifacts::campaign_load(*axis, Some(values)),
                Mode::Search { axis, .. } => artifacts::campaign_load(*axis, None),
            };
            let name = artifacts::folder_name(&args.model, args.endpoint_type, &load);
            let names = match args.profile_export_prefix.as_deref() {
                Some(p) => crate::io::exports::ExportNames::with_prefix(p)?,
                None => crate::io::exports::ExportNames::default(),
            };
            artifacts::resolve(args.artifact_dir.as_deref(), &name, args.overwrite, &names)?
        };
        let mut base = args;
        base.artifact_dir = Some(artifact_dir.clone());
        // The base holds one value of the swept option: each sub-run sets its own.
        base.request_rate.truncate(1);
        base.concurrency.truncate(1);
        let speedup = aiperf_core::synthesis::Param::SpeedupRatio;
        if let Some(&first) = base.synthesis.list(speedup).and_then(|v| v.first()) {
            base.synthesis = base.synthesis.with_value(speedup, first);
        }
        let mut plan = ProfilePlan {
            first: ReplayPlan::from_args(base.clone())?,
            warmup_first_only: !base.no_profile_run_disable_warmup_after_first,
            base,
            mode,
            repeats,
            confidence,
            cooldown,
            artifact_dir,
            sla,
        };
        match plan.mode.clone() {
            Mode::Single => {}
            Mode::Sweep { values, .. } => {
                for (i, v) in values.into_iter().enumerate() {
                    let p = plan.sub_run(Some(v), plan.artifact_dir.clone(), 1)?;
                    if i == 0 {
                        plan.first = p;
                    }
                }
            }
            Mode::Search { axis, params } => {
                plan.sub_run(Some(params.limit), plan.artifact_dir.clone(), 1)
                    .with_context(|| format!("at the search limit ({} {})", axis.flag(), axis.format(params.limit)))?;
                plan.first = plan.sub_run(Some(params.start), plan.artifact_dir.clone(), 1)?;
            }
        }
        Ok(plan)
    }

    /// The seed of repeat `trial` (1, 2, …) of `value`: AIPerf's derivation over --random-seed
    /// (`--parameter-sweep-same-seed`, `--vary-seed-per-trial`). A search's points, whose values
    /// are not known ahead, all take --random-seed unless seeds vary per trial.
    fn seed(&self, value: Option<f64>, trial: u32) -> u64 {
        let root = self.base.random_seed;
        let (index, label) = match (&self.mode, value) {
            (Mode::Sweep { axis, values }, Some(v)) => (
                values.iter().position(|x| *x == v).unwrap_or(0),
                format!("{}={}", axis.flag().trim_start_matches('-'), axis.format(v)),
            ),
            (Mode::Search { axis, .. }, Some(v)) => {
                (0, format!("{}={}", axis.flag().trim_start_matches('-'), axis.format(v)))
            }
            _ => (0, "base".to_owned()),
        };
        let a = &self.base;
        let vary = a.vary_seed_per_trial.then(|| (label.as_str(), trial.saturating_sub(1)));
        aiperf_core::campaign::sweep::run_seed(root, index, a.parameter_sweep_same_seed, vary)
    }

    /// The swept or searched option.
    pub fn axis(&self) -> Option<Axis> {
        match &self.mode {
            Mode::Single => None,
            Mode::Sweep { axis, .. } | Mode::Search { axis, .. } => Some(*axis),
        }
    }

    /// Whether this is one plain run, its files directly in the folder.
    pub fn is_single_run(&self) -> bool {
        self.mode == Mode::Single && self.repeats == 1
    }

    /// The plan of one sub-run: the swept option at `value` (none: as given), exports in `dir`.
    /// The plan of repeat `trial` (1, 2, …) of `value`, writing into `dir`.
    pub fn sub_run(&self, value: Option<f64>, dir: PathBuf, trial: u32) -> Result<ReplayPlan> {
        let mut a = self.base.clone();
        a.random_seed = self.seed(value, trial);
        a.artifact_dir = Some(dir);
        if let (Some(v), Some(axis)) = (value, self.axis()) {
            match axis {
                Axis::RequestRate => a.request_rate = vec![v],
                Axis::Concurrency => {
                    ensure!(v >= 1.0 && v.fract() == 0.0, "--concurrency {v}: accepted is a whole number ≥ 1");
                    a.concurrency = vec![v as usize];
                }
                Axis::SpeedupRatio => {
                    a.synthesis = a.synthesis.with_value(
                        aiperf_core::synthesis::Param::SpeedupRatio,
                        aiperf_core::synthesis::settings::Value::Float(v),
                    );
                }
            }
        }
        if trial > 1 && self.warmup_first_only {
            ReplayPlan::from_args(a.clone()).map(|p| p.without_warmup(&a))
        } else {
            ReplayPlan::from_args(a)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::profile::options;

    fn profile(extra: &[&str]) -> Result<ProfilePlan> {
        let mut argv = vec!["x", "-m", "m", "--input-file", "t.jsonl", "--artifact-dir", "art"];
        argv.extend_from_slice(extra);
        ProfilePlan::from_args(options::parse(argv)?)
    }

    #[test]
    fn a_list_is_a_sweep_of_sub_runs_each_with_one_value() {
        let p = profile(&["--request-rate", "10,20.5"]).unwrap();
        assert_eq!(p.mode, Mode::Sweep { axis: Axis::RequestRate, values: vec![10.0, 20.5] });
        assert!(!p.is_single_run());
        let sub = p.sub_run(Some(20.5), PathBuf::from("art/20.5"), 1).unwrap();
        assert_eq!(sub.cli_config()["request_rate"], 20.5);
        assert_eq!(sub.exports.artifact_dir, PathBuf::from("art/20.5"));
        let p = profile(&["--concurrency", "1,4", "--num-profile-runs", "3"]).unwrap();
        assert_eq!(p.mode, Mode::Sweep { axis: Axis::Concurrency, values: vec![1.0, 4.0] });
        assert_eq!((p.repeats, p.first.limits.concurrency), (3, Some(1)));
        let p = profile(&["--synthesis-speedup-ratio", "1,2.5"]).unwrap();
        assert_eq!(p.mode, Mode::Sweep { axis: Axis::SpeedupRatio, values: vec![1.0, 2.5] });
        let sub = p.sub_run(Some(2.5), PathBuf::from("art/2.5"), 1).unwrap();
        assert_eq!(sub.source.synthesis.unwrap().speedup_ratio, 2.5);
        // One value: a single run.
        let p = profile(&["--request-rate", "10"]).unwrap();
        assert!(p.is_single_run());
        assert_eq!(p.first.cli_config()["request_rate"], 10.0);
    }

    #[test]
    fn sweep_repeat_and_search_options_are_checked() {
        let e = |extra: &[&str]| format!("{:#}", profile(extra).unwrap_err());
        assert!(e(&["--request-rate", "1,2", "--concurrency", "1,2"]).contains("both lists"));
        assert!(e(&["--request-rate", "1,2,1"]).contains("lists 1 twice"));
        assert!(e(&["--request-rate", "1,0"]).contains("--request-rate 0"));
        assert!(e(&["--num-profile-runs", "11"]).contains("--num-profile-runs 11: accepted is 1 to 10"));
        assert!(e(&["--confidence-level", "1"]).contains("--confidence-level 1"));
        assert!(e(&["--slice-duration", "0"]).contains("--slice-duration 0.0"));
        assert!(e(&["--slice-duration", "0.0001"]).contains("at least 0.001"));
        // A search needs SLOs, and is not also a sweep.
        assert!(profile(&["--search-max", "request-rate"]).is_err());
        let g = ["--goodput", "time_to_first_token:100"];
        assert!(
            e(&[&g[..], &["--search-max", "concurrency", "--concurrency", "1,2"]].concat())
                .contains("choose a sweep or a search")
        );
        assert!(
            e(&[&g[..], &["--search-max", "request-rate", "--search-goodput-fraction", "1.5"]].concat())
                .contains("target good fraction")
        );
        let p = profile(&[&g[..], &["--search-max", "concurrency", "--search-start", "2"]].concat()).unwrap();
        match p.mode {
            Mode::Search { axis, params } => {
                assert_eq!(axis, Axis::Concurrency);
                assert_eq!((params.start, params.limit, params.integer, params.target), (2.0, 1024.0, true, 0.95));
            }
            m => panic!("{m:?}"),
        }
        assert_eq!(p.first.limits.concurrency, Some(2));
    }
}
