//! `aiperf-cli`: analyze, synthesize and replay Mooncake traces.

mod analyze;
mod hash_prompts;
mod input;
mod synthesize;

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
    AnalyzeTrace(analyze::Args),
    /// Transform a trace like AIPerf's --synthesis-* options, or sample a new one (--num-requests).
    SynthesizeTrace(synthesize::Args),
    /// Turn prompts (JSONL) into a Mooncake trace with AIPerf-compatible block hash ids.
    HashPrompts(hash_prompts::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::AnalyzeTrace(args) => analyze::run(args),
        Command::SynthesizeTrace(args) => synthesize::run(args),
        Command::HashPrompts(args) => hash_prompts::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Writing to a closed pipe (`aiperf-cli … | head`) is a normal end, not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
