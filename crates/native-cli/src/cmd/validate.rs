//! `aiperf-cli validate mooncake-trace --input FILE`: AIPerf's `validate` command (every row
//! checked against the Mooncake row model, the invalid ones listed by line), followed by our lint
//! as warnings.

use std::io::Write;
use std::path::PathBuf;

use aiperf_core::analysis::report::lint_report;
use aiperf_core::analysis::{DEFAULT_BLOCK_SIZE, InputBuilder, analyze_input};
use aiperf_core::trace::{DEFAULT_MAX_LINE_BYTES, ParseOptions};
use anyhow::{Context, Result, ensure};

use crate::exit;
use crate::io::input::{open, parse_workers, read_each_parallel};

/// What `validate` checks (AIPerf 0.13 knows this one target).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// A Mooncake JSONL trace: every row as `profile` and AIPerf read it.
    MooncakeTrace,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The artifact's format.
    pub target: Target,
    /// The file to check (JSONL, optionally gzip-compressed; `-`: standard input).
    #[arg(long = "input", value_name = "FILE", required_unless_present = "file")]
    pub input: Option<PathBuf>,
    /// The file to check, as a positional argument instead of `--input`.
    #[arg(value_name = "FILE", conflicts_with = "input")]
    pub file: Option<PathBuf>,
    /// Invalid rows listed by line (all of them are counted).
    #[arg(long, default_value_t = 10)]
    pub max_errors: usize,
    /// Tokens per hash id block, for the lint's block/length check.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Longest trace line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

/// Prints the verdict and the lint; exit status 0 when every row is valid (lint findings are
/// warnings), [`exit::BAD_INPUT`] when some row is not.
pub fn run(args: Args) -> Result<u8> {
    ensure!(args.block_size >= 1, "--block-size must be at least 1");
    ensure!(args.max_errors >= 1, "--max-errors must be at least 1");
    let Target::MooncakeTrace = args.target;
    let path = args.input.or(args.file).context("give the file to check with --input FILE")?;
    let mut opts = ParseOptions::new(path.display().to_string()).skip_invalid(true).max_line_bytes(args.max_line_bytes);
    opts.max_errors = args.max_errors;
    let mut builder = InputBuilder::new();
    let outcome = read_each_parallel(open(&path)?, opts, parse_workers(), |row, ids| builder.push(row, ids))
        .with_context(|| format!("cannot read trace {}", path.display()))?;
    let input = builder.finish();
    let rows = input.rows().len();
    let mut out = String::new();
    if outcome.skipped_total == 0 {
        out.push_str(&format!("Validation passed: {rows} rows are Mooncake-compatible.\n"));
    } else {
        out.push_str(&format!(
            "Validation failed with {} error(s) in {} ({} valid rows):\n",
            outcome.skipped_total,
            path.display(),
            rows
        ));
        for e in &outcome.skipped {
            match &e.field {
                Some(field) => out.push_str(&format!("  Line {}: field '{field}': {}\n", e.line, e.reason)),
                None => out.push_str(&format!("  Line {}: {}\n", e.line, e.reason)),
            }
        }
        let unlisted = outcome.skipped_total.saturating_sub(outcome.skipped.len() as u64);
        if unlisted > 0 {
            out.push_str(&format!("  … and {unlisted} more (--max-errors N lists more)\n"));
        }
    }
    if rows > 0 && !input.overflowed() {
        let analysis = analyze_input(&input, args.block_size);
        out.push_str(&lint_report(&analysis.lint));
    }
    let mut console = crate::io::console::Console::Stdout;
    console.write_all(out.as_bytes())?;
    Ok(if outcome.skipped_total == 0 { exit::SUCCESS } else { exit::BAD_INPUT })
}
