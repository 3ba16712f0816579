//! The synthesis settings a user sets, described once: every parameter's names (core field and
//! share-link key, command-line flag, form label), accepted range, default and help.
//!
//! The CLI builds its `clap` options from [`Param`], the web app its form fields and share link;
//! [`Param::parse`] and [`SynthesisSettings::validate`] are the only range checks, so every
//! surface accepts the same values and rejects the others with the same words. The ranges have
//! maxima so that no value saturates silently (a multiplier of 1e30 is refused, not clamped to the
//! largest integer) and no value makes a replay wait for ages (a speedup ratio of 1e-300).

use serde::{Deserialize, Serialize};

use super::error::{MAX_OUTPUT_IDS, SynthesisError};
use super::params::{GenerateParams, TransformParams};

/// Transform every row, or generate new rows from the learned distributions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    #[default]
    Transform,
    Generate,
}

/// The values a parameter accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    /// A whole number in `min..=max`.
    Int { min: u64, max: u64 },
    /// A whole number in `min..=max`, or nothing (no limit).
    OptInt { min: u64, max: u64 },
    /// A finite number in `min..=max`, `min` itself excluded when `above_min`.
    Float { min: f64, above_min: bool, max: f64 },
}

impl Range {
    /// What is accepted, in words ("a whole number from 1 to 16777216").
    pub fn describe(self) -> String {
        match self {
            Range::Int { min, max } | Range::OptInt { min, max } if max == u64::MAX => {
                format!("a whole number ≥ {min}")
            }
            Range::Int { min, max } | Range::OptInt { min, max } => format!("a whole number from {min} to {max}"),
            Range::Float { min, above_min: true, max } => format!("a number > {min} and ≤ {max}"),
            Range::Float { min, above_min: false, max } => format!("a number from {min} to {max}"),
        }
    }
}

/// A parameter's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    /// `None`: no limit.
    OptInt(Option<u64>),
    Float(f64),
}

/// One synthesis parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Param {
    BlockSize,
    NumRequests,
    SpeedupRatio,
    Intensity,
    Duration,
    PrefixLenMultiplier,
    PrefixRootMultiplier,
    PromptLenMultiplier,
    OutputLenMultiplier,
    MinIsl,
    MaxIsl,
    MinOsl,
    MaxOsl,
    Seed,
}

/// Everything known about one parameter (a row of [`SPECS`]).
struct Spec {
    key: &'static str,
    flag: &'static str,
    label: &'static str,
    hint: &'static str,
    doc: &'static str,
    default: &'static str,
    range: Range,
}

/// Largest scaling factor of lengths: beyond it a row would exceed any real context length.
const MAX_MULTIPLIER: f64 = 1000.0;
/// Largest number of disjoint prefix-tree copies.
const MAX_ROOT_MULTIPLIER: u64 = 1_000_000;
/// Largest block size, 2^24 tokens.
const MAX_BLOCK_SIZE: u64 = 1 << 24;
/// Longest generated timeline (30 days, in seconds).
const MAX_DURATION_S: u64 = 30 * 24 * 3600;
/// Largest number of generated rows: every row holds at least one hash id.
const MAX_NUM_REQUESTS: u64 = MAX_OUTPUT_IDS;
const MULTIPLIER: Range = Range::Float { min: 0.0, above_min: true, max: MAX_MULTIPLIER };
const TOKENS: Range = Range::OptInt { min: 1, max: u64::MAX };

/// The table, in the order of [`Param::ALL`].
const SPECS: [Spec; 14] = [
    Spec {
        key: "block_size",
        flag: "block-size",
        label: "Block size (tokens per hash id)",
        hint: "tokens per hash id",
        doc: "Tokens per hash id block.",
        default: "512",
        range: Range::Int { min: 1, max: MAX_BLOCK_SIZE },
    },
    Spec {
        key: "num_requests",
        flag: "num-requests",
        label: "Number of requests",
        hint: "requests to generate",
        doc: "Generative mode: learn a model of the trace and sample this many new requests.",
        default: "1000",
        range: Range::Int { min: 1, max: MAX_NUM_REQUESTS },
    },
    Spec {
        key: "speedup_ratio",
        flag: "synthesis-speedup-ratio",
        label: "Speedup ratio",
        hint: "2 replays twice as fast",
        doc: "Synthesis: divide timestamps (generative mode: gaps between arrivals) by this; 2 = twice as fast.",
        default: "1",
        range: Range::Float { min: 0.001, above_min: false, max: 1_000_000.0 },
    },
    Spec {
        key: "intensity",
        flag: "intensity",
        label: "Intensity (rate scale)",
        hint: "2 = twice the requests per second",
        doc: "Generative mode only: scale the learned arrival rate, keeping its curve over time (the \
              speedup ratio compresses the timeline instead); 2 = twice the requests per second.",
        default: "1",
        range: Range::Float { min: 0.0, above_min: true, max: MAX_MULTIPLIER },
    },
    Spec {
        key: "duration_s",
        flag: "duration",
        label: "Duration (s)",
        hint: "seconds of timeline; empty: until the count",
        doc: "Generative mode only: stop at this many seconds of generated timeline (or at \
              --num-requests rows, whichever comes first). Longer than the source trace repeats its \
              learned rate curve; shorter takes the curve's first window of this length.",
        default: "",
        range: Range::OptInt { min: 1, max: MAX_DURATION_S },
    },
    Spec {
        key: "prefix_len_multiplier",
        flag: "synthesis-prefix-len-multiplier",
        label: "Prefix length multiplier",
        hint: "scales shared prefixes",
        doc: "Synthesis: scale the shared prefix of every request.",
        default: "1",
        range: MULTIPLIER,
    },
    Spec {
        key: "prefix_root_multiplier",
        flag: "synthesis-prefix-root-multiplier",
        label: "Prefix root multiplier",
        hint: "copies of the prefix tree",
        doc: "Synthesis: spread requests over this many disjoint copies of the prefix trees.",
        default: "1",
        range: Range::Int { min: 1, max: MAX_ROOT_MULTIPLIER },
    },
    Spec {
        key: "prompt_len_multiplier",
        flag: "synthesis-prompt-len-multiplier",
        label: "Prompt length multiplier",
        hint: "scales unique prompts",
        doc: "Synthesis: scale the unique (non-shared) part of every prompt.",
        default: "1",
        range: MULTIPLIER,
    },
    Spec {
        key: "output_len_multiplier",
        flag: "synthesis-output-len-multiplier",
        label: "Output length multiplier",
        hint: "scales output lengths",
        doc: "Synthesis: scale output lengths (results are at least 1).",
        default: "1",
        range: Range::Float { min: 0.0, above_min: false, max: MAX_MULTIPLIER },
    },
    Spec {
        key: "min_isl",
        flag: "synthesis-min-isl",
        label: "Min input length",
        hint: "tokens; shorter samples redrawn",
        doc: "Generative mode only: resample requests shorter than this (tokens).",
        default: "",
        range: TOKENS,
    },
    Spec {
        key: "max_isl",
        flag: "synthesis-max-isl",
        label: "Max input length",
        hint: "tokens; longer rows dropped",
        doc: "Drop requests longer than this (tokens) first and cap synthesized ones to it \
              (generative mode: resample longer requests).",
        default: "",
        range: TOKENS,
    },
    Spec {
        key: "min_osl",
        flag: "synthesis-min-osl",
        label: "Min output length",
        hint: "tokens; no floor when empty",
        doc: "Generative mode only: raise output lengths to at least this (tokens).",
        default: "",
        range: TOKENS,
    },
    Spec {
        key: "max_osl",
        flag: "synthesis-max-osl",
        label: "Max output length",
        hint: "tokens; no cap when empty",
        doc: "Cap output lengths to this (tokens).",
        default: "",
        range: TOKENS,
    },
    Spec {
        key: "seed",
        flag: "random-seed",
        label: "Seed",
        hint: "AIPerf's --random-seed",
        doc: "Seed of every random choice (same seed as AIPerf's `--random-seed` → same output).",
        default: "0",
        range: Range::Int { min: 0, max: u64::MAX },
    },
];

impl Param {
    /// Every parameter, in the table's order (the web form's).
    pub const ALL: [Param; 14] = [
        Param::BlockSize,
        Param::NumRequests,
        Param::SpeedupRatio,
        Param::Intensity,
        Param::Duration,
        Param::PrefixLenMultiplier,
        Param::PrefixRootMultiplier,
        Param::PromptLenMultiplier,
        Param::OutputLenMultiplier,
        Param::MinIsl,
        Param::MaxIsl,
        Param::MinOsl,
        Param::MaxOsl,
        Param::Seed,
    ];
    /// The knobs both synthesis modes share (AIPerf's `--synthesis-*` options of `profile`).
    pub const SHARED: [Param; 7] = [
        Param::SpeedupRatio,
        Param::PrefixLenMultiplier,
        Param::PrefixRootMultiplier,
        Param::PromptLenMultiplier,
        Param::OutputLenMultiplier,
        Param::MaxIsl,
        Param::MaxOsl,
    ];

    fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }

    /// Field name in the core's parameter structs, in their JSON and in the share link.
    pub fn key(self) -> &'static str {
        self.spec().key
    }

    /// The parameter with this [`key`](Param::key).
    pub fn from_key(key: &str) -> Option<Param> {
        Param::ALL.into_iter().find(|p| p.key() == key)
    }

    /// Long command-line flag without its leading `--` (`synthesis-speedup-ratio`).
    pub fn flag(self) -> &'static str {
        self.spec().flag
    }

    /// Label of the form field.
    pub fn label(self) -> &'static str {
        self.spec().label
    }

    /// A few words under the form field.
    pub fn hint(self) -> &'static str {
        self.spec().hint
    }

    /// One sentence of command-line help.
    pub fn doc(self) -> &'static str {
        self.spec().doc
    }

    /// The default as text; empty for "no limit".
    pub fn default_text(self) -> &'static str {
        self.spec().default
    }

    pub fn range(self) -> Range {
        self.spec().range
    }

    /// Whether only generative synthesis uses it.
    pub fn generate_only(self) -> bool {
        matches!(self, Param::NumRequests | Param::MinIsl | Param::MinOsl | Param::Intensity | Param::Duration)
    }

    /// Reads a value typed by a user (surrounding spaces ignored; empty means no limit where
    /// that is allowed) and checks its range.
    pub fn parse(self, text: &str) -> Result<Value, SynthesisError> {
        let t = text.trim();
        let value = match self.range() {
            Range::OptInt { .. } if t.is_empty() => Some(Value::OptInt(None)),
            Range::Int { .. } => whole(t).map(Value::Int),
            Range::OptInt { .. } => whole(t).map(|v| Value::OptInt(Some(v))),
            Range::Float { .. } => t.parse().ok().map(Value::Float),
        };
        let value = value.ok_or_else(|| self.invalid(t.to_string()))?;
        self.check(value)?;
        Ok(value)
    }

    /// Checks a value against the range.
    pub fn check(self, value: Value) -> Result<(), SynthesisError> {
        let ok = match (self.range(), value) {
            (Range::Int { min, max }, Value::Int(v)) => (min..=max).contains(&v),
            (Range::OptInt { .. }, Value::OptInt(None)) => true,
            (Range::OptInt { min, max }, Value::OptInt(Some(v))) => (min..=max).contains(&v),
            (Range::Float { min, above_min, max }, Value::Float(v)) => {
                v.is_finite() && v <= max && (v > min || (!above_min && v == min))
            }
            _ => false,
        };
        if ok { Ok(()) } else { Err(self.invalid(value.to_string())) }
    }

    fn invalid(self, value: String) -> SynthesisError {
        SynthesisError::InvalidParam { param: self.key(), expected: self.range().describe(), value }
    }
}

/// A whole number written plainly or in exponent form (`1e6`).
fn whole(t: &str) -> Option<u64> {
    t.parse().ok().or_else(|| {
        let f = t.parse::<f64>().ok()?;
        (f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f)).then_some(f as u64)
    })
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) | Value::OptInt(Some(v)) => write!(f, "{v}"),
            Value::OptInt(None) => Ok(()),
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}

/// Every synthesis setting, typed: what the CLI flags, the web form and a share link describe.
/// The parameters of both modes are held as [`GenerateParams`] (a superset of the transform's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SynthesisSettings {
    pub mode: Mode,
    pub params: GenerateParams,
}

impl SynthesisSettings {
    /// The value of one parameter.
    pub fn get(&self, p: Param) -> Value {
        let g = &self.params;
        match p {
            Param::BlockSize => Value::Int(u64::from(g.block_size)),
            Param::Seed => Value::Int(g.seed),
            Param::NumRequests => Value::Int(g.num_requests as u64),
            Param::SpeedupRatio => Value::Float(g.speedup_ratio),
            Param::Intensity => Value::Float(g.intensity),
            Param::Duration => Value::OptInt(g.duration_s),
            Param::PrefixLenMultiplier => Value::Float(g.prefix_len_multiplier),
            Param::PrefixRootMultiplier => Value::Int(u64::from(g.prefix_root_multiplier)),
            Param::PromptLenMultiplier => Value::Float(g.prompt_len_multiplier),
            Param::OutputLenMultiplier => Value::Float(g.output_len_multiplier),
            Param::MinIsl => Value::OptInt(g.min_isl),
            Param::MaxIsl => Value::OptInt(g.max_isl),
            Param::MinOsl => Value::OptInt(g.min_osl),
            Param::MaxOsl => Value::OptInt(g.max_osl),
        }
    }

    /// Sets one parameter after checking its range.
    pub fn set(&mut self, p: Param, value: Value) -> Result<(), SynthesisError> {
        p.check(value)?;
        let invalid = || p.invalid(value.to_string());
        let g = &mut self.params;
        match (p, value) {
            (Param::BlockSize, Value::Int(v)) => g.block_size = u32::try_from(v).map_err(|_| invalid())?,
            (Param::Seed, Value::Int(v)) => g.seed = v,
            (Param::NumRequests, Value::Int(v)) => g.num_requests = usize::try_from(v).map_err(|_| invalid())?,
            (Param::SpeedupRatio, Value::Float(v)) => g.speedup_ratio = v,
            (Param::Intensity, Value::Float(v)) => g.intensity = v,
            (Param::Duration, Value::OptInt(v)) => g.duration_s = v,
            (Param::PrefixLenMultiplier, Value::Float(v)) => g.prefix_len_multiplier = v,
            (Param::PrefixRootMultiplier, Value::Int(v)) => {
                g.prefix_root_multiplier = u32::try_from(v).map_err(|_| invalid())?;
            }
            (Param::PromptLenMultiplier, Value::Float(v)) => g.prompt_len_multiplier = v,
            (Param::OutputLenMultiplier, Value::Float(v)) => g.output_len_multiplier = v,
            (Param::MinIsl, Value::OptInt(v)) => g.min_isl = v,
            (Param::MaxIsl, Value::OptInt(v)) => g.max_isl = v,
            (Param::MinOsl, Value::OptInt(v)) => g.min_osl = v,
            (Param::MaxOsl, Value::OptInt(v)) => g.max_osl = v,
            _ => return Err(invalid()),
        }
        Ok(())
    }

    /// The parameters that matter in the current mode (generative ones only when generating).
    pub fn active(&self) -> impl Iterator<Item = Param> + '_ {
        Param::ALL.into_iter().filter(|p| !p.generate_only() || self.mode == Mode::Generate)
    }

    /// Checks every parameter of the current mode against its range, and `min ≤ max` pairs,
    /// naming the first one at fault.
    pub fn validate(&self) -> Result<(), SynthesisError> {
        for p in self.active() {
            p.check(self.get(p))?;
        }
        if self.mode == Mode::Generate {
            let g = &self.params;
            for (lo, hi, min, max) in [
                (g.min_isl, g.max_isl, Param::MinIsl, Param::MaxIsl),
                (g.min_osl, g.max_osl, Param::MinOsl, Param::MaxOsl),
            ] {
                if let (Some(lo), Some(hi)) = (lo, hi)
                    && lo > hi
                {
                    return Err(SynthesisError::InvalidParam {
                        param: max.key(),
                        expected: format!("at least {} ({lo})", min.key()),
                        value: hi.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The transform these settings ask for.
    pub fn transform_params(&self) -> TransformParams {
        let g = &self.params;
        TransformParams {
            speedup_ratio: g.speedup_ratio,
            prefix_len_multiplier: g.prefix_len_multiplier,
            prefix_root_multiplier: g.prefix_root_multiplier,
            prompt_len_multiplier: g.prompt_len_multiplier,
            output_len_multiplier: g.output_len_multiplier,
            max_isl: g.max_isl,
            max_osl: g.max_osl,
            block_size: g.block_size,
            seed: g.seed,
        }
    }
}

impl From<&TransformParams> for SynthesisSettings {
    fn from(t: &TransformParams) -> Self {
        let params = GenerateParams {
            speedup_ratio: t.speedup_ratio,
            prefix_len_multiplier: t.prefix_len_multiplier,
            prefix_root_multiplier: t.prefix_root_multiplier,
            prompt_len_multiplier: t.prompt_len_multiplier,
            output_len_multiplier: t.output_len_multiplier,
            max_isl: t.max_isl,
            max_osl: t.max_osl,
            block_size: t.block_size,
            seed: t.seed,
            ..GenerateParams::default()
        };
        SynthesisSettings { mode: Mode::Transform, params }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_enum_and_its_defaults_are_the_settings_defaults() {
        let defaults = SynthesisSettings { mode: Mode::Generate, ..SynthesisSettings::default() };
        assert_eq!(Param::BlockSize.parse(Param::BlockSize.default_text()), Ok(Value::Int(512)));
        for (i, p) in Param::ALL.into_iter().enumerate() {
            assert_eq!(p as usize, i);
            assert_eq!(Param::from_key(p.key()), Some(p));
            assert_eq!(p.parse(p.default_text()).unwrap(), defaults.get(p), "{p:?}");
        }
        assert_eq!(SynthesisSettings::default().transform_params(), TransformParams::default());
    }

    #[test]
    fn values_outside_the_range_are_refused_with_what_is_accepted() {
        let err = |p: Param, text: &str| p.parse(text).unwrap_err().to_string();
        assert_eq!(
            err(Param::PrefixLenMultiplier, "1e30"),
            "prefix_len_multiplier must be a number > 0 and ≤ 1000, got 1000000000000000000000000000000"
        );
        assert_eq!(
            err(Param::SpeedupRatio, "1e-300"),
            format!("speedup_ratio must be a number from 0.001 to 1000000, got {}", 1e-300)
        );
        assert_eq!(err(Param::SpeedupRatio, "fast"), "speedup_ratio must be a number from 0.001 to 1000000, got fast");
        assert_eq!(err(Param::SpeedupRatio, "NaN"), "speedup_ratio must be a number from 0.001 to 1000000, got NaN");
        assert_eq!(err(Param::BlockSize, "0"), "block_size must be a whole number from 1 to 16777216, got 0");
        assert_eq!(err(Param::MaxIsl, "0"), "max_isl must be a whole number ≥ 1, got 0");
        assert_eq!(err(Param::Seed, "-1"), "seed must be a whole number ≥ 0, got -1");
        assert_eq!(Param::OutputLenMultiplier.parse(" 0 ").unwrap(), Value::Float(0.0));
        assert_eq!(Param::PrefixLenMultiplier.parse("1000").unwrap(), Value::Float(1000.0));
        assert_eq!(Param::MaxOsl.parse("").unwrap(), Value::OptInt(None));
        assert!(Param::NumRequests.parse("").is_err());
        assert_eq!(Param::NumRequests.parse("1e6").unwrap(), Value::Int(1_000_000));
        assert!(Param::NumRequests.parse("1e10").is_err() && Param::NumRequests.parse("2.5").is_err());
    }

    #[test]
    fn settings_are_checked_in_the_current_mode_only() {
        let params = GenerateParams { min_isl: Some(10), max_isl: Some(5), ..GenerateParams::default() };
        let mut s = SynthesisSettings { mode: Mode::Transform, params };
        assert_eq!(s.validate(), Ok(()), "min_isl is a generative setting");
        s.mode = Mode::Generate;
        assert_eq!(s.validate().unwrap_err().param(), Some("max_isl"));
        s.params.max_isl = None;
        s.params.num_requests = 0;
        assert_eq!(s.validate().unwrap_err().param(), Some("num_requests"));
        assert!(s.set(Param::OutputLenMultiplier, Value::Float(1e30)).is_err());
        assert!(s.set(Param::BlockSize, Value::Float(2.0)).is_err(), "a value of the wrong kind");
        s.set(Param::BlockSize, Value::Int(16)).unwrap();
        assert_eq!(s.params.block_size, 16);
    }

    #[test]
    fn transform_params_convert_back_to_the_same_settings() {
        let t = TransformParams { speedup_ratio: 2.0, max_osl: Some(9), seed: 3, ..TransformParams::default() };
        assert_eq!(SynthesisSettings::from(&t).transform_params(), t);
    }
}
