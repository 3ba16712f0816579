//! `aiperf-cli analyze-trace`: the reference's report, plus arrivals, cache what-if and lint.

use std::io::Write;
use std::path::PathBuf;

use aiperf_core::analysis::{DEFAULT_BLOCK_SIZE, analyze};
use aiperf_core::report::analysis_report;
use anyhow::{Context, Result, ensure};

use crate::input::write_atomically;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Mooncake trace (JSONL, optionally gzip-compressed).
    pub file: PathBuf,
    /// Tokens per hash id block.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Write the analysis as JSON to this file.
    #[arg(long)]
    pub output_file: Option<PathBuf>,
    /// Skip invalid rows (they are listed on stderr) instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    #[command(flatten)]
    pub format: crate::trace_format::TraceFormatArgs,
}

pub fn run(args: Args) -> Result<()> {
    ensure!(args.block_size >= 1, "--block-size must be at least 1");
    let outcome = crate::trace_format::read_trace_any(&args.file, &args.format, args.skip_invalid)?;
    let analysis = analyze(&outcome.trace, args.block_size);
    let mut out = std::io::stdout().lock();
    out.write_all(analysis_report(&analysis).as_bytes())?;
    if let Some(path) = &args.output_file {
        let json = serde_json::to_string_pretty(&analysis).context("cannot serialize the analysis")?;
        write_atomically(path, format!("{json}\n").as_bytes())?;
        writeln!(out, "\nAnalysis report saved to {}", path.display())?;
    }
    Ok(())
}
