#!/usr/bin/env bash
# Installs what building and testing aiperf-rs needs. Every step checks first, so re-runs are cheap.
# Usage: scripts/setup.sh [--no-web] [--no-fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."

web=1 fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-web) web=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# GNU time measures the peak memory of the CLI in the hostile-input tests.
if [ ! -x /usr/bin/time ]; then
  say "installing GNU time"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y time
fi

if [ "$fuzz" = 1 ] && [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz 0.13.1" ]; then
  say "installing cargo-fuzz 0.13.1"
  cargo install cargo-fuzz --version 0.13.1 --locked || cargo install cargo-fuzz --version 0.13.1
fi

if [ "$web" = 1 ] && [ -f scripts/setup-web.sh ]; then
  bash scripts/setup-web.sh
fi

say "fetching crates"
cargo fetch --locked
