#!/usr/bin/env bash
# Sets up, builds, and runs the main job: the trace analysis of the bundled sample trace.
# Extra arguments are passed to `aiperf-cli analyze-trace` (e.g. --block-size 16).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-web --no-fuzz
cargo build --release --locked -p aiperf-cli
./target/release/aiperf-cli analyze-trace tests/fixtures/traces/conversation_trace.jsonl "$@"
