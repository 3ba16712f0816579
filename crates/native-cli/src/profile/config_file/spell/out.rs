//! What the spellers share: the options given so far ([`Out`]), an option with its value
//! attached, a refusal of a key, a value shown in a message, AIPerf's duration forms.

use anyhow::Result;
use serde_yaml_ng::Value;

use super::super::key_error::KeyError;
use super::super::model::{Ramp, Scalar, ScalarOr};

/// One option the file gives: the key path it came from, the value as written, and the
/// option's words (`["--request-rate", "10"]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Given {
    pub key: String,
    pub value: String,
    pub args: Vec<String>,
}

impl Given {
    /// The option's spelling (its first word).
    pub fn spelling(&self) -> &str {
        let first = self.args.first().map(String::as_str).unwrap_or("");
        first.split('=').next().unwrap_or(first)
    }
}

#[derive(Default)]
pub(super) struct Out {
    pub(super) given: Vec<Given>,
}

impl Out {
    pub(super) fn push(&mut self, key: &str, value: String, args: Vec<String>) {
        self.given.push(Given { key: key.to_string(), value, args });
    }

    pub(super) fn opt(&mut self, key: &str, flag: &str, v: &Option<Scalar>) {
        if let Some(v) = v {
            self.push(key, v.to_string(), vec![kv(flag, v)]);
        }
    }

    /// A key whose option is a switch: `true` gives `on`, `false` gives `off` (or nothing).
    pub(super) fn switch(&mut self, key: &str, v: &Option<Scalar>, on: &str, off: Option<&str>) -> Result<()> {
        match v {
            None => {}
            Some(Scalar::Bool(true)) => self.push(key, "true".into(), vec![on.to_string()]),
            Some(Scalar::Bool(false)) => {
                if let Some(off) = off {
                    self.push(key, "false".into(), vec![off.to_string()]);
                }
            }
            Some(other) => bail_key!(format!("{key}"), "key `{key}` = {other}: accepted is true or false"),
        }
        Ok(())
    }

    /// A key given as a whole section or list, whose option `flag` is refused by the option table
    /// (the spelling carries no value of ours).
    pub(super) fn raw(&mut self, key: &str, v: &Value, flag: &str) {
        self.push(key, show(v), vec![flag.to_string()]);
    }

    /// A duration (`30`, `30s`, `5m`, `2h`, `inf`) as seconds.
    pub(super) fn duration(&mut self, key: &str, flag: &str, v: &Option<Scalar>) -> Result<()> {
        if let Some(v) = v {
            let secs = seconds(key, v)?;
            self.push(key, v.to_string(), vec![kv(flag, &secs)]);
        }
        Ok(())
    }

    pub(super) fn ramp(&mut self, key: &str, flag: &str, v: &Option<ScalarOr<Ramp>>) -> Result<()> {
        match v {
            None => Ok(()),
            Some(ScalarOr::Scalar(s)) => self.duration(key, flag, &Some(s.clone())),
            Some(ScalarOr::Section(r)) => {
                if r.strategy.is_some() {
                    return Err(refused(
                        &format!("{key}.strategy"),
                        "a section",
                        "ramp strategies other than AIPerf's default are not supported",
                        "give the ramp as a duration",
                    ));
                }
                self.duration(&format!("{key}.duration"), flag, &r.duration)
            }
        }
    }
}

/// An option with its value attached (`--request-rate=10`), so that a value starting with `-`
/// stays a value.
pub(super) fn kv(flag: &str, value: impl std::fmt::Display) -> String {
    format!("{flag}={value}")
}

/// A refusal of a key that has no option spelling.
pub(super) fn refused(key: &str, value: &str, why: &str, instead: &str) -> anyhow::Error {
    KeyError::error(
        key,
        format!("key `{key}` = {value} is not supported by `aiperf-cli profile`: {why}; instead: {instead}"),
    )
}

/// A value as one line for messages (at most 80 characters).
pub fn show(v: &Value) -> String {
    let text = show_whole(v);
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn show_whole(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Mapping(_) | Value::Sequence(_) => serde_json::to_string(v).unwrap_or_else(|_| "a section".to_string()),
        other => serde_yaml_ng::to_string(other).unwrap_or_default().trim_end().to_string(),
    }
}

/// AIPerf's duration forms in seconds.
fn seconds(key: &str, v: &Scalar) -> Result<String> {
    let text = match v {
        Scalar::Int(_) | Scalar::Float(_) => return Ok(v.to_string()),
        Scalar::Str(s) => s.trim().to_ascii_lowercase(),
        Scalar::Bool(_) => {
            bail_key!(format!("{key}"), "key `{key}` = {v}: accepted is a duration: seconds, or 30s, 5m, 2h, inf")
        }
    };
    if text == "inf" || text == "infinity" {
        return Ok("inf".to_string());
    }
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic()).trim_end();
    let unit = text[digits.len()..].trim();
    let factor = match unit {
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" | "hr" | "hour" => 3600.0,
        _ => 0.0,
    };
    match digits.parse::<f64>() {
        Ok(x) if factor > 0.0 && x.is_finite() && x >= 0.0 && !digits.starts_with('+') => {
            Ok(Scalar::Float(x * factor).to_string())
        }
        _ => bail_key!(format!("{key}"), "key `{key}` = {v}: accepted is a duration: seconds, or 30s, 5m, 2h, inf"),
    }
}
