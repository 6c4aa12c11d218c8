"""Offline (session 31): the rows of a same-card pair where one tune kept the default and the
other did not: the judges' median gain of the non-default pick over the default, and why the tune
that kept the default kept it, from its profile (finals and confirmation ratios) and log
(reconfirmation reverts). Usage: default_misses.py PAIR_DIR... (p_A/p_B tables, prof_p_*.csv.gz,
cmp_short_p_*.json[.gz], p_*.log[.gz])."""
import csv, gzip, json, os, re, statistics, sys
H = 'cublaslt:heuristic'
def opener(p): return gzip.open if p.endswith('.gz') else open
def fpb(m, n, k): return 2*m*n*k / (2*(m*k + n*k + m*n))
def load_prof(p):
    d = {}
    with gzip.open(p, 'rt') as f:
        for r in csv.DictReader(f):
            d.setdefault((int(r['M']), int(r['N']), int(r['K'])), []).append(r)
    return d
def load_judges(dirp):
    rows = {}
    for fn in sorted(os.listdir(dirp)):
        if not fn.startswith('cmp_short_p_'): continue
        for x in json.load(opener(fn)(os.path.join(dirp, fn), 'rt'))['rows']:
            if x['verdict'] == 'identical': continue
            n = int(re.search(r'N=(\d+)', x['problem']).group(1)); k = int(re.search(r'K=(\d+)', x['problem']).group(1))
            rows.setdefault((x['m'], n, k), [x['a'], x['b'], []])[2].append(x['ratio'])
    return rows
def reverted(dirp, side):
    out = set()
    for fn in (f'p_{side}.log', f'p_{side}.log.gz'):
        p = os.path.join(dirp, fn)
        if not os.path.exists(p): continue
        for line in opener(p)(p, 'rt'):
            m = re.search(r'N=(\d+) K=(\d+) .*M=(\d+): .* reverted', line)
            if m: out.add((int(m.group(3)), int(m.group(1)), int(m.group(2))))
    return out
def main():
    total = {}
    for dirp in sys.argv[1:]:
        prof = {x: load_prof(os.path.join(dirp, f'prof_p_{x}.csv.gz')) for x in 'AB'}
        rev = {x: reverted(dirp, x) for x in 'AB'}
        print('==', dirp)
        for key, (a, b, rs) in sorted(load_judges(dirp).items()):
            if (a == H) == (b == H): continue
            med = statistics.median(rs)
            side = 'A' if a == H else 'B'
            gain = med if side == 'A' else 1 / med   # the default's time / the other pick's
            cb = fpb(*key) > 128
            rows = prof[side][key]
            fin = sorted(float(r['final_ratio']) for r in rows if r['kernelName'] != H and float(r['final_ratio']) > 0)
            conf = sorted((float(r['confirm_ratio']) for r in rows if float(r['confirm_ratio']) > 0), reverse=True)
            margin = 0.02 if cb else 0.01
            if key in rev[side]: why = 'reconfirmation revert'
            elif conf: why = 'confirmation' + (' (placement)' if conf[0] > 1 + margin else ' (margin)')
            elif fin and fin[0] < 1.0: why = 'finals band/margin'
            elif fin: why = 'finals: default fastest'
            else: why = 'no finals'
            beyond = abs(med - 1) > 0.01
            total.setdefault(dirp, []).append((why, gain, beyond))
            print(f'  {key} {"CB" if cb else "MB"} default kept by {side}: judge {gain:.3f}x for the other pick, '
                  f'{"beyond" if beyond else "tie"}; {why}; best finalist {fin[0] if fin else None}, confirmations {conf[:3]}')
    print('== summary')
    for d, v in total.items():
        c = {}
        for why, _, _ in v: c[why] = c.get(why, 0) + 1
        print(f'  {d}: {len(v)} rows, {sum(b for _, _, b in v)} beyond; gains {min(g for _, g, _ in v):.3f}-{max(g for _, g, _ in v):.3f}; {c}')
    gains = [g for v in total.values() for _, g, _ in v]
    print(f'  all: {len(gains)} rows, median gain {statistics.median(gains):.3f}, under 1.0: {sum(g < 1 for g in gains)}')


if __name__ == "__main__":
    main()
