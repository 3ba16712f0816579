//! `aiperf-cli convert-trace`: production traces (Bailian, ServeGen, Azure, BurstGPT, WEKA, or a
//! Mooncake trace to transform) → one Mooncake JSONL file.
//!
//! Several input files (of one format) merge into one trace, file `k` starting at
//! `k × --file-spacing-ms` or `k / --file-rate` seconds; each file keeps its own hash-id namespace
//! and conversation ids (`k:<id>`). The transforms of long production traces (window, idle-gap
//! cap, conversation sampling, turn-gap cap) apply after conversion.

use std::path::PathBuf;

use aiperf_core::analysis::DEFAULT_BLOCK_SIZE;
use aiperf_core::formats::transform::{Transforms, apply};
use aiperf_core::formats::{Arrivals, ConvertOptions, Format};
use aiperf_core::trace::write_trace;
use anyhow::{Result, bail, ensure};

use crate::input::read_trace_limited;
use crate::output::{refuse_same_files, write_output};
use crate::trace_format::{TraceFormatArgs, convert_files, format_of};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input trace file(s), all of one format (several WEKA files merge into one trace).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Where to write the Mooncake trace (JSONL).
    #[arg(long)]
    pub output_file: PathBuf,
    #[command(flatten)]
    pub format: TraceFormatArgs,
    /// Tokens per hash id block of the output (a multiple of the source's 16 or 64).
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Merging files: file k starts k × this many ms after the first.
    #[arg(long, conflicts_with = "file_rate")]
    pub file_spacing_ms: Option<u64>,
    /// Merging files: files (conversations) start at this many per second.
    #[arg(long)]
    pub file_rate: Option<f64>,
    /// Sources without arrival times (ServeGen offline): this many requests per second
    /// (default: all at 0 ms).
    #[arg(long)]
    pub arrival_rate: Option<f64>,
    /// Output length for rows that have none (ServeGen a–c); default: none written.
    #[arg(long)]
    pub output_length: Option<u64>,
    /// Keep only rows of this model (BurstGPT `Model`, WEKA `model`); repeat for several.
    #[arg(long)]
    pub model: Vec<String>,
    /// Drop failed rows (BurstGPT: zero response tokens) instead of keeping them; both are counted.
    #[arg(long)]
    pub drop_failed: bool,
    /// Keep rows from this trace time on (ms, after conversion).
    #[arg(long)]
    pub start_ms: Option<f64>,
    /// Keep rows before this trace time (ms, after conversion).
    #[arg(long)]
    pub end_ms: Option<f64>,
    /// Shorten every idle gap between arrivals to at most this many ms (e.g. compress nights).
    #[arg(long)]
    pub max_idle_gap_ms: Option<f64>,
    /// Shorten every gap between turns of one conversation to at most this many ms.
    #[arg(long)]
    pub max_turn_gap_ms: Option<f64>,
    /// Keep this fraction (0 < f ≤ 1) of whole conversations, chosen by --sample-seed.
    #[arg(long)]
    pub sample_fraction: Option<f64>,
    /// Seed of the conversation sampling.
    #[arg(long, default_value_t = 0)]
    pub sample_seed: u64,
    /// Mooncake input only: skip invalid rows (listed on stderr) instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Longest input line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(long, default_value_t = aiperf_core::trace::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

impl Args {
    fn convert_options(&self) -> ConvertOptions {
        ConvertOptions {
            block_size: self.block_size,
            arrivals: match self.arrival_rate {
                Some(per_second) => Arrivals::Rate { per_second },
                None => Arrivals::AllAtZero,
            },
            output_length: self.output_length,
            models: self.model.clone(),
            drop_failed: self.drop_failed,
        }
    }

    fn transforms(&self) -> Transforms {
        Transforms {
            window_start_ms: self.start_ms,
            window_end_ms: self.end_ms,
            sample_fraction: self.sample_fraction,
            sample_seed: self.sample_seed,
            max_turn_gap_ms: self.max_turn_gap_ms,
            max_idle_gap_ms: self.max_idle_gap_ms,
        }
    }

    /// Where file `k` starts, in ms.
    fn file_offset_ms(&self, k: usize) -> u64 {
        match (self.file_spacing_ms, self.file_rate) {
            (Some(ms), _) => ms.saturating_mul(k as u64),
            (None, Some(rate)) => (k as f64 * 1000.0 / rate).round() as u64,
            (None, None) => 0,
        }
    }
}

pub fn run(args: Args) -> Result<()> {
    let inputs: Vec<&std::path::Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    refuse_same_files(&[&args.output_file], &inputs)?;
    if let Some(rate) = args.file_rate {
        ensure!(rate.is_finite() && rate > 0.0, "--file-rate must be a positive number, got {rate}");
    }
    let mut format = None;
    for path in &args.inputs {
        let f = format_of(path, args.format.trace_format)?;
        if let Some(first) = format
            && first != f
        {
            bail!("{} is {f}, the files before it are {first}: convert one format at a time", path.display());
        }
        format = Some(f);
    }
    let Some(format) = format else { bail!("no input file") };
    let trace = if format == Format::Mooncake {
        ensure!(args.inputs.len() == 1, "Mooncake input: give one file (merging Mooncake traces is not supported)");
        ensure!(
            args.model.is_empty() && !args.drop_failed,
            "--model and --drop-failed need the source's fields; a Mooncake trace has none"
        );
        read_trace_limited(&args.inputs[0], args.skip_invalid, args.max_line_bytes)?.trace
    } else {
        convert_files(&args.inputs, format, &args.convert_options(), args.max_line_bytes, |k| args.file_offset_ms(k))?
            .trace
    };
    let transforms = args.transforms();
    let trace = if transforms.is_identity() {
        trace
    } else {
        let (out, r) = apply(&trace, &transforms)?;
        eprintln!("{r}");
        out
    };
    write_output(&args.output_file, write_trace(&trace).as_bytes())?;
    eprintln!("wrote {} rows to {}", trace.len(), args.output_file.display());
    Ok(())
}
