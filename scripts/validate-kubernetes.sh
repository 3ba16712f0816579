#!/usr/bin/env bash
# Validates deploy/kubernetes/*.yaml offline: strictly against the Kubernetes 1.32 OpenAPI
# schemas bundled with kubernetes-validate (unknown fields, wrong types and missing required
# fields fail), then the example's own consistency (N in completions, parallelism and SHARDS;
# K from JOB_COMPLETION_INDEX; the merge reads what the shards write). A deliberately broken
# copy must fail, so the check itself is checked.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.32.0
VENV=target/kubernetes-validate
if [ ! -x "$VENV/bin/kubernetes-validate" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "kubernetes-validate==$VERSION"
fi
got=$("$VENV/bin/pip" show kubernetes-validate | sed -n 's/^Version: //p')
if [ "$got" != "$VERSION" ]; then
  echo "kubernetes-validate $got installed in $VENV, $VERSION expected; remove $VENV and run again" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in deploy/kubernetes/*.yaml; do
  # The manifests carry ${…} placeholders for envsubst; validate what a user applies.
  AIPERF_RUN=r1 AIPERF_IMAGE=registry.example/aiperf-cli:0.1.0 AIPERF_START_AT=2026-11-23T22:00:00Z \
    AIPERF_MODEL=m AIPERF_TARGET_URL=http://router:8000 \
    envsubst '${AIPERF_RUN} ${AIPERF_IMAGE} ${AIPERF_START_AT} ${AIPERF_MODEL} ${AIPERF_TARGET_URL}' \
    < "$f" > "$tmp/$(basename "$f")"
done
"$VENV/bin/kubernetes-validate" --strict --quiet -k "$VERSION" "$tmp"/*.yaml
"$VENV/bin/python" - "$tmp" <<'PY'
import sys, yaml, pathlib, re
d = pathlib.Path(sys.argv[1])
docs = [x for f in sorted(d.glob("*.yaml")) for x in yaml.safe_load_all(f.read_text()) if x]
jobs = {x["metadata"]["name"]: x for x in docs if x["kind"] == "Job"}
shards = jobs["aiperf-shards-r1"]["spec"]
merge = jobs["aiperf-merge-r1"]["spec"]
c = shards["template"]["spec"]["containers"][0]
env = {e["name"]: e.get("value") for e in c["env"]}
fail = []
if shards.get("completionMode") != "Indexed":
    fail.append("the shards' Job must be Indexed (K from JOB_COMPLETION_INDEX)")
if not (shards["completions"] == shards["parallelism"] == int(env["SHARDS"])):
    fail.append(f"completions {shards['completions']}, parallelism {shards['parallelism']} and SHARDS {env['SHARDS']} must be equal")
cmd = " ".join(c["args"])
for need in ['--shard "$JOB_COMPLETION_INDEX/$SHARDS"', '--start-at "$START_AT"', '/data/runs/$RUN/shard-$JOB_COMPLETION_INDEX']:
    if need not in cmd:
        fail.append(f"the shard command lacks {need}")
if shards.get("backoffLimit") != 0:
    fail.append("a retried shard would send its requests twice: backoffLimit must be 0")
mcmd = " ".join(merge["template"]["spec"]["containers"][0]["args"])
if "merge /data/runs/$RUN/shard-*" not in mcmd:
    fail.append("the merge step must read /data/runs/$RUN/shard-*")
claims = {v["persistentVolumeClaim"]["claimName"] for j in jobs.values() for v in j["spec"]["template"]["spec"]["volumes"]}
pvcs = {x["metadata"]["name"] for x in docs if x["kind"] == "PersistentVolumeClaim"}
if not claims <= pvcs:
    fail.append(f"volumes claim {claims - pvcs}, not defined")
left = [m for f in d.glob("*.yaml") for m in re.findall(r"\$\{AIPERF_\w+\}", f.read_text())]
if left:
    fail.append(f"placeholders not substituted: {left}")
for f in fail:
    print("error:", f, file=sys.stderr)
sys.exit(1 if fail else 0)
PY
# The check must be able to fail: a misspelled field is refused.
sed 's/completionMode: Indexed/completionModes: Indexed/' "$tmp/shards-job.yaml" > "$tmp/broken.yaml.bad"
if "$VENV/bin/kubernetes-validate" --strict --quiet -k "$VERSION" "$tmp/broken.yaml.bad" >/dev/null 2>&1; then
  echo "kubernetes-validate accepted a misspelled field: the validation is not working" >&2
  exit 1
fi
echo "deploy/kubernetes: valid (Kubernetes $VERSION schemas, strict) and consistent"
