#!/usr/bin/env bash
# Installs the tools the web app needs: the offline recipe of the shared toolchain notes (trunk, wasm-bindgen-cli, wasm-opt, Chromium).
# Every step is guarded by a version check, so re-runs are instant.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup-web %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# 1. Rust target
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# 2. Chromium + chromedriver (Debian) — started first so it runs while cargo compiles
need_chromium=0
command -v chromium >/dev/null 2>&1 || need_chromium=1
command -v chromedriver >/dev/null 2>&1 || need_chromium=1
if [ "$need_chromium" = 1 ]; then
  log "installing chromium + chromium-driver"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium chromium-driver
fi

# 3. npm packages (playwright-core, binaryen for wasm-opt)
want_pw=$(node -p "require('./package.json').devDependencies['playwright-core']")
have_pw=$(node -p "try{require('./node_modules/playwright-core/package.json').version}catch(e){''}" 2>/dev/null || true)
if [ ! -x node_modules/.bin/wasm-opt ] || [ "$want_pw" != "$have_pw" ]; then
  log "npm ci"
  npm ci --no-audit --no-fund
fi

# 4. wasm-bindgen-cli 0.2.130 (must equal the wasm-bindgen crate pin)
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen 0.2.130" ]; then
  log "cargo install wasm-bindgen-cli 0.2.130 (~6 min)"
  cargo install wasm-bindgen-cli --version 0.2.130 --locked \
    || cargo install wasm-bindgen-cli --version 0.2.130
fi

# 5. trunk 0.21.14
if [ "$(trunk --version 2>/dev/null)" != "trunk 0.21.14" ]; then
  log "cargo install trunk 0.21.14 (~11 min)"
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install trunk --version 0.21.14 --locked
fi

log "tools ready: $(trunk --version), $(wasm-bindgen --version), $(node_modules/.bin/wasm-opt --version), $(chromium --version 2>/dev/null | head -1)"
