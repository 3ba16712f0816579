#!/usr/bin/env bash
# Web app tests: native unit tests of aiperf-web, wasm-bindgen-test in headless Chromium, then the
# release build (trunk) and the Playwright end-to-end test against it. Tools: scripts/setup-web.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
export WASM_BINDGEN_TEST_WEBDRIVER_JSON="$ROOT/crates/web/webdriver.json"
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"
t0=$(date +%s)
step() { printf '\n== %s (%ss)\n' "$*" "$(( $(date +%s) - t0 ))"; }

step "tools"
bash scripts/setup-web.sh
cargo fetch --locked

step "native unit tests (aiperf-web)"
cargo test -p aiperf-web --locked

step "wasm-bindgen-test in headless Chromium"
cargo test -p aiperf-web --target wasm32-unknown-unknown --locked --test browser

step "trunk build --release"
trunk build --release --offline --locked

step "native CLI for the byte-for-byte comparisons"
cargo build -p aiperf-cli --locked

step "Playwright end-to-end"
AIPERF_CLI="${CARGO_TARGET_DIR:-$ROOT/target}/debug/aiperf-cli" node tests/e2e/run.mjs

step "Playwright: run view, comparison, report.html from file:// (regenerates docs/images/run-*.png)"
AIPERF_CLI="${CARGO_TARGET_DIR:-$ROOT/target}/debug/aiperf-cli" node tests/e2e/runs.mjs

step "Playwright: production trace formats (detection, analysis and converted JSONL = the CLI's)"
AIPERF_CLI="${CARGO_TARGET_DIR:-$ROOT/target}/debug/aiperf-cli" node tests/e2e/formats.mjs

step "Playwright: What if (simulation = aiperf-cli simulate) and agentic sessions (= synthesize-agentic-code); regenerates docs/images/what-if.png"
AIPERF_CLI="${CARGO_TARGET_DIR:-$ROOT/target}/debug/aiperf-cli" node tests/e2e/whatif.mjs

step "web tests passed"
