"""Compares the comparison tables (comparison.txt) of AIPerf's runs and ours, seed by seed.

Usage: agentic_parity.py WORK SEEDS, with AIPerf's runs under WORK/aiperf/SEED/<run folder>/ and
ours under WORK/ours/SEED/. Prints a Markdown table and exits 1 when a row disagrees (see
agentic-parity.sh for the criterion).
"""

import glob
import math
import sys


def rows(path):
    """(section, label) -> the Dataset column of every numeric row of a comparison.txt."""
    out, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or set(line.strip()) <= {"-", "="}:
                continue
            if not line.startswith(" "):
                section = line
                continue
            label, value = line[2:40].strip(), line[52:64].strip().replace(",", "")
            try:
                out[(section, label)] = float(value)
            except ValueError:
                pass
    return out


def stats(values):
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, math.sqrt(var / n)


def main():
    work, seeds = sys.argv[1], int(sys.argv[2])
    theirs, ours = [], []
    for seed in range(1, seeds + 1):
        (run,) = glob.glob(f"{work}/aiperf/{seed}/*/comparison.txt")
        theirs.append(rows(run))
        ours.append(rows(f"{work}/ours/{seed}/comparison.txt"))
    keys = list(theirs[0])
    print("| row | AIPerf mean ± se | ours mean ± se | difference | agrees |")
    print("|---|---:|---:|---:|---|")
    bad = 0
    for key in keys:
        a, sa = stats([t[key] for t in theirs])
        o, so = stats([t.get(key, math.nan) for t in ours])
        diff = o - a
        pct = diff / a * 100 if a else 0.0
        within5 = abs(diff) <= 0.05 * abs(a)
        within3se = abs(diff) <= 3 * math.sqrt(sa * sa + so * so)
        ok = within5 or within3se
        bad += not ok
        how = "±5%" if within5 else ("3 se" if within3se else "NO")
        section = key[0].split(" (")[0]
        print(f"| {section}: {key[1]} | {a:,.1f} ± {sa:,.1f} | {o:,.1f} ± {so:,.1f} | {pct:+.1f}% | {how} |")
    print(f"\n{len(keys) - bad} of {len(keys)} rows agree")
    sys.exit(1 if bad else 0)


main()
