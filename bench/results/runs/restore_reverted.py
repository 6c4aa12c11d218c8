#!/usr/bin/env python3
"""Session 24: undo a tune's reconfirmation on the rows it reverted, from the tune's log.

`tgemm tune --reconfirm` rewrites reverted rows in place as the default (cublaslt:heuristic).
This puts each reverted row's pick back (name, solidx and splitK from the name, the tune's time
from its `[i/112] ... -> NAME US us` line, err_ratio from the profile) so that the rows can be
reconfirmed again under other settings. Writes the whole restored table and, with --only, just
the restored rows.

  restore_reverted.py TABLE LOG PROFILE(.gz) -o RAW.csv [--only SUB.csv]
"""
import argparse, csv, gzip, re

ap = argparse.ArgumentParser()
ap.add_argument("table"); ap.add_argument("log"); ap.add_argument("profile")
ap.add_argument("-o", required=True); ap.add_argument("--only")
a = ap.parse_args()

picks = {}  # (M, N, K) -> (name, us) from the tune's per-problem lines
for line in open(a.log):
    m = re.match(r"\[ *\d+/\d+\] M=(\d+) N=(\d+) K=(\d+) .*?-> (\S+) ([\d.]+) us", line)
    if m:
        picks[(int(m[1]), int(m[2]), int(m[3]))] = (m[4], m[5])
reverted = []
for line in open(a.log):
    m = re.match(r"arch=\S+ sm_count=\d+ N=(\d+) K=(\d+) .* M=(\d+): (\S+) reverted to", line)
    if m:
        reverted.append(((int(m[3]), int(m[1]), int(m[2])), m[4]))
opener = gzip.open if a.profile.endswith(".gz") else open
err = {}
with opener(a.profile, "rt") as f:
    for r in csv.DictReader(f):
        err[(int(r["M"]), int(r["N"]), int(r["K"]), r["kernelName"])] = r["err_ratio"]

with open(a.table, newline="") as f:
    rows = list(csv.DictReader(f))
    fields = list(rows[0].keys())
by_key = {(int(r["M"]), int(r["N"]), int(r["K"])): r for r in rows}
restored = []
for key, name in reverted:
    r = by_key[key]
    assert r["kernelName"] != name, f"{key}: not reverted in the table"
    pick_name, us = picks[key]
    assert pick_name == name, f"{key}: the log's pick {pick_name} is not the reverted {name}"
    algo = re.search(r"algo(\d+)_.*_splitk(\d+)_", name)
    r["solidx"], r["splitK"] = algo[1], algo[2]
    r["kernelName"], r["us"], r["err_ratio"] = name, us, err[key + (name,)]
    m, n, k = key
    r["tflops"] = f"{2.0 * m * n * k / (float(us) * 1e6):.6g}"
    r["bw"] = f"{2.0 * (m * k + n * k + m * n) / (float(us) * 1e-6) / 1e9:.6g}"  # bf16 in and out
    restored.append(r)
for path, out in ((a.o, rows), (a.only, restored)):
    if path:
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
            w.writeheader(); w.writerows(out)
print(f"{a.table}: {len(restored)} reverted rows restored")
