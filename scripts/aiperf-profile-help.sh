#!/usr/bin/env bash
# Saves `aiperf profile --help` of the pinned AIPerf, verbatim, to
# tests/fixtures/aiperf-<version>-profile-help.txt, under one header line naming the version and
# the terminal width it was rendered at (rich wraps to COLUMNS; 160 keeps every option name on
# its line). Tests derive AIPerf's option list from that file.
# Exit codes: those of scripts/aiperf-venv.sh (77: PyPI unreachable, nothing written).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$root/scripts/aiperf-venv.sh")"
version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("aiperf"))')"
out="$root/tests/fixtures/aiperf-$version-profile-help.txt"
columns=160
help="$(COLUMNS=$columns NO_COLOR=1 TERM=dumb "$venv/bin/aiperf-offline" profile --help)"
{
  echo "# aiperf $version: aiperf profile --help (COLUMNS=$columns), written by scripts/aiperf-profile-help.sh"
  printf '%s\n' "$help"
} >"$out"
echo "$out"
