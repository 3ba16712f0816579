//! Why a configuration was refused, and the checks of a value's range that say so.

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

pub(super) fn invalid(key: &str, value: impl std::fmt::Display, expected: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.to_owned(), value: value.to_string(), expected: expected.into() }
}

pub(super) fn positive(key: &str, v: f64) -> Result<(), ConfigError> {
    if v > 0.0 && v.is_finite() { Ok(()) } else { Err(invalid(key, v, "a number > 0")) }
}

pub(super) fn within(key: &str, v: f64, lo: f64, hi: f64) -> Result<(), ConfigError> {
    if (lo..=hi).contains(&v) { Ok(()) } else { Err(invalid(key, v, format!("between {lo} and {hi}"))) }
}
