#!/usr/bin/env python3
"""Send lateness over plain HTTP, HTTPS and two URLs, side by side (BENCHMARKS.md, "Endpoints").

Usage: cargo build --release -p aiperf-cli && python3 tools/bench_endpoints.py [RATE] [N] [ROUNDS]

Each round replays the same fixed-schedule trace (N single-turn sessions, one every 1/RATE s,
512-token prompts, 16 streamed output tokens, ignore_eos) against a release `mock-server`:
plain HTTP, HTTPS (the test certificate, trusted with --ssl-ca-cert), and two plain mocks with
`--url` twice; the variants are interleaved. Lateness at the server: request i scheduled at s_i
arrives at a_i; lateness = (a_i - s_i) - min_j(a_j - s_j) (as in examples/replay_bench.rs).
The client's own figure (send_lateness in profile_export_aiperf.json) is shown beside it.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("AIPERF_CLI", os.path.join(ROOT, "target/release/aiperf-cli"))
TLS = os.path.join(ROOT, "tests/fixtures/tls")
TOKENIZER = os.path.join(ROOT, "tests/fixtures/tokenizers/smollm2-135m/tokenizer.json")


def mock(tmp, name, tls):
    arrivals = os.path.join(tmp, name + ".arrivals.jsonl")
    args = [BIN, "mock-server", "--port", "0", "--exit-after-seconds", "3600", "--arrivals-file", arrivals]
    if tls:
        args += ["--tls-cert", os.path.join(TLS, "server.pem"), "--tls-key", os.path.join(TLS, "server-key.pem")]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = p.stdout.readline().strip().split(" ")[-1]
    return p, url, arrivals


def pct(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def run(tmp, name, urls, arrival_files, period_ms, extra):
    art = os.path.join(tmp, name + ".art")
    # The mocks keep appending to their logs: only the lines of this run count.
    seen = {f: sum(1 for _ in open(f)) if os.path.exists(f) else 0 for f in arrival_files}
    args = [BIN, "profile", "-m", "m", "--streaming", "--tokenizer", TOKENIZER, "--input-file",
            os.path.join(tmp, "trace.jsonl"), "--artifact-dir", art, "--extra-inputs", "ignore_eos:true",
            "--ui-type", "none"] + extra
    for u in urls:
        args += ["--url", u]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr)
    rel = []
    for f in arrival_files:
        for line in list(open(f))[seen[f]:]:
            a = json.loads(line)
            run_index = int(a["headers"]["request_id"].split("-")[1])
            rel.append(int(a["arrival_ns"]) / 1e6 - run_index * period_ms)
    base = min(rel)
    late = [r - base for r in rel]
    s = json.load(open(os.path.join(art, "profile_export_aiperf.json")))
    sl = s["send_lateness"]
    return (pct(late, 50), pct(late, 99), max(late), sl["p50"], sl["p99"], s["request_count"]["avg"])


def main():
    rate = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    period_ms = 1000.0 / rate
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "trace.jsonl"), "w") as f:
            for i in range(n):
                ids = list(range(i * 1000, i * 1000 + 1))
                f.write(json.dumps({"timestamp": round(i * period_ms, 3), "input_length": 512,
                                    "output_length": 16, "hash_ids": ids}) + "\n")
        mocks = {k: mock(tmp, k, k == "tls") for k in ["plain", "tls", "second"]}
        try:
            ca = ["--ssl-ca-cert", os.path.join(TLS, "ca.pem")]
            variants = [
                ("http", [mocks["plain"][1]], [mocks["plain"][2]], []),
                ("https", [mocks["tls"][1]], [mocks["tls"][2]], ca),
                ("http, 2 URLs", [mocks["plain"][1], mocks["second"][1]], [mocks["plain"][2], mocks["second"][2]], []),
            ]
            print(f"rate {rate} req/s, {n} requests, load average {os.getloadavg()[0]:.1f}")
            print("| variant | round | lateness at the server p50 / p99 / max (ms) | client-reported p50 / p99 (ms) | requests |")
            print("|---|---|---|---|---|")
            for r in range(rounds):
                for name, urls, files, extra in variants:
                    p50, p99, mx, c50, c99, count = run(tmp, f"{name}-{r}".replace(" ", "_").replace(",", ""), urls,
                                                        files, period_ms, extra)
                    print(f"| {name} | {r + 1} | {p50:.3f} / {p99:.3f} / {mx:.2f} | {c50:.3f} / {c99:.3f} | {count:.0f} |",
                          flush=True)
            print(f"load average after: {os.getloadavg()[0]:.1f}")
        finally:
            for p, _, _ in mocks.values():
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
