//! `aiperf-cli analyze-trace`: the reference's report, plus arrivals, cache what-if and lint.

use std::io::Write;
use std::path::{Path, PathBuf};

use aiperf_core::analysis::{DEFAULT_BLOCK_SIZE, analyze};
use aiperf_core::report::analysis_report;
use aiperf_core::trace::DEFAULT_MAX_LINE_BYTES;
use anyhow::{Context, Result, ensure};

use crate::output::{refuse_same_files, report_stream, write_output};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Mooncake trace (JSONL, optionally gzip-compressed; `-`: standard input).
    pub file: PathBuf,
    /// Tokens per hash id block.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Write the analysis as JSON to this file (`-`: standard output, the report then goes to
    /// standard error).
    #[arg(long)]
    pub output_file: Option<PathBuf>,
    /// Skip invalid rows (they are listed on stderr) instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Longest trace line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    #[command(flatten)]
    pub format: crate::trace_format::TraceFormatArgs,
}

pub fn run(args: Args) -> Result<()> {
    ensure!(args.block_size >= 1, "--block-size must be at least 1");
    if let Some(out) = &args.output_file {
        refuse_same_files(&[out], &[&args.file])?;
    }
    let outcome =
        crate::trace_format::read_trace_any(&args.file, &args.format, args.skip_invalid, args.max_line_bytes)?;
    let analysis = analyze(&outcome.trace, args.block_size);
    let mut out = report_stream(&[args.output_file.as_deref().unwrap_or(Path::new(""))]);
    out.write_all(analysis_report(&analysis).as_bytes())?;
    if let Some(path) = &args.output_file {
        let json = serde_json::to_string_pretty(&analysis).context("cannot serialize the analysis")?;
        write_output(path, format!("{json}\n").as_bytes())?;
        writeln!(out, "\nAnalysis report saved to {}", path.display())?;
    }
    Ok(())
}
