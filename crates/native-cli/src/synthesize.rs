//! `aiperf-cli synthesize-trace`: AIPerf's `--synthesis-*` transform of a trace, or (with
//! `--num-requests`) a brand-new trace sampled from a model learned from it.
//!
//! Flags are turned into the core's validated parameter structs; the output is written with the
//! core's writer (so it is byte-identical to the browser app's) through a temp file and a rename.

use std::io::Write;
use std::path::PathBuf;

use aiperf_core::analysis::{DEFAULT_BLOCK_SIZE, analyze_with_rows};
use aiperf_core::synthesis::{
    GenerateParams, MAX_OUTPUT_IDS, PrefixModel, SynthesisError, TransformParams, fidelity_from_analyses, transform,
};
use aiperf_core::trace::{DEFAULT_MAX_LINE_BYTES, Trace, write_trace};
use anyhow::{Context, Result};

use crate::output::{refuse_same_files, report_stream, write_output};
use crate::synthesis_flags::SynthesisFlags;
use crate::trace_format::read_trace_any;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Mooncake trace to learn from or transform (JSONL, optionally gzip-compressed; `-`: standard
    /// input).
    pub file: PathBuf,
    /// Where to write the synthesized trace (JSONL; `-`: standard output, the report then goes to
    /// standard error).
    #[arg(long)]
    pub output_file: PathBuf,
    #[command(flatten)]
    pub synthesis: SynthesisFlags,
    /// Generative mode: learn a model of the trace and sample this many new requests (a whole
    /// number from 1 to 2^28; `1e6` is accepted).
    #[arg(long, value_parser = request_count)]
    pub num_requests: Option<usize>,
    /// Generative mode only: resample requests shorter than this (tokens).
    #[arg(long, requires = "num_requests")]
    pub synthesis_min_isl: Option<u64>,
    /// Generative mode only: raise output lengths to at least this (tokens).
    #[arg(long, requires = "num_requests")]
    pub synthesis_min_osl: Option<u64>,
    /// Seed of every random choice (same seed as AIPerf's `--random-seed` → same output).
    #[arg(long, default_value_t = 0)]
    pub random_seed: u64,
    /// Tokens per hash id block.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// Skip invalid rows of the input (they are listed on stderr) instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Longest trace line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// Write the original-vs-synthesized fidelity report as JSON to this file (`-`: standard output).
    #[arg(long)]
    pub fidelity_file: Option<PathBuf>,
    #[command(flatten)]
    pub format: crate::trace_format::TraceFormatArgs,
}

/// `--num-requests`: a whole number from 1 to [`MAX_OUTPUT_IDS`], written plainly or as `1e6`.
fn request_count(s: &str) -> std::result::Result<usize, String> {
    let value = s.parse::<u64>().ok().or_else(|| {
        let f = s.parse::<f64>().ok()?;
        (f.is_finite() && f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&f)).then_some(f as u64)
    });
    match value {
        Some(n) if (1..=MAX_OUTPUT_IDS).contains(&n) => usize::try_from(n).map_err(|e| e.to_string()),
        Some(_) => Err(format!(
            "expected a whole number of requests from 1 to {MAX_OUTPUT_IDS} (a synthesized trace holds at most \
             that many hash ids, one a row at least), found {s}"
        )),
        None => Err(format!("expected a whole number of requests from 1 to {MAX_OUTPUT_IDS}, found {s:?}")),
    }
}

/// The command-line option behind a core parameter name, for error messages.
pub fn option_name(param: &str) -> &'static str {
    match param {
        "speedup_ratio" => "--synthesis-speedup-ratio",
        "prefix_len_multiplier" => "--synthesis-prefix-len-multiplier",
        "prefix_root_multiplier" => "--synthesis-prefix-root-multiplier",
        "prompt_len_multiplier" => "--synthesis-prompt-len-multiplier",
        "output_len_multiplier" => "--synthesis-output-len-multiplier",
        "max_isl" => "--synthesis-max-isl",
        "max_osl" => "--synthesis-max-osl",
        "min_isl" => "--synthesis-min-isl",
        "min_osl" => "--synthesis-min-osl",
        "block_size" => "--block-size",
        "num_requests" => "--num-requests",
        _ => "an option",
    }
}

/// Adds the offending option's name to a core error.
fn explain(e: SynthesisError) -> anyhow::Error {
    match (e.param(), &e) {
        (Some(p), _) => anyhow::anyhow!("invalid {}: {e}", option_name(p)),
        (None, SynthesisError::FilterRejectsEverything { .. }) => {
            anyhow::anyhow!("{e} (widen --synthesis-min-isl / --synthesis-max-isl)")
        }
        (None, _) => anyhow::Error::new(e),
    }
}

impl Args {
    fn transform_params(&self) -> TransformParams {
        self.synthesis.transform_params(self.block_size, self.random_seed)
    }

    fn generate_params(&self, num_requests: usize) -> GenerateParams {
        let f = &self.synthesis;
        GenerateParams {
            num_requests,
            speedup_ratio: f.synthesis_speedup_ratio,
            prefix_len_multiplier: f.synthesis_prefix_len_multiplier,
            prefix_root_multiplier: f.synthesis_prefix_root_multiplier,
            prompt_len_multiplier: f.synthesis_prompt_len_multiplier,
            output_len_multiplier: f.synthesis_output_len_multiplier,
            min_isl: self.synthesis_min_isl,
            max_isl: f.synthesis_max_isl,
            min_osl: self.synthesis_min_osl,
            max_osl: f.synthesis_max_osl,
            block_size: self.block_size,
            seed: self.random_seed,
        }
    }
}

pub fn run(args: Args) -> Result<()> {
    let mut outputs = vec![args.output_file.as_path()];
    outputs.extend(args.fidelity_file.as_deref());
    refuse_same_files(&outputs, &[&args.file])?;
    match args.num_requests {
        Some(n) => run_generate(&args, n),
        None => run_transform(&args),
    }
}

fn run_generate(args: &Args, num_requests: usize) -> Result<()> {
    let params = args.generate_params(num_requests);
    params.validate().map_err(explain)?;
    let input = read_trace_any(&args.file, &args.format, args.skip_invalid, args.max_line_bytes)?.trace;
    let model = PrefixModel::learn(&input, params.block_size).map_err(explain)?;
    let s = model.stats();
    writeln!(
        report_to(args),
        "Learned from {} rows: {} shared blocks in {} tree nodes, {} unique prompts\n",
        s.rows,
        s.shared_blocks,
        s.contracted_nodes,
        s.unique_prompts
    )?;
    let output = model.sample(&params).map_err(explain)?;
    finish(args, &input, &output)
}

fn run_transform(args: &Args) -> Result<()> {
    // Validate before reading a possibly large file.
    let params = args.transform_params();
    params.validate().map_err(explain)?;
    let input = read_trace_any(&args.file, &args.format, args.skip_invalid, args.max_line_bytes)?.trace;
    let output = transform(&input, &params).map_err(explain)?;
    finish(args, &input, &output)
}

/// Where the human-readable report goes (standard error when an output is standard output).
fn report_to(args: &Args) -> Box<dyn Write> {
    report_stream(&[&args.output_file, args.fidelity_file.as_deref().unwrap_or(&args.output_file)])
}

/// Writes the output atomically, then prints (and optionally saves) the before/after comparison.
fn finish(args: &Args, input: &Trace, output: &Trace) -> Result<()> {
    write_output(&args.output_file, write_trace(output).as_bytes())?;
    let before = analyze_with_rows(input, args.block_size);
    let after = analyze_with_rows(output, args.block_size);
    let report = fidelity_from_analyses((&before.0, &before.1), (&after.0, &after.1));
    let mut out = report_to(args);
    out.write_all(report.to_table().as_bytes())?;
    writeln!(out, "\nSynthesized {} rows to {}", output.len(), args.output_file.display())?;
    if let Some(path) = &args.fidelity_file {
        let json = serde_json::to_string_pretty(&report).context("cannot serialize the fidelity report")?;
        write_output(path, format!("{json}\n").as_bytes())?;
        writeln!(out, "Fidelity report saved to {}", path.display())?;
    }
    Ok(())
}
