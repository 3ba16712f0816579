#!/usr/bin/env bash
# Sets up and runs every test of aiperf-rs: formatting, lints (native and wasm32), unit, golden,
# property and integration tests, the fuzz target build, the browser tests and the real-server
# replay test. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

bash scripts/setup.sh

# One full build from scratch: incremental caches would only add ~2 GB of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

say "format"
cargo fmt --all --check

say "lints (native)"
cargo clippy --workspace --all-targets --locked -- -D warnings
say "lints (wasm32: the core has no I/O, clock or OS randomness)"
cargo clippy -p aiperf-core --target wasm32-unknown-unknown --locked -- -D warnings
if grep -q '^\[dependencies\]' crates/web/Cargo.toml && grep -q yew crates/web/Cargo.toml; then
  cargo clippy -p aiperf-web --target wasm32-unknown-unknown --locked -- -D warnings
fi

say "tests"
# aiperf-web's native tests run once, in scripts/test-web.sh below.
cargo test --workspace --exclude aiperf-web --locked

say "AIPerf 0.13.0's own client against the mock server (chat, completions; streaming or not)"
# Installs AIPerf from PyPI into ~/.cache/aiperf-rs/aiperf-venv-0.13.0 the first time on a machine (scripts/aiperf-venv.sh: 4.5-5 min
# on 2 busy cores, 1.2 GB; instant afterwards), then 4 AIPerf runs of 20 requests (~2 min in all on
# 2 busy cores, mostly AIPerf's own start-up). Passes with a SKIP line when PyPI can't be reached.
cargo test -p aiperf-cli --locked --test aiperf_client -- --ignored --nocapture
say "AIPerf 0.13.0's cache-bust markers against the core's"
cargo test -p aiperf-cli --locked --test aiperf_prompts -- --ignored

say "--ui-type dashboard in a real terminal (tmux): panels, numbers, the terminal given back, files complete"
# tmux 3.x gives capture-pane -p -S; installed with apt when missing.
if ! tmux -V 2>/dev/null | grep -Eq '^tmux (next-)?[3-9]'; then
  if command -v apt-get >/dev/null; then
    (apt-get install -y tmux || sudo apt-get install -y tmux) >/dev/null 2>&1 || true
  fi
fi
if tmux -V 2>/dev/null | grep -Eq '^tmux (next-)?[3-9]'; then
  cargo test -p aiperf-cli --locked --test dashboard -- --ignored
else
  echo "SKIP: tmux 3 or newer is not installed and could not be installed"
fi

say "pip install of the wheel scripts/build-wheel.py makes from the binary just built (fresh venv, offline)"
cargo test -p aiperf-cli --locked --test wheel -- --ignored

say "Kubernetes example: strict schema validation (Kubernetes 1.32) and consistency"
bash scripts/validate-kubernetes.sh

say "fuzz targets build (trace parser, production formats, SSE parser, Prometheus parser, run line parser)"
# cargo-fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP lets the stable toolchain accept them.
(cd crates/core && RUSTC_BOOTSTRAP=1 cargo fuzz build --dev)

if [ -f scripts/test-web.sh ]; then
  say "browser tests"
  bash scripts/test-web.sh
fi

say "AIPerf 0.13.0's own readers on runs of ours (record model, aiperf plot, aiperf analyze swim-lane)"
# Three runs of ours (fixed-schedule sessions, non-streaming, a failing server): every record
# validated with AIPerf's MetricRecordInfo, `aiperf plot` on ours and on AIPerf's run of the same
# kind (PNGs through the Chromium installed for the browser tests), `aiperf analyze swim-lane`.
# Passes with a SKIP line when PyPI can't be reached.
cargo test -p aiperf-cli --locked --test aiperf_readers -- --ignored --nocapture
# --export-http-trace's trace_data read by AIPerf's MetricRecordInfo, --export-level raw's lines by its RawRecordInfo.
cargo test -p aiperf-cli --locked --test aiperf_outputs -- --ignored --nocapture
# --gpu-telemetry's telemetry_data read by AIPerf's JsonExportData, its statistics recomputed by
# AIPerf's own GPU time series from our gpu_telemetry_export.jsonl.
cargo test -p aiperf-cli --locked --test gpu_telemetry -- --ignored --nocapture
# --network-latency-automatic's probe lines read by AIPerf's NetworkLatencySample, their mean by its
# accumulator, and network_rtt/network_adjusted_* recomputed by its analyzer from our records.
cargo test -p aiperf-cli --locked --test network_latency -- --ignored --nocapture
# Every request header AIPerf's is_sensitive_header_name hides is <redacted> in our raw export.
cargo test -p aiperf-cli --locked --test header_redaction -- --ignored --nocapture

say "AIPerf 0.13.0's loaders on its dataset files as we read them (single_turn, multi_turn, random_pool, baseten_trace, dag_jsonl), its replay of a DAG against our mock"
cargo test -p aiperf-cli --locked --test aiperf_dataset_files --test aiperf_baseten --test aiperf_dag -- --ignored
# AIPerf's warm-up of multi-turn sessions against our mock: the same (conversation, turn) pairs as
# ours, then the same sessions in the run.
cargo test -p aiperf-cli --locked --test aiperf_load -- --ignored --nocapture

say "AIPerf 0.13.0 against our generators: agentic-code sessions (10 seeds each, replayed by both), synthetic workloads (its inputs.json) and config-file length distributions (its samplers)"
cargo test -p aiperf-cli --locked --test aiperf_agentic -- --ignored --nocapture
# An agentic-code trace replayed by AIPerf's `profile` and by ours against mocks logging the bodies:
# the same requests, history, prompt sizes, max_tokens and delays (~1 min, mostly AIPerf's start-up).
cargo test -p aiperf-cli --locked --test aiperf_agentic_replay -- --ignored --nocapture
cargo test -p aiperf-cli --locked --test aiperf_synthetic -- --ignored --nocapture
# A config file's inline single_turn records run by AIPerf's `profile --config` and by ours against
# mocks logging the bodies: the same bodies, each record alone, a session's delay kept (~1 min).
cargo test -p aiperf-cli --locked --test aiperf_config -- --ignored --nocapture
cargo test -p aiperf-cli --locked --test profile_weka -- --ignored --nocapture

if [ -f scripts/test-real-server.sh ]; then
  say "replay against a real llama.cpp server"
  bash scripts/test-real-server.sh
fi

say "all tests passed"
