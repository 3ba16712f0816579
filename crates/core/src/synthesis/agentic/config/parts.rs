//! The parts of the configuration: its distributions (lognormals, the delay mixture) and sections
//! (resets, turns, the cached prefix), each with its defaults and the check of its ranges.

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, invalid, positive};

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

    pub(super) fn check(&mut self, key: &str) -> Result<(), ConfigError> {
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

    pub(super) fn check(&mut self, key: &str) -> Result<(), ConfigError> {
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
