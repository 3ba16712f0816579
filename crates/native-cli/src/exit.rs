//! The exit statuses of `aiperf-cli`, documented in RELIABILITY.md, so that scripts and CI can
//! trust them.

/// Everything asked was done (for `profile`: at least one request succeeded).
pub const SUCCESS: u8 = 0;
/// A failure while running, or (`profile`) no request succeeded (AIPerf exits 1 too).
pub const NO_SUCCESS: u8 = 1;
/// Bad input: an invalid option, an unreadable or invalid trace.
pub const BAD_INPUT: u8 = 2;
/// Stopped by SIGINT, SIGTERM or SIGHUP; every export was written (128 + SIGINT, as shells do).
pub const INTERRUPTED: u8 = 130;

/// Marks an error as bad input (exit status [`BAD_INPUT`]); `main` prints the causes without it.
#[derive(Debug)]
pub struct BadInput;

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bad input")
    }
}

impl std::error::Error for BadInput {}

/// Marks an error as a failure to write an output (exit status [`NO_SUCCESS`] even for commands
/// whose other errors are bad input); `main` prints the causes without it.
#[derive(Debug)]
pub struct OutputFailed;

impl std::fmt::Display for OutputFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("output failed")
    }
}

impl std::error::Error for OutputFailed {}

/// Whether a cause in an error chain is one of the markers above (a context layer shows the
/// marker's text), not a reason for the reader.
pub fn is_marker(cause: &(dyn std::error::Error + 'static)) -> bool {
    let text = cause.to_string();
    text == BadInput.to_string() || text == OutputFailed.to_string()
}

/// An error's chain as one line (`a: b: c`) without the markers.
pub fn describe(e: &anyhow::Error) -> String {
    e.chain().filter(|c| !is_marker(*c)).map(ToString::to_string).collect::<Vec<_>>().join(": ")
}
