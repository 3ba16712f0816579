//! `aiperf-cli analyze-trace`: the reference's report, plus arrivals, cache what-if and lint.

use std::io::Write;
use std::path::{Path, PathBuf};

use aiperf_core::analysis::report::analysis_report;
use aiperf_core::analysis::{AnalysisInput, DEFAULT_BLOCK_SIZE, InputBuilder, analyze_input};
use aiperf_core::formats::Format;
use aiperf_core::trace::DEFAULT_MAX_LINE_BYTES;
use anyhow::{Context, Result, bail, ensure};

use crate::io::output::{refuse_same_files, report_stream, write_output};

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
    pub format: crate::io::trace_format::TraceFormatArgs,
}

pub fn run(args: Args) -> Result<()> {
    ensure!(args.block_size >= 1, "--block-size must be at least 1");
    if let Some(out) = &args.output_file {
        refuse_same_files(&[out], &[&args.file])?;
    }
    let input = read_input(&args)?;
    let analysis = analyze_input(&input, args.block_size);
    let mut out = report_stream(&[args.output_file.as_deref().unwrap_or(Path::new(""))]);
    out.write_all(analysis_report(&analysis).as_bytes())?;
    if let Some(path) = &args.output_file {
        let json = serde_json::to_string_pretty(&analysis).context("cannot serialize the analysis")?;
        write_output(path, format!("{json}\n").as_bytes())?;
        writeln!(out, "\nAnalysis report saved to {}", path.display())?;
    }
    Ok(())
}

/// The trace reduced to what the analysis reads. A Mooncake file is reduced row by row as it is
/// read, so the trace model (with its `u64` ids) is never held whole: a 1M-row trace costs about
/// a third of the memory. Other formats are converted into a trace first.
fn read_input(args: &Args) -> Result<AnalysisInput> {
    let format = crate::io::trace_format::format_of(&args.file, args.format.trace_format)?;
    let input = if format == Format::Mooncake {
        let mut builder = InputBuilder::new();
        crate::io::input::read_trace_each(&args.file, args.skip_invalid, args.max_line_bytes, |row, ids| {
            builder.push(row, ids)
        })?;
        builder.finish()
    } else {
        let flags = crate::io::trace_format::TraceFormatArgs {
            trace_format: crate::io::trace_format::FormatChoice::Is(format),
        };
        let loaded =
            crate::io::trace_format::read_trace_any(&args.file, &flags, args.skip_invalid, args.max_line_bytes)?;
        AnalysisInput::of(&loaded.trace)
    };
    if input.overflowed() {
        bail!(
            "{}: more than {} distinct hash ids: beyond what the analysis numbers (u32)",
            args.file.display(),
            u32::MAX
        );
    }
    Ok(input)
}
