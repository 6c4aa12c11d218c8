#!/usr/bin/env python3
"""Per-launch cost and bandwidth of the decode kernels: time over bytes, fitted per problem set.

    python3 bench/skinny_fixed_cost.py BENCH.json [--profile PROF.csv[.gz]] [--compare PROF2.csv[.gz]]
                                      [--top 8]

Reads a `tgemm bench --json` run over a suite whose problems span a range of weight sizes
(bench/shapes/skinny_fixed_cost.csv: N = 576 with K = 64 .. 7168, and larger). For each M, it fits
t = t0 + bytes / BW (least squares; bytes = the weight plus x, in bf16/fp16 elements of 2 bytes)
to three series:
- the streaming-read floor (`floor_us`);
- cuBLASLt's default (`baseline_us`);
- tgemm's dispatch (`tgemm_us`).

t0 is the per-launch cost (launch, ramp-up, tail) and BW the streaming rate. With --profile (a
`tgemm tune --profile_file` of the same problems), the same fit runs for every candidate timed on
at least four of the problems (accurate time where measured, else the screen's), and it prints
the `--top` lowest per-launch costs with their rates. With --compare (a second profile of the same
candidates, e.g. with programmatic dependent launch on), it also prints the median ratio of each
candidate's time in the second profile to its time in the first, by weight size. Standard
library only; no GPU. docs/perf-notes.md, skinny, "Session 8", says what the fit decides.
"""

import argparse
import csv
import gzip
import json
import statistics
import sys


def read_csv(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def problem_bytes(m, n, k):
    return 2 * (n * k + m * k)


def fit(points):
    """Least-squares t = t0 + b * bytes over (bytes, us) points: (t0 in us, rate in TB/s), or None
    with fewer than two distinct sizes or a non-positive slope."""
    if len({x for x, _ in points}) < 2:
        return None
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    if slope <= 0:
        return None
    return my - slope * mx, 1e-6 / slope  # bytes per us -> TB/s: 1 / slope bytes/us = 1e-6/slope TB/s


def fmt_fit(f):
    return "   n/a" if f is None else f"t0 {f[0]:6.2f} us, {f[1]:5.2f} TB/s"


def candidate_times(profile):
    """{(m, n, k): {name: us}}: the accurate time where measured, else the screen's; failed or
    unchecked-bad candidates left out."""
    out = {}
    for r in profile:
        if r.get("error") or r.get("strict_ok") == "False":
            continue
        us = float(r.get("us") or -1)
        if us <= 0:
            us = float(r.get("screen_us") or -1)
        if us <= 0:
            continue
        out.setdefault((int(r["M"]), int(r["N"]), int(r["K"])), {})[r["kernelName"]] = us
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench")
    ap.add_argument("--profile")
    ap.add_argument("--compare")
    ap.add_argument("--top", type=int, default=8)
    a = ap.parse_args(argv)

    with open(a.bench) as f:
        rows = json.load(f)["rows"]
    ms = sorted({int(r["M"]) for r in rows})
    for m in ms:
        mine = [r for r in rows if int(r["M"]) == m]
        print(f"M = {m}: {len(mine)} problems")
        for label, key in (("floor", "floor_us"), ("cuBLASLt default", "baseline_us"), ("tgemm dispatch", "tgemm_us")):
            pts = [(problem_bytes(m, int(r["N"]), int(r["K"])), float(r[key])) for r in mine if float(r.get(key) or -1) > 0]
            print(f"  {label:18s} {fmt_fit(fit(pts))}")

    if a.profile:
        times = candidate_times(read_csv(a.profile))
        for m in ms:
            per_name = {}
            for (pm, n, k), cands in times.items():
                if pm != m:
                    continue
                for name, us in cands.items():
                    per_name.setdefault(name, []).append((problem_bytes(m, n, k), us))
            fits = [(name, fit(p), len(p)) for name, p in per_name.items() if len(p) >= 4]
            fits = sorted((x for x in fits if x[1] is not None), key=lambda x: x[1][0])
            print(f"M = {m}: lowest per-launch cost of {len(fits)} candidates fitted (>= 4 problems each)")
            for name, f, npts in fits[: a.top]:
                print(f"  {fmt_fit(f)}  ({npts} problems)  {name}")

    if a.profile and a.compare:
        first, second = candidate_times(read_csv(a.profile)), candidate_times(read_csv(a.compare))
        by_size = {}
        for key, cands in first.items():
            other = second.get(key, {})
            mb = problem_bytes(*key) / 2**20
            bucket = (0, "< 16 MiB") if mb < 16 else ((1, "16-64 MiB") if mb < 64 else (2, ">= 64 MiB"))
            for name, us in cands.items():
                if name in other:
                    by_size.setdefault((key[0], bucket), []).append(other[name] / us)
        print("second profile / first, median per candidate and problem:")
        for (m, bucket), ratios in sorted(by_size.items()):
            print(f"  M = {m:3d}, weight {bucket[1]:9s}: {statistics.median(ratios):.3f} over {len(ratios)} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
