//! AIPerf's synthetic workloads (its `--isl`/`--osl`, `--num-dataset-entries`,
//! `--conversation-turn-*`, prefix prompt and `--seq-dist`/`--random-range-ratio` options) generated
//! as a Mooncake trace, so that they replay, export and analyze like any trace.
//!
//! A [`SyntheticWorkload`] holds AIPerf 0.13.0's parameters with its defaults and bounds;
//! [`SyntheticWorkload::generate`] turns it into a [`Trace`]: one conversation per dataset entry
//! (`session_id` `session_000000`, … as AIPerf names them when seeded), each with a number of turns
//! drawn as AIPerf draws them (a normal sample, truncated at 0, rounded up, at least 1), a `delay`
//! before every later turn when `--conversation-turn-delay-mean` is positive (the same draw, times
//! `--conversation-turn-delay-ratio`), an `input_length` per turn from the ISL distribution (normal
//! with `--isl-stddev`, a `--seq-dist` bucket, or the `--random-range-ratio` window) and an
//! `output_length` from the OSL distribution (none without `--osl`, as AIPerf then sends no
//! `max_tokens`).
//!
//! **Lengths and history.** Our replay threads a session's history as AIPerf does (its default
//! `deltas_without_responses`): a later turn sends the earlier prompts and the server's live
//! replies before its new prompt, so a row's `input_length` counts the *new* tokens of its turn
//! only. The first turn of a conversation carries what AIPerf sends once per conversation ahead of
//! the first user message: the shared system prompt (`--shared-system-prompt-length`), the user
//! context (`--user-context-prompt-length`) or the pool prefix (`--prompt-prefix-length`), so its
//! `input_length` is their length plus the sampled ISL (AIPerf's prefix is additive too: `--isl`
//! sizes the body). Later turns carry these tokens through the history, as in AIPerf.
//!
//! **Sharing as hash ids.** `hash_ids` are what hashing AIPerf's prompts at `block_size` tokens a
//! block would give: a block is shared when every token up to its end is shared. The shared system
//! prompt's whole blocks are the same ids on every conversation; each pool prefix's whole blocks are
//! the same ids on every conversation that drew it; every other block (the user context, the body,
//! the block where shared text meets unique text) gets a fresh id. A prefix shorter than a block
//! (AIPerf's `--prefix-prompt-length 64` at the default 512) therefore shares no block: choose a
//! smaller `--isl-block-size` to see it.
//!
//! **Where the rows differ from AIPerf's prompts.** We write lengths and block ids, not AIPerf's
//! token stream (the replay builds the text). The turn counts, delays, ISLs, OSLs, `--seq-dist`
//! buckets and prefix choices are drawn with AIPerf's generators for the same seed (CPython's
//! Mersenne Twister and `gauss`, seeded by [`derive_seed`] per component, one component per
//! quantity as AIPerf), so for the same `--random-seed` they are AIPerf's values, up to the last bit
//! of a `cos`/`log` in a rare sample. The exceptions: AIPerf subtracts the tokens its tokenizer adds
//! (BOS) from `--isl` and, with `--apply-chat-template`, the template's tokens; we count the
//! prompt's tokens as `--isl` (the core knows no tokenizer). The `--random-range-ratio` window is
//! AIPerf's, but drawn with our generator (AIPerf uses NumPy's PCG64 for it), so those lengths
//! follow the same distribution without being the same numbers. AIPerf without `--random-seed`
//! draws from the OS; here the seed is always a parameter.

use std::f64::consts::TAU;
use std::fmt;

use serde_json::Value;

use super::rng::{PyRandom, derive_seed};
use crate::trace::{Input, Number, Row, Trace};

/// AIPerf's default `--prompt-input-tokens-mean`.
pub const DEFAULT_ISL: u64 = 550;
/// AIPerf's default `--num-dataset-entries`.
pub const DEFAULT_ENTRIES: u64 = 100;
/// AIPerf's default `--prompt-input-tokens-block-size` for Mooncake traces.
pub const DEFAULT_BLOCK_SIZE: u32 = 512;
/// Most rows a synthetic trace may hold (a million-row trace costs about 100 MB; this is 64 times
/// that).
pub const MAX_ROWS: u64 = super::MAX_OUTPUT_ROWS;
/// Most hash ids a synthetic trace may hold (as every synthesis).
pub const MAX_IDS: u64 = super::MAX_OUTPUT_IDS;

/// The option names errors use (AIPerf's short spellings).
pub mod option {
    pub const ISL: &str = "--isl";
    pub const ISL_STDDEV: &str = "--isl-stddev";
    pub const OSL: &str = "--osl";
    pub const OSL_STDDEV: &str = "--osl-stddev";
    pub const ENTRIES: &str = "--num-dataset-entries";
    pub const TURN_MEAN: &str = "--conversation-turn-mean";
    pub const TURN_STDDEV: &str = "--conversation-turn-stddev";
    pub const DELAY_MEAN: &str = "--conversation-turn-delay-mean";
    pub const DELAY_STDDEV: &str = "--conversation-turn-delay-stddev";
    pub const DELAY_RATIO: &str = "--conversation-turn-delay-ratio";
    pub const POOL_SIZE: &str = "--prompt-prefix-pool-size";
    pub const PREFIX_LENGTH: &str = "--prompt-prefix-length";
    pub const SHARED_SYSTEM: &str = "--shared-system-prompt-length";
    pub const USER_CONTEXT: &str = "--user-context-prompt-length";
    pub const SEQ_DIST: &str = "--seq-dist";
    pub const RANGE_RATIO: &str = "--random-range-ratio";
    pub const BATCH_SIZE: &str = "--prompt-batch-size";
    pub const BLOCK_SIZE: &str = "--isl-block-size";
}

/// Why a synthetic workload cannot be generated; every variant names the option at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SyntheticError {
    /// An option's value is out of AIPerf's bounds or cannot be read.
    #[error("{option} must be {expected}, got {value}")]
    Invalid { option: &'static str, expected: String, value: String },
    /// Two options AIPerf does not take together.
    #[error("{first} and {second} are mutually exclusive ({why})")]
    Conflict { first: &'static str, second: &'static str, why: &'static str },
    /// An option that needs another one.
    #[error("{option} needs {needs} ({why})")]
    Needs { option: &'static str, needs: &'static str, why: &'static str },
    /// The trace would exceed [`MAX_ROWS`] rows or [`MAX_IDS`] hash ids.
    #[error(
        "the synthetic trace would hold more than {limit} {what}; lower --num-dataset-entries, the turns or the lengths"
    )]
    TooLarge { what: &'static str, limit: u64 },
}

impl SyntheticError {
    /// The option at fault (the first one of a conflict).
    pub fn option(&self) -> Option<&'static str> {
        match self {
            SyntheticError::Invalid { option, .. } | SyntheticError::Needs { option, .. } => Some(option),
            SyntheticError::Conflict { first, .. } => Some(first),
            SyntheticError::TooLarge { .. } => None,
        }
    }
}

fn invalid(option: &'static str, expected: &str, value: impl fmt::Display) -> SyntheticError {
    SyntheticError::Invalid { option, expected: expected.to_string(), value: value.to_string() }
}

/// AIPerf's `--random-corpus-style`: which window `--random-range-ratio` draws from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CorpusStyle {
    /// `[floor(mean*(1-r)), ceil(mean*(1+r))]`, `r` in [0, 1) (vLLM's `bench serve`).
    #[default]
    Vllm,
    /// `[max(1, int(mean*r)), mean]`, `r` in [0, 1] (SGLang's `random-ids`).
    Sglang,
}

/// `--random-range-ratio`: the ISL and OSL ratios of the uniform window around the means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeRatio {
    pub input: f64,
    pub output: f64,
    pub style: CorpusStyle,
}

impl RangeRatio {
    /// Reads AIPerf's forms: one float for both, or (vLLM style only) `{"input": a, "output": b}`.
    pub fn parse(text: &str, style: CorpusStyle) -> Result<RangeRatio, SyntheticError> {
        const OPT: &str = option::RANGE_RATIO;
        let t = text.trim();
        let (input, output) = if let Some(r) = parse_python_float(t) {
            (r, r)
        } else if style == CorpusStyle::Sglang {
            return Err(invalid(OPT, "a plain float under --random-corpus-style sglang", format!("{text:?}")));
        } else {
            let expected = "a float or a JSON object {\"input\": r, \"output\": r}";
            let Ok(Value::Object(map)) = serde_json::from_str::<Value>(t) else {
                return Err(invalid(OPT, expected, format!("{text:?}")));
            };
            let keys_ok = map.len() == 2 && map.contains_key("input") && map.contains_key("output");
            let (Some(i), Some(o), true) =
                (map.get("input").and_then(Value::as_f64), map.get("output").and_then(Value::as_f64), keys_ok)
            else {
                return Err(invalid(OPT, expected, format!("{text:?}")));
            };
            (i, o)
        };
        let r = RangeRatio { input, output, style };
        r.validate()?;
        Ok(r)
    }

    fn validate(&self) -> Result<(), SyntheticError> {
        const OPT: &str = option::RANGE_RATIO;
        for r in [self.input, self.output] {
            let ok = match self.style {
                CorpusStyle::Vllm => r.is_finite() && (0.0..1.0).contains(&r),
                CorpusStyle::Sglang => r.is_finite() && (0.0..=1.0).contains(&r),
            };
            if !ok {
                let expected = match self.style {
                    CorpusStyle::Vllm => "in [0.0, 1.0) under --random-corpus-style vllm",
                    CorpusStyle::Sglang => "in [0.0, 1.0] under --random-corpus-style sglang",
                };
                return Err(invalid(OPT, expected, r));
            }
        }
        if self.style == CorpusStyle::Sglang && self.input != self.output {
            let value = format!("input {} and output {}", self.input, self.output);
            return Err(invalid(OPT, "one ratio for both ISL and OSL under --random-corpus-style sglang", value));
        }
        Ok(())
    }

    /// The inclusive input window around `mean`.
    fn input_bounds(&self, mean: u64) -> (u64, u64) {
        let m = mean as f64;
        match self.style {
            CorpusStyle::Vllm => ((m * (1.0 - self.input)).floor() as u64, (m * (1.0 + self.input)).ceil() as u64),
            CorpusStyle::Sglang => (((m * self.input) as u64).max(1), mean),
        }
    }

    /// The inclusive output window around `mean`.
    fn output_bounds(&self, mean: u64) -> (u64, u64) {
        let m = mean as f64;
        match self.style {
            CorpusStyle::Vllm => {
                (((m * (1.0 - self.output)).floor() as u64).max(1), ((m * (1.0 + self.output)).ceil() as u64).max(1))
            }
            CorpusStyle::Sglang => (((m * self.output) as u64).max(1), mean),
        }
    }
}

/// Python's `float(text)` for the decimal forms (no `inf`/`nan`, which no option accepts).
fn parse_python_float(t: &str) -> Option<f64> {
    let ok = !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-' | b'_'))
        && t.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    t.replace('_', "").parse::<f64>().ok()
}

/// One `--seq-dist` bucket: an (ISL, OSL) pair with optional stddevs and its probability (percent).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeqBucket {
    pub isl: u64,
    pub isl_stddev: f64,
    pub osl: u64,
    pub osl_stddev: f64,
    pub probability: f64,
}

/// `--seq-dist`: (ISL, OSL) buckets drawn by probability.
#[derive(Clone, Debug, PartialEq)]
pub struct SeqDist {
    buckets: Vec<SeqBucket>,
    cumulative: Vec<f64>,
}

impl SeqDist {
    /// Reads AIPerf's three forms: `ISL[|SD],OSL[|SD]:PROB;…`, `[(ISL,OSL):PROB,…]` and
    /// `{"pairs": [{"isl":…, "osl":…, "prob":…, "isl_stddev":…, "osl_stddev":…}, …]}`; the
    /// probabilities are percentages summing to 100.
    pub fn parse(text: &str) -> Result<SeqDist, SyntheticError> {
        let t = text.trim();
        let bad = |why: String| invalid(option::SEQ_DIST, &why, format!("{text:?}"));
        if t.is_empty() {
            return Err(bad("a distribution such as 256,128:40;512,256:60".into()));
        }
        let buckets = if t.starts_with('{') {
            parse_json_pairs(t).map_err(bad)?
        } else if t.starts_with('[') && t.ends_with(']') {
            parse_bracket_pairs(&t[1..t.len() - 1]).map_err(bad)?
        } else {
            let mut out = Vec::new();
            for part in t.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                out.push(parse_pair(part).ok_or_else(|| {
                    bad(format!("pairs ISL[|ISL_STDDEV],OSL[|OSL_STDDEV]:PROB separated by ';' ({part:?} is not one)"))
                })?);
            }
            out
        };
        SeqDist::new(buckets)
    }

    /// A distribution over `buckets`, checked as AIPerf checks them.
    pub fn new(buckets: Vec<SeqBucket>) -> Result<SeqDist, SyntheticError> {
        const OPT: &str = option::SEQ_DIST;
        if buckets.is_empty() {
            return Err(invalid(OPT, "at least one ISL,OSL:PROB pair", "none"));
        }
        for b in &buckets {
            if b.isl == 0 || b.osl == 0 {
                return Err(invalid(OPT, "pairs of positive lengths", format!("ISL {} and OSL {}", b.isl, b.osl)));
            }
            if !(0.0..=100.0).contains(&b.probability) {
                return Err(invalid(OPT, "probabilities in [0, 100] (percent)", b.probability));
            }
            if !(b.isl_stddev.is_finite() && b.isl_stddev >= 0.0 && b.osl_stddev.is_finite() && b.osl_stddev >= 0.0) {
                let value = format!("{} and {}", b.isl_stddev, b.osl_stddev);
                return Err(invalid(OPT, "non-negative stddevs", value));
            }
        }
        let mut total = 0.0;
        let cumulative = buckets
            .iter()
            .map(|b| {
                total += b.probability / 100.0;
                total
            })
            .collect();
        let sum: f64 = buckets.iter().map(|b| b.probability).sum();
        // numpy.isclose(sum, 100, rtol=1e-6, atol=1e-6).
        if (sum - 100.0).abs() > 1e-6 + 1e-6 * 100.0 {
            return Err(invalid(OPT, "probabilities (percent) that sum to 100", sum));
        }
        Ok(SeqDist { buckets, cumulative })
    }

    pub fn buckets(&self) -> &[SeqBucket] {
        &self.buckets
    }

    /// The expected ISL and OSL.
    pub fn means(&self) -> (f64, f64) {
        let isl = self.buckets.iter().map(|b| b.isl as f64 * b.probability / 100.0).sum();
        let osl = self.buckets.iter().map(|b| b.osl as f64 * b.probability / 100.0).sum();
        (isl, osl)
    }

    /// One (ISL, OSL) pair, drawn as AIPerf's `SequenceLengthDistribution.sample`.
    fn sample(&self, rng: &mut Normal) -> (u64, u64) {
        let r = rng.rng.random();
        let idx = self.cumulative.iter().take_while(|&&c| c <= r).count().min(self.buckets.len() - 1);
        let b = self.buckets[idx];
        let isl = if b.isl_stddev > 0.0 { rng.positive_int(b.isl as f64, b.isl_stddev) } else { b.isl };
        let osl = if b.osl_stddev > 0.0 { rng.positive_int(b.osl as f64, b.osl_stddev) } else { b.osl };
        (isl, osl)
    }
}

/// `DIGITS[|NUM]`: a length with an optional stddev.
fn parse_length(s: &str) -> Option<(u64, f64)> {
    let (n, sd) = match s.split_once('|') {
        Some((n, sd)) => (n, Some(sd)),
        None => (s, None),
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let sd = match sd {
        Some(sd) => parse_number(sd)?,
        None => 0.0,
    };
    Some((n.parse().ok()?, sd))
}

/// `123`, `123.45` or `.45`.
fn parse_number(s: &str) -> Option<f64> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s, None),
    };
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let ok = digits(int)
        && match frac {
            Some(f) => !f.is_empty() && digits(f),
            None => !int.is_empty(),
        };
    if ok { s.parse().ok() } else { None }
}

/// `ISL[|SD] , OSL[|SD] : PROB`.
fn parse_pair(s: &str) -> Option<SeqBucket> {
    let (lengths, prob) = s.split_once(':')?;
    let (isl, osl) = lengths.split_once(',')?;
    let (isl, isl_stddev) = parse_length(isl.trim())?;
    let (osl, osl_stddev) = parse_length(osl.trim())?;
    Some(SeqBucket { isl, isl_stddev, osl, osl_stddev, probability: parse_number(prob.trim())? })
}

/// `(ISL[|SD],OSL[|SD]):PROB, …` (the inside of the brackets).
fn parse_bracket_pairs(s: &str) -> Result<Vec<SeqBucket>, String> {
    let expected = || "pairs [(ISL[|SD],OSL[|SD]):PROB, …]".to_string();
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let inner = rest.strip_prefix('(').ok_or_else(expected)?;
        let (pair, after) = inner.split_once(')').ok_or_else(expected)?;
        let after = after.trim_start().strip_prefix(':').ok_or_else(expected)?.trim_start();
        let end = after.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(after.len());
        let bucket = parse_pair(&format!("{pair}:{}", &after[..end])).ok_or_else(expected)?;
        out.push(bucket);
        rest = after[end..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(out)
}

/// `{"pairs": [{"isl": …, "osl": …, "prob": …, "isl_stddev"?: …, "osl_stddev"?: …}, …]}`.
fn parse_json_pairs(s: &str) -> Result<Vec<SeqBucket>, String> {
    let v: Value = serde_json::from_str(s).map_err(|e| format!("valid JSON ({e})"))?;
    let pairs = v.get("pairs").and_then(Value::as_array).ok_or("a JSON object with a \"pairs\" list")?;
    pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let num = |k: &str| p.get(k).and_then(Value::as_f64);
            let (Some(isl), Some(osl), Some(prob)) = (num("isl"), num("osl"), num("prob")) else {
                return Err(format!("pairs with \"isl\", \"osl\" and \"prob\" (pair {i} lacks one)"));
            };
            let int = |x: f64| if x >= 1.0 && x.is_finite() { Some(x.trunc() as u64) } else { None };
            let (Some(isl), Some(osl)) = (int(isl), int(osl)) else {
                return Err(format!("positive lengths (pair {i})"));
            };
            Ok(SeqBucket {
                isl,
                isl_stddev: num("isl_stddev").unwrap_or(0.0),
                osl,
                osl_stddev: num("osl_stddev").unwrap_or(0.0),
                probability: prob,
            })
        })
        .collect()
}

/// AIPerf's synthetic dataset parameters (names as its options; defaults as AIPerf 0.13.0).
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticWorkload {
    /// `--num-dataset-entries`: conversations.
    pub entries: u64,
    /// `--isl` (`None`: AIPerf's 550).
    pub isl_mean: Option<u64>,
    /// `--isl-stddev` (AIPerf truncates it to an integer).
    pub isl_stddev: f64,
    /// `--osl` (`None`: no `output_length`, as AIPerf then sends no `max_tokens`).
    pub osl_mean: Option<u64>,
    /// `--osl-stddev` (truncated to an integer).
    pub osl_stddev: f64,
    /// `--conversation-turn-mean` (truncated to an integer, at least 1).
    pub turn_mean: f64,
    /// `--conversation-turn-stddev` (truncated).
    pub turn_stddev: f64,
    /// `--conversation-turn-delay-mean`, milliseconds (truncated); 0: no delays.
    pub delay_mean: f64,
    /// `--conversation-turn-delay-stddev`, milliseconds (truncated).
    pub delay_stddev: f64,
    /// `--conversation-turn-delay-ratio`: multiplies every delay.
    pub delay_ratio: f64,
    /// `--prompt-prefix-pool-size` (`None`: not given).
    pub prefix_pool_size: Option<u64>,
    /// `--prompt-prefix-length` (`None`: not given).
    pub prefix_length: Option<u64>,
    /// `--shared-system-prompt-length`.
    pub shared_system_length: Option<u64>,
    /// `--user-context-prompt-length`.
    pub user_context_length: Option<u64>,
    /// `--seq-dist`.
    pub seq_dist: Option<SeqDist>,
    /// `--random-range-ratio` (with `--random-corpus-style`).
    pub range_ratio: Option<RangeRatio>,
    /// `--prompt-batch-size` (only 1: AIPerf batches prompts for embeddings and rankings only).
    pub batch_size: u64,
    /// Tokens per hash id block (`--isl-block-size`).
    pub block_size: u32,
}

impl Default for SyntheticWorkload {
    fn default() -> Self {
        SyntheticWorkload {
            entries: DEFAULT_ENTRIES,
            isl_mean: None,
            isl_stddev: 0.0,
            osl_mean: None,
            osl_stddev: 0.0,
            turn_mean: 1.0,
            turn_stddev: 0.0,
            delay_mean: 0.0,
            delay_stddev: 0.0,
            delay_ratio: 1.0,
            prefix_pool_size: None,
            prefix_length: None,
            shared_system_length: None,
            user_context_length: None,
            seq_dist: None,
            range_ratio: None,
            batch_size: 1,
            block_size: DEFAULT_BLOCK_SIZE,
        }
    }
}

/// A finite, non-negative value.
fn non_negative(option: &'static str, v: f64) -> Result<(), SyntheticError> {
    if v.is_finite() && v >= 0.0 { Ok(()) } else { Err(invalid(option, "a finite number ≥ 0", v)) }
}

impl SyntheticWorkload {
    /// The ISL mean in effect.
    pub fn isl(&self) -> u64 {
        self.isl_mean.unwrap_or(DEFAULT_ISL)
    }

    /// Pool prefixes are prepended (AIPerf: a positive `--prompt-prefix-length`).
    fn prefix_enabled(&self) -> bool {
        self.prefix_length.is_some_and(|l| l > 0)
    }

    /// Checks every parameter against AIPerf's bounds and combinations.
    pub fn validate(&self) -> Result<(), SyntheticError> {
        use option::*;
        if self.entries == 0 {
            return Err(invalid(ENTRIES, "at least 1", 0));
        }
        if self.isl() == 0 && self.seq_dist.is_none() {
            return Err(invalid(ISL, "at least 1 (text is the synthetic payload generated here)", 0));
        }
        for (o, v) in [
            (ISL_STDDEV, self.isl_stddev),
            (OSL_STDDEV, self.osl_stddev),
            (TURN_STDDEV, self.turn_stddev),
            (DELAY_MEAN, self.delay_mean),
            (DELAY_STDDEV, self.delay_stddev),
            (DELAY_RATIO, self.delay_ratio),
        ] {
            non_negative(o, v)?;
        }
        if !(self.turn_mean.is_finite() && self.turn_mean >= 1.0) {
            return Err(invalid(TURN_MEAN, "at least 1", self.turn_mean));
        }
        if self.batch_size != 1 {
            let expected = "1 here (AIPerf batches prompts for embeddings and rankings endpoints only)";
            return Err(invalid(BATCH_SIZE, expected, self.batch_size));
        }
        if self.block_size == 0 {
            return Err(invalid(BLOCK_SIZE, "at least 1", 0));
        }
        for (o, v) in [(SHARED_SYSTEM, self.shared_system_length), (USER_CONTEXT, self.user_context_length)] {
            if v == Some(0) {
                return Err(invalid(o, "at least 1", 0));
            }
        }
        let pool_group = [(POOL_SIZE, self.prefix_pool_size), (PREFIX_LENGTH, self.prefix_length)];
        let system_group = [(SHARED_SYSTEM, self.shared_system_length), (USER_CONTEXT, self.user_context_length)];
        if let (Some((first, _)), Some((second, _))) =
            (pool_group.iter().find(|(_, v)| v.is_some()), system_group.iter().find(|(_, v)| v.is_some()))
        {
            let why = "a pool prefix or a shared system prompt with user context, not both";
            return Err(SyntheticError::Conflict { first, second, why });
        }
        if self.prefix_enabled() && self.prefix_pool_size.unwrap_or(0) == 0 {
            let why = "AIPerf stops with \"the prefix prompts pool is empty\"";
            return Err(SyntheticError::Needs {
                option: PREFIX_LENGTH,
                needs: "a --prompt-prefix-pool-size of at least 1",
                why,
            });
        }
        if self.seq_dist.is_some() && self.range_ratio.is_some() {
            let why = "both draw the ISL and OSL";
            return Err(SyntheticError::Conflict { first: RANGE_RATIO, second: SEQ_DIST, why });
        }
        if let Some(r) = &self.range_ratio {
            r.validate()?;
            if self.isl_mean.is_none() {
                let why = "the window is around the --isl mean, which has no default here";
                return Err(SyntheticError::Needs { option: RANGE_RATIO, needs: "--isl", why });
            }
            if self.osl_mean.is_none_or(|o| o == 0) {
                let why = "the window is around the --osl mean, which has no default";
                return Err(SyntheticError::Needs { option: RANGE_RATIO, needs: "--osl of at least 1", why });
            }
            for (o, v) in [(ISL_STDDEV, self.isl_stddev), (OSL_STDDEV, self.osl_stddev)] {
                if v != 0.0 {
                    let why = "the ratio window already sets the variance";
                    return Err(SyntheticError::Conflict { first: o, second: RANGE_RATIO, why });
                }
            }
            let (low, _) = r.input_bounds(self.isl());
            if r.style == CorpusStyle::Vllm && self.prefix_length.unwrap_or(0) + low < 1 {
                let value = format!("{} with --isl {} (a minimum input of 0 tokens)", r.input, self.isl());
                return Err(invalid(RANGE_RATIO, "a window whose minimum is at least 1 token", value));
            }
        }
        let (isl_mean, _) = self.seq_dist.as_ref().map_or((self.isl() as f64, 0.0), SeqDist::means);
        let expected_rows = self.entries as f64 * self.turn_mean.trunc();
        if expected_rows > MAX_ROWS as f64 {
            return Err(SyntheticError::TooLarge { what: "rows", limit: MAX_ROWS });
        }
        if expected_rows * (isl_mean / f64::from(self.block_size)).ceil().max(1.0) > MAX_IDS as f64 {
            return Err(SyntheticError::TooLarge { what: "hash ids", limit: MAX_IDS });
        }
        Ok(())
    }

    /// The trace of this workload for `seed` (AIPerf's `--random-seed`).
    pub fn generate(&self, seed: u64) -> Result<Trace, SyntheticError> {
        self.validate()?;
        let mut g = Generator::new(self, seed);
        let mut trace = Trace::with_capacity(self.entries.min(MAX_ROWS) as usize, 0);
        for conversation in 0..self.entries {
            g.conversation(conversation, &mut trace)?;
        }
        Ok(trace)
    }
}

/// CPython's `random.Random` with its `gauss` (and the pair it keeps for the next call).
struct Normal {
    rng: PyRandom,
    next: Option<f64>,
}

impl Normal {
    /// The generator AIPerf derives for `component` from `seed`.
    fn new(seed: u64, component: &str) -> Normal {
        Normal { rng: PyRandom::new(derive_seed(seed, component)), next: None }
    }

    fn gauss(&mut self, mu: f64, sigma: f64) -> f64 {
        let z = match self.next.take() {
            Some(z) => z,
            None => {
                let x2pi = self.rng.random() * TAU;
                let g2rad = (-2.0 * (1.0 - self.rng.random()).ln()).sqrt();
                self.next = Some(x2pi.sin() * g2rad);
                x2pi.cos() * g2rad
            }
        };
        mu + z * sigma
    }

    /// AIPerf's `sample_positive_normal_integer`: a normal draw rejected below 0 (10,000 tries,
    /// then the mean), rounded up, at least 1; the rounded mean when `stddev` is 0.
    fn positive_int(&mut self, mean: f64, stddev: f64) -> u64 {
        if stddev <= 0.0 {
            return (mean.round_ties_even() as u64).max(1);
        }
        let v = (0..10_000).map(|_| self.gauss(mean, stddev)).find(|&n| n >= 0.0).unwrap_or(mean.max(0.0));
        (v.ceil() as u64).max(1)
    }
}

/// The generators and id counters of one generation.
struct Generator<'a> {
    w: &'a SyntheticWorkload,
    turns: Normal,
    delays: Normal,
    lengths: Normal,
    prefixes: Normal,
    max_tokens: Normal,
    seq_dist: Normal,
    range: PyRandom,
    /// Whole blocks of the shared system prompt.
    system_ids: Vec<u64>,
    /// Whole blocks of each pool prefix.
    pool_ids: Vec<Vec<u64>>,
    next_id: u64,
}

impl<'a> Generator<'a> {
    fn new(w: &'a SyntheticWorkload, seed: u64) -> Generator<'a> {
        let block = u64::from(w.block_size);
        let mut next_id = 0u64;
        let mut fresh = |n: u64| {
            let ids = (next_id..next_id + n).collect::<Vec<_>>();
            next_id += n;
            ids
        };
        let system_ids = fresh(w.shared_system_length.unwrap_or(0) / block);
        let pool = if w.prefix_enabled() { w.prefix_pool_size.unwrap_or(0) } else { 0 };
        let prefix_blocks = w.prefix_length.unwrap_or(0) / block;
        let pool_ids = (0..pool).map(|_| fresh(prefix_blocks)).collect();
        Generator {
            w,
            turns: Normal::new(seed, "composer.conversation.turn_count"),
            delays: Normal::new(seed, "composer.conversation.turn_delay"),
            lengths: Normal::new(seed, "dataset.prompt.length"),
            prefixes: Normal::new(seed, "dataset.prompt.prefix"),
            max_tokens: Normal::new(seed, "composer.turn.max_tokens"),
            seq_dist: Normal::new(seed, "models.sequence.distribution"),
            range: PyRandom::new(derive_seed(seed, "models.range_ratio.distribution")),
            system_ids,
            pool_ids,
            next_id,
        }
    }

    /// Appends the rows of conversation `index`.
    fn conversation(&mut self, index: u64, trace: &mut Trace) -> Result<(), SyntheticError> {
        let w = self.w;
        let session: Box<str> = format!("session_{index:06}").into();
        let turns = self.turns.positive_int(w.turn_mean.trunc().max(1.0), w.turn_stddev.trunc());
        for turn in 0..turns {
            if trace.len() as u64 >= MAX_ROWS {
                return Err(SyntheticError::TooLarge { what: "rows", limit: MAX_ROWS });
            }
            let first = turn == 0;
            let with_prefix = first && w.prefix_enabled();
            let (isl, osl) = self.lengths_of_turn(with_prefix);
            // Shared blocks at the head of the prompt, and the tokens ahead of the body.
            let (shared, head): (Vec<u64>, u64) = if !first {
                (Vec::new(), 0)
            } else if with_prefix {
                let k = self.prefixes.rng.below(self.pool_ids.len() as u64) as usize;
                (self.pool_ids[k].clone(), w.prefix_length.unwrap_or(0))
            } else {
                let head = w.shared_system_length.unwrap_or(0) + w.user_context_length.unwrap_or(0);
                (self.system_ids.clone(), head)
            };
            let total = head.saturating_add(isl);
            let blocks = total.div_ceil(u64::from(w.block_size));
            if (trace.total_hash_ids() as u64).saturating_add(blocks) > MAX_IDS || total > i64::MAX as u64 {
                return Err(SyntheticError::TooLarge { what: "hash ids", limit: MAX_IDS });
            }
            let fresh = blocks - shared.len() as u64;
            let start = self.next_id;
            self.next_id += fresh;
            let mut row = Row::new(Input::Length(total as i64));
            row.output_length = osl;
            row.session_id = Some(session.clone());
            if !first && w.delay_mean > 0.0 {
                let d = self.delays.positive_int(w.delay_mean.trunc(), w.delay_stddev.trunc());
                row.delay = Some(delay_number(d as f64 * w.delay_ratio));
            }
            trace.push(row, shared.into_iter().chain(start..start + fresh));
        }
        Ok(())
    }

    /// The body's ISL and the OSL of one turn, from the active distribution.
    fn lengths_of_turn(&mut self, with_prefix: bool) -> (u64, Option<u64>) {
        let w = self.w;
        let floor = if with_prefix { 0 } else { 1 };
        if let Some(dist) = &w.seq_dist {
            let (isl, osl) = dist.sample(&mut self.seq_dist);
            return (isl.max(floor), Some(osl).filter(|&o| o > 0));
        }
        if let Some(r) = &w.range_ratio {
            let (il, ih) = r.input_bounds(w.isl());
            let (ol, oh) = r.output_bounds(w.osl_mean.unwrap_or(1));
            let isl = self.range.randint(il, ih);
            let osl = self.range.randint(ol, oh);
            return (isl.max(floor), Some(osl));
        }
        let isl = self.lengths.positive_int(w.isl() as f64, w.isl_stddev.trunc());
        let osl = match w.osl_mean {
            Some(m) if m > 0 => Some(self.max_tokens.positive_int(m as f64, w.osl_stddev.trunc())),
            _ => None,
        };
        (isl, osl)
    }
}

/// A delay in milliseconds as the trace writes it: an integer when it is one.
fn delay_number(ms: f64) -> Number {
    if ms.fract() == 0.0 && ms.abs() < 9.0e15 { Number::Int(ms as i64) } else { Number::Float(ms) }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::analysis::analyze;

    fn mean_sd(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        (m, (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt())
    }

    fn lengths(t: &Trace) -> Vec<f64> {
        t.rows().iter().map(|r| r.input_length().unwrap() as f64).collect()
    }

    #[test]
    fn normal_draws_are_cpython_gauss() {
        // CPython: r = random.Random(42); [r.gauss(0, 1) for _ in range(3)].
        let mut n = Normal { rng: PyRandom::new(42), next: None };
        let got: Vec<f64> = (0..3).map(|_| n.gauss(0.0, 1.0)).collect();
        let want = [-0.14409032957792836, -0.1729036003315193, -0.11131586156766246];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
    }

    #[test]
    fn defaults_are_aiperfs() {
        let t = SyntheticWorkload::default().generate(0).unwrap();
        assert_eq!(t.len(), 100);
        assert!(t.rows().iter().all(|r| r.input_length() == Some(550) && r.output_length.is_none()));
        assert!(t.rows().iter().all(|r| r.hash_id_count() == 2 && r.delay.is_none()));
        assert_eq!(t.rows()[7].session_id.as_deref(), Some("session_000007"));
        assert_eq!(analyze(&t, 512).cache_hit_rate, 0.0);
    }

    #[test]
    fn means_and_stddevs_follow_the_options() {
        let w = SyntheticWorkload {
            entries: 4000,
            isl_mean: Some(200),
            isl_stddev: 20.0,
            osl_mean: Some(50),
            osl_stddev: 5.0,
            turn_mean: 3.0,
            turn_stddev: 1.0,
            delay_mean: 500.0,
            delay_stddev: 50.0,
            delay_ratio: 2.0,
            ..SyntheticWorkload::default()
        };
        let t = w.generate(1).unwrap();
        let (m, sd) = mean_sd(&lengths(&t));
        assert!((m - 200.5).abs() < 1.0 && (sd - 20.0).abs() < 1.0, "ISL {m} ± {sd}");
        let osl: Vec<f64> = t.rows().iter().map(|r| r.output_length.unwrap() as f64).collect();
        let (m, sd) = mean_sd(&osl);
        assert!((m - 50.5).abs() < 0.3 && (sd - 5.0).abs() < 0.3, "OSL {m} ± {sd}");
        let turns = t.len() as f64 / 4000.0;
        assert!((turns - 3.5).abs() < 0.1, "turns {turns}");
        let delays: Vec<f64> = t.rows().iter().filter_map(|r| r.delay.map(Number::as_f64)).collect();
        assert_eq!(delays.len(), t.len() - 4000, "every later turn has a delay");
        let (m, sd) = mean_sd(&delays);
        assert!((m - 1001.0).abs() < 6.0 && (sd - 100.0).abs() < 5.0, "delay {m} ± {sd}");
    }

    #[test]
    fn the_prefix_pool_shares_blocks_and_nothing_else_does() {
        let w = SyntheticWorkload {
            entries: 200,
            isl_mean: Some(100),
            prefix_pool_size: Some(4),
            prefix_length: Some(128),
            block_size: 64,
            ..SyntheticWorkload::default()
        };
        let t = w.generate(3).unwrap();
        assert!(t.rows().iter().all(|r| r.input_length() == Some(228) && r.hash_id_count() == 4));
        let firsts: std::collections::HashSet<&[u64]> = t.iter().map(|(_, ids)| &ids[..2]).collect();
        assert_eq!(firsts.len(), 4, "each conversation starts with one of the 4 prefixes");
        assert!(analyze(&t, 64).cache_hit_rate > 0.4);
        // At 512 tokens a block, a 128-token prefix is in no whole block.
        let t = SyntheticWorkload { block_size: 512, ..w }.generate(3).unwrap();
        assert_eq!(analyze(&t, 512).cache_hit_rate, 0.0);
    }

    #[test]
    fn the_shared_system_prompt_is_on_every_first_turn() {
        let w = SyntheticWorkload {
            entries: 50,
            isl_mean: Some(64),
            turn_mean: 2.0,
            shared_system_length: Some(200),
            user_context_length: Some(30),
            block_size: 64,
            ..SyntheticWorkload::default()
        };
        let t = w.generate(0).unwrap();
        for (i, (r, ids)) in t.iter().enumerate() {
            if i % 2 == 0 {
                assert_eq!((r.input_length(), &ids[..3]), (Some(294), &[0, 1, 2][..]));
                assert_eq!(ids.len(), 5);
            } else {
                assert_eq!((r.input_length(), ids.len()), (Some(64), 1));
                assert!(ids[0] > 2);
            }
        }
        assert!(analyze(&t, 64).cache_hit_rate > 0.2);
    }

    #[test]
    fn seq_dist_buckets_and_range_windows() {
        let dist = SeqDist::parse("100,10:25;1000|10,20:75").unwrap();
        let w = SyntheticWorkload { entries: 4000, seq_dist: Some(dist), ..SyntheticWorkload::default() };
        let t = w.generate(5).unwrap();
        let small = t.rows().iter().filter(|r| r.input_length() == Some(100)).count() as f64 / 4000.0;
        assert!((small - 0.25).abs() < 0.03, "{small}");
        assert!(t.rows().iter().all(|r| matches!(r.output_length, Some(10 | 20))));
        let r = RangeRatio::parse("0.5", CorpusStyle::Vllm).unwrap();
        let w = SyntheticWorkload {
            entries: 4000,
            isl_mean: Some(100),
            osl_mean: Some(10),
            range_ratio: Some(r),
            ..SyntheticWorkload::default()
        };
        let t = w.generate(5).unwrap();
        let l = lengths(&t);
        assert!(l.iter().all(|&x| (50.0..=150.0).contains(&x)));
        let (m, _) = mean_sd(&l);
        assert!((m - 100.0).abs() < 2.0, "{m}");
        assert!(t.rows().iter().all(|r| (5..=15).contains(&r.output_length.unwrap())));
    }

    #[test]
    fn parses_aiperfs_seq_dist_forms() {
        let a = SeqDist::parse("256|10,128|5:40;512|20,256|10:60").unwrap();
        let b = SeqDist::parse("[(256|10,128|5):40,(512|20,256|10):60]").unwrap();
        let c = SeqDist::parse(
            r#"{"pairs":[{"isl":256,"isl_stddev":10,"osl":128,"osl_stddev":5,"prob":40},{"isl":512,"isl_stddev":20,"osl":256,"osl_stddev":10,"prob":60}]}"#,
        )
        .unwrap();
        assert_eq!((&a, &a), (&b, &c));
        for bad in ["", "256,128:50", "256;128:100", "0,1:100", "1,1:101", "a,b:100", "[(1,2)]"] {
            let e = SeqDist::parse(bad).unwrap_err();
            assert_eq!(e.option(), Some("--seq-dist"), "{bad}: {e}");
        }
    }

    #[test]
    fn refuses_what_aiperf_refuses_naming_the_option() {
        let base = SyntheticWorkload::default;
        let cases = [
            (SyntheticWorkload { entries: 0, ..base() }, "--num-dataset-entries must be at least 1, got 0"),
            (SyntheticWorkload { turn_mean: 0.5, ..base() }, "--conversation-turn-mean must be at least 1, got 0.5"),
            (SyntheticWorkload { isl_stddev: -1.0, ..base() }, "--isl-stddev must be a finite number ≥ 0, got -1"),
            (
                SyntheticWorkload { prefix_length: Some(10), shared_system_length: Some(5), ..base() },
                "--prompt-prefix-length and --shared-system-prompt-length are mutually exclusive",
            ),
            (SyntheticWorkload { prefix_length: Some(10), ..base() }, "--prompt-prefix-length needs"),
            (SyntheticWorkload { batch_size: 2, ..base() }, "--prompt-batch-size must be 1 here"),
            (
                SyntheticWorkload {
                    range_ratio: Some(RangeRatio { input: 0.5, output: 0.5, style: CorpusStyle::Vllm }),
                    ..base()
                },
                "--random-range-ratio needs --isl",
            ),
            (
                SyntheticWorkload {
                    isl_mean: Some(2),
                    osl_mean: Some(2),
                    range_ratio: Some(RangeRatio { input: 0.9, output: 0.1, style: CorpusStyle::Vllm }),
                    ..base()
                },
                "--random-range-ratio must be a window whose minimum is at least 1 token",
            ),
            (SyntheticWorkload { entries: 1 << 40, ..base() }, "more than 67108864 rows"),
        ];
        for (w, want) in cases {
            let e = w.generate(0).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
        assert!(RangeRatio::parse("1.0", CorpusStyle::Vllm).is_err());
        assert!(RangeRatio::parse("1.0", CorpusStyle::Sglang).is_ok());
        assert!(RangeRatio::parse(r#"{"input":0.2,"output":0.4}"#, CorpusStyle::Sglang).is_err());
        let r = RangeRatio::parse(r#"{"input":0.2,"output":0.4}"#, CorpusStyle::Vllm).unwrap();
        assert_eq!((r.input, r.output), (0.2, 0.4));
    }

    /// A measurement, not a check: `cargo test --release -p aiperf-core --lib a_million_rows --
    /// --ignored --nocapture` (BENCHMARKS.md).
    #[test]
    #[ignore = "a measurement (release build): generates and writes 1,000,000 rows"]
    fn a_million_rows() {
        let w = SyntheticWorkload {
            entries: 250_000,
            isl_mean: Some(550),
            isl_stddev: 50.0,
            osl_mean: Some(128),
            osl_stddev: 10.0,
            turn_mean: 4.0,
            delay_mean: 500.0,
            delay_stddev: 100.0,
            prefix_pool_size: Some(16),
            prefix_length: Some(1024),
            ..SyntheticWorkload::default()
        };
        let t0 = std::time::Instant::now();
        let t = w.generate(1).unwrap();
        let generated = t0.elapsed();
        let text = crate::trace::write_trace(&t);
        let written = t0.elapsed();
        assert_eq!(t.len(), 1_000_000);
        println!(
            "1,000,000 rows: generated in {:.3} s, written ({} MB of JSONL) at {:.3} s",
            generated.as_secs_f64(),
            text.len() / 1_000_000,
            written.as_secs_f64()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn counts_and_seeds(
            entries in 1u64..60, isl in 1u64..3000, sd in 0.0f64..300.0, turns in 1.0f64..5.0,
            tsd in 0.0f64..3.0, pool in 0u64..5, prefix in 0u64..1200, block in 1u32..600, seed in 0u64..1000,
        ) {
            let w = SyntheticWorkload {
                entries, isl_mean: Some(isl), isl_stddev: sd, turn_mean: turns, turn_stddev: tsd,
                prefix_pool_size: (pool > 0).then_some(pool), prefix_length: (pool > 0).then_some(prefix),
                block_size: block, ..SyntheticWorkload::default()
            };
            let t = w.generate(seed).unwrap();
            prop_assert_eq!(&t, &w.generate(seed).unwrap());
            let sessions: std::collections::HashSet<_> = t.rows().iter().map(|r| r.session_id.clone()).collect();
            prop_assert_eq!(sessions.len() as u64, entries);
            prop_assert!(t.len() as u64 >= entries);
            for (r, ids) in t.iter() {
                let n = r.input_length().unwrap() as u64;
                prop_assert!(n >= 1);
                prop_assert_eq!(ids.len() as u64, n.div_ceil(u64::from(block)));
            }
            if pool == 0 || prefix < u64::from(block) {
                prop_assert_eq!(analyze(&t, block).cache_hit_rate, 0.0);
            }
        }
    }
}
