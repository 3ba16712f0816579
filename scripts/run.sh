#!/usr/bin/env bash
# Sets up, builds, and runs the main job: the browser app, served on http://127.0.0.1:${PORT:-19080}/
# with the bundled sample trace (open /?sample=1 to load it at once). The first run installs the
# web tools (about 25 minutes on a fresh 2-core machine); later runs start in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-fuzz
cargo build --release --locked -p aiperf-cli
exec bash scripts/serve-web.sh
