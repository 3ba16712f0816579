#!/usr/bin/env bash
# Saves every bundled `aiperf config init` template of the pinned AIPerf, as the command prints
# it (offline: no --model/--url overrides), to tests/fixtures/aiperf-<version>-templates/<name>.yaml,
# with the command's --list output as list.txt and the traces the templates name (data/).
# Exit codes: those of scripts/aiperf-venv.sh (77: PyPI unreachable, nothing written).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$("$root/scripts/aiperf-venv.sh")"
version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("aiperf"))')"
out="$root/tests/fixtures/aiperf-$version-templates"
rm -rf "$out"
mkdir -p "$out"
aiperf() { COLUMNS=160 NO_COLOR=1 TERM=dumb "$venv/bin/aiperf-offline" "$@"; }
aiperf config init --list --verbose >"$out/list.txt"
# The names are the first column of the list's table rows (lower-case identifiers).
names=$(grep -oE '^[a-z][a-z0-9_]+ ' "$out/list.txt" | sort -u)
for name in $names; do
  aiperf config init --template "$name" >"$out/$name.yaml"
done
# fixed_schedule and trace_replay name the traces shipped beside the templates (data/).
cp -r "$("$venv/bin/python" -c 'import aiperf.config.templates as t, os; print(os.path.dirname(t.__file__))')/data" "$out/data"
echo "$out ($(echo "$names" | wc -l) templates)"
