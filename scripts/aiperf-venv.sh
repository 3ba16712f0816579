#!/usr/bin/env bash
# Creates (or reuses) the virtual environment with NVIDIA AIPerf, pinned, that every test judging
# our formats by AIPerf's own code uses, and prints its path (one line, on stdout).
#
#   venv="$(scripts/aiperf-venv.sh)"; rc=$?    # rc 77: PyPI unreachable, skip with the message
#   "$venv/bin/aiperf-offline" profile ... --tokenizer local/smollm2
#
# The venv lives at $AIPERF_VENV (default ~/.cache/aiperf-rs/aiperf-venv-VERSION, outside the
# checkout, so that fresh clones on the same machine, CI's among them, reuse it). A stamp file written
# after a complete install makes a re-run instant; a stamp of another version rebuilds the venv.
#
# AIPerf only loads tokenizers by Hugging Face name, and the Hub can't be reached, so the script
# also lays out a Hugging Face cache at $venv/hf-home holding the SmolLM2-135M tokenizer of
# tests/fixtures/tokenizers/smollm2-135m as the model `local/smollm2`, and writes the wrapper
# $venv/bin/aiperf-offline, which runs `aiperf` with HF_HOME at that cache and the Hub offline.
#
# Exit codes: 0 ready; 77 the package registry can't be reached (one line on stderr, starting
# "aiperf-venv: SKIP:"); anything else is a real failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version=0.13.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/aiperf-rs"
venv="${AIPERF_VENV:-$cache/aiperf-venv-$version}"
stamp="$venv/.aiperf-venv-stamp"
# The stamp names the version and the tokenizer cache layout; bump `layout` when the layout changes.
layout=1
want="aiperf==$version layout=$layout"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/aiperf-offline" ]]; then
  echo "$venv"
  exit 0
fi

log() { echo "aiperf-venv: $*" >&2; }
python="${PYTHON:-python3}"
# AIPerf 0.13.0 requires Python >=3.11,<3.14.
if ! "$python" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 14)))'; then
  log "AIPerf $version needs Python 3.11-3.13; $("$python" --version 2>&1) found (set PYTHON=...)"
  exit 1
fi

# Probe the registry first with a short timeout, so "offline" is told apart from a broken install.
# The wheel it downloads is the one installed below.
dl="$cache/aiperf-dl"
mkdir -p "$dl"
if ! "$python" -m pip download -q --disable-pip-version-check --no-deps --timeout 20 --retries 1 \
  -d "$dl" "aiperf==$version" >"$dl/probe.log" 2>&1; then
  log "SKIP: the package registry (PyPI) can't be reached: aiperf==$version not installed ($(tail -1 "$dl/probe.log"))"
  exit 77
fi

t0=$(date +%s)
log "creating $venv with aiperf==$version (a few minutes the first time)"
rm -rf "$venv"
"$python" -m venv "$venv"
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --find-links "$dl" \
  "aiperf==$version" >"$dl/install.log" 2>&1; then
  tail -20 "$dl/install.log" >&2
  # A registry that answered the probe but dropped the dependencies is still "unreachable".
  if grep -qiE 'connection|timed out|temporary failure|network is unreachable|max retries' "$dl/install.log"; then
    log "SKIP: the package registry (PyPI) stopped answering while installing aiperf==$version"
    exit 77
  fi
  log "pip install aiperf==$version failed (log: $dl/install.log)"
  exit 1
fi

# The Hugging Face cache: models--local--smollm2/{refs/main, snapshots/<revision>/<files>}.
# AIPerf's offline path resolves it with snapshot_download(local_files_only=True) and loads the
# snapshot folder, so no config.json is needed.
hub="$venv/hf-home/hub/models--local--smollm2"
revision=0000000000000000000000000000000000000001
rm -rf "$hub"
mkdir -p "$hub/refs" "$hub/snapshots/$revision"
printf '%s' "$revision" >"$hub/refs/main"
cp "$root/tests/fixtures/tokenizers/smollm2-135m/"{tokenizer.json,tokenizer_config.json,chat_template.jinja} \
  "$hub/snapshots/$revision/"

cat >"$venv/bin/aiperf-offline" <<EOF
#!/usr/bin/env bash
# aiperf with the local Hugging Face cache (tokenizer \`local/smollm2\`) and the Hub offline.
export HF_HOME="$venv/hf-home" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
exec "$venv/bin/aiperf" "\$@"
EOF
chmod +x "$venv/bin/aiperf-offline"

got="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("aiperf"))')"
if [[ "$got" != "$version" ]]; then
  log "installed aiperf is $got, not $version"
  exit 1
fi
# The tokenizer must load the way AIPerf loads it, or every run would fail later and less clearly.
if ! HF_HOME="$venv/hf-home" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$venv/bin/python" -c \
  'from aiperf.common.tokenizer import Tokenizer; t = Tokenizer.from_pretrained("local/smollm2"); assert len(t.encode("hello world")) == 2' >&2; then
  log "the offline tokenizer local/smollm2 does not load"
  exit 1
fi
echo "$want" >"$stamp"
log "ready in $(($(date +%s) - t0)) s"
echo "$venv"
