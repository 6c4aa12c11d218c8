#!/usr/bin/env python3
"""Agreement of two tuned tables judged on several `tgemm compare --measure` runs.

    python3 bench/compare_runs.py run1.json run2.json [run3.json ...] [--tie-band 0.01]

Each input is the `--json` output of `tgemm compare --measure A.csv B.csv`, every run a fresh
process (one pair of configurations measured +3.5% in one process and -2.1% in another, each
over 4 placements). A row that differs is judged on the median over the runs of
its paired ratio (A's time / B's): a tie when the faster is within the tie band of the slower.
Prints each differing row with its ratios per run, then the agree-or-tie count by the median and
by each run alone. Standard library only; no GPU.
"""

import argparse
import json
import statistics
import sys


def read_run(path):
    with open(path) as f:
        doc = json.load(f)
    if not doc.get("measure"):
        raise SystemExit(f"{path}: not a --measure run (tgemm compare --measure ... --json)")
    return doc


def verdict(ratio, band):
    """'tie', 'a_faster' or 'b_faster' for a paired ratio A/B."""
    lo, hi = min(ratio, 1.0), max(ratio, 1.0)
    if hi <= lo * (1.0 + band):
        return "tie"
    return "a_faster" if ratio < 1.0 else "b_faster"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="tgemm compare --measure --json outputs of the same two tables")
    ap.add_argument("--tie-band", type=float, default=None,
                    help="fraction (default: the runs' own tie band)")
    args = ap.parse_args(argv)
    runs = [read_run(p) for p in args.runs]
    for r, p in zip(runs[1:], args.runs[1:]):
        if (r["a"], r["b"]) != (runs[0]["a"], runs[0]["b"]):
            raise SystemExit(f"{p}: compares {r['a']} and {r['b']}, the first run {runs[0]['a']} and {runs[0]['b']}")
    band = args.tie_band if args.tie_band is not None else runs[0]["tie_band"]

    # (problem, M) -> the row of each run
    keys = []
    rows = {}
    for i, run in enumerate(runs):
        for row in run["rows"]:
            k = (row["problem"], row["m"])
            if k not in rows:
                keys.append(k)
                rows[k] = [None] * len(runs)
            rows[k][i] = row
    common = len(keys)
    agree = 0
    per_run_agree = [0] * len(runs)
    unmeasured = 0
    print(f"{len(runs)} runs of {runs[0]['a']} | {runs[0]['b']}, tie band {band * 100:.1f}%")
    for k in keys:
        rs = rows[k]
        if any(r is None for r in rs):
            raise SystemExit(f"{k[0]} M={k[1]}: not in every run")
        if rs[0]["verdict"] == "identical":
            agree += 1
            per_run_agree = [n + 1 for n in per_run_agree]
            continue
        ratios = [r.get("ratio") for r in rs]
        if any(x is None or x <= 0 for x in ratios):
            unmeasured += 1
            print(f"  {k[0]} M={k[1]}: not measured in every run")
            continue
        med = statistics.median(ratios)
        v = verdict(med, band)
        agree += v == "tie"
        for i, x in enumerate(ratios):
            per_run_agree[i] += verdict(x, band) == "tie"
        spread = ", ".join(f"{(1.0 / x - 1.0) * 100:+.2f}%" for x in ratios)
        print(f"  {k[0]} M={k[1]}: B {(1.0 / med - 1.0) * 100:+.2f}% vs A by the median (runs: {spread}): {v}")
    pct = 100.0 * agree / common if common else 0.0
    print(f"{common} rows: {agree} agree or tie by the median of {len(runs)} runs ({pct:.1f}%); "
          f"{unmeasured} not measured")
    print("by each run alone: " + ", ".join(
        f"{n} ({100.0 * n / common:.1f}%)" if common else "0" for n in per_run_agree))
    return 0


if __name__ == "__main__":
    sys.exit(main())
