//! The shards' summaries: each one read (its run, options, counts and times), and the shards
//! checked to be parts of one run.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use aiperf_core::datetime::parse_datetime;
use aiperf_core::replay::sharding::{ShardRun, Sharding};
use aiperf_core::results::export::SummaryFormat;
use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::io::exports::ExportNames;

/// Largest summary file read (`profile_export_aiperf.json` is a few kB).
const MAX_SUMMARY_BYTES: u64 = 64 << 20;

/// What a shard's summary says about it.
#[derive(Clone, Debug)]
pub(super) struct ShardDir {
    pub(super) dir: PathBuf,
    /// Its files' names: AIPerf's, or those of `--profile-export-prefix`.
    pub(super) names: ExportNames,
    pub(super) run: ShardRun,
    /// Its options under our names (`aiperf_cli_config`; `input_config` in runs written before it).
    pub(super) cli_config: Value,
    /// Its options in AIPerf's shape (`input_config` beside `aiperf_cli_config`; else null).
    pub(super) input_config: Value,
    pub(super) was_cancelled: bool,
    /// Requests its summary counts (completed + failed).
    pub(super) counted: u64,
    pub(super) tokenizer: String,
    pub(super) client_cpu_s: Option<f64>,
    pub(super) startup_ms: f64,
    pub(super) end_unix_ns: u64,
}

/// Reads a shard's summary (AIPerf's file names, or those of `--profile-export-prefix`).
pub(super) fn read_shard(dir: &Path) -> Result<ShardDir> {
    let names = ExportNames::of_folder(dir);
    let path = dir.join(names.summary(SummaryFormat::Json));
    let mut text = Vec::new();
    std::fs::File::open(&path)
        .with_context(|| {
            format!("cannot open {}: a shard that ended before writing its summary cannot be merged", path.display())
        })?
        .take(MAX_SUMMARY_BYTES)
        .read_to_end(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let v: Value = serde_json::from_slice(&text).with_context(|| format!("{}: invalid JSON", path.display()))?;
    let run = match v.get("sharding").map(|s| serde_json::from_value::<Sharding>(s.clone())) {
        Some(Ok(Sharding::Shard(run))) => run,
        Some(Ok(Sharding::Merged(_))) => bail!("{}: this is a merged run, not a shard", path.display()),
        Some(Err(e)) => bail!("{}: field 'sharding': {e}", path.display()),
        None => bail!("{}: no 'sharding' field: the run was not made with profile --shard K/N", path.display()),
    };
    let count = |key: &str| v.get(key).and_then(|m| m.get("avg")).and_then(Value::as_f64).unwrap_or(0.0) as u64;
    let end_unix_ns = v
        .get("end_time")
        .and_then(Value::as_str)
        .and_then(parse_datetime)
        .filter(|t| t.has_offset)
        .and_then(|t| u64::try_from(t.unix_ns).ok())
        .unwrap_or(run.start_unix_ns);
    Ok(ShardDir {
        dir: dir.to_owned(),
        names,
        cli_config: v.get("aiperf_cli_config").or_else(|| v.get("input_config")).cloned().unwrap_or(Value::Null),
        input_config: match v.get("aiperf_cli_config") {
            Some(_) => v.get("input_config").cloned().unwrap_or(Value::Null),
            None => Value::Null,
        },
        was_cancelled: v.get("was_cancelled").and_then(Value::as_bool).unwrap_or(false),
        counted: count("request_count") + count("error_request_count"),
        tokenizer: v.get("tokenizer").and_then(Value::as_str).unwrap_or_default().to_owned(),
        client_cpu_s: v.get("client_cpu").and_then(|c| c.get("seconds")).and_then(Value::as_f64),
        startup_ms: v.get("startup_ms").and_then(Value::as_f64).unwrap_or(0.0),
        end_unix_ns,
        run,
    })
}

/// Refuses shards of different runs; returns what is missing or interrupted.
pub(super) fn check_shards(shards: &[ShardDir]) -> Result<Vec<String>> {
    let first = shards.first().context("no shard folder given")?;
    let n = first.run.count;
    let name = |s: &ShardDir| format!("{} (shard {}/{})", s.dir.display(), s.run.index, s.run.count);
    let mut seen: BTreeMap<u32, &ShardDir> = BTreeMap::new();
    for s in shards {
        ensure!(
            s.run.count == n,
            "{} and {} are shards of runs split differently (N = {} and {})",
            name(first),
            name(s),
            n,
            s.run.count
        );
        if let Some(other) = seen.insert(s.run.index, s) {
            bail!("{} and {} are the same shard K = {}", name(other), name(s), s.run.index);
        }
        let differing = differing_options(&first.cli_config, &s.cli_config);
        ensure!(
            differing.is_empty(),
            "{} and {} are shards of different runs: their options differ ({})",
            name(first),
            name(s),
            differing.join(", ")
        );
    }
    let mut problems = Vec::new();
    let missing: Vec<String> = (0..n).filter(|k| !seen.contains_key(k)).map(|k| k.to_string()).collect();
    if !missing.is_empty() {
        problems.push(format!("shard(s) K = {} of N = {n} missing", missing.join(", ")));
    }
    for s in shards.iter().filter(|s| s.was_cancelled) {
        problems.push(format!("{} was interrupted (was_cancelled: a signal stopped it before its end)", name(s)));
    }
    Ok(problems)
}

/// The options (keys of `aiperf_cli_config`) in which two shards differ, apart from the shard
/// itself and the names of its files (`--profile-export-prefix`), which are no part of the run.
fn differing_options(a: &Value, b: &Value) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return if a == b { Vec::new() } else { vec!["input_config".to_owned()] };
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| !matches!(k.as_str(), "shard" | "profile_export_prefix") && a.get(*k) != b.get(*k))
        .map(|k| k.to_string())
        .collect()
}
