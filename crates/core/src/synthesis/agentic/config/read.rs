//! A configuration read from JSON (a config file, or a manifest's `generation_params`), every
//! unknown key and wrong value named by its dotted path.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::{ConfigError, invalid};
use super::parts::{Cache, MixtureDelay, Reset, Turns};
use super::whole::AgenticConfig;

/// AIPerf's bundled `configs/default.json` (its `--config default`).
pub const BUNDLED_DEFAULT: &str = include_str!("../default.json");

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
}
