#!/usr/bin/env python3
"""merge_rows.py SHIPPED NEW: SHIPPED's rows with those NEW has for the same key replaced (NEW's
other rows appended), to stdout. The key is every column that names the problem (DESIGN §3)."""
import csv
import sys


def key(r):
    return (r["M"], r["N"], r["K"], r["bias"], r["dtype"], r["outdtype"], r["scaleAB"], r["bpreshuffle"],
            r.get("epilogue", "none") or "none")


with open(sys.argv[1]) as f:
    rd = csv.DictReader(f)
    fields = rd.fieldnames
    ship = list(rd)
new = {}
with open(sys.argv[2]) as f:
    for r in csv.DictReader(f):
        new[key(r)] = r
out = csv.DictWriter(sys.stdout, fields, extrasaction="ignore", lineterminator="\n")
out.writeheader()
for r in ship:
    out.writerow(new.pop(key(r), r))
for r in new.values():
    r.setdefault("epilogue", "none")
    out.writerow(r)
