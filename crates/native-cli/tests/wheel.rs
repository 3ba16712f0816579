//! `pip install` of the wheel that `scripts/build-wheel.py` makes from the binary this test suite
//! built: a fresh virtual environment gets `aiperf-cli` on its PATH, runs it, and uninstalls it.
//! Needs `python3` with `venv` (as the AIPerf tests do); run by `scripts/test.sh` with `--ignored`.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

#[test]
#[ignore = "needs python3 with venv; run by scripts/test.sh"]
fn the_wheel_installs_aiperf_cli_in_a_fresh_venv() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let wheel = run(Command::new("python3")
        .arg(root.join("scripts/build-wheel.py"))
        .args(["--binary", env!("CARGO_BIN_EXE_aiperf-cli"), "--out-dir"])
        .arg(&dist));
    let wheel = PathBuf::from(wheel.trim());
    let name = wheel.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(&format!("aiperf_cli-{}-py3-none-", env!("CARGO_PKG_VERSION"))), "{name}");

    let venv = tmp.path().join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    let bin = |n: &str| venv.join("bin").join(n);
    // Offline: the wheel has no dependencies.
    run(Command::new(bin("pip")).args(["install", "--no-index", "--disable-pip-version-check", "-q"]).arg(&wheel));
    let installed = bin("aiperf-cli");
    assert!(installed.is_file());
    // On the venv's PATH, as an activated venv has it.
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let version = run(Command::new("aiperf-cli").arg("--version").env("PATH", &path));
    assert_eq!(version.trim(), format!("aiperf-cli {}", env!("CARGO_PKG_VERSION")));
    // A real command from the installed copy: validate a trace of the repository.
    let trace = root.join("tests/fixtures/traces/arxiv_first20.jsonl");
    let out =
        run(Command::new("aiperf-cli").args(["validate", "mooncake-trace", "--input"]).arg(&trace).env("PATH", &path));
    assert!(out.starts_with("Validation passed: 20 rows"), "{out}");
    let show = run(Command::new(bin("pip")).args(["show", "--disable-pip-version-check", "aiperf-cli"]));
    assert!(show.contains(&format!("Version: {}", env!("CARGO_PKG_VERSION"))), "{show}");
    run(Command::new(bin("pip")).args(["uninstall", "-y", "-q", "--disable-pip-version-check", "aiperf-cli"]));
    assert!(!Path::new(&installed).exists(), "uninstall removes the binary");
}
