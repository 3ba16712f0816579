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
