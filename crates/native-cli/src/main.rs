//! `aiperf-cli`: analyze, synthesize and replay Mooncake traces.

#[macro_use]
mod io;

mod cmd;
mod exit;
mod mock_server;
mod profile;
mod synthesis_flags;
mod synthetic_flags;
mod threads;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Analyze, synthesize and replay LLM serving traces (Mooncake format), AIPerf-compatible.
#[derive(Debug, Parser)]
#[command(name = "aiperf-cli", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the statistics of a trace (prefix sharing, lengths, arrivals, cache what-if, lint).
    AnalyzeTrace(cmd::analyze::Args),
    /// Replay a trace against an OpenAI-compatible server and measure it (AIPerf option names).
    ///
    /// Add `--extra-inputs ignore_eos:true` so that the server generates exactly the trace's
    /// output lengths (otherwise it may stop early). Run `aiperf-cli mock-server` first and point
    /// `profile` at it to see the client's own overhead (the calibration line of the report).
    Profile(Box<profile::options::Args>),
    /// Run an OpenAI-compatible mock server with programmable timing and faults.
    MockServer(mock_server::Args),
    /// Transform a trace like AIPerf's --synthesis-* options, or sample a new one (--num-requests).
    SynthesizeTrace(Box<cmd::synthesize::Args>),
    /// Generate AIPerf's agentic-code sessions (multi-turn coding-agent traffic) as a Mooncake
    /// dataset with its manifest.json, quality.json and comparison.txt.
    SynthesizeAgenticCode(cmd::agentic::Args),
    /// Turn prompts (JSONL) into a Mooncake trace with AIPerf-compatible block hash ids.
    HashPrompts(cmd::hash_prompts::Args),
    /// Convert production traces (Bailian, ServeGen, Azure, BurstGPT, WEKA, Baseten Parquet) to Mooncake JSONL,
    /// merging files and applying time window, gap caps, sampling, model and failure filters.
    ConvertTrace(cmd::convert::Args),
    /// Merge the shards of a run (`profile --shard K/N`) into one run: the same exports as a
    /// single-process run, metrics computed from the merged records.
    Merge(cmd::merge::Args),
    /// Write one self-contained HTML file (no network) showing runs: summary, charts over time,
    /// distributions, trace-aware charts, a record per clicked point, and their comparison; a
    /// sweep's or search's folder also gets its curve.
    Report(cmd::report::ReportArgs),
    /// Print the key numbers of runs side by side, with the change against a baseline run.
    Compare(cmd::report::CompareArgs),
    /// Check every row of a trace as AIPerf's `validate` does (`validate mooncake-trace --input
    /// FILE`), then print the lint's warnings (exit status 2 when a row is invalid).
    Validate(cmd::validate::Args),
    /// Simulate a trace on a cluster (replicas, KV capacity, router, eviction, engine timing):
    /// the hit rates and latencies it would get; lists on the cluster options sweep.
    Simulate(Box<cmd::simulate::Args>),
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().collect();
    if raw.get(1).is_some_and(|c| c == "profile") && raw[2..] == ["--aiperf-options"] {
        show!("{}", profile::aiperf_options::listing().trim_end());
        return ExitCode::SUCCESS;
    }
    let is_profile = raw.get(1).is_some_and(|c| c == "profile");
    // `profile --config FILE`: the file's options come before the command line's.
    let config = match is_profile.then(|| profile::config_file::load(&raw[2..])).transpose() {
        Ok(loaded) => loaded.flatten(),
        Err(e) => {
            say!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let raw = match &config {
        Some(c) => raw[..2].iter().chain(&c.args).cloned().collect(),
        None => raw,
    };
    if is_profile && let Err(e) = profile::reject_unsupported(&raw[2..]) {
        say!("error: {e}");
        return ExitCode::from(2);
    }
    let cli = match &config {
        None => Cli::parse(),
        Some(c) => match Cli::try_parse_from(&raw) {
            Ok(cli) => cli,
            Err(e) => {
                // clap's first line names the option (the usage below names others).
                let note = c.note_for(e.to_string().lines().next().unwrap_or(""));
                let _ = e.print();
                if let Some(note) = note {
                    say!("{note}");
                }
                return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
            }
        },
    };
    // Commands that read inputs and write outputs: whatever fails but writing an output is bad
    // input (an unreadable or invalid file, an option out of range): exit status 2.
    let reads_inputs = !matches!(cli.command, Command::Profile(_) | Command::MockServer(_));
    let done = |r: anyhow::Result<()>| r.map(|()| exit::SUCCESS);
    let result = match cli.command {
        Command::AnalyzeTrace(args) => done(cmd::analyze::run(args)),
        Command::Profile(args) => profile::run(*args),
        Command::MockServer(args) => done(mock_server::run(args)),
        Command::SynthesizeTrace(args) => done(cmd::synthesize::run(*args)),
        Command::SynthesizeAgenticCode(args) => done(cmd::agentic::run(args)),
        Command::HashPrompts(args) => done(cmd::hash_prompts::run(args)),
        Command::ConvertTrace(args) => done(cmd::convert::run(args)),
        Command::Merge(args) => done(cmd::merge::run(args)),
        Command::Report(args) => done(cmd::report::run_report(args)),
        Command::Compare(args) => done(cmd::report::run_compare(args)),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Simulate(args) => done(cmd::simulate::run(*args)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let output_failed = e.downcast_ref::<exit::OutputFailed>().is_some();
            let bad_input = e.downcast_ref::<exit::BadInput>().is_some() || (reads_inputs && !output_failed);
            // The markers are for the exit status, not for the reader.
            let mut chain = e.chain().filter(|c| !exit::is_marker(*c));
            let mut text = String::new();
            if let Some(first) = chain.next() {
                say!("error: {first}");
                text.push_str(&first.to_string());
            }
            for cause in chain {
                say!("  caused by: {cause}");
                text.push_str(&cause.to_string());
            }
            if let Some(note) = config.as_ref().and_then(|c| c.note_for(&text)) {
                say!("{note}");
            }
            ExitCode::from(if bad_input { exit::BAD_INPUT } else { exit::NO_SUCCESS })
        }
    }
}

/// Writing to a closed pipe (`aiperf-cli … | head`) is a normal end, not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
