#!/usr/bin/env bash
# Remakes tests/fixtures/aiperf-0.13.0-runs/: artifact folders written by AIPerf 0.13.0 itself
# (`aiperf profile`) against `aiperf-cli mock-server`, one per run shape, each small (<= 40
# requests), and the README.md there naming the exact command of each.
#
# Usage: scripts/make-aiperf-fixtures.sh [SHAPE...]   (default: every shape)
# Env: AIPERF_CLI (default target/debug/aiperf-cli, built when missing).
# Exit codes: those of scripts/aiperf-venv.sh (77: PyPI unreachable, nothing written).
#
# What is changed after AIPerf wrote a folder, and nothing else: `logs/` is left out; the
# absolute paths of the scratch folder and of the venv are made relative (`<shape>/...`) or
# `$AIPERF_VENV`; `inputs.json` (the prompts sent) is left out when over 200 KB.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$root/scripts/aiperf-venv.sh")"
version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("aiperf"))')"
out="$root/tests/fixtures/aiperf-$version-runs"
cli="${AIPERF_CLI:-$root/target/debug/aiperf-cli}"
[[ -x "$cli" ]] || (cd "$root" && cargo build -p aiperf-cli)

work="$(mktemp -d -t aiperf-fixtures.XXXXXX)"
mock_pid=""
dcgm_pid=""
cleanup() {
  [[ -n "$mock_pid" ]] && kill "$mock_pid" 2>/dev/null || true
  [[ -n "$dcgm_pid" ]] && kill "$dcgm_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"
# A DCGM exporter for the gpu-telemetry shape: the recorded page served as /metrics.
dcgm_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
dcgm_url="http://127.0.0.1:$dcgm_port/metrics"

# The traces the replay shapes use, written into the shape's folder before the run.
fixed_schedule_trace() {
  # The first 30 rows of the Mooncake conversation trace with input lengths divided by 32 (so
  # prompts stay small); hash_ids kept, so the run uses --prompt-input-tokens-block-size 16.
  python3 - "$root/tests/fixtures/traces/conversation_head500.synth_safe.jsonl" <<'EOF'
import json, math, sys
with open(sys.argv[1]) as f:
    for line in list(f)[:30]:
        r = json.loads(line)
        r["input_length"] = math.ceil(r["input_length"] / 32)
        print(json.dumps(r))
EOF
}
sessions_trace() {
  # 10 sessions of 3 turns: first turns 50 ms apart, later turns 20 ms after the previous answer.
  python3 - <<'EOF'
import json
for s in range(10):
    for t in range(3):
        row = {"session_id": f"s{s}", "input_length": 40 + 10 * t + s, "output_length": 8}
        row.update({"timestamp": 50 * s} if t == 0 else {"delay": 20})
        print(json.dumps(row))
EOF
}

# shape | mock-server options | aiperf profile options (after -m mock -u URL --tokenizer local/smollm2
# --ui-type none --random-seed 1 --artifact-dir SHAPE) | trace function or - | what it shows
shapes=(
  "fixed-schedule-streaming|--ttft-ms 20 --itl-ms 2|--endpoint-type chat --streaming --input-file fixed-schedule-streaming/trace.jsonl --custom-dataset-type mooncake_trace --fixed-schedule --synthesis-speedup-ratio 20 --synthesis-max-osl 32 --prompt-input-tokens-block-size 16|fixed_schedule_trace|Streaming chat replaying a Mooncake trace on its timestamps (fixed schedule, 20x speed-up, output capped at 32 tokens)."
  "sessions|--ttft-ms 10 --itl-ms 2|--endpoint-type chat --streaming --input-file sessions/trace.jsonl --custom-dataset-type mooncake_trace --fixed-schedule|sessions_trace|Multi-turn sessions from a trace (\`session_id\`, first-turn \`timestamp\`, later-turn \`delay\`), streaming chat, fixed schedule."
  "non-streaming|--ttft-ms 10 --itl-ms 1|--endpoint-type chat --request-count 30 --warmup-request-count 4 --concurrency 4 --synthetic-input-tokens-mean 60 --output-tokens-mean 12|-|Non-streaming chat, synthetic prompts, concurrency 4, with 4 warm-up requests before the 30 measured."
  "completions-streaming|--ttft-ms 10 --itl-ms 1|--endpoint-type completions --streaming --request-count 20 --concurrency 2 --synthetic-input-tokens-mean 60 --output-tokens-mean 12|-|Streaming \`/v1/completions\` (the endpoint type the mock failed before it labelled its answers \`text_completion\`)."
  "errors|--ttft-ms 10 --itl-ms 2 --error-rate 0.2 --disconnect-rate 0.1|--endpoint-type chat --streaming --request-count 30 --concurrency 3 --synthetic-input-tokens-mean 60 --output-tokens-mean 16|-|Streaming chat against a mock failing 20 % of requests with HTTP 500 and cutting 10 % of the streams halfway."
  "cancelled|--ttft-ms 20 --itl-ms 10|--endpoint-type chat --streaming --request-count 30 --concurrency 3 --synthetic-input-tokens-mean 60 --output-tokens-mean 16 --request-cancellation-rate 30 --request-cancellation-delay 0.08|-|Streaming chat with 30 % of requests cancelled by AIPerf 80 ms after sending (\`--request-cancellation-rate\`)."
  "timeslices-goodput|--ttft-ms 20 --itl-ms 3|--endpoint-type chat --streaming --request-count 24 --request-rate 12 --synthetic-input-tokens-mean 60 --output-tokens-mean 16 --slice-duration 1 --goodput 'time_to_first_token:30 request_latency:80'|-|Streaming chat at 12 requests/s in 1 s time slices (\`profile_export_aiperf_timeslices.*\`) with goodput SLOs."
  "server-metrics|--ttft-ms 20 --itl-ms 5 --slots 2|--endpoint-type chat --streaming --request-count 30 --concurrency 4 --synthetic-input-tokens-mean 60 --output-tokens-mean 16 --server-metrics-formats json csv jsonl parquet|-|Streaming chat queueing on a 2-slot mock, server metrics in every format (\`server_metrics_export.{json,csv,jsonl}\` kept; the parquet file is removed: a binary that keeps the machine's paths)."
  "gpu-telemetry|--ttft-ms 40 --itl-ms 10|--endpoint-type chat --streaming --request-count 24 --concurrency 1 --synthetic-input-tokens-mean 40 --output-tokens-mean 8 --gpu-telemetry $dcgm_url|-|Streaming chat with \`--gpu-telemetry\` scraping a DCGM exporter (the recorded page \`tests/fixtures/dcgm/dcgm-exporter-metrics.txt\`, GPU 0's power and energy moving at every scrape): \`gpu_telemetry_export.jsonl\` and the summary's \`telemetry_data\`."
  "raw-multi-turn|--ttft-ms 10 --itl-ms 1|--endpoint-type chat --streaming --conversation-num 4 --conversation-turn-mean 3 --request-count 12 --concurrency 2 --synthetic-input-tokens-mean 40 --output-tokens-mean 8 --export-level raw --export-http-trace|-|Synthetic multi-turn conversations (4 x 3 turns) with \`--export-level raw\` (\`profile_export_raw.jsonl\`: payloads and responses) and \`--export-http-trace\` (\`trace_data\` in every record)."
)

wanted=("$@")
want() { [[ ${#wanted[@]} -eq 0 ]] || printf '%s\n' "${wanted[@]}" | grep -qx "$1"; }

if want gpu-telemetry; then
  # The recorded page with GPU 0's power and energy moving at every request (AIPerf keeps a
  # scrape only when the page changed): n W over 500 W and n MJ more at the n-th.
  python3 - "$root/tests/fixtures/dcgm/dcgm-exporter-metrics.txt" "$dcgm_port" >"$work/dcgm.log" 2>&1 <<'EOF' &
import http.server, sys
page = open(sys.argv[1]).read()
served = [0]
class Exporter(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        served[0] += 1
        n = served[0]
        body = page.replace("} 512.337", "} %.3f" % (500 + n))
        body = body.replace("} 4518820913062", "} %d" % (4518820913062 + n * 1_000_000_000)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Exporter).serve_forever()
EOF
  dcgm_pid=$!
  for _ in $(seq 100); do curl -sf "$dcgm_url" >/dev/null 2>&1 && break; sleep 0.1; done
fi

mkdir -p "$out"
for entry in "${shapes[@]}"; do
  IFS='|' read -r shape mock_opts aiperf_opts trace _ <<<"$entry"
  want "$shape" || continue
  echo "==> $shape" >&2
  mkdir -p "$work/$shape"
  [[ "$trace" == - ]] || "$trace" >"$work/$shape/trace.jsonl"
  # shellcheck disable=SC2086 # the option strings are word lists on purpose
  "$cli" mock-server --port "$port" --exit-after-seconds 600 $mock_opts >"$work/mock.log" 2>&1 &
  mock_pid=$!
  for _ in $(seq 100); do curl -sf "$url/health" >/dev/null 2>&1 && break; sleep 0.1; done
  cmd="aiperf profile -m mock -u $url --tokenizer local/smollm2 --ui-type none --random-seed 1 --artifact-dir $shape $aiperf_opts"
  # eval: the option strings are shell words (one option value holds a quoted space).
  if ! (cd "$work" && eval "\"\$venv/bin/aiperf-offline\" ${cmd#aiperf }" >"$work/$shape.out" 2>&1); then
    tail -30 "$work/$shape.out" >&2
    echo "aiperf failed on $shape" >&2
    exit 1
  fi
  kill "$mock_pid"
  wait "$mock_pid" 2>/dev/null || true
  mock_pid=""

  rm -rf "$work/$shape/logs"
  if [[ -f "$work/$shape/inputs.json" && $(stat -c %s "$work/$shape/inputs.json") -gt 200000 ]]; then
    rm "$work/$shape/inputs.json"
  fi
  # The parquet export is a binary that keeps this machine's paths, and nothing here reads it.
  rm -f "$work/$shape/server_metrics_export.parquet"
  # Absolute paths made relative.
  grep -rlIF -e "$work/" -e "$venv" "$work/$shape" 2>/dev/null | while read -r f; do
    sed -i -e "s#$work/##g" -e "s#$venv#\$AIPERF_VENV#g" "$f"
  done
  rm -rf "${out:?}/$shape"
  cp -r "$work/$shape" "$out/$shape"
  printf '%s\n%s\n' "aiperf-cli mock-server --port $port $mock_opts" "$cmd" >"$out/$shape/COMMAND.txt"
done

# The README: every shape's commands, file list and sizes.
{
  cat <<EOF
# Runs written by AIPerf $version

Artifact folders exactly as \`aiperf profile\` $version wrote them against \`aiperf-cli mock-server\`,
one per run shape, remade by \`scripts/make-aiperf-fixtures.sh [SHAPE...]\` (AIPerf from
\`scripts/aiperf-venv.sh\`; its \`aiperf-offline\` wrapper sets \`HF_HOME\` to a local cache holding
the SmolLM2 tokenizer as \`local/smollm2\`, with \`HF_HUB_OFFLINE=1\`). What the script changes
after AIPerf wrote a folder, and nothing else: \`logs/\` left out; the scratch folder's absolute
path removed from paths (so they read \`<shape>/...\`) and the venv's replaced by \`\$AIPERF_VENV\`;
\`inputs.json\` left out when over 200 KB. \`trace.jsonl\`, where present, is the input file
the run replayed (written before the run into its artifact folder). Each folder's \`COMMAND.txt\`
holds the two commands of its run (the mock, then AIPerf, run from the scratch folder).

The formats are described in \`docs/aiperf-formats.md\`.

EOF
  for entry in "${shapes[@]}"; do
    IFS='|' read -r shape _ _ _ description <<<"$entry"
    [[ -d "$out/$shape" ]] || continue
    echo "## \`$shape/\`"
    echo
    echo "$description"
    echo
    echo '```sh'
    cat "$out/$shape/COMMAND.txt"
    echo '```'
    echo
    (cd "$out/$shape" && find . -type f ! -name COMMAND.txt | sort | while read -r f; do
      printf -- '- `%s` (%s bytes)\n' "${f#./}" "$(stat -c %s "$f")"
    done)
    echo
  done
} >"$out/README.md"
du -sh "$out" >&2
echo "$out"
