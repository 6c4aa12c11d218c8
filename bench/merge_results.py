#!/usr/bin/env python3
"""One results file from several `tgemm bench --json` (or `bench/torch_bench.py`) runs of one suite on one card.

    python3 bench/merge_results.py -o bench/results/llm_shapes-m-grid-h100.json part1.json part2.json ...

A long bench is split into parts that fit a device call, or run on several GPUs of one machine at
once (one process per GPU, each with its own --filter). The parts must agree on what makes their
figures comparable (device, SM count, suite, operand data, M grid, re-measure threshold, commit,
tables); a problem in two parts is refused. The rows are concatenated in the order given and the
summary is recomputed as `tgemm bench` computes it (geomean of the speedups, the minimum, how many
read below 0.98x, check failures, re-measured problems; torch_bench's maximum too; per-run figures
such as its host overhead are dropped). `command` lists each part's. Standard
library only; no GPU.
"""

import argparse
import json
import math
import sys

# Fields every part must share: the merged file states each once.
SHARED = ("device", "sm_count", "suite", "data", "m_grid_max", "remeasure_below", "commit", "tables", "torch")
# What names a problem in a row.
PROBLEM = ("model", "layer", "M", "N", "K", "dtype", "outdtype", "bias", "epilogue", "family")


def summary(rows, with_max=False):
    """The `summary` object of `tgemm bench` over `rows` (torch_bench's adds the maximum)."""
    speedups = [r["speedup"] for r in rows]
    count = len(speedups)
    out = {
        "problems": count,
        "geomean_speedup": math.exp(sum(math.log(s) for s in speedups) / count) if count else 0.0,
        "min_speedup": min(speedups) if count else 0.0,
        "below_0_98": sum(1 for s in speedups if s < 0.98),
        "check_failures": sum(1 for r in rows if r.get("check", "-") not in ("ok", "-")),
        "remeasured": sum(1 for r in rows if r.get("remeasured")),
    }
    if with_max:
        out["max_speedup"] = max(speedups) if count else 0.0
    return out


def merge(docs, names):
    """The merged document; raises ValueError naming the part and field that disagree."""
    if not docs:
        raise ValueError("no part given")
    first = docs[0]
    for doc, name in zip(docs, names):
        for key in ("rows", "summary"):
            if key not in doc:
                raise ValueError(f"{name}: no '{key}' (not a `tgemm bench --json` file)")
        for key in SHARED:
            if doc.get(key) != first.get(key):
                raise ValueError(f"{name}: {key} {doc.get(key)!r} differs from {names[0]}'s {first.get(key)!r}")
    rows, seen = [], {}
    for doc, name in zip(docs, names):
        for r in doc["rows"]:
            key = tuple(r.get(f) for f in PROBLEM)
            if key in seen:
                raise ValueError(f"{name}: problem {dict(zip(PROBLEM, key))} is also in {seen[key]}")
            seen[key] = name
            rows.append(r)
    merged = {key: first.get(key) for key in first if key not in ("rows", "summary", "command", "date")}
    merged["command"] = " ; ".join(doc.get("command", "?") for doc in docs)
    merged["date"] = max(doc.get("date", "") for doc in docs)
    merged["parts"] = len(docs)
    merged["rows"] = rows
    merged["summary"] = summary(rows, with_max="max_speedup" in first["summary"])
    return merged


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="+", help="`tgemm bench --json` outputs")
    ap.add_argument("-o", "--output", required=True, help="merged results file to write")
    args = ap.parse_args(argv)
    docs = []
    for path in args.parts:
        try:
            with open(path) as f:
                docs.append(json.load(f))
        except (OSError, json.JSONDecodeError) as e:
            print(f"merge_results: {path}: {e}", file=sys.stderr)
            return 2
    try:
        merged = merge(docs, args.parts)
    except ValueError as e:
        print(f"merge_results: {e}", file=sys.stderr)
        return 2
    with open(args.output, "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")
    s = merged["summary"]
    print(
        f"{args.output}: {s['problems']} problems from {len(docs)} parts, geomean {s['geomean_speedup']:.3f}x, "
        f"min {s['min_speedup']:.3f}x, {s['below_0_98']} below 0.98x, {s['check_failures']} check failures"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
