//! Where a run's exports go: AIPerf's default folder name when `--artifact-dir` is not given, and
//! no earlier run's files replaced unless `--overwrite` asks for it.
//!
//! AIPerf 0.13 names the default folder `artifacts/<model>-<service>-<endpoint>-<load>`
//! (`config/resolution/resolvers.py`: `llama-3-8b-openai-chat-concurrency10`), so that runs of
//! different settings do not collide. A rerun of the same settings gets the next free suffix
//! (`…-2`, `…-3`); a folder named with `--artifact-dir` that already holds a run is refused.

use std::path::{Path, PathBuf};

use aiperf_core::campaign::sweep::Axis;
use anyhow::{Result, bail};

use super::body::EndpointType;
use super::options::Args;
use crate::io::exports::ExportNames;

/// The folder below which default artifact folders are made (AIPerf's `./artifacts`).
pub const DEFAULT_ROOT: &str = "artifacts";

/// Suffixes tried for a default folder before giving up.
const MAX_SUFFIX: u32 = 10_000;

/// What the load of a run is, as AIPerf names it in folder names.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// The trace's timestamps (`fixed_schedule`).
    FixedSchedule,
    /// A concurrency ceiling alone (`concurrency8`).
    Concurrency(usize),
    /// An arrival rate, maybe with a ceiling (`concurrency8-request_rate10.0`).
    Rate { per_second: f64, concurrency: Option<usize> },
    /// A sweep or search over one option (`concurrency1_4_16`, `search_request_rate`).
    Campaign(String),
}

impl Load {
    /// AIPerf's stimulus name (`_describe_phase`): Python's `str` of the values.
    pub fn name(&self) -> String {
        match self {
            Load::FixedSchedule => "fixed_schedule".to_owned(),
            Load::Concurrency(c) => format!("concurrency{c}"),
            Load::Rate { per_second, concurrency } => {
                let rate = format!("request_rate{per_second:?}");
                match concurrency {
                    Some(c) => format!("concurrency{c}-{rate}"),
                    None => rate,
                }
            }
            Load::Campaign(s) => s.clone(),
        }
    }
}

/// The load of one run (`has_timestamps` is asked only when the flags leave it open).
pub fn load_of(args: &Args, has_timestamps: impl FnOnce() -> bool) -> Load {
    let concurrency = args.concurrency.first().copied();
    if let Some(&per_second) = args.request_rate.first() {
        return Load::Rate { per_second, concurrency };
    }
    let fixed = if args.fixed_schedule {
        true
    } else if args.no_fixed_schedule {
        false
    } else {
        has_timestamps()
    };
    match (fixed, concurrency) {
        (false, Some(c)) => Load::Concurrency(c),
        _ => Load::FixedSchedule,
    }
}

/// The load of a sweep (the option and its values) or of a search (`values` none).
pub fn campaign_load(axis: Axis, values: Option<&[f64]>) -> Load {
    Load::Campaign(match values {
        Some(v) => format!("{}{}", axis.tag(), v.iter().map(|&x| axis.format(x)).collect::<Vec<_>>().join("_")),
        None => format!("search_{}", axis.tag()),
    })
}

/// Whether the trace's first row has a timestamp, from the head of the file (which stays
/// readable, also from a pipe). Formats other than Mooncake JSONL always have times; a file that
/// cannot be read says so later, when the trace is read.
pub fn first_row_has_timestamp(path: &Path) -> bool {
    let Ok(head) = crate::io::input::head(path, 1 << 16) else { return false };
    let Some(line) = head.split(|&b| b == b'\n').map(|l| l.trim_ascii()).find(|l| !l.is_empty()) else {
        return false;
    };
    match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(row)) => row.get("timestamp").is_some_and(|t| !t.is_null()),
        Ok(_) => true,
        // A first line longer than the head, or another format (CSV, a JSON document).
        Err(_) => !line.starts_with(b"{") || line.windows(12).any(|w| w == b"\"timestamp\":"),
    }
}

/// `<model>-openai-<endpoint>-<load>`, with `/` in the model name turned into `_` as AIPerf does
/// (and any other character that cannot be in a folder name).
pub fn folder_name(model: &str, endpoint: EndpointType, load: &Load) -> String {
    let model: String = model.chars().map(|c| if c == '/' || c == '\\' || c.is_control() { '_' } else { c }).collect();
    let model = match model.as_str() {
        "" | "." | ".." => "model".to_owned(),
        _ => model,
    };
    let endpoint = match endpoint {
        EndpointType::Chat => "chat",
        EndpointType::Completions => "completions",
    };
    format!("{model}-openai-{endpoint}-{}", load.name())
}

/// The files of an earlier run in `dir` or in one of its sub-folders (a campaign's sub-runs):
/// everything named `profile_export…` or `server_metrics_export…`, and the files `names` gives
/// under `--profile-export-prefix`. Up to `limit` are listed.
pub fn earlier_run_files(dir: &Path, limit: usize, names: &ExportNames) -> Vec<PathBuf> {
    let ours = |name: &str| {
        name.starts_with("profile_export") || name.starts_with("server_metrics_export") || names.is_export(name)
    };
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        if found.len() >= limit {
            break;
        }
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir && entry.file_name().to_str().is_some_and(ours) {
            found.push(path);
        } else if is_dir && let Ok(sub) = std::fs::read_dir(&path) {
            found.extend(
                sub.flatten()
                    .filter(|e| e.file_name().to_str().is_some_and(ours))
                    .map(|e| e.path())
                    .take(limit - found.len()),
            );
        }
    }
    found.sort();
    found
}

/// The folder a run writes into: `given` when it holds no earlier run (or `overwrite`), else an
/// error naming the files; without `given`, `artifacts/NAME` or its first free `NAME-K`.
pub fn resolve(given: Option<&Path>, name: &str, overwrite: bool, names: &ExportNames) -> Result<PathBuf> {
    if let Some(dir) = given {
        let earlier = earlier_run_files(dir, 3, names);
        if !overwrite && !earlier.is_empty() {
            let shown: Vec<String> = earlier.iter().map(|p| p.display().to_string()).collect();
            bail!(
                "--artifact-dir {} already holds a run ({}{}): give another --artifact-dir, or --overwrite to replace its files",
                dir.display(),
                shown.join(", "),
                if earlier.len() >= 3 { ", …" } else { "" }
            );
        }
        return Ok(dir.to_path_buf());
    }
    let root = Path::new(DEFAULT_ROOT);
    for k in 1..=MAX_SUFFIX {
        let dir = if k == 1 { root.join(name) } else { root.join(format!("{name}-{k}")) };
        if overwrite || earlier_run_files(&dir, 1, names).is_empty() {
            return Ok(dir);
        }
    }
    bail!("{}/{name} and {MAX_SUFFIX} numbered folders beside it hold runs: give --artifact-dir", root.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_aiperf() {
        let chat = EndpointType::Chat;
        assert_eq!(folder_name("meta/llama-3", chat, &Load::Concurrency(10)), "meta_llama-3-openai-chat-concurrency10");
        assert_eq!(folder_name("m", chat, &Load::FixedSchedule), "m-openai-chat-fixed_schedule");
        assert_eq!(
            folder_name("m", EndpointType::Completions, &Load::Rate { per_second: 10.0, concurrency: Some(4) }),
            "m-openai-completions-concurrency4-request_rate10.0"
        );
        assert_eq!(Load::Rate { per_second: 2.5, concurrency: None }.name(), "request_rate2.5");
        assert_eq!(campaign_load(Axis::Concurrency, Some(&[1.0, 4.0, 16.0])).name(), "concurrency1_4_16");
        assert_eq!(campaign_load(Axis::SpeedupRatio, Some(&[0.5, 2.0])).name(), "synthesis_speedup_ratio0.5_2");
        assert_eq!(campaign_load(Axis::RequestRate, None).name(), "search_request_rate");
        assert_eq!(folder_name("..", chat, &Load::FixedSchedule), "model-openai-chat-fixed_schedule");
    }

    #[test]
    fn timestamps_are_seen_in_the_first_row() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("t.jsonl");
        std::fs::write(&f, "\n{\"timestamp\": 5, \"input_length\": 1}\n").unwrap();
        assert!(first_row_has_timestamp(&f));
        std::fs::write(&f, "{\"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 5}\n").unwrap();
        assert!(!first_row_has_timestamp(&f));
        assert!(!first_row_has_timestamp(&d.path().join("missing.jsonl")));
    }

    #[test]
    fn an_earlier_run_is_found_at_the_top_and_one_level_down() {
        let d = tempfile::tempdir().unwrap();
        assert!(earlier_run_files(d.path(), 3, &ExportNames::default()).is_empty());
        std::fs::create_dir(d.path().join("lost+found")).unwrap();
        std::fs::write(d.path().join("notes.txt"), "x").unwrap();
        assert!(earlier_run_files(d.path(), 3, &ExportNames::default()).is_empty(), "other files are not a run");
        std::fs::create_dir(d.path().join("4")).unwrap();
        std::fs::write(d.path().join("4").join("profile_export.jsonl"), "").unwrap();
        assert_eq!(
            earlier_run_files(d.path(), 3, &ExportNames::default()),
            vec![d.path().join("4").join("profile_export.jsonl")]
        );
        let err = resolve(Some(d.path()), "x", false, &ExportNames::default()).unwrap_err().to_string();
        assert!(err.contains("already holds a run") && err.contains("--overwrite"), "{err}");
        assert_eq!(resolve(Some(d.path()), "x", true, &ExportNames::default()).unwrap(), d.path());
    }
}
