//! `aiperf-cli merge`: the shards of a run (`profile --shard K/N`) combined into one run whose
//! exports have the same files and format as a single-process run.
//!
//! Each shard's records are nanoseconds from its own time zero (`sharding.shard.start_unix_ns` of
//! its summary: the common `--start-at` when given); they are rebased to the earliest zero and
//! the metrics are computed again from the merged records with [`Aggregate`] (never from the
//! shards' summaries). Missing shards (values of K absent), interrupted shards and shards whose
//! records are incomplete (a truncated last line, fewer records than their summary counts) stop
//! the merge with every problem listed, unless `--allow-partial` asks to merge what is there
//! (the run is then marked partial). Shards of different runs (N or the options disagree, a K
//! twice) are always refused. Records are streamed: memory holds one line per shard plus the
//! metric values, never the records.

mod records;
mod shards;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use aiperf_core::replay::sharding::{MergedRun, Sharding};
use aiperf_core::results::aggregate::Aggregate;
use aiperf_core::results::export::SummaryFormat;
use aiperf_core::results::line::{RECORDS_FILE, record_line};
use aiperf_core::results::metrics::{Slo, parse_goodput};
use aiperf_core::results::record::RequestRecord;
use aiperf_core::results::summary::{RunSummary, shell_command};
use aiperf_core::trace::DEFAULT_MAX_LINE_BYTES;
use anyhow::{Context, Result};
use serde_json::Value;

use crate::exit::BadInput;
use crate::io::exports::ExportNames;
use records::{Records, scan_records};
use shards::{check_shards, read_shard};

/// Merge the shards of a run (`profile --shard K/N`) into one run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shards' artifact folders (each with profile_export.jsonl and profile_export_aiperf.json,
    /// or a run's files written with --profile-export-prefix: NAME.jsonl and NAME.json).
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub shard_dirs: Vec<PathBuf>,
    /// Folder of the merged run's exports.
    #[arg(long, value_name = "RUN_DIR")]
    pub output: PathBuf,
    /// Merge what is there although shards are missing, interrupted or incomplete; the merged
    /// run is marked partial (`sharding.merged.partial`, `was_cancelled`).
    #[arg(long)]
    pub allow_partial: bool,
    /// Longest record line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

/// Runs `aiperf-cli merge`.
pub fn run(args: Args) -> Result<()> {
    let records_out = args.output.join(RECORDS_FILE);
    let summary_outs: Vec<PathBuf> = SummaryFormat::ALL.iter().map(|f| args.output.join(f.file_name())).collect();
    let inputs: Vec<PathBuf> = args
        .shard_dirs
        .iter()
        .flat_map(|d| {
            let names = ExportNames::of_folder(d);
            [d.join(names.records()), d.join(names.summary(SummaryFormat::Json))]
        })
        .collect();
    let outs: Vec<&Path> =
        std::iter::once(records_out.as_path()).chain(summary_outs.iter().map(PathBuf::as_path)).collect();
    let ins: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    crate::io::output::refuse_same_files(&outs, &ins).context(BadInput)?;

    let mut shards = args.shard_dirs.iter().map(|d| read_shard(d)).collect::<Result<Vec<_>>>().context(BadInput)?;
    shards.sort_by_key(|s| s.run.index);
    let mut problems = check_shards(&shards).context(BadInput)?;
    let mut counts = Vec::new();
    for s in &shards {
        let records = s.names.records();
        let name = format!("shard {}/{} ({})", s.run.index, s.run.count, s.dir.display());
        if let Some(base) = s.names.base() {
            say!(
                "{name}: read {records} and {} (a run written with --profile-export-prefix {base})",
                s.names.summary(SummaryFormat::Json)
            );
        }
        let scan = scan_records(&s.dir.join(&records), args.max_line_bytes).context(BadInput)?;
        if scan.truncated_last_line {
            problems.push(format!(
                "{name}: the last line of {records} is incomplete (the process was killed while writing); it is left out"
            ));
        }
        if scan.records != s.counted {
            problems.push(format!(
                "{name}: {} record(s) in {records} but its summary counts {} request(s)",
                scan.records, s.counted
            ));
        }
        counts.push(scan);
    }
    if !problems.is_empty() && !args.allow_partial {
        let list: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
        return Err(anyhow::anyhow!(
            "the shards are not a whole run:\n{}\nmerge --allow-partial merges what is there and marks the run partial",
            list.join("\n")
        ))
        .context(BadInput);
    }
    for p in &problems {
        say!("warning: {p}");
    }

    let first = &shards[0];
    let server_first = first.cli_config.get("client_token_count").and_then(Value::as_bool) != Some(true);
    let slos: Vec<Slo> = match first.cli_config.get("goodput").and_then(Value::as_str) {
        Some(g) => parse_goodput(g).context("the shards' --goodput")?,
        None => Vec::new(),
    };
    let zero = shards.iter().map(|s| s.run.start_unix_ns).min().unwrap_or(0);
    std::fs::create_dir_all(&args.output).with_context(|| format!("cannot create {}", args.output.display()))?;
    let mut out = BufWriter::new(crate::io::output::create_stream(&records_out)?);
    let mut aggregate = Aggregate::default();
    let mut readers = Vec::new();
    for (s, scan) in shards.iter().zip(&counts) {
        let path = s.dir.join(s.names.records());
        readers.push(Records::open(&path, args.max_line_bytes, scan.complete_lines, s.run.start_unix_ns - zero)?);
    }
    // Completion order across shards, as a single run writes its records.
    let mut heads: Vec<Option<RequestRecord>> = readers.iter_mut().map(Records::next).collect::<Result<_>>()?;
    let mut merged = 0u64;
    loop {
        let next = heads.iter().enumerate().filter_map(|(i, h)| h.as_ref().map(|r| (r.end_ns, i))).min();
        let Some((_, i)) = next else { break };
        let Some(rec) = heads[i].take() else { break };
        let metrics = aggregate.add(&rec, server_first, &slos);
        merged += 1;
        out.write_all(&record_line(&rec, metrics.as_ref(), zero))
            .with_context(|| format!("cannot write {}", records_out.display()))?;
        heads[i] = readers[i].next()?;
    }
    out.flush().with_context(|| format!("cannot write {}", records_out.display()))?;
    drop(out);

    let partial = !problems.is_empty();
    let mut cli_config = first.cli_config.clone();
    cli_config["shard"] = Value::Null;
    // The merged run's files have AIPerf's names.
    if cli_config.get("profile_export_prefix").is_some() {
        cli_config["profile_export_prefix"] = Value::Null;
    }
    let input_config = merged_input_config(&first.input_config, &cli_config, merged);
    // The URLs as the shards showed them (one `url`, or `urls` when there were several).
    let urls: Vec<String> = match (first.cli_config.get("urls"), first.cli_config.get("url")) {
        (Some(Value::Array(list)), _) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        (_, Some(Value::String(u))) => vec![u.clone()],
        _ => Vec::new(),
    };
    let summary = RunSummary {
        benchmark_id: crate::io::exports::benchmark_id(u128::from(zero)),
        cli_command: shell_command(std::env::args()),
        incomplete_reason: partial.then(|| "partial merge: see sharding.problems".to_owned()),
        urls,
        report: aggregate.report(!slos.is_empty()),
        input_config,
        cli_config,
        was_cancelled: partial || shards.iter().any(|s| s.was_cancelled),
        start_unix_ns: u128::from(zero),
        end_unix_ns: u128::from(shards.iter().map(|s| s.end_unix_ns).max().unwrap_or(zero)),
        tokenizer: first.tokenizer.clone(),
        client_cpu_s: shards.iter().map(|s| s.client_cpu_s).sum(),
        startup_ms: shards.iter().map(|s| s.startup_ms).fold(0.0, f64::max),
        sharding: Some(Sharding::Merged(MergedRun {
            count: first.run.count,
            shards: shards.iter().map(|s| s.run.clone()).collect(),
            records: counts.iter().map(|c| c.records).collect(),
            partial,
            problems,
        })),
        // Every shard scraped the server and the GPUs on its own; those views stay in the shard
        // folders.
        ..RunSummary::default()
    };
    crate::io::exports::write_summaries(&args.output, &crate::io::exports::ExportNames::default(), &summary)?;
    crate::io::exports::write_ready_marker(&args.output, &summary)?;
    show!("{}", aiperf_core::results::export::console_table(&summary));
    show!("Merged run written to {}", args.output.display());
    Ok(())
}

/// The merged run's `input_config` (AIPerf's shape): the first shard's, its profiling phase
/// counting the merged run's requests when no count or duration bounded it.
fn merged_input_config(first: &Value, cli_config: &Value, requests: u64) -> Value {
    let mut config = first.clone();
    let unbounded = cli_config.get("request_count").is_none_or(Value::is_null)
        && cli_config.get("benchmark_duration").is_none_or(Value::is_null);
    if let Some(Value::Object(p)) = config.get_mut("phases").and_then(Value::as_array_mut).and_then(|p| p.last_mut())
        && unbounded
        && p.contains_key("requests")
    {
        p.insert("requests".into(), serde_json::json!(requests.max(1)));
    }
    // The merged run's files have AIPerf's names.
    if let Some(Value::Object(a)) = config.get_mut("artifacts") {
        a.remove("prefix");
    }
    config
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use aiperf_core::replay::sharding::ShardRun;
    use serde_json::json;

    /// A shard folder with `records` lines and a summary counting `counted` requests.
    fn shard(root: &Path, k: u32, n: u32, records: &[RequestRecord], counted: u64, config: Value) -> PathBuf {
        let dir = root.join(format!("shard-{k}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut jsonl = Vec::new();
        for r in records {
            jsonl.extend(record_line(r, None, 0));
        }
        std::fs::write(dir.join(RECORDS_FILE), jsonl).unwrap();
        let run = ShardRun {
            index: k,
            count: n,
            start_unix_ns: 1_000_000_000 * u64::from(k + 1),
            common_start: false,
            clock: None,
        };
        let summary = json!({
            "request_count": {"avg": counted},
            "error_request_count": {"avg": 0},
            "input_config": config,
            "was_cancelled": false,
            "end_time": "2026-11-23T22:00:00.000000Z",
            "tokenizer": "t",
            "startup_ms": 5.0,
            "sharding": {"shard": run},
        });
        std::fs::write(dir.join(SummaryFormat::Json.file_name()), serde_json::to_vec(&summary).unwrap()).unwrap();
        dir
    }

    fn rec(end_ms: u64) -> RequestRecord {
        RequestRecord {
            sent_ns: end_ms * 1_000_000 - 500_000,
            scheduled_ns: end_ms * 1_000_000 - 500_000,
            end_ns: end_ms * 1_000_000,
            output_tokens: Some(3),
            ..Default::default()
        }
    }

    fn merge(dirs: &[PathBuf], out: &Path, allow_partial: bool) -> Result<()> {
        run(Args { shard_dirs: dirs.to_vec(), output: out.to_owned(), allow_partial, max_line_bytes: 1 << 20 })
    }

    fn summary(out: &Path) -> Value {
        serde_json::from_slice(&std::fs::read(out.join(SummaryFormat::Json.file_name())).unwrap()).unwrap()
    }

    #[test]
    fn shards_are_rebased_to_the_earliest_zero_and_metrics_recomputed() {
        let t = tempfile::tempdir().unwrap();
        let cfg = json!({"model": "m", "shard": "0/2"});
        let a = shard(t.path(), 0, 2, &[rec(10), rec(30)], 2, cfg.clone());
        let b = shard(t.path(), 1, 2, &[rec(5)], 1, json!({"model": "m", "shard": "1/2"}));
        let out = t.path().join("merged");
        merge(&[b, a], &out, false).unwrap();
        let lines: Vec<Value> = std::fs::read_to_string(out.join(RECORDS_FILE))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // Shard 1 started 1 s after shard 0: its record ends at 1.005 s on the merged clock.
        let ends: Vec<u64> = std::fs::read_to_string(out.join(RECORDS_FILE))
            .unwrap()
            .lines()
            .map(|l| aiperf_core::results::line::parse_serde(l.as_bytes()).unwrap().unwrap().end_ns)
            .collect();
        assert_eq!(ends, vec![10_000_000, 30_000_000, 1_005_000_000]);
        assert!(lines.iter().all(|l| l["metrics"]["request_latency"]["value"].as_f64() == Some(0.5)));
        let s = summary(&out);
        assert_eq!(s["request_count"]["avg"], 3.0);
        assert_eq!(s["sharding"]["merged"]["records"], json!([2, 1]));
        assert_eq!(s["sharding"]["merged"]["partial"], false);
        assert!(s["input_config"]["shard"].is_null());
        assert_eq!(s["was_cancelled"], false);
        assert!(out.join(SummaryFormat::Csv.file_name()).exists());
    }

    #[test]
    fn missing_interrupted_and_truncated_shards_are_refused_unless_partial_is_allowed() {
        let t = tempfile::tempdir().unwrap();
        let cfg = json!({"model": "m"});
        let a = shard(t.path(), 0, 3, &[rec(10), rec(20)], 2, cfg.clone());
        let b = shard(t.path(), 2, 3, &[rec(10), rec(20)], 2, cfg.clone());
        // Shard 2 was killed while writing its second record.
        let jsonl = std::fs::read(b.join(RECORDS_FILE)).unwrap();
        std::fs::write(b.join(RECORDS_FILE), &jsonl[..jsonl.len() - 20]).unwrap();
        let out = t.path().join("merged");
        let e = format!("{:#}", merge(&[a.clone(), b.clone()], &out, false).unwrap_err());
        assert!(e.contains("shard(s) K = 1 of N = 3 missing"), "{e}");
        assert!(e.contains("the last line of profile_export.jsonl is incomplete"), "{e}");
        assert!(e.contains("1 record(s) in profile_export.jsonl but its summary counts 2"), "{e}");
        assert!(e.contains("--allow-partial"), "{e}");
        assert!(!out.join(RECORDS_FILE).exists());
        merge(&[a, b], &out, true).unwrap();
        let s = summary(&out);
        assert_eq!(s["sharding"]["merged"]["partial"], true);
        assert_eq!(s["was_cancelled"], true);
        assert_eq!(s["request_count"]["avg"], 3.0);
        assert_eq!(s["sharding"]["merged"]["problems"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn shards_of_different_runs_are_always_refused() {
        let t = tempfile::tempdir().unwrap();
        let a = shard(t.path(), 0, 2, &[rec(10)], 1, json!({"model": "m", "request_rate": 5}));
        let b = shard(t.path(), 1, 2, &[rec(10)], 1, json!({"model": "m", "request_rate": 6}));
        let out = t.path().join("merged");
        let e = format!("{:#}", merge(&[a.clone(), b], &out, true).unwrap_err());
        assert!(e.contains("shards of different runs: their options differ (request_rate)"), "{e}");
        let c = shard(&t.path().join("other"), 1, 3, &[rec(10)], 1, json!({"model": "m", "request_rate": 5}));
        let e = format!("{:#}", merge(&[a.clone(), c], &out, true).unwrap_err());
        assert!(e.contains("split differently (N = 2 and 3)"), "{e}");
        let e = format!("{:#}", merge(&[a.clone(), a.clone()], &out, true).unwrap_err());
        assert!(e.contains("are the same shard K = 0"), "{e}");
        // A bad line in the middle names its file and line.
        let mut jsonl = b"{\"metadata\": 1}\n".to_vec();
        jsonl.extend(record_line(&rec(3), None, 0));
        std::fs::write(a.join(RECORDS_FILE), jsonl).unwrap();
        let single = shard(&t.path().join("one"), 0, 1, &[], 0, json!({}));
        std::fs::copy(a.join(RECORDS_FILE), single.join(RECORDS_FILE)).unwrap();
        let e = format!("{:#}", merge(std::slice::from_ref(&single), &out, true).unwrap_err());
        assert!(e.contains(&format!("{}:1: not a record", single.join(RECORDS_FILE).display())), "{e}");
        // A folder that is not a shard.
        std::fs::write(single.join(SummaryFormat::Json.file_name()), b"{}").unwrap();
        let e = format!("{:#}", merge(&[single], &out, true).unwrap_err());
        assert!(e.contains("no 'sharding' field"), "{e}");
    }
}
