//! AIPerf 0.13.0 itself, the judge of our formats: its virtual environment and its commands.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use super::{root, wait_limited};

/// The AIPerf virtual environment (`scripts/aiperf-venv.sh`), or `None` (after the script printed
/// its "aiperf-venv: SKIP:" line, and a `SKIP` line naming the calling test) when PyPI can't be
/// reached: a test without it returns.
pub fn aiperf_venv() -> Option<PathBuf> {
    let out =
        Command::new("bash").arg(root().join("scripts/aiperf-venv.sh")).stderr(Stdio::inherit()).output().unwrap();
    match out.status.code() {
        Some(0) => Some(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())),
        Some(77) => {
            eprintln!("SKIP {}: AIPerf 0.13.0 not installed", std::thread::current().name().unwrap_or("a test"));
            None
        }
        _ => panic!("scripts/aiperf-venv.sh failed: {:?}", out.status),
    }
}

/// `aiperf-offline ARGS` of `venv` in `dir`, with `HOME` at `home` (AIPerf writes its plot
/// settings under `~/.aiperf`), killed past `limit`.
pub fn aiperf(venv: &Path, home: &Path, dir: &Path, args: &[&str], limit: Duration) -> Output {
    let child = Command::new(venv.join("bin/aiperf-offline"))
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_limited(child, limit)
}

/// `python -c CODE ARGS` of `venv`.
pub fn python(venv: &Path, code: &str, args: &[&str]) -> Output {
    Command::new(venv.join("bin/python")).arg("-c").arg(code).args(args).output().unwrap()
}
