#!/usr/bin/env python3
"""Order effect in a `tgemm bench --json` run: each row's speedup from the rounds where the
baseline ran first (even rounds) against the rounds where tgemm ran first (odd rounds).

    python3 bench/round_order.py bench.json [--same-config]

`tgemm bench` times the baseline and tgemm as two graphs in interleaved rounds, the order reversed
on odd rounds, and records each round's two medians (`round_baseline_us`, `round_tgemm_us`, since
session 12). Where the order matters (clocks falling within a round under sustained load), the
even-round and odd-round ratios differ in opposite directions and the paired median hides it in
noise. Session 12 saw rows running the baseline's own cuBLASLt configuration (`tgemm_algo` equal
to `baseline_algo`) measure 0.979-0.995x at M = 8192; this prints, per row, the two halves' medians
and their gap, and the geomeans. --same-config: only rows whose tgemm_algo equals baseline_algo.
Standard library only; no GPU.
"""

import argparse
import json
import math
import statistics
import sys


def halves(row):
    """(median of baseline/tgemm over even rounds, over odd rounds), or None without round data."""
    b, t = row.get("round_baseline_us"), row.get("round_tgemm_us")
    if not b or not t or len(b) != len(t):
        return None
    ratios = [(i, bi / ti) for i, (bi, ti) in enumerate(zip(b, t)) if bi > 0 and ti > 0]
    even = [r for i, r in ratios if i % 2 == 0]
    odd = [r for i, r in ratios if i % 2 == 1]
    if not even or not odd:
        return None
    return statistics.median(even), statistics.median(odd)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_json")
    ap.add_argument("--same-config", action="store_true",
                    help="only rows where tgemm runs the baseline's own cuBLASLt configuration")
    args = ap.parse_args(argv)
    with open(args.bench_json) as f:
        doc = json.load(f)
    evens, odds, skipped = [], [], 0
    for row in doc.get("rows", []):
        if args.same_config and row.get("tgemm_algo") != row.get("baseline_algo"):
            continue
        h = halves(row)
        if h is None:
            skipped += 1
            continue
        e, o = h
        evens.append(e)
        odds.append(o)
        print(f"M={row['M']} N={row['N']} K={row['K']}: speedup {row['speedup']:.3f}; baseline first "
              f"{e:.3f}, tgemm first {o:.3f} (gap {100 * (o - e) / e:+.2f}%)")
    if not evens:
        print(f"no rows with round data ({skipped} without)")
        return 0
    ge, go = geomean(evens), geomean(odds)
    print(f"{len(evens)} rows: geomean baseline first {ge:.4f}, tgemm first {go:.4f} "
          f"(gap {100 * (go - ge) / ge:+.2f}%); {skipped} rows without round data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
