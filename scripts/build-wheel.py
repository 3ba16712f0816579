#!/usr/bin/env python3
"""Packages an already built `aiperf-cli` binary as a Python wheel, so that

    pip install target/wheels/aiperf_cli-VERSION-py3-none-PLATFORM.whl

puts `aiperf-cli` on the PATH of a virtual environment, as `pip install aiperf` does for AIPerf.
Nothing is compiled here: the wheel carries the binary given with --binary (by default the
release build of `cargo build --release -p aiperf-cli`). Standard library only.

    python3 scripts/build-wheel.py [--binary target/release/aiperf-cli] [--out-dir target/wheels]

Prints the wheel's path. The platform tag is this machine's (`linux_x86_64`, …): the wheel is for
machines like the one that built the binary.
"""

import argparse
import base64
import hashlib
import io
import pathlib
import re
import sys
import sysconfig
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME = "aiperf_cli"


def workspace_version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    section = text.split("[workspace.package]", 1)[1]
    match = re.search(r'^version\s*=\s*"([^"]+)"', section, re.MULTILINE)
    if not match:
        sys.exit("build-wheel: no version in [workspace.package] of Cargo.toml")
    return match.group(1)


def platform_tag() -> str:
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=pathlib.Path, default=ROOT / "target/release/aiperf-cli")
    parser.add_argument("--out-dir", type=pathlib.Path, default=ROOT / "target/wheels")
    args = parser.parse_args()
    if not args.binary.is_file():
        sys.exit(f"build-wheel: {args.binary}: no such binary (build it: cargo build --release -p aiperf-cli)")

    version = workspace_version()
    tag = f"py3-none-{platform_tag()}"
    dist_info = f"{NAME}-{version}.dist-info"
    readme = (ROOT / "README.md").read_text()
    summary = "Analyze, synthesize and replay LLM serving traces (Mooncake), AIPerf-compatible"
    files = {
        f"{NAME}-{version}.data/scripts/aiperf-cli": (args.binary.read_bytes(), 0o755),
        f"{dist_info}/METADATA": (
            (
                "Metadata-Version: 2.1\n"
                "Name: aiperf-cli\n"
                f"Version: {version}\n"
                f"Summary: {summary}\n"
                "License: Apache-2.0\n"
                "Requires-Python: >=3.8\n"
                "Description-Content-Type: text/markdown\n"
                "\n" + readme
            ).encode(),
            0o644,
        ),
        f"{dist_info}/WHEEL": (
            (
                "Wheel-Version: 1.0\n"
                "Generator: aiperf-rs scripts/build-wheel.py\n"
                "Root-Is-Purelib: false\n"
                f"Tag: {tag}\n"
            ).encode(),
            0o644,
        ),
    }
    record = io.StringIO()
    for path, (data, _) in files.items():
        record.write(f"{path},{digest(data)},{len(data)}\n")
    record.write(f"{dist_info}/RECORD,,\n")
    files[f"{dist_info}/RECORD"] = (record.getvalue().encode(), 0o644)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    wheel = args.out_dir / f"{NAME}-{version}-{tag}.whl"
    partial = wheel.with_suffix(".whl.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        for path, (data, mode) in files.items():
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    partial.replace(wheel)
    print(wheel)


if __name__ == "__main__":
    main()
