//! `aiperf-cli synthesize-agentic-code`: AIPerf's `aiperf synthesize agentic-code`, multi-turn
//! coding-agent sessions written as a Mooncake dataset with AIPerf's `manifest.json`,
//! `quality.json` and `comparison.txt`.
//!
//! Its own command rather than a mode of `synthesize-trace`: it reads no trace and writes a folder
//! of files, where `synthesize-trace` transforms or learns from an input trace into one file.

use std::io::Write;
use std::path::{Path, PathBuf};

use aiperf_core::synthesis::agentic::{
    AgenticConfig, comparison_text, dataset_id_starts, generate, manifest_json, quality, quality_json, session_minutes,
    write_dataset_rows,
};
use anyhow::{Context, Result, bail};

use crate::io::output::{refuse_same_files, write_output, write_parts_file};

/// Sessions formatted at a time by one thread (~20 turns each: a few MB of text).
const PART_SESSIONS: usize = 1 << 10;

/// The name of AIPerf's bundled configuration (`configs/default.json`).
const BUNDLED: &str = "default";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of sessions to generate (restart continuations come on top).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub num_sessions: u32,
    /// Folder to write dataset.jsonl, manifest.json, quality.json and comparison.txt into
    /// (created if missing; a folder already holding one of them is refused unless --overwrite).
    #[arg(long)]
    pub output_dir: PathBuf,
    /// Replace the files of an earlier run in --output-dir.
    #[arg(long)]
    pub overwrite: bool,
    /// Generator configuration: a JSON file with AIPerf's keys, a previous run's manifest.json
    /// (re-runs it), or `default` (AIPerf's bundled default.json). Without it: AIPerf's built-in
    /// defaults.
    #[arg(long, alias = "agentic-config")]
    pub config: Option<PathBuf>,
    /// Random seed: the same seed and options give the same files, byte for byte.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Largest input sequence length: replaces the configuration's max_prompt_tokens.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_isl: Option<u64>,
    /// Largest output sequence length: the generation length's upper bound.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_osl: Option<u64>,
}

/// The configuration asked for and the name the manifest records for it.
fn load(args: &Args) -> Result<(AgenticConfig, String)> {
    let (config, name) = match &args.config {
        None => (AgenticConfig::default(), BUNDLED.to_owned()),
        Some(p) if p.as_os_str() == BUNDLED && !p.exists() => {
            let c = AgenticConfig::from_json(aiperf_core::synthesis::agentic::config::BUNDLED_DEFAULT)
                .context("the bundled default configuration")?;
            (c, BUNDLED.to_owned())
        }
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
            let c = AgenticConfig::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            let stem = p.file_stem().map_or_else(|| p.display().to_string(), |s| s.to_string_lossy().into_owned());
            (c, stem)
        }
    };
    let config = config.with_limits(args.max_isl, args.max_osl).context("--max-isl/--max-osl")?;
    Ok((config, name))
}

pub fn run(args: Args) -> Result<()> {
    let dir = &args.output_dir;
    let files = ["dataset.jsonl", "manifest.json", "quality.json", "comparison.txt"].map(|f| dir.join(f));
    let outputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    refuse_same_files(&outputs, &args.config.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
    if !args.overwrite
        && let Some(earlier) = files.iter().find(|f| f.exists())
    {
        bail!("{} already exists: choose another --output-dir, or --overwrite to replace it", earlier.display());
    }
    let (config, name) = load(&args)?;
    let sessions = generate(&config, args.num_sessions as usize, args.seed)?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
        .context(crate::exit::OutputFailed)?;
    // The quality report is computed on its own thread while the dataset is written.
    let (rows, q, table) = std::thread::scope(|scope| {
        let report = scope.spawn(|| {
            let q = quality(&sessions, &config);
            let table = comparison_text(&q, &session_minutes(&sessions));
            (q, table)
        });
        // The rows of `to_trace`, written part by part straight from the sessions.
        let id_starts = dataset_id_starts(&config, &sessions);
        let n = sessions.sessions.len();
        write_parts_file(&files[0], n.div_ceil(PART_SESSIONS), |buf, k| {
            let at = k * PART_SESSIONS..((k + 1) * PART_SESSIONS).min(n);
            write_dataset_rows(&config, &sessions, &id_starts, at, buf);
        })?;
        let (q, table) = report.join().map_err(|_| anyhow::anyhow!("the quality report stopped unexpectedly"))?;
        anyhow::Ok((sessions.turns.len(), q, table))
    })?;
    let manifest = manifest_json(&config, args.seed, sessions.sessions.len(), &name);
    write_output(&files[1], manifest.as_bytes())?;
    write_output(&files[2], quality_json(&q).as_bytes())?;
    write_output(&files[3], table.as_bytes())?;
    let mut out = crate::io::console::Console::Stdout;
    writeln!(out, "{} sessions, {} rows written to {}\n", sessions.sessions.len(), rows, dir.display())?;
    out.write_all(table.as_bytes())?;
    Ok(())
}
