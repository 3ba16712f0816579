"""Prints the metric table of docs/aiperf-formats.md: every metric AIPerf can write to
`profile_export_aiperf.json`, from its own registry and modules, against the runs in
tests/fixtures/aiperf-<version>-runs/ (which statistics each metric has there, and in which
run shapes it appears in the summary and in the per-request records).

Run with the AIPerf venv's Python:  "$(scripts/aiperf-venv.sh)/bin/python" tools/aiperf_metric_table.py
"""

import json
import sys
from pathlib import Path

import aiperf
from aiperf.analysis.sweepline import SWEEP_LINE_METRIC_SPECS
from aiperf.metrics.metric_registry import MetricRegistry

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "tests/fixtures" / f"aiperf-{aiperf.__version__}-runs"

# One letter per run shape, in the README's order.
SHAPES = {
    "fixed-schedule-streaming": "F",
    "sessions": "S",
    "non-streaming": "N",
    "completions-streaming": "C",
    "errors": "E",
    "cancelled": "X",
    "timeslices-goodput": "T",
    "server-metrics": "M",
    "raw-multi-turn": "R",
}

FULL = {"unit", "avg", "min", "max", "sum", "count", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"}
SWEEP = {"unit", "avg", "min", "max", "std", "p50", "p90", "p95", "p99"}


def stats_label(keys: set[str]) -> str:
    if keys == FULL:
        return "full"
    if keys == SWEEP:
        return "time-weighted"
    if keys == {"unit", "avg"}:
        return "avg"
    return "finite of: " + ",".join(sorted(keys - {"unit"}, key=lambda k: (len(k), k)))


def main() -> None:
    # tag -> (display name, unit shown, kind, flags, source)
    metrics: dict[str, tuple[str, str, str, str]] = {}
    for cls in MetricRegistry.all_classes():
        unit = str(cls.display_unit or cls.unit)
        flags = str(cls.flags).removeprefix("MetricFlags.").replace("|", ", ")
        metrics[cls.tag] = (cls.header, unit, str(cls.type).removeprefix("MetricType."), flags)
    # Computed outside the registry (aiperf/analysis/sweepline.py, aiperf/metrics/derived_latency.py).
    for spec in SWEEP_LINE_METRIC_SPECS:
        metrics[spec.tag] = (spec.header, spec.unit, "sweep-line", "")
    for tag, header, unit in [
        ("active_decode_throughput", "Active Decode Throughput", "tokens/sec"),
        ("active_prefill_throughput", "Active Prefill Throughput", "tokens/sec"),
        ("active_decode_throughput_per_user", "Active Decode Throughput Per User", "tokens/sec/user"),
        ("active_prefill_throughput_per_user", "Active Prefill Throughput Per User", "tokens/sec/user"),
        ("active_total_throughput", "Active Total Throughput", "tokens/sec"),
    ]:
        metrics[tag] = (header, unit, "sweep-line", "")
    metrics["credit_to_start_latency"] = ("Credit-to-Start Latency", "ms", "column-store", "")
    metrics["effective_latency"] = ("Effective Latency (CO-aware)", "ms", "column-store", "")

    in_summary: dict[str, str] = {}
    in_records: dict[str, str] = {}
    stats: dict[str, set[str]] = {}
    counts: dict[str, tuple[int, int]] = {}
    for shape, letter in SHAPES.items():
        folder = RUNS / shape
        if not folder.is_dir():
            continue
        summary = json.loads((folder / "profile_export_aiperf.json").read_text())
        tags = [k for k, v in summary.items() if isinstance(v, dict) and "unit" in v]
        for tag in tags:
            in_summary[tag] = in_summary.get(tag, "") + letter
            stats.setdefault(tag, set()).add(stats_label(set(summary[tag])))
            if tag.startswith("adj_") and tag[4:] in metrics:
                # aiperf/metrics/derived_latency.py::inject_adjusted_latency_metrics: each failed
                # request counts as an infinite latency; non-finite statistics are dropped.
                parent = metrics[tag[4:]]
                metrics[tag] = (f"{parent[0]} (error-adjusted)", parent[1], "error-adjusted", "")
            metrics.setdefault(tag, ("?", summary[tag]["unit"], "?", ""))
        seen: set[str] = set()
        with open(folder / "profile_export.jsonl") as f:
            for line in f:
                seen.update(json.loads(line).get("metrics", {}))
        for tag in seen:
            in_records[tag] = in_records.get(tag, "") + letter
        counts[shape] = (len(tags), len(seen))

    print(f"Metric classes in `MetricRegistry` of AIPerf {aiperf.__version__}: "
          f"{len(MetricRegistry.all_classes())}; in this table: {len(metrics)}.\n")
    print("| shape | letter | metrics in `profile_export_aiperf.json` | metric keys in `profile_export.jsonl` lines |")
    print("|---|---|---|---|")
    for shape, letter in SHAPES.items():
        if shape in counts:
            print(f"| `{shape}` | {letter} | {counts[shape][0]} | {counts[shape][1]} |")
    print()
    print("| tag | display name | unit | kind | flags | JSON stats | summary in | records in |")
    print("|---|---|---|---|---|---|---|---|")
    order = sorted(metrics, key=lambda t: (t not in in_summary, t))
    for tag in order:
        header, unit, kind, flags = metrics[tag]
        st = " / ".join(sorted(stats.get(tag, set()))) or "-"
        print(f"| `{tag}` | {header} | {unit} | {kind} | {flags} | {st} | "
              f"{in_summary.get(tag, '-')} | {in_records.get(tag, '-')} |")


if __name__ == "__main__":
    sys.exit(main())
