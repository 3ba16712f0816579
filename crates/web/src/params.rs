//! The parameters a user sets (block size, synthesis knobs, seed), kept as the text typed so that
//! invalid values can be shown with a message; their URL form; and the equivalent CLI command.

use serde::{Deserialize, Serialize};

/// Transform every row, or generate new rows from the learned distributions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    #[default]
    Transform,
    Generate,
}

/// One editable parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    BlockSize,
    Speedup,
    PrefixLen,
    PrefixRoot,
    PromptLen,
    OutputLen,
    MaxIsl,
    MaxOsl,
    Seed,
    NumRequests,
    MinIsl,
    MinOsl,
}

enum Kind {
    /// An integer in `min..=max`.
    Int { min: u64, max: u64 },
    /// An optional integer ≥ 1 (empty: no limit).
    OptInt,
    /// A finite float `> 0` (or `≥ 0` when `zero_ok`).
    Float { zero_ok: bool },
}

impl Field {
    pub const ALL: [Field; 12] = [
        Field::BlockSize,
        Field::Speedup,
        Field::PrefixLen,
        Field::PrefixRoot,
        Field::PromptLen,
        Field::OutputLen,
        Field::MaxIsl,
        Field::MaxOsl,
        Field::Seed,
        Field::NumRequests,
        Field::MinIsl,
        Field::MinOsl,
    ];
    /// The synthesis fields, in the panel's order.
    pub const SYNTH: [Field; 11] = [
        Field::NumRequests,
        Field::Speedup,
        Field::PrefixLen,
        Field::PrefixRoot,
        Field::PromptLen,
        Field::OutputLen,
        Field::MinIsl,
        Field::MaxIsl,
        Field::MinOsl,
        Field::MaxOsl,
        Field::Seed,
    ];

    /// Fields that only generative synthesis has.
    pub fn generate_only(self) -> bool {
        matches!(self, Field::NumRequests | Field::MinIsl | Field::MinOsl)
    }

    fn index(self) -> usize {
        Field::ALL.iter().position(|&f| f == self).unwrap_or(0)
    }

    /// Key in the page URL.
    pub fn key(self) -> &'static str {
        match self {
            Field::BlockSize => "block_size",
            Field::Speedup => "speedup_ratio",
            Field::PrefixLen => "prefix_len_multiplier",
            Field::PrefixRoot => "prefix_root_multiplier",
            Field::PromptLen => "prompt_len_multiplier",
            Field::OutputLen => "output_len_multiplier",
            Field::MaxIsl => "max_isl",
            Field::MaxOsl => "max_osl",
            Field::Seed => "seed",
            Field::NumRequests => "num_requests",
            Field::MinIsl => "min_isl",
            Field::MinOsl => "min_osl",
        }
    }

    /// Flag of `aiperf-cli synthesize-trace`.
    pub fn flag(self) -> String {
        match self {
            Field::BlockSize => "--block-size".into(),
            Field::Seed => "--random-seed".into(),
            Field::NumRequests => "--num-requests".into(),
            f => format!("--synthesis-{}", f.key().replace('_', "-")),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Field::BlockSize => "Block size (tokens per hash id)",
            Field::Speedup => "Speedup ratio",
            Field::PrefixLen => "Prefix length multiplier",
            Field::PrefixRoot => "Prefix root multiplier",
            Field::PromptLen => "Prompt length multiplier",
            Field::OutputLen => "Output length multiplier",
            Field::MaxIsl => "Max input length",
            Field::MaxOsl => "Max output length",
            Field::Seed => "Seed",
            Field::NumRequests => "Number of requests",
            Field::MinIsl => "Min input length",
            Field::MinOsl => "Min output length",
        }
    }

    pub fn help(self) -> &'static str {
        match self {
            Field::BlockSize => "integer ≥ 1",
            Field::Speedup => "> 0; 2 replays twice as fast",
            Field::PrefixLen => "> 0; scales shared prefixes",
            Field::PrefixRoot => "integer ≥ 1; copies of the prefix tree",
            Field::PromptLen => "> 0; scales unique prompts",
            Field::OutputLen => "≥ 0; scales output lengths",
            Field::MaxIsl => "tokens; longer rows dropped, empty: none",
            Field::MaxOsl => "tokens; empty: no cap",
            Field::MinIsl => "tokens; shorter samples redrawn",
            Field::MinOsl => "tokens; empty: no floor",
            Field::Seed => "integer ≥ 0 (AIPerf's --random-seed)",
            Field::NumRequests => "requests to generate",
        }
    }

    pub fn default_value(self) -> &'static str {
        match self {
            Field::BlockSize => "512",
            Field::Speedup | Field::PrefixLen | Field::PrefixRoot | Field::PromptLen | Field::OutputLen => "1",
            Field::MaxIsl | Field::MaxOsl | Field::MinIsl | Field::MinOsl => "",
            Field::Seed => "0",
            Field::NumRequests => "1000",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Field::BlockSize => Kind::Int { min: 1, max: 1 << 24 },
            Field::PrefixRoot => Kind::Int { min: 1, max: 1000 },
            Field::Seed => Kind::Int { min: 0, max: u64::MAX },
            Field::NumRequests => Kind::Int { min: 1, max: 10_000_000 },
            Field::MaxIsl | Field::MaxOsl | Field::MinIsl | Field::MinOsl => Kind::OptInt,
            Field::OutputLen => Kind::Float { zero_ok: true },
            Field::Speedup | Field::PrefixLen | Field::PromptLen => Kind::Float { zero_ok: false },
        }
    }

    /// Checks a typed value; the message says what is expected.
    pub fn validate(self, text: &str) -> Result<(), String> {
        let t = text.trim();
        match self.kind() {
            Kind::Int { min, max } => match t.parse::<u64>() {
                Ok(v) if (min..=max).contains(&v) => Ok(()),
                Ok(_) if max == u64::MAX => Err(format!("must be at least {min}")),
                Ok(_) => Err(format!("must be between {min} and {max}")),
                Err(_) => Err("must be a whole number".into()),
            },
            Kind::OptInt if t.is_empty() => Ok(()),
            Kind::OptInt => match t.parse::<u64>() {
                Ok(v) if v >= 1 => Ok(()),
                _ => Err("must be a whole number ≥ 1, or empty".into()),
            },
            Kind::Float { zero_ok } => match t.parse::<f64>() {
                Ok(v) if v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0)) => Ok(()),
                Ok(_) if zero_ok => Err("must be ≥ 0".into()),
                Ok(_) => Err("must be greater than 0".into()),
                Err(_) => Err("must be a number".into()),
            },
        }
    }
}

/// Everything the user set, as typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    values: [String; 12],
    pub mode: Mode,
    /// Load the bundled sample when the page opens (from a shared link).
    pub sample: bool,
}

impl Default for Form {
    fn default() -> Self {
        Form { values: Field::ALL.map(|f| f.default_value().to_string()), mode: Mode::Transform, sample: false }
    }
}

/// Validated synthesis settings (sent to the worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SynthSettings {
    pub mode: Mode,
    pub block_size: u32,
    pub speedup_ratio: f64,
    pub prefix_len_multiplier: f64,
    pub prefix_root_multiplier: u32,
    pub prompt_len_multiplier: f64,
    pub output_len_multiplier: f64,
    pub max_isl: Option<u64>,
    pub max_osl: Option<u64>,
    pub min_isl: Option<u64>,
    pub min_osl: Option<u64>,
    pub seed: u64,
    pub num_requests: u64,
}

impl Form {
    pub fn get(&self, f: Field) -> &str {
        &self.values[f.index()]
    }

    pub fn set(&mut self, f: Field, v: impl Into<String>) {
        self.values[f.index()] = v.into();
    }

    pub fn error(&self, f: Field) -> Option<String> {
        f.validate(self.get(f)).err()
    }

    /// The block size when valid.
    pub fn block_size(&self) -> Option<u32> {
        self.error(Field::BlockSize).is_none().then(|| self.get(Field::BlockSize).trim().parse().ok()).flatten()
    }

    /// The fields that matter in the current mode (number of requests only when generating).
    pub fn active_synth_fields(&self) -> impl Iterator<Item = Field> + '_ {
        Field::SYNTH.into_iter().filter(|&f| !f.generate_only() || self.mode == Mode::Generate)
    }

    /// The synthesis settings, or `None` while a field is invalid.
    pub fn synth(&self) -> Option<SynthSettings> {
        if self.active_synth_fields().chain([Field::BlockSize]).any(|f| self.error(f).is_some()) {
            return None;
        }
        let int = |f: Field| self.get(f).trim().parse::<u64>().ok();
        let float = |f: Field| self.get(f).trim().parse::<f64>().ok();
        Some(SynthSettings {
            mode: self.mode,
            block_size: self.block_size()?,
            speedup_ratio: float(Field::Speedup)?,
            prefix_len_multiplier: float(Field::PrefixLen)?,
            prefix_root_multiplier: u32::try_from(int(Field::PrefixRoot)?).ok()?,
            prompt_len_multiplier: float(Field::PromptLen)?,
            output_len_multiplier: float(Field::OutputLen)?,
            max_isl: int(Field::MaxIsl),
            max_osl: int(Field::MaxOsl),
            min_isl: if self.mode == Mode::Generate { int(Field::MinIsl) } else { None },
            min_osl: if self.mode == Mode::Generate { int(Field::MinOsl) } else { None },
            seed: int(Field::Seed)?,
            num_requests: int(Field::NumRequests).unwrap_or(1000),
        })
    }

    /// The query string (`?block_size=16&seed=7`) holding the values that differ from the defaults.
    pub fn to_query(&self) -> String {
        let mut parts: Vec<String> = Field::ALL
            .iter()
            .filter(|&&f| self.get(f) != f.default_value())
            .map(|&f| format!("{}={}", f.key(), encode(self.get(f))))
            .collect();
        if self.mode == Mode::Generate {
            parts.push("mode=generate".into());
        }
        if self.sample {
            parts.push("sample=1".into());
        }
        if parts.is_empty() { String::new() } else { format!("?{}", parts.join("&")) }
    }

    /// Reads a query string; unknown keys are reported, invalid values are kept (and shown invalid).
    pub fn from_query(query: &str) -> (Form, Vec<String>) {
        let mut form = Form::default();
        let mut unknown = Vec::new();
        for pair in query.trim_start_matches('?').split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (k, v) = (decode(k), decode(v));
            if let Some(f) = Field::ALL.iter().find(|f| f.key() == k) {
                form.set(*f, v);
            } else if k == "mode" {
                match v.as_str() {
                    "generate" => form.mode = Mode::Generate,
                    "transform" => form.mode = Mode::Transform,
                    _ => unknown.push(format!("mode={v}")),
                }
            } else if k == "sample" {
                form.sample = v != "0";
            } else {
                unknown.push(k);
            }
        }
        (form, unknown)
    }

    /// `aiperf-cli analyze-trace` with these settings.
    pub fn analyze_command(&self, file: &str, skip_invalid: bool) -> String {
        let mut cmd = format!("aiperf-cli analyze-trace {}", shell_quote(file));
        if self.get(Field::BlockSize) != Field::BlockSize.default_value() {
            cmd += &format!(" --block-size {}", self.get(Field::BlockSize).trim());
        }
        if skip_invalid {
            cmd += " --skip-invalid";
        }
        cmd + " --output-file analysis.json"
    }

    /// `aiperf-cli synthesize-trace` with these settings.
    pub fn synthesize_command(&self, file: &str, out: &str, skip_invalid: bool) -> String {
        let mut cmd = format!("aiperf-cli synthesize-trace {}", shell_quote(file));
        if skip_invalid {
            cmd += " --skip-invalid";
        }
        for f in std::iter::once(Field::BlockSize).chain(self.active_synth_fields()) {
            let v = self.get(f).trim();
            if f == Field::Seed || f == Field::NumRequests || (v != f.default_value() && !v.is_empty()) {
                cmd += &format!(" {} {}", f.flag(), shell_quote(v));
            }
        }
        cmd + &format!(" --output-file {}", shell_quote(out))
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_messages() {
        assert!(Field::BlockSize.validate("512").is_ok());
        assert_eq!(Field::BlockSize.validate("0").unwrap_err(), "must be between 1 and 16777216");
        assert_eq!(Field::BlockSize.validate("abc").unwrap_err(), "must be a whole number");
        assert_eq!(Field::Speedup.validate("0").unwrap_err(), "must be greater than 0");
        assert!(Field::OutputLen.validate("0").is_ok());
        assert_eq!(Field::OutputLen.validate("-1").unwrap_err(), "must be ≥ 0");
        assert_eq!(Field::Speedup.validate("NaN").unwrap_err(), "must be greater than 0");
        assert!(Field::MaxIsl.validate("").is_ok());
        assert!(Field::MaxIsl.validate("0").is_err());
    }

    #[test]
    fn query_round_trip() {
        let mut f = Form::default();
        assert_eq!(f.to_query(), "");
        f.set(Field::Speedup, "2.5");
        f.set(Field::MaxIsl, "8192");
        f.mode = Mode::Generate;
        f.sample = true;
        let q = f.to_query();
        assert_eq!(q, "?speedup_ratio=2.5&max_isl=8192&mode=generate&sample=1");
        let (g, unknown) = Form::from_query(&q);
        assert_eq!(g, f);
        assert!(unknown.is_empty());
    }

    #[test]
    fn bad_query_values_are_kept_and_flagged() {
        let (f, unknown) = Form::from_query("?block_size=%2Dx&zzz=1&mode=weird&seed=%");
        assert_eq!(f.get(Field::BlockSize), "-x");
        assert!(f.error(Field::BlockSize).is_some());
        assert!(f.synth().is_none());
        assert_eq!(f.get(Field::Seed), "%");
        assert_eq!(unknown, ["zzz", "mode=weird"]);
    }

    #[test]
    fn commands() {
        let mut f = Form::default();
        assert_eq!(
            f.analyze_command("my trace.jsonl", false),
            "aiperf-cli analyze-trace 'my trace.jsonl' --output-file analysis.json"
        );
        f.set(Field::BlockSize, "16");
        f.set(Field::Speedup, "2");
        assert_eq!(
            f.synthesize_command("t.jsonl", "out.jsonl", false),
            "aiperf-cli synthesize-trace t.jsonl --block-size 16 --synthesis-speedup-ratio 2 --random-seed 0 --output-file out.jsonl"
        );
        let s = f.synth().unwrap();
        assert_eq!((s.block_size, s.speedup_ratio, s.max_isl, s.seed), (16, 2.0, None, 0));
        f.mode = Mode::Generate;
        f.set(Field::MinIsl, "100");
        assert_eq!(
            f.synthesize_command("t.jsonl", "o.jsonl", true),
            "aiperf-cli synthesize-trace t.jsonl --skip-invalid --block-size 16 --num-requests 1000 \
             --synthesis-speedup-ratio 2 --synthesis-min-isl 100 --random-seed 0 --output-file o.jsonl"
        );
        assert_eq!(f.synth().unwrap().min_isl, Some(100));
    }
}
