#!/usr/bin/env python3
"""Session 33, issue 3: replay a pair's reconfirmation choice offline with other margins.

Reads the two tunes' logs (the reconfirmation's per-candidate lines: "alternative X passes|fails
(R x the default, ...)", "X kept (R x ...)", "X replaced by Y (R x ...; the row's own R2 x ...)"),
their tables and the first judge's JSON, and for each margin m chooses per row as the
reconfirmation does (those that pass with median x (1 - m) > 1; the fastest, and within 0.5% of it
the first by name; else the default). Two tunes' rows then count as identical, tied (within 1%:
the judge's ratio where it measured that pair of picks, else the ratio of the picks' ratios to the
default as the two reconfirmations read them) or beyond. In-sample: an estimate for choosing m.
  python3 bench/results/runs/s33_margin_sim.py bench/results/studies/s33/pair_m0
"""
import csv
import json
import math
import re
import sys

HEUR = 'cublaslt:heuristic'
LINE = re.compile(r'^(arch=\S+ sm_count=\d+ N=(\d+) K=(\d+) .*?) M=(\d+): (.*)$')


def parse(path):
    rows = {}
    for line in open(path):
        m = LINE.match(line.strip())
        if not m:
            continue
        d = rows.setdefault((int(m.group(4)), int(m.group(2)), int(m.group(3))), {})
        rest = m.group(5)
        a = re.match(r'alternative (\S+) (passes|fails) \(([\d.]+)x the default', rest)
        if a:
            d[a.group(1)] = (float(a.group(3)), a.group(2) == 'passes')
            continue
        k = re.match(r'(\S+) kept \(([\d.]+)x the default', rest)
        if k:
            d[k.group(1)] = (float(k.group(2)), True)
            continue
        r = re.match(r"(\S+) replaced by (\S+) \(([\d.]+)x the default.*?(?:the row's own ([\d.]+)x)?", rest)
        if r:
            d[r.group(2)] = (float(r.group(3)), True)
            if r.group(4):
                d[r.group(1)] = (float(r.group(4)), float(r.group(4)) >= 1.0)
            continue
        r = re.match(r'(\S+) reverted', rest)
        if r:
            d[r.group(1)] = (0.99, False)
    return rows


def pick(d, m, band=0.005):
    ok = {n: r for n, (r, p) in d.items() if p and n != HEUR and r * (1 - m) > 1}
    if not ok:
        return HEUR
    best = max(ok.values())
    return sorted(n for n, r in ok.items() if r >= best / (1 + band))[0]


def ratio(d, n):
    if n == HEUR:
        return 1.0
    return d[n][0] if n in d else None


def main(folder):
    logs = {t: parse(f'{folder}/p_{t}.log') for t in 'AB'}
    tables = {}
    for t in 'AB':
        for r in csv.DictReader(open(f'{folder}/p_{t}.csv')):
            tables.setdefault((int(r['M']), int(r['N']), int(r['K'])), {})[t] = r['kernelName']
    judge = {}
    for r in json.load(open(f'{folder}/cmp_short_p_1.json'))['rows']:
        m = re.search(r'N=(\d+) K=(\d+)', r['problem'])
        judge[(r['m'], int(m.group(1)), int(m.group(2)))] = r.get('ratio')
    for m in (0, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08):
        identical = tie = beyond = 0
        gain = 0.0
        for k, tab in tables.items():
            da, db = logs['A'].get(k, {}), logs['B'].get(k, {})
            pa = pick(da, m) if da else tab['A']
            pb = pick(db, m) if db else tab['B']
            gain += math.log(ratio(da, pa) or 1.0)
            if pa == pb:
                identical += 1
                continue
            if pa == tab['A'] and pb == tab['B'] and judge.get(k):
                q = judge[k]
            else:
                xa = [v for v in (ratio(da, pa), ratio(db, pa)) if v]
                xb = [v for v in (ratio(da, pb), ratio(db, pb)) if v]
                q = (sum(xb) / len(xb)) / (sum(xa) / len(xa))
            if abs(math.log(q)) <= math.log(1.01):
                tie += 1
            else:
                beyond += 1
        n = len(tables)
        print(f'margin {m:.3f}: identical {identical}, tie {tie}, beyond {beyond}: agree or tie {(identical + tie) / n:.3f}; '
              f"A's geomean over the default by its reconfirmation's ratios {math.exp(gain / n):.4f}")


if __name__ == '__main__':
    main(sys.argv[1])
