#!/usr/bin/env bash
# Statistical parity of `aiperf-cli synthesize-agentic-code` with AIPerf 0.13.0's
# `aiperf synthesize agentic-code`: both generate the same configuration and session count for
# seeds 1..SEEDS, and every row of AIPerf's comparison table (comparison.txt) is averaged over the
# seeds. A row agrees when our mean is within ±5% of AIPerf's or within 3 standard errors of the
# difference of the two means (sqrt(se_aiperf² + se_ours²)), whichever is wider. Prints the table
# (Markdown) and exits 1 when a row disagrees.
#
#   scripts/agentic-parity.sh [--sessions N] [--seeds K] [--config FILE] [--bin PATH]
#
# Defaults: 1000 sessions, 10 seeds, AIPerf's built-in defaults, target/release/aiperf-cli (else
# target/debug). AIPerf comes from scripts/aiperf-venv.sh (exit 77 when PyPI can't be reached).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sessions=1000 seeds=10 config="" bin=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sessions) sessions="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    *) echo "agentic-parity: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin" ]]; then
  bin="$root/target/release/aiperf-cli"
  [[ -x "$bin" ]] || bin="$root/target/debug/aiperf-cli"
fi
[[ -x "$bin" ]] || { echo "agentic-parity: no aiperf-cli binary at $bin (cargo build -p aiperf-cli)" >&2; exit 2; }
venv="$(bash "$root/scripts/aiperf-venv.sh")" || exit $?
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cfg_args=()
[[ -n "$config" ]] && cfg_args=(--config "$config")
for seed in $(seq 1 "$seeds"); do
  HOME="$work" "$venv/bin/aiperf-offline" synthesize agentic-code --num-sessions "$sessions" \
    --seed "$seed" --output "$work/aiperf/$seed" "${cfg_args[@]}" >/dev/null
  "$bin" synthesize-agentic-code --num-sessions "$sessions" --seed "$seed" \
    --output-dir "$work/ours/$seed" "${cfg_args[@]}" >/dev/null
done
echo "$seeds seeds × $sessions sessions${config:+, config $config}"
"$venv/bin/python" "$root/scripts/agentic_parity.py" "$work" "$seeds"
