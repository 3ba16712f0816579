//! `aiperf-cli synthesize-trace`: AIPerf's `--synthesis-*` transform of a trace, or (with
//! `--num-requests`) a brand-new trace sampled from a model learned from it, or (without an input
//! trace) AIPerf's synthetic workload (`--isl`, `--num-dataset-entries`, … of `synthetic_flags.rs`).
//!
//! Flags are turned into the core's validated [`SynthesisSettings`]; the output is written with the
//! core's writer (so it is byte-identical to the browser app's) through a temp file and a rename.

use std::io::{self, Write};
use std::path::PathBuf;

use aiperf_core::analysis::{Analysis, RowMetrics, analyze_for_comparison, headline};
use aiperf_core::synthesis::{
    ArrivalSeries, Compared, FidelityReport, GenerateParams, Mode, Param, PrefixModel, SampledFacts, SynthesisError,
    SynthesisSettings, arrival_checks_of, compare_metric, fidelity_of_with, transform,
};
use aiperf_core::trace::{DEFAULT_MAX_LINE_BYTES, Trace, write_rows};
use anyhow::{Context, Result};

use crate::io::output::{
    PartSender, refuse_same_files, replaces_file, report_stream, write_output, write_output_with, write_produced,
    write_trace_file,
};
use crate::io::trace_format::read_trace_any;
use crate::synthesis_flags::option_name;
use crate::synthesis_flags::{GenerateFlags, SynthesisFlags};
use crate::synthetic_flags::SyntheticFlags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Mooncake trace to learn from or transform (JSONL, optionally gzip-compressed; `-`: standard
    /// input). Without it, AIPerf's synthetic workload of the options below is generated.
    pub file: Option<PathBuf>,
    /// Where to write the synthesized trace (JSONL; `-`: standard output, the report then goes to
    /// standard error).
    #[arg(long)]
    pub output_file: PathBuf,
    #[command(flatten)]
    pub synthesis: SynthesisFlags,
    #[command(flatten)]
    pub generate: GenerateFlags,
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
    pub format: crate::io::trace_format::TraceFormatArgs,
    #[command(flatten, next_help_heading = "AIPerf's synthetic workload (without an input trace)")]
    pub synthetic: SyntheticFlags,
}

/// Adds the offending option's name to a core error.
fn explain(e: SynthesisError) -> anyhow::Error {
    match (e.param(), &e) {
        (Some(p), _) => anyhow::anyhow!("invalid {}: {e}", option_name(p)),
        (None, SynthesisError::FilterRejectsEverything { .. }) => {
            anyhow::anyhow!("{e} (widen --{} / --{})", Param::MinIsl.flag(), Param::MaxIsl.flag())
        }
        (None, _) => anyhow::Error::new(e),
    }
}

impl Args {
    /// The settings the flags ask for: generative mode when `--num-requests` is given.
    fn settings(&self) -> Result<SynthesisSettings> {
        let mut s = SynthesisSettings::default();
        if let Some((p, _)) = self.synthesis.lists().next() {
            anyhow::bail!("--{} takes one value here (a comma-separated list is a `profile` sweep)", p.flag());
        }
        self.synthesis.apply(&mut s).map_err(explain)?;
        self.generate.apply(&mut s).map_err(explain)?;
        s.mode = if self.generate.has(Param::NumRequests) { Mode::Generate } else { Mode::Transform };
        // Validate before reading a possibly large file.
        s.validate().map_err(explain)?;
        Ok(s)
    }
}

pub fn run(args: Args) -> Result<()> {
    let Some(file) = args.file.as_deref() else { return synthetic(&args) };
    if args.synthetic.any() {
        anyhow::bail!(
            "AIPerf's synthetic workload options (--isl, --num-dataset-entries, …) generate a trace of their own: \
             drop the input trace {}, or drop those options to transform it",
            file.display()
        );
    }
    let mut outputs = vec![args.output_file.as_path()];
    outputs.extend(args.fidelity_file.as_deref());
    refuse_same_files(&outputs, &[file])?;
    let settings = args.settings()?;
    let input = read_trace_any(file, &args.format, args.skip_invalid, args.max_line_bytes)?.trace;
    let (output, sampled) = match settings.mode {
        Mode::Generate if replaces_file(&args.output_file) => {
            return generate_into_file(&args, &settings.params, &input);
        }
        Mode::Generate => {
            let model = learn(&args, &input, &settings.params)?;
            let (output, facts) = model.sample_with_facts(&settings.params).map_err(explain)?;
            (output, Some(facts))
        }
        Mode::Transform => (transform(&input, &settings.transform_params()).map_err(explain)?, None),
    };
    finish(&args, settings.params.block_size, &input, &output, sampled.as_ref())
}

/// Generates AIPerf's synthetic workload (its defaults for the options not given) and writes it.
fn synthetic(args: &Args) -> Result<()> {
    let mut settings = SynthesisSettings::default();
    let own = args.generate.has(Param::NumRequests) || args.synthesis.lists().next().is_some();
    if own || args.fidelity_file.is_some() || Param::SHARED.iter().any(|&p| args.synthesis.has(p)) {
        anyhow::bail!(
            "without an input trace, synthesize-trace generates AIPerf's synthetic workload: --synthesis-*, \
             --num-requests and --fidelity-file need an input trace FILE"
        );
    }
    args.generate.apply(&mut settings).map_err(explain)?;
    let mut workload = args.synthetic.workload()?.unwrap_or_default();
    workload.block_size = settings.params.block_size;
    let trace = workload.generate(settings.params.seed).context("cannot generate the synthetic workload")?;
    write_trace_file(&args.output_file, &trace)?;
    let a = headline(&trace);
    let mut out = report_to(args);
    let mean = |m: f64| if a.rows == 0 { "-".to_string() } else { format!("{m:.1}") };
    writeln!(
        out,
        "Generated {} rows in {} conversations (ISL mean {}, OSL mean {}, cache hit rate {:.1}% at {} tokens a block) to {}",
        trace.len(),
        workload.entries,
        mean(a.avg_isl),
        mean(a.avg_osl),
        a.cache_hit_rate * 100.0,
        workload.block_size,
        args.output_file.display()
    )?;
    Ok(())
}

/// Where the human-readable report goes (standard error when an output is standard output).
fn report_to(args: &Args) -> Box<dyn Write> {
    Box::new(report_stream(&[&args.output_file, args.fidelity_file.as_deref().unwrap_or(&args.output_file)]))
}

/// Learns the model of generative mode from `input`, and says what it learned.
fn learn(args: &Args, input: &Trace, params: &GenerateParams) -> Result<PrefixModel> {
    let model = PrefixModel::learn(input, params.block_size).map_err(explain)?;
    let s = model.stats();
    writeln!(
        report_to(args),
        "Learned from {} rows: {} shared blocks in {} tree nodes, {} unique prompts\n",
        s.rows,
        s.shared_blocks,
        s.contracted_nodes,
        s.unique_prompts
    )?;
    Ok(model)
}

/// Rows sampled, formatted and written at a time by [`generate_into_file`] (a few MB of text).
const PART_ROWS: usize = 8 << 10;

/// Generative mode into a regular file: the source's side of the fidelity report is computed
/// while the model is learned and the rows are sampled; each part of the rows is formatted and
/// written while the next is sampled (the whole trace is never held), and the sample's side of
/// the report is computed once the last row is drawn, while the last parts are written and the
/// file is flushed to disk. The file, the report and the console are those of sampling the whole
/// trace first and writing it then: a sampling error leaves the file as it was (the temporary
/// file is removed) and is reported before an error of the writing.
fn generate_into_file(args: &Args, params: &GenerateParams, input: &Trace) -> Result<()> {
    std::thread::scope(|scope| {
        let source = scope.spawn(|| Source::of(input, params.block_size, true));
        let model = learn(args, input, params)?;
        let (facts_tx, facts_rx) = std::sync::mpsc::sync_channel::<SampledFacts>(1);
        let report = scope.spawn(move || {
            let facts = facts_rx.recv().ok()?;
            Some(compare(&join(source), &facts.compared(), Some(&facts)))
        });
        sample_into_file(args, &model, params, facts_tx, report)
    })
}

/// [`generate_into_file`]'s sampling and writing: what the sampler gathered of the rows goes to
/// `facts` once the last row is drawn, and `report` compares it with the source.
fn sample_into_file(
    args: &Args,
    model: &PrefixModel,
    params: &GenerateParams,
    facts: std::sync::mpsc::SyncSender<SampledFacts>,
    report: std::thread::ScopedJoinHandle<'_, Option<FidelityReport>>,
) -> Result<()> {
    let mut sampler = model.sampler(params, true).map_err(explain)?;
    let (rows, ids) = sampler.room(PART_ROWS);
    // Whether every row was drawn, or the sampling error.
    let mut sampling: Result<bool, SynthesisError> = Ok(false);
    let written = {
        let (sampler, sampling) = (&mut sampler, &mut sampling);
        let produce = move |parts: &mut PartSender<Trace>| -> io::Result<()> {
            loop {
                let mut part = parts.reuse().unwrap_or_else(|| Trace::with_capacity(rows, ids));
                part.clear();
                match sampler.sample_into(&mut part, PART_ROWS) {
                    Ok(0) => break,
                    // The writing stopped: its error is the one reported.
                    Ok(_) if !parts.send(part) => return Ok(()),
                    Ok(_) => {}
                    Err(e) => {
                        *sampling = Err(e);
                        return Err(io::Error::other("sampling stopped"));
                    }
                }
            }
            *sampling = Ok(facts.send(sampler.take_facts().unwrap_or_default()).is_ok());
            Ok(())
        };
        write_output_with(&args.output_file, |w| {
            write_produced(w, writers(), produce, |buf, part| write_rows(buf, part, 0..part.len()))
        })
    };
    let report = match (written, sampling) {
        (_, Err(e)) => return Err(explain(e)),
        (Ok(()), Ok(true)) => join(report).ok_or_else(|| anyhow::anyhow!("the fidelity report was not computed"))?,
        (written, Ok(_)) => {
            // The writing failed first: a sampling error of the rows not sampled yet still
            // comes first.
            let mut rest = Trace::with_capacity(rows, ids);
            while sampler.sample_into(&mut rest, PART_ROWS).map_err(explain)? > 0 {
                rest.clear();
            }
            written?;
            anyhow::bail!("the fidelity report was not computed")
        }
    };
    print_report(args, &report, sampler.emitted())
}

/// Formatting threads of the output.
fn writers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(4)
}

/// Writes the output atomically, then prints (and optionally saves) the before/after comparison.
/// Generative mode (`sampled`: what the sampler gathered of the output) also compares arrivals
/// over time.
fn finish(args: &Args, block_size: u32, input: &Trace, output: &Trace, sampled: Option<&SampledFacts>) -> Result<()> {
    // The report is computed on threads of its own while the output is written.
    let report = std::thread::scope(|scope| {
        let report = scope.spawn(|| fidelity(block_size, input, output, sampled));
        write_trace_file(&args.output_file, output)?;
        report.join().map_err(|_| anyhow::anyhow!("the fidelity analysis stopped unexpectedly"))
    })?;
    print_report(args, &report, output.len())
}

/// Prints the report and the output's name, and saves the report with `--fidelity-file`.
fn print_report(args: &Args, report: &FidelityReport, rows: usize) -> Result<()> {
    let mut out = report_to(args);
    out.write_all(report.to_table().as_bytes())?;
    writeln!(out, "\nSynthesized {rows} rows to {}", args.output_file.display())?;
    if let Some(path) = &args.fidelity_file {
        let json = serde_json::to_string_pretty(report).context("cannot serialize the fidelity report")?;
        write_output(path, format!("{json}\n").as_bytes())?;
        writeln!(out, "Fidelity report saved to {}", path.display())?;
    }
    Ok(())
}

fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// The source's side of the report: its analysis, and its arrivals over time (generative mode).
struct Source {
    analysis: (Analysis, RowMetrics),
    arrivals: Option<ArrivalSeries>,
}

impl Source {
    fn of(input: &Trace, block_size: u32, arrivals: bool) -> Source {
        Source {
            analysis: analyze_for_comparison(input, block_size),
            arrivals: arrivals.then(|| ArrivalSeries::of(input)),
        }
    }
}

/// The before/after comparison: the input's analysis, and the output's (unless the sampler
/// gathered its numbers, `sampled`) on a thread beside it; then each metric's sorts and
/// distributions on a thread of its own, and the arrival checks of generative mode meanwhile.
fn fidelity(block_size: u32, input: &Trace, output: &Trace, sampled: Option<&SampledFacts>) -> FidelityReport {
    std::thread::scope(|scope| {
        let after = match sampled {
            Some(facts) => Err(facts),
            None => Ok(scope.spawn(|| analyze_for_comparison(output, block_size))),
        };
        let source = Source::of(input, block_size, sampled.is_some());
        match after {
            Ok(after) => {
                let (a, rows) = join(after);
                compare(&source, &Compared::of_analysis(&a, &rows), None)
            }
            Err(facts) => compare(&source, &facts.compared(), Some(facts)),
        }
    })
}

/// The report of `source` against `synthesized`: each metric's sorts and distributions on a
/// thread of its own, and the arrival checks of generative mode (`sampled`) meanwhile.
fn compare(source: &Source, synthesized: &Compared<'_>, sampled: Option<&SampledFacts>) -> FidelityReport {
    let original = Compared::of_analysis(&source.analysis.0, &source.analysis.1);
    let mut checks = None;
    let mut report = fidelity_of_with(&original, synthesized, |metrics| {
        std::thread::scope(|scope| {
            let compared: Vec<_> =
                metrics.iter().map(|&(metric, x, y)| scope.spawn(move || compare_metric(metric, x, y))).collect();
            checks = sampled
                .zip(source.arrivals.as_ref())
                .map(|(facts, original)| arrival_checks_of(original, &facts.arrivals));
            compared.into_iter().map(join).collect()
        })
    });
    if let Some(checks) = checks {
        report.arrivals = checks;
    }
    report
}
