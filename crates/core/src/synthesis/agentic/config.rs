//! The generator's configuration: AIPerf 0.13.0's `SessionDistributionConfig` (the keys of its
//! `configs/default.json`, their defaults and ranges), read from a config file or from the
//! `generation_params` of a previous run's `manifest.json`, and written back into a manifest.
//!
//! Unlike AIPerf, which accepts and ignores keys it does not know, an unknown key is refused with
//! its dotted path and the keys accepted there, so that a misspelt key never silently falls back
//! to a default.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why a configuration was refused: `key` is the dotted path of the offending key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not JSON (serde_json's message carries the line and column).
    #[error("not valid JSON: {0}")]
    Json(String),
    /// A key this configuration does not have.
    #[error("unknown key `{key}`; accepted here: {accepted}")]
    UnknownKey { key: String, accepted: String },
    /// A value of the wrong type or out of its range.
    #[error("`{key}` = {value} is not accepted: must be {expected}")]
    Invalid { key: String, value: String, expected: String },
}

fn invalid(key: &str, value: impl std::fmt::Display, expected: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.to_owned(), value: value.to_string(), expected: expected.into() }
}

/// A lognormal given by its real-space mean and median (`mu`, `sigma` derived from them unless
/// both are given, as a manifest gives them), optionally bounded by rejection sampling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lognormal {
    #[serde(default)]
    pub mu: Option<f64>,
    #[serde(default)]
    pub sigma: Option<f64>,
    pub mean: f64,
    pub median: f64,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

impl Lognormal {
    /// The distribution with this mean and median, unbounded.
    pub fn of(mean: f64, median: f64) -> Self {
        let mut l = Lognormal { mu: None, sigma: None, mean, median, min: None, max: None };
        l.derive();
        l
    }

    fn derive(&mut self) {
        if self.mu.is_none() {
            self.mu = Some(self.median.ln());
            let ratio = self.mean / self.median;
            self.sigma = Some(if ratio > 1.0 { (2.0 * ratio.ln()).sqrt() } else { 0.0 });
        }
    }

    /// Log-space mean.
    pub fn mu(&self) -> f64 {
        self.mu.unwrap_or_else(|| self.median.ln())
    }

    /// Log-space standard deviation.
    pub fn sigma(&self) -> f64 {
        self.sigma.unwrap_or(0.0)
    }

    fn check(&mut self, key: &str) -> Result<(), ConfigError> {
        positive(&format!("{key}.mean"), self.mean)?;
        positive(&format!("{key}.median"), self.median)?;
        if self.mean < self.median {
            return Err(invalid(&format!("{key}.mean"), self.mean, format!("at least the median ({})", self.median)));
        }
        for (name, v) in [("min", self.min), ("max", self.max)] {
            if let Some(v) = v {
                positive(&format!("{key}.{name}"), v)?;
            }
        }
        if let (Some(lo), Some(hi)) = (self.min, self.max)
            && lo > hi
        {
            return Err(invalid(&format!("{key}.min"), lo, format!("at most max ({hi})")));
        }
        match (self.mu, self.sigma) {
            (None, None) => {}
            (Some(mu), Some(sigma)) => {
                if !mu.is_finite() {
                    return Err(invalid(&format!("{key}.mu"), mu, "a finite number"));
                }
                if !sigma.is_finite() || sigma < 0.0 {
                    return Err(invalid(&format!("{key}.sigma"), sigma, "a finite number ≥ 0"));
                }
            }
            (Some(_), None) => return Err(invalid(&format!("{key}.sigma"), "null", "given with mu (as a pair)")),
            (None, Some(_)) => return Err(invalid(&format!("{key}.mu"), "null", "given with sigma (as a pair)")),
        }
        self.derive();
        Ok(())
    }
}

fn positive(key: &str, v: f64) -> Result<(), ConfigError> {
    if v > 0.0 && v.is_finite() { Ok(()) } else { Err(invalid(key, v, "a number > 0")) }
}

fn within(key: &str, v: f64, lo: f64, hi: f64) -> Result<(), ConfigError> {
    if (lo..=hi).contains(&v) { Ok(()) } else { Err(invalid(key, v, format!("between {lo} and {hi}"))) }
}

/// New tokens per turn: a lognormal whose mean and median are multiplied by `bias` when
/// sampling, to make up for the long turns that the context limit cuts off.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTokens {
    #[serde(default)]
    pub mu: Option<f64>,
    #[serde(default)]
    pub sigma: Option<f64>,
    pub mean: f64,
    pub median: f64,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default = "one")]
    pub bias: f64,
}

fn one() -> f64 {
    1.0
}

impl NewTokens {
    fn as_lognormal(&self) -> Lognormal {
        Lognormal { mu: self.mu, sigma: self.sigma, mean: self.mean, median: self.median, min: self.min, max: self.max }
    }

    /// The distribution sampled: `mu` shifted by `ln(bias)`.
    pub fn biased(&self) -> Lognormal {
        let mut l = self.as_lognormal();
        l.mu = Some(l.mu() + self.bias.ln());
        l.mean *= self.bias;
        l.median *= self.bias;
        l
    }

    fn check(&mut self, key: &str) -> Result<(), ConfigError> {
        let mut l = self.as_lognormal();
        l.check(key)?;
        (self.mu, self.sigma) = (l.mu, l.sigma);
        positive(&format!("{key}.bias"), self.bias)
    }
}

/// Inter-turn delays (milliseconds): fast agentic follow-ups or slow human think time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixtureDelay {
    pub agentic_fraction: f64,
    pub agentic_delay: Lognormal,
    pub human_delay: Lognormal,
    pub max: Option<f64>,
}

impl Default for MixtureDelay {
    fn default() -> Self {
        MixtureDelay {
            agentic_fraction: 0.7,
            agentic_delay: Lognormal::of(2_500.0, 1_800.0),
            human_delay: Lognormal::of(40_000.0, 25_000.0),
            max: None,
        }
    }
}

/// Probability that a session ends after a turn: `base_probability × (1 + (context_scaling − 1)
/// × input_length / max_prompt_tokens)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Reset {
    pub base_probability: f64,
    pub context_scaling: f64,
}

impl Default for Reset {
    fn default() -> Self {
        Reset { base_probability: 0.02, context_scaling: 2.0 }
    }
}

/// Explicit turns per session (instead of resets): a bounded lognormal turn count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turns {
    pub mean: u64,
    pub median: u64,
    pub min: u64,
    pub max: u64,
    #[serde(default)]
    pub allow_truncation: bool,
    #[serde(default)]
    pub max_session_attempts: Option<u64>,
}

/// How sessions are spread over the groups sharing a layer-1.5 prefix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Groups {
    pub num_groups: u64,
    pub zipf_alpha: f64,
}

impl Default for Groups {
    fn default() -> Self {
        Groups { num_groups: 50, zipf_alpha: 1.2 }
    }
}

/// The layered prefix: layer 1 shared by every session, layer 1.5 by a group, layer 2 by a
/// session's turns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    pub layer1_tokens: u64,
    pub layer1_5_tokens: u64,
    pub layer2: Lognormal,
    pub layer1_5_groups: Groups,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            layer1_tokens: 32_000,
            layer1_5_tokens: 20_000,
            layer2: Lognormal::of(10_000.0, 5_000.0),
            layer1_5_groups: Groups::default(),
        }
    }
}

/// The whole configuration, in AIPerf's key order (the order a manifest is written in).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgenticConfig {
    pub new_tokens_per_turn: NewTokens,
    pub generation_length: Lognormal,
    pub inter_turn_delay: MixtureDelay,
    pub reset: Option<Reset>,
    pub turns: Option<Turns>,
    pub max_prompt_tokens: u64,
    pub block_size: u64,
    pub cache: Cache,
    pub restart_initial_probability: f64,
    pub restart_turn_range: [u64; 2],
}

impl Default for AgenticConfig {
    /// AIPerf's defaults when no configuration is given.
    fn default() -> Self {
        AgenticConfig {
            new_tokens_per_turn: NewTokens {
                mu: None,
                sigma: None,
                mean: 3_500.0,
                median: 1_800.0,
                min: None,
                max: None,
                bias: 1.0,
            },
            generation_length: Lognormal::of(500.0, 300.0),
            inter_turn_delay: MixtureDelay::default(),
            reset: Some(Reset::default()),
            turns: None,
            max_prompt_tokens: 200_000,
            block_size: 512,
            cache: Cache::default(),
            restart_initial_probability: 0.0,
            restart_turn_range: [5, 15],
        }
        .checked()
        .unwrap_or_else(|_| unreachable!("the defaults are valid"))
    }
}

/// Most groups, blocks of a group's prefix and blocks of one session (AIPerf's id layout).
pub const MAX_GROUPS: u64 = 1_000;
pub const MAX_GROUP_BLOCKS: u64 = 200;
pub const MAX_SESSION_BLOCKS: u64 = 4_000;

/// AIPerf's bundled `configs/default.json` (its `--config default`).
pub const BUNDLED_DEFAULT: &str = include_str!("default.json");

const TOP_KEYS: &[&str] = &[
    "new_tokens_per_turn",
    "generation_length",
    "inter_turn_delay",
    "reset",
    "turns",
    "max_prompt_tokens",
    "block_size",
    "cache",
    "restart_initial_probability",
    "restart_turn_range",
];
/// Keys AIPerf still takes but no longer uses (`restart_fraction` is the old name of
/// `restart_initial_probability`).
const RETIRED_KEYS: &[&str] = &["system_prompt_tokens", "restart_fraction"];
const DELAY_KEYS: &[&str] = &["agentic_fraction", "agentic_delay", "human_delay", "max"];
const CACHE_KEYS: &[&str] = &["layer1_tokens", "layer1_5_tokens", "layer2", "layer1_5_groups"];

fn object<'a>(v: &'a Value, key: &str, accepted: &[&str]) -> Result<&'a Map<String, Value>, ConfigError> {
    let Value::Object(map) = v else {
        return Err(invalid(key, v, "a JSON object"));
    };
    for k in map.keys() {
        if !accepted.contains(&k.as_str()) {
            let key = if key.is_empty() { k.clone() } else { format!("{key}.{k}") };
            return Err(ConfigError::UnknownKey { key, accepted: accepted.join(", ") });
        }
    }
    Ok(map)
}

fn field<T: DeserializeOwned>(map: &Map<String, Value>, parent: &str, name: &str) -> Result<Option<T>, ConfigError> {
    let key = if parent.is_empty() { name.to_owned() } else { format!("{parent}.{name}") };
    match map.get(name) {
        None => Ok(None),
        Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| {
            let msg = e.to_string();
            match msg.strip_prefix("unknown field ") {
                Some(rest) => {
                    let (bad, accepted) = rest.split_once(", expected ").unwrap_or((rest, ""));
                    ConfigError::UnknownKey {
                        key: format!("{key}.{}", bad.trim_matches('`')),
                        accepted: accepted.trim_start_matches("one of ").replace('`', ""),
                    }
                }
                None => {
                    let expected = msg.rsplit_once(", expected ").map_or(msg.as_str(), |(_, e)| e);
                    let expected = match expected {
                        "u64" => "a whole number ≥ 0",
                        "f64" => "a number",
                        "a boolean" => "true or false",
                        other => other,
                    };
                    invalid(&key, v, expected)
                }
            }
        }),
    }
}

impl AgenticConfig {
    /// Reads a configuration file's text, or a `manifest.json`'s (its `generation_params`).
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let v: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        let v = match &v {
            Value::Object(m) if m.contains_key("generation_params") => {
                let params = &m["generation_params"];
                object(&v, "", &["seed", "num_sessions", "config_name", "generation_params"])?;
                params.clone()
            }
            _ => v,
        };
        Self::from_value(&v, "")
    }

    fn from_value(v: &Value, prefix: &str) -> Result<Self, ConfigError> {
        let accepted: Vec<&str> = TOP_KEYS.iter().chain(RETIRED_KEYS).copied().collect();
        let map = object(v, prefix, &accepted)?;
        let d = AgenticConfig::default();
        let delay = match map.get("inter_turn_delay") {
            None => d.inter_turn_delay,
            Some(dv) => {
                let dm = object(dv, "inter_turn_delay", DELAY_KEYS)?;
                let dd = MixtureDelay::default();
                MixtureDelay {
                    agentic_fraction: field(dm, "inter_turn_delay", "agentic_fraction")?.unwrap_or(dd.agentic_fraction),
                    agentic_delay: field(dm, "inter_turn_delay", "agentic_delay")?.unwrap_or(dd.agentic_delay),
                    human_delay: field(dm, "inter_turn_delay", "human_delay")?.unwrap_or(dd.human_delay),
                    max: field::<Option<f64>>(dm, "inter_turn_delay", "max")?.flatten(),
                }
            }
        };
        let cache = match map.get("cache") {
            None => d.cache,
            Some(cv) => {
                let cm = object(cv, "cache", CACHE_KEYS)?;
                let dc = Cache::default();
                Cache {
                    layer1_tokens: field(cm, "cache", "layer1_tokens")?.unwrap_or(dc.layer1_tokens),
                    layer1_5_tokens: field(cm, "cache", "layer1_5_tokens")?.unwrap_or(dc.layer1_5_tokens),
                    layer2: field(cm, "cache", "layer2")?.unwrap_or(dc.layer2),
                    layer1_5_groups: field(cm, "cache", "layer1_5_groups")?.unwrap_or(dc.layer1_5_groups),
                }
            }
        };
        let turns: Option<Turns> = field::<Option<Turns>>(map, "", "turns")?.flatten();
        // Explicit turns replace resets unless resets are asked for (which is then refused).
        let reset = match map.get("reset") {
            None if turns.is_some() => None,
            None => d.reset,
            Some(_) => field::<Option<Reset>>(map, "", "reset")?.flatten(),
        };
        let mut restart: f64 = field(map, "", "restart_initial_probability")?.unwrap_or(d.restart_initial_probability);
        if let Some(old) = field::<f64>(map, "", "restart_fraction")? {
            if map.contains_key("restart_initial_probability") && old != restart {
                return Err(invalid(
                    "restart_fraction",
                    old,
                    format!("equal to restart_initial_probability ({restart})"),
                ));
            }
            restart = old;
        }
        AgenticConfig {
            new_tokens_per_turn: field(map, "", "new_tokens_per_turn")?.unwrap_or(d.new_tokens_per_turn),
            generation_length: field(map, "", "generation_length")?.unwrap_or(d.generation_length),
            inter_turn_delay: delay,
            reset,
            turns,
            max_prompt_tokens: field(map, "", "max_prompt_tokens")?.unwrap_or(d.max_prompt_tokens),
            block_size: field(map, "", "block_size")?.unwrap_or(d.block_size),
            cache,
            restart_initial_probability: restart,
            restart_turn_range: field(map, "", "restart_turn_range")?.unwrap_or(d.restart_turn_range),
        }
        .checked()
    }

    /// `--max-isl` (the context limit) and `--max-osl` (the generation length's upper bound)
    /// applied, and the result checked again.
    pub fn with_limits(mut self, max_isl: Option<u64>, max_osl: Option<u64>) -> Result<Self, ConfigError> {
        if let Some(isl) = max_isl {
            self.max_prompt_tokens = isl;
        }
        if let Some(osl) = max_osl {
            self.generation_length.max = Some(osl as f64);
        }
        self.checked()
    }

    /// The configuration with its ranges checked and `mu`/`sigma` derived where absent.
    pub fn checked(mut self) -> Result<Self, ConfigError> {
        self.new_tokens_per_turn.check("new_tokens_per_turn")?;
        self.generation_length.check("generation_length")?;
        let delay = &mut self.inter_turn_delay;
        within("inter_turn_delay.agentic_fraction", delay.agentic_fraction, 0.0, 1.0)?;
        delay.agentic_delay.check("inter_turn_delay.agentic_delay")?;
        delay.human_delay.check("inter_turn_delay.human_delay")?;
        if let Some(m) = delay.max
            && !(m >= 0.0 && m.is_finite())
        {
            return Err(invalid("inter_turn_delay.max", m, "a number ≥ 0 or null"));
        }
        if let Some(r) = &self.reset {
            within("reset.base_probability", r.base_probability, 0.0, 1.0)?;
            if !(r.context_scaling >= 1.0 && r.context_scaling.is_finite()) {
                return Err(invalid("reset.context_scaling", r.context_scaling, "a number ≥ 1"));
            }
        }
        if self.max_prompt_tokens < 1 {
            return Err(invalid("max_prompt_tokens", self.max_prompt_tokens, "at least 1"));
        }
        if self.block_size < 1 {
            return Err(invalid("block_size", self.block_size, "at least 1"));
        }
        self.cache.layer2.check("cache.layer2")?;
        let groups = &self.cache.layer1_5_groups;
        if !(1..=MAX_GROUPS).contains(&groups.num_groups) {
            return Err(invalid("cache.layer1_5_groups.num_groups", groups.num_groups, format!("1 to {MAX_GROUPS}")));
        }
        if !(groups.zipf_alpha >= 0.0 && groups.zipf_alpha.is_finite()) {
            return Err(invalid("cache.layer1_5_groups.zipf_alpha", groups.zipf_alpha, "a number ≥ 0"));
        }
        if self.cache.layer1_5_tokens.div_ceil(self.block_size) > MAX_GROUP_BLOCKS {
            return Err(invalid(
                "cache.layer1_5_tokens",
                self.cache.layer1_5_tokens,
                format!("at most {MAX_GROUP_BLOCKS} blocks of block_size ({}) tokens", self.block_size),
            ));
        }
        within("restart_initial_probability", self.restart_initial_probability, 0.0, 1.0)?;
        let [lo, hi] = self.restart_turn_range;
        if lo < 1 {
            return Err(invalid("restart_turn_range", format!("[{lo}, {hi}]"), "[min, max) with min ≥ 1"));
        }
        if hi <= lo {
            return Err(invalid("restart_turn_range", format!("[{lo}, {hi}]"), "[min, max) with max > min"));
        }
        if self.turns.is_some() {
            self.check_turns_mode()?;
        }
        Ok(self)
    }

    fn check_turns_mode(&mut self) -> Result<(), ConfigError> {
        let Some(t) = &mut self.turns else { return Ok(()) };
        for (name, v) in [("mean", t.mean), ("median", t.median), ("min", t.min), ("max", t.max)] {
            if v == 0 {
                return Err(invalid(&format!("turns.{name}"), v, "at least 1"));
            }
        }
        if t.mean < t.median {
            return Err(invalid("turns.mean", t.mean, format!("at least the median ({})", t.median)));
        }
        if t.min > t.median {
            return Err(invalid("turns.min", t.min, format!("at most the median ({})", t.median)));
        }
        if t.mean > t.max {
            return Err(invalid("turns.mean", t.mean, format!("at most max ({})", t.max)));
        }
        if t.allow_truncation {
            if let Some(a) = t.max_session_attempts {
                return Err(invalid("turns.max_session_attempts", a, "null when allow_truncation is true"));
            }
        } else {
            match t.max_session_attempts {
                Some(0) => return Err(invalid("turns.max_session_attempts", 0, "at least 1")),
                None => t.max_session_attempts = Some(100),
                Some(_) => {}
            }
        }
        if self.reset.is_some() {
            return Err(invalid("reset", "an object", "null (or absent) with turns"));
        }
        if self.restart_initial_probability != 0.0 {
            return Err(invalid("restart_initial_probability", self.restart_initial_probability, "0 with turns"));
        }
        let min_l2 = self.cache.layer2.min.map_or(1, |m| m as u64);
        let min_new = self.new_tokens_per_turn.min.map_or(1, |m| m as u64);
        let min_output = self.generation_length.max.map_or(30, |m| (m as u64).min(30));
        let mut input = self.cache.layer1_tokens + self.cache.layer1_5_tokens + min_l2;
        if input >= self.max_prompt_tokens {
            return Err(invalid(
                "max_prompt_tokens",
                self.max_prompt_tokens,
                format!("above the smallest initial context ({input}) in turns mode"),
            ));
        }
        let (min_turns, truncate) = (t.min, t.allow_truncation);
        if !truncate {
            for _ in 1..min_turns {
                input += min_output + min_new;
                if input >= self.max_prompt_tokens {
                    return Err(invalid(
                        "turns.min",
                        min_turns,
                        format!(
                            "a turn count whose smallest sessions fit max_prompt_tokens ({})",
                            self.max_prompt_tokens
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Tokens of the shared prefix (layers 1 and 1.5), each rounded up to whole blocks.
    pub fn prefix_tokens(&self) -> u64 {
        self.prefix_blocks() * self.block_size
    }

    /// Blocks of layers 1 and 1.5.
    pub fn prefix_blocks(&self) -> u64 {
        self.cache.layer1_tokens.div_ceil(self.block_size) + self.cache.layer1_5_tokens.div_ceil(self.block_size)
    }

    /// The configuration as a manifest's `generation_params` (a JSON value in AIPerf's order).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_derive_aiperfs_mu_and_sigma() {
        let c = AgenticConfig::default();
        assert_eq!(c.new_tokens_per_turn.mu, Some(7.495541943884256));
        assert_eq!(c.new_tokens_per_turn.sigma, Some(1.1532357118934957));
        assert_eq!(c.cache.layer2.sigma, Some(1.1774100225154747));
        assert_eq!(c.inter_turn_delay.human_delay.mu, Some(10.126631103850338));
    }

    #[test]
    fn reads_the_bundled_default_and_refuses_unknown_keys() {
        let c = AgenticConfig::from_json(BUNDLED_DEFAULT).unwrap();
        assert_eq!(c.max_prompt_tokens, 167_000);
        assert_eq!(c.cache.layer1_5_tokens, 0);
        assert_eq!(c.new_tokens_per_turn.bias, 1.1);
        let e = AgenticConfig::from_json(r#"{"cache": {"layer2": {"mean": 5, "median": 4, "meen": 3}}}"#).unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, accepted } if key == "cache.layer2.meen" && accepted.contains("median")),
            "{e}"
        );
        let e = AgenticConfig::from_json(r#"{"max_prompt_token": 5}"#).unwrap_err();
        assert!(matches!(&e, ConfigError::UnknownKey { key, .. } if key == "max_prompt_token"), "{e}");
        let e = AgenticConfig::from_json(r#"{"generation_length": {"mean": 5, "median": 40}}"#).unwrap_err();
        assert_eq!(e.to_string(), "`generation_length.mean` = 5 is not accepted: must be at least the median (40)");
        let e = AgenticConfig::from_json(r#"{"block_size": -3}"#).unwrap_err();
        assert!(matches!(&e, ConfigError::Invalid { key, value, .. } if key == "block_size" && value == "-3"), "{e}");
    }

    #[test]
    fn a_manifest_round_trips() {
        let c = AgenticConfig::from_json(BUNDLED_DEFAULT).unwrap().with_limits(Some(100_000), Some(900)).unwrap();
        let manifest =
            serde_json::json!({"seed": 1, "num_sessions": 3, "config_name": "x", "generation_params": c.to_value()});
        let back = AgenticConfig::from_json(&manifest.to_string()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.generation_length.max, Some(900.0));
    }

    #[test]
    fn turns_mode_drops_resets_and_checks_feasibility() {
        let c = AgenticConfig::from_json(r#"{"turns": {"mean": 6, "median": 5, "min": 2, "max": 20}}"#).unwrap();
        assert_eq!(c.reset, None);
        assert_eq!(c.turns.as_ref().unwrap().max_session_attempts, Some(100));
        let e = AgenticConfig::from_json(r#"{"turns": {"mean": 6, "median": 5, "min": 2, "max": 20}, "reset": {}}"#)
            .unwrap_err();
        assert!(matches!(&e, ConfigError::Invalid { key, .. } if key == "reset"), "{e}");
    }
}
