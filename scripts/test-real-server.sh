#!/usr/bin/env bash
# Replay end to end against a REAL llama.cpp server (tiny random-weight model by default):
# installs it from PyPI into target/real-server (git-ignored), starts it on 127.0.0.1, runs the
# e2e test crates/native-cli/tests/profile_real_server.rs, and stops the server by its PID.
#
# Usage: scripts/test-real-server.sh [--model tiny|smollm2] [--port N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model=tiny; port=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model="$2"; shift 2;;
    --port) port="$2"; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
export REAL_SERVER_WORKDIR="${REAL_SERVER_WORKDIR:-$root/target/real-server}"
if [[ -z "$port" ]]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fi
start=$(date +%s)
out=$("$root/tools/real-server/start_real_server.sh" "$port" --model "$model" --parallel 2 --ctx 8192)
echo "$out"
pid=$(sed -n 's/^PID=//p' <<<"$out")
alias=$(sed -n 's/^MODEL=//p' <<<"$out")
stop() { [[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null || true; }
trap stop EXIT
cd "$root"
AIPERF_REAL_SERVER_URL="http://127.0.0.1:$port" AIPERF_REAL_SERVER_MODEL="$alias" \
  cargo test -p aiperf-cli --test profile_real_server -- --ignored --nocapture
echo "real-server e2e passed in $(( $(date +%s) - start )) s"
