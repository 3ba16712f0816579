#!/usr/bin/env bash
# Builds the web app (release) and serves it on http://127.0.0.1:${PORT:-19080}/ with the bundled
# sample trace. Run scripts/setup-web.sh once before (it installs trunk, wasm-bindgen, wasm-opt).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
PORT="${PORT:-19080}"
cargo fetch --locked
trunk build --release --offline --locked
echo "Open http://127.0.0.1:${PORT}/  (or http://127.0.0.1:${PORT}/?sample=1 to open the sample trace)"
exec node tests/e2e/server.mjs dist "$PORT"
