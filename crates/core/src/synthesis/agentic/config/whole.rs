//! The whole configuration ([`AgenticConfig`]): its parts in AIPerf's key order, its defaults,
//! the limits of AIPerf's id layout and the checks that span several parts.

use serde::Serialize;
use serde_json::Value;

use super::error::{ConfigError, invalid, within};
use super::parts::{Cache, Lognormal, MixtureDelay, NewTokens, Reset, Turns};

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

impl AgenticConfig {
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
