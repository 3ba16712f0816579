//! Command-line options built from the core's table of synthesis parameters
//! ([`aiperf_core::synthesis::Param`]): flag names, help, defaults and range checks all come from
//! it, so the CLI accepts exactly what the web form accepts. [`SynthesisFlags`] are AIPerf's
//! `--synthesis-*` options shared by `synthesize-trace` and `profile`; [`GenerateFlags`] are the
//! rest of `synthesize-trace` (block size, seed, generative mode).

use std::marker::PhantomData;

use aiperf_core::synthesis::settings::{Range, Value};
use aiperf_core::synthesis::{GenerateParams, Mode, Param, SynthesisError, SynthesisSettings, TransformParams};
use clap::{Arg, ArgMatches, Command, FromArgMatches};

/// Which parameters a group of flags holds.
pub trait ParamGroup: 'static {
    const PARAMS: &'static [Param];
}

/// AIPerf's `--synthesis-*` options.
#[derive(Clone, Copy, Debug)]
pub struct Shared;

impl ParamGroup for Shared {
    const PARAMS: &'static [Param] = &Param::SHARED;
}

/// `synthesize-trace`'s own options.
#[derive(Clone, Copy, Debug)]
pub struct Own;

impl ParamGroup for Own {
    const PARAMS: &'static [Param] = &[
        Param::NumRequests,
        Param::Intensity,
        Param::Duration,
        Param::MinIsl,
        Param::MinOsl,
        Param::Seed,
        Param::BlockSize,
    ];
}

/// The values given on the command line for the parameters of `G` (checked by clap's parser).
#[derive(Clone, Debug)]
pub struct Flags<G> {
    given: Vec<(Param, Value)>,
    /// Parameters given a comma-separated list of values ([`LIST_PARAMS`]): every value, in order
    /// (`given` holds the first).
    lists: Vec<(Param, Vec<Value>)>,
    group: PhantomData<G>,
}

/// Parameters that accept a comma-separated list (a `profile` sweep).
pub const LIST_PARAMS: [Param; 1] = [Param::SpeedupRatio];

pub type SynthesisFlags = Flags<Shared>;
pub type GenerateFlags = Flags<Own>;

impl<G> Flags<G> {
    /// Whether the flag of `p` was given.
    pub fn has(&self, p: Param) -> bool {
        self.given.iter().any(|(q, _)| *q == p)
    }

    /// The values of a parameter given as a list of more than one value.
    pub fn list(&self, p: Param) -> Option<&[Value]> {
        self.lists.iter().find(|(q, _)| *q == p).map(|(_, v)| v.as_slice())
    }

    /// Every list given, as (parameter, values).
    pub fn lists(&self) -> impl Iterator<Item = (Param, &[Value])> {
        self.lists.iter().map(|(p, v)| (*p, v.as_slice()))
    }

    /// The flags with `p` set to the one value `v` (a sweep's sub-run).
    pub fn with_value(&self, p: Param, v: Value) -> Flags<G> {
        let mut given = self.given.clone();
        given.retain(|(q, _)| *q != p);
        given.push((p, v));
        let lists = self.lists.iter().filter(|(q, _)| *q != p).cloned().collect();
        Flags { given, lists, group: PhantomData }
    }

    /// Writes the given values into `settings` (the others keep their values).
    pub fn apply(&self, settings: &mut SynthesisSettings) -> Result<(), SynthesisError> {
        self.given.iter().try_for_each(|&(p, v)| settings.set(p, v))
    }
}

impl SynthesisFlags {
    /// The transform these flags ask for (validated by the caller through `TransformParams::validate`).
    pub fn transform_params(&self, block_size: u32, seed: u64) -> TransformParams {
        let params = GenerateParams { block_size, seed, ..GenerateParams::default() };
        let mut settings = SynthesisSettings { mode: Mode::Transform, params };
        // Each value passed the same range check in clap's parser: applying it cannot fail.
        for &(p, v) in &self.given {
            let _ = settings.set(p, v);
        }
        settings.transform_params()
    }
}

/// The clap option of a parameter: `--flag`, its help with what it accepts and its default.
fn arg(p: Param) -> Arg {
    let default = match p.default_text() {
        // Its presence chooses generative mode: without it there is no number of requests.
        _ if p == Param::NumRequests => String::new(),
        "" => " [default: none]".to_string(),
        d => format!(" [default: {d}]"),
    };
    let help = format!("{} Accepts {}.{default}", p.doc(), p.range().describe());
    let arg = Arg::new(p.flag())
        .long(p.flag())
        .help(help)
        .value_name(if matches!(p.range(), Range::Float { .. }) { "X" } else { "N" })
        .value_parser(move |text: &str| p.parse(text).map_err(|e| must_be(&e)));
    let arg = if LIST_PARAMS.contains(&p) {
        let help = format!(
            "{} A comma-separated list runs one sub-run per value (`profile`).",
            arg.get_help().map(ToString::to_string).unwrap_or_default()
        );
        arg.value_delimiter(',').action(clap::ArgAction::Append).help(help)
    } else {
        arg
    };
    if p.generate_only() && p != Param::NumRequests { arg.requires(Param::NumRequests.flag()) } else { arg }
}

/// The "must be …" part of a core range error (clap names the flag and the value itself).
fn must_be(e: &SynthesisError) -> String {
    match e {
        SynthesisError::InvalidParam { expected, .. } => format!("must be {expected}"),
        e => e.to_string(),
    }
}

impl<G: ParamGroup> clap::Args for Flags<G> {
    fn augment_args(cmd: Command) -> Command {
        cmd.args(G::PARAMS.iter().map(|&p| arg(p)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<G: ParamGroup> FromArgMatches for Flags<G> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        let mut lists = Vec::new();
        for &p in G::PARAMS {
            let values: Vec<Value> = m.get_many::<Value>(p.flag()).map(|v| v.copied().collect()).unwrap_or_default();
            if let Some(&first) = values.first() {
                given.push((p, first));
            }
            if values.len() > 1 {
                lists.push((p, values));
            }
        }
        Ok(Flags { given, lists, group: PhantomData })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        let new = Self::from_arg_matches(m)?;
        for (p, v) in new.given {
            self.given.retain(|(q, _)| *q != p);
            self.lists.retain(|(q, _)| *q != p);
            self.given.push((p, v));
        }
        self.lists.extend(new.lists);
        Ok(())
    }
}

/// The command-line option behind a core parameter name, for error messages.
pub fn option_name(param: &str) -> String {
    Param::from_key(param).map_or_else(|| "an option".to_string(), |p| format!("--{}", p.flag()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        shared: SynthesisFlags,
        #[command(flatten)]
        own: GenerateFlags,
    }

    fn parse(args: &[&str]) -> Result<SynthesisSettings, String> {
        let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).map_err(|e| e.to_string())?;
        let mut s = SynthesisSettings::default();
        cli.shared.apply(&mut s).map_err(|e| e.to_string())?;
        cli.own.apply(&mut s).map_err(|e| e.to_string())?;
        Ok(s)
    }

    #[test]
    fn every_parameter_has_its_flag_and_the_defaults_are_the_cores() {
        assert_eq!(parse(&[]), Ok(SynthesisSettings::default()));
        let s = parse(&[
            "--synthesis-speedup-ratio=2",
            "--synthesis-prefix-len-multiplier=1.5",
            "--synthesis-prefix-root-multiplier=3",
            "--synthesis-prompt-len-multiplier=0.5",
            "--synthesis-output-len-multiplier=0",
            "--synthesis-max-isl=8192",
            "--synthesis-max-osl=512",
            "--num-requests=10",
            "--intensity=1.5",
            "--duration=60",
            "--synthesis-min-isl=5",
            "--synthesis-min-osl=6",
            "--random-seed=42",
            "--block-size=16",
        ]);
        let params = GenerateParams {
            speedup_ratio: 2.0,
            prefix_len_multiplier: 1.5,
            prefix_root_multiplier: 3,
            prompt_len_multiplier: 0.5,
            output_len_multiplier: 0.0,
            max_isl: Some(8192),
            max_osl: Some(512),
            num_requests: 10,
            intensity: 1.5,
            duration_s: Some(60),
            min_isl: Some(5),
            min_osl: Some(6),
            seed: 42,
            block_size: 16,
        };
        let want = SynthesisSettings { mode: Mode::Transform, params };
        assert_eq!(s, Ok(want));
    }

    #[test]
    fn out_of_range_values_name_the_flag_the_value_and_what_is_accepted() {
        let err = parse(&["--synthesis-output-len-multiplier", "1e30"]).unwrap_err();
        assert!(
            err.contains(
                "invalid value '1e30' for '--synthesis-output-len-multiplier <X>': must be a number from 0 to 1000"
            ),
            "{err}"
        );
        let err = parse(&["--synthesis-min-isl", "5"]).unwrap_err();
        assert!(err.contains("--num-requests"), "{err}");
        assert_eq!(option_name("max_osl"), "--synthesis-max-osl");
    }
}
