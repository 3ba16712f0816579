//! `aiperf-cli convert-trace`: production traces (Bailian, ServeGen, Azure, BurstGPT, WEKA, or a
//! Mooncake trace to transform) → one Mooncake JSONL file.
//!
//! Several input files (of one format) merge into one trace, file `k` starting at
//! `k × --file-spacing-ms` or `k / --file-rate` seconds; each file keeps its own hash-id namespace
//! and conversation ids (`k:<id>`). The transforms of long production traces (window, idle-gap
//! cap, conversation sampling, turn-gap cap) apply after conversion.

use std::path::PathBuf;

use aiperf_core::analysis::DEFAULT_BLOCK_SIZE;
use aiperf_core::formats::Format;
use aiperf_core::formats::settings::{Accepts, ConversionSettings, EXCLUSIVE, FLAGS, Flag};
use aiperf_core::formats::transform::apply;
use anyhow::{Result, bail, ensure};
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};

use crate::io::input::read_trace_limited;
use crate::io::output::{refuse_same_files, write_trace_file_in};
use crate::io::trace_format::{TraceFormatArgs, convert_files, format_of};

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
    #[command(flatten)]
    pub conversion: ConversionFlags,
    /// Mooncake input only: skip invalid rows (listed on stderr) instead of stopping.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Longest input line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(long, default_value_t = aiperf_core::trace::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

/// The conversion options, built from the core's table ([`aiperf_core::formats::settings::FLAGS`]):
/// names, help and range checks come from it, so the command line accepts what the browser's
/// conversion form accepts.
#[derive(Clone, Debug, Default)]
pub struct ConversionFlags {
    pub settings: ConversionSettings,
}

/// The clap option of a conversion flag.
fn arg(flag: &'static Flag) -> Arg {
    let arg = Arg::new(flag.name).long(flag.name);
    if flag.accepts == Accepts::Switch {
        return arg.help(flag.help).action(ArgAction::SetTrue);
    }
    let arg = arg.help(format!("{} Accepts {}.", flag.help, flag.accepts.describe()));
    let arg = match flag.accepts {
        Accepts::Models => arg.action(ArgAction::Append).value_name("MODEL"),
        Accepts::Size | Accepts::Count => arg.value_name("N"),
        _ => arg.value_name("X"),
    };
    let arg = match flag.name {
        "block-size" => {
            arg.help(format!("{} Accepts {}. [default: {DEFAULT_BLOCK_SIZE}]", flag.help, flag.accepts.describe()))
        }
        _ => arg,
    };
    let arg = EXCLUSIVE.iter().fold(arg, |arg, &(a, b)| match flag.name {
        n if n == a => arg.conflicts_with(b),
        n if n == b => arg.conflicts_with(a),
        _ => arg,
    });
    // The core's check, so that clap names the flag and the value in its own error.
    arg.value_parser(move |text: &str| match ConversionSettings::default().set(flag.name, text) {
        Ok(()) => Ok(text.to_string()),
        Err(_) => Err(format!("expected {}", flag.accepts.describe())),
    })
}

impl clap::Args for ConversionFlags {
    fn augment_args(cmd: Command) -> Command {
        cmd.args(FLAGS.iter().map(arg))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for ConversionFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut settings = ConversionSettings::default();
        for flag in &FLAGS {
            let texts: Vec<String> = match flag.accepts {
                Accepts::Switch => m.get_flag(flag.name).then(|| "1".to_string()).into_iter().collect(),
                _ => m.get_many::<String>(flag.name).map(|v| v.cloned().collect()).unwrap_or_default(),
            };
            for text in texts {
                settings
                    .set(flag.name, &text)
                    .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, e))?;
            }
        }
        Ok(ConversionFlags { settings })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

pub fn run(args: Args) -> Result<()> {
    let inputs: Vec<&std::path::Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    refuse_same_files(&[&args.output_file], &inputs)?;
    let settings = &args.conversion.settings;
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
    let (trace, order) = if format == Format::Mooncake {
        ensure!(args.inputs.len() == 1, "Mooncake input: give one file (merging Mooncake traces is not supported)");
        ensure!(
            settings.options.models.is_empty() && !settings.options.drop_failed,
            "--model and --drop-failed need the source's fields; a Mooncake trace has none"
        );
        (read_trace_limited(&args.inputs[0], args.skip_invalid, args.max_line_bytes)?.trace, None)
    } else {
        let (done, order) = convert_files(&args.inputs, format, &settings.options, args.max_line_bytes, |k| {
            settings.file_offset_ms(k)
        })?;
        (done.trace, order)
    };
    // Without transforms the rows are written straight in time order, never moved into it.
    let (trace, order) = if settings.transforms.is_identity() {
        (trace, order)
    } else {
        let converted = trace.len();
        let (out, r) = apply(&trace.reordered(order.as_deref()), &settings.transforms)?;
        say!("{r}");
        ensure!(
            !out.is_empty(),
            "the time window, gap caps and sampling left no row of the {converted} converted: {r}"
        );
        (out, None)
    };
    write_trace_file_in(&args.output_file, &trace, order.as_deref())?;
    say!("wrote {} rows to {}", trace.len(), args.output_file.display());
    // The process ends here: freeing a million rows one by one (each a shared conversation id
    // to release) would only delay the exit, and the system takes the memory back at once.
    std::mem::forget(trace);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        conversion: ConversionFlags,
    }

    fn parse(args: &[&str]) -> Result<ConversionSettings, String> {
        let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).map_err(|e| e.to_string())?;
        Ok(cli.conversion.settings)
    }

    #[test]
    fn flags_come_from_the_cores_table_with_its_checks() {
        assert_eq!(parse(&[]).unwrap(), ConversionSettings::default());
        let s =
            parse(&["--model", "a", "--model=b, c", "--drop-failed", "--sample-fraction", "0.5", "--block-size", "64"])
                .unwrap();
        assert_eq!(s.options.models, ["a", "b", "c"]);
        assert!(s.options.drop_failed);
        assert_eq!((s.transforms.sample_fraction, s.options.block_size), (Some(0.5), 64));
        let e = parse(&["--sample-fraction", "2"]).unwrap_err();
        assert!(
            e.contains("'2'") && e.contains("--sample-fraction") && e.contains("expected a number > 0 and ≤ 1"),
            "{e}"
        );
        let e = parse(&["--file-rate", "1", "--file-spacing-ms", "5"]).unwrap_err();
        assert!(e.contains("cannot be used with"), "{e}");
        // Every flag of the core's table is an option.
        for f in FLAGS {
            assert!(Cli::command().get_arguments().any(|a| a.get_long() == Some(f.name)), "--{}", f.name);
        }
    }
}
