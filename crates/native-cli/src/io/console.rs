//! What commands print for people (reports, progress, warnings), on standard output or error.
//!
//! A closed console never stops a command: `aiperf-cli profile … | head -1` closes the pipe after
//! one line, and the run still finishes and writes every export. A write to a closed stream is
//! dropped, and so is every later one to that stream (no retry, no error). Data written to
//! standard output as an output file (`--output-file -`) does not go through here: a closed pipe
//! there ends that command (see `main`).

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// One of the two console streams, as a writer whose errors are dropped.
#[derive(Clone, Copy, Debug)]
pub enum Console {
    Stdout,
    Stderr,
}

impl Console {
    fn closed(self) -> &'static AtomicBool {
        match self {
            Console::Stdout => &STDOUT_CLOSED,
            Console::Stderr => &STDERR_CLOSED,
        }
    }

    /// Writes `args` and a newline in one call; nothing happens once the stream is closed.
    pub fn line(self, args: fmt::Arguments<'_>) {
        let mut w = self;
        let _ = writeln!(w, "{args}");
    }
}

impl Write for Console {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let closed = self.closed();
        if closed.load(Ordering::Relaxed) {
            return Ok(buf.len());
        }
        let result = match self {
            Console::Stdout => io::stdout().lock().write_all(buf),
            Console::Stderr => io::stderr().lock().write_all(buf),
        };
        if result.is_err() {
            closed.store(true, Ordering::Relaxed);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let closed = self.closed();
        if closed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let result = match self {
            Console::Stdout => io::stdout().lock().flush(),
            Console::Stderr => io::stderr().lock().flush(),
        };
        if result.is_err() {
            closed.store(true, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Prints a line on standard error (warnings, status, progress); never fails.
macro_rules! say {
    ($($t:tt)*) => { $crate::io::console::Console::Stderr.line(format_args!($($t)*)) };
}

/// Prints a line on standard output (reports); never fails.
macro_rules! show {
    ($($t:tt)*) => { $crate::io::console::Console::Stdout.line(format_args!($($t)*)) };
}
