//! The error of one key of a config file: its key path beside the message.

/// A key of the file that the reader refuses or cannot read: its key path
/// (`benchmark.datasets[0].type`) beside the message that names it.
#[derive(Debug)]
pub struct KeyError {
    pub key: String,
    message: String,
}

impl KeyError {
    /// The error of key `key` with `message`.
    pub fn error(key: impl Into<String>, message: String) -> anyhow::Error {
        anyhow::Error::new(KeyError { key: key.into(), message })
    }
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KeyError {}
