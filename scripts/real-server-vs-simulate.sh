#!/usr/bin/env bash
# A trace replayed on a real server, then simulated with the server's block size, KV capacity
# and the timing fitted from the replay (`simulate --calibrate`): prefix-cache hit rate and TTFT
# p50/p99, measured and simulated, side by side. Each step runs alone:
#
#   start    PORT [start_real_server.sh options…]    start llama.cpp (default) or vLLM on PORT
#            (tools/real-server, installed into target/real-server unless REAL_SERVER_WORKDIR
#            says otherwise); prints BASE_URL=, MODEL=, PID= (stop it with `kill PID`)
#   replay   URL MODEL TRACE RUN_DIR [profile options…]
#            `profile` on the trace's timestamps, streamed, completions endpoint (no chat
#            template before the prompt), exact output lengths, the prefix cache reset first
#   simulate TRACE RUN_DIR SIM_DIR [simulate options…]
#            `simulate --calibrate RUN_DIR`, then the side-by-side table (also SIM_DIR/side_by_side.txt)
#   all      TRACE OUT_DIR [--backend vllm --kv-blocks N --max-running M] [--port N]
#            [--server-args "…"] [--profile-args "…"] [--simulate-args "…"]
#            start, replay, stop, simulate; vLLM gets `--block-size` as its block size, N as its
#            KV pool (`--num-gpu-blocks-override`) and M as its max_num_seqs, the simulator
#            `--kv-blocks N-1` and `--max-running M` (defaults N=49, M=4, 2,048-token context)
#   test     start a fresh llama.cpp (2 slots), run the opt-in test
#            crates/native-cli/tests/real_server_vs_simulate.rs on it, stop it
#
# llama.cpp's prompt cache in host memory outlives `--reset-prefix-cache` (it erases the slots
# only): replay on a server started for the run.
#
# The server's settings go to the simulator as options: for llama.cpp with its prompt cache in
# host memory (the default `--cache-ram`), one replica whose running requests are its slots
# (`--replicas 1 --max-running SLOTS`, unbounded capacity); for vLLM its block size
# (`--block-size 128`), its `num_gpu_blocks` (its log's "Overriding num_gpu_blocks" or "KV cache
# size" line) less one, the null block its pool keeps back (`--kv-blocks N-1`), and its
# max_num_seqs (`--max-running`). The trace's hash-id block size is `--isl-block-size` for the
# replay and `--block-size` for the simulation (both default to 16 here); for vLLM it is the
# server's block size, so that a hash id is one of its blocks.
#
# The side-by-side table adds the per-request cached tokens (measured `usage` against simulated,
# by trace line) and, when the run scraped the server's metrics, vLLM's prefix-cache counters.
#
# Environment: AIPERF_CLI (default target/release/aiperf-cli, else target/debug/aiperf-cli),
# AIPERF_TOKENIZER (default tests/fixtures/tokenizers/smollm2-135m/tokenizer.json).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REAL_SERVER_WORKDIR="${REAL_SERVER_WORKDIR:-$root/target/real-server}"
cli="${AIPERF_CLI:-}"
if [[ -z "$cli" ]]; then
  cli="$root/target/release/aiperf-cli"; [[ -x "$cli" ]] || cli="$root/target/debug/aiperf-cli"
fi
tokenizer="${AIPERF_TOKENIZER:-$root/tests/fixtures/tokenizers/smollm2-135m/tokenizer.json}"
block=16 block_given=0

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}" >&2; exit 2; }

start() {
  [[ $# -ge 1 ]] || usage
  # a block size given to this step is vLLM's (llama.cpp's server has none)
  [[ $block_given == 1 ]] && set -- "$@" --block-size "$block"
  "$root/tools/real-server/start_real_server.sh" "$@"
}

replay() {
  [[ $# -ge 4 ]] || usage
  local url="$1" model="$2" trace="$3" run="$4"; shift 4
  [[ -x "$cli" ]] || { echo "no aiperf-cli at $cli: cargo build -p aiperf-cli" >&2; exit 1; }
  "$cli" profile -m "$model" -u "$url" --endpoint-type completions --streaming \
    --extra-inputs ignore_eos:true --request-timeout-seconds 600 --fixed-schedule \
    --isl-block-size "$block" --tokenizer "$tokenizer" --input-file "$trace" \
    --artifact-dir "$run" --reset-prefix-cache "$@"
}

# measured and simulated numbers from the two runs' summaries (profile_export_aiperf.json), and
# per simulated run the requests whose cached tokens (records' usage) equal the measured ones
side_by_side() {
  python3 - "$1" "$2" <<'EOF'
import json, pathlib, sys
run, sim = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def numbers(folder):
    s = json.loads((folder / "profile_export_aiperf.json").read_text())
    hit = s.get("overall_usage_prompt_cache_read_pct", {}).get("avg")
    t = s.get("time_to_first_token", {})
    return hit, t.get("p50"), t.get("p99"), s.get("request_count", {}).get("avg")
def cached(folder):
    path, out = folder / "profile_export.jsonl", {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        r = json.loads(line)
        out[r.get("metadata", {}).get("trace_line")] = (r.get("metrics", {}).get("usage_prompt_cache_read_tokens") or {}).get("value")
    return out
def fmt(v, spec):
    return "-" if v is None else format(v, spec)
rows = [("measured", run)] + [(d.name, d) for d in sorted(sim.iterdir()) if (d / "profile_export_aiperf.json").is_file()]
measured = cached(run)
print(f"{'run':<40} {'requests':>8} {'hit %':>7} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12} {'same cached':>11}")
for name, folder in rows:
    hit, p50, p99, n = numbers(folder)
    c = cached(folder)
    same = sum(1 for line, v in measured.items() if line in c and c[line] == v)
    print(f"{name:<40} {fmt(n, '8.0f')} {fmt(hit, '7.2f')} {fmt(p50, '12.1f')} {fmt(p99, '12.1f')} {same:>11}")
# vLLM counts the prompt tokens it looked up and found in its prefix cache: over the run, they
# are the records' prompt and cached tokens unless something else used the server meanwhile
metrics = run / "server_metrics_export.json"
if metrics.is_file():
    m = json.loads(metrics.read_text()).get("metrics", {})
    total = lambda name: sum(s.get("stats", {}).get("total") or 0 for s in m.get(name, {}).get("series", []))
    if "vllm:prefix_cache_queries" in m:
        q, h = total("vllm:prefix_cache_queries"), total("vllm:prefix_cache_hits")
        print(f"server /metrics over the run: vllm:prefix_cache_hits {h:.0f} of vllm:prefix_cache_queries {q:.0f} ({100 * h / max(q, 1):.2f}%)")
EOF
}

simulate() {
  [[ $# -ge 3 ]] || usage
  local trace="$1" run="$2" sim="$3"; shift 3
  [[ -x "$cli" ]] || { echo "no aiperf-cli at $cli: cargo build -p aiperf-cli" >&2; exit 1; }
  "$cli" simulate "$trace" --block-size "$block" --calibrate "$run" --output-dir "$sim" --overwrite "$@"
  side_by_side "$run" "$sim" | tee "$sim/side_by_side.txt"
}

all() {
  [[ $# -ge 2 ]] || usage
  local trace="$1" out="$2"; shift 2
  local port="" backend="" kv_blocks=49 max_running="" server_args="" profile_args="" simulate_args=""
  local server_set=0 simulate_set=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --port) port="$2"; shift 2;;
      --backend) backend="$2"; shift 2;;
      --kv-blocks) kv_blocks="$2"; shift 2;;
      --max-running) max_running="$2"; shift 2;;
      --server-args) server_args="$2"; server_set=1; shift 2;;
      --profile-args) profile_args="$2"; shift 2;;
      --simulate-args) simulate_args="$2"; simulate_set=1; shift 2;;
      *) echo "unknown option $1" >&2; usage;;
    esac
  done
  if [[ $backend == vllm ]]; then
    max_running="${max_running:-4}"
    [[ $server_set == 1 ]] ||
      server_args="--backend vllm --kv-blocks $kv_blocks --block-size $block --max-num-seqs $max_running --ctx 2048"
    # vLLM's pool keeps one block back (its null block): the cache holds the others.
    [[ $simulate_set == 1 ]] || simulate_args="--replicas 1 --kv-blocks $((kv_blocks - 1)) --max-running $max_running"
  else
    max_running="${max_running:-2}"
    [[ $server_set == 1 ]] || server_args="${backend:+--backend $backend }--parallel $max_running --ctx 8192"
    [[ $simulate_set == 1 ]] || simulate_args="--replicas 1 --max-running $max_running"
  fi
  if [[ -z "$port" ]]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  fi
  mkdir -p "$out"
  local started model   # pid stays global: the EXIT trap reads it
  # shellcheck disable=SC2086 # the settings are words
  started=$(block_given=0 start "$port" $server_args)
  echo "$started"
  pid=$(sed -n 's/^PID=//p' <<<"$started")
  model=$(sed -n 's/^MODEL=//p' <<<"$started")
  trap '[[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null || true' EXIT
  # shellcheck disable=SC2086
  replay "http://127.0.0.1:$port" "$model" "$trace" "$out/measured" $profile_args
  kill "$pid" 2>/dev/null || true
  pid=""
  # shellcheck disable=SC2086
  simulate "$trace" "$out/measured" "$out/simulated" $simulate_args
}

run_test() {
  local port started model   # pid stays global: the EXIT trap reads it
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  started=$(start "$port" --parallel 2 --ctx 8192)
  echo "$started"
  pid=$(sed -n 's/^PID=//p' <<<"$started")
  model=$(sed -n 's/^MODEL=//p' <<<"$started")
  trap '[[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null || true' EXIT
  cd "$root"
  AIPERF_REAL_SERVER_URL="http://127.0.0.1:$port" AIPERF_REAL_SERVER_MODEL="$model" \
    cargo test -p aiperf-cli --test real_server_vs_simulate -- --ignored --nocapture
}

[[ $# -ge 1 ]] || usage
step="$1"; shift
# --block-size N anywhere among a step's arguments: the trace's tokens per hash id
args=()
while [[ $# -gt 0 ]]; do
  if [[ "$1" == --block-size ]]; then block="$2"; block_given=1; shift 2; else args+=("$1"); shift; fi
done
set -- "${args[@]+"${args[@]}"}"
case "$step" in
  start|replay|simulate|all) "$step" "$@";;
  test) run_test;;
  *) usage;;
esac
