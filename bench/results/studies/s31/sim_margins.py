"""Offline: re-select each tune's pick from its finals and confirmation records under other
margins, and count how the pair's picks would agree. Rough: a pick never confirmed in the real run
is assumed to pass its confirmation when its finals ratio beats the new margin."""
import csv, gzip, json, statistics, sys, os, re
from default_misses import H, fpb, load_prof  # the same directory
def load_table(p):
    return {(int(r['M']), int(r['N']), int(r['K'])): r['kernelName'] for r in csv.DictReader(open(p))}
def load_judges(dirp):
    out = {}
    for fn in sorted(os.listdir(dirp)):
        if not fn.startswith('cmp_short_p_'): continue
        op = gzip.open if fn.endswith('.gz') else open
        for x in json.load(op(os.path.join(dirp, fn), 'rt'))['rows']:
            if x['verdict'] == 'identical': continue
            n = int(re.search(r'N=(\d+)', x['problem']).group(1)); k = int(re.search(r'K=(\d+)', x['problem']).group(1))
            out.setdefault(((x['m'], n, k), x['a'], x['b']), []).append(x['ratio'])
    return {k: statistics.median(v) for k, v in out.items()}
def pick(rows, real, band_default, order_band, margin_cb, margin_mem, conf_margin_cb, conf_margin_mem, key):
    cb = fpb(*key) > 128
    fin = {r['kernelName']: float(r['final_ratio']) for r in rows if float(r['final_ratio']) > 0}
    conf = {r['kernelName']: float(r['confirm_ratio']) for r in rows if float(r['confirm_ratio']) > 0}
    if H not in fin:      # no finals (default only, or rows decided without finals): keep the real pick
        return real, 'real'
    best = min(fin.values())
    if fin[H] <= best * (1 + band_default): return H, 'finals'
    order = sorted((n for n, v in fin.items() if n != H and v <= best * (1 + order_band)))
    # the racer confirms the finals' winner, then the next fastest finalists (confirm_tries 3)
    ranked = [order[0]] + sorted((n for n in fin if n not in (H, order[0])), key=lambda n: fin[n])
    m = margin_cb if cb else margin_mem
    cm = conf_margin_cb if cb else conf_margin_mem
    for n in ranked[:3]:
        if fin[n] > 1 - m: continue
        if n in conf:
            if conf[n] > 1 + cm: return n, 'conf'
        elif n == real: return n, 'real'
        else: return n, 'assumed'
    return H, 'conf-fail'
def estimate(key, a, b, pa, pb):
    ests = []
    for p in (pa, pb):
        fin = {r['kernelName']: float(r['final_ratio']) for r in p.get(key, []) if float(r['final_ratio']) > 0}
        if a in fin and b in fin: ests.append(fin[a] / fin[b])
    return statistics.mean(ests) if ests else None
def run(dirp, **kw):
    pa, pb = (load_prof(os.path.join(dirp, f'prof_p_{x}.csv.gz')) for x in 'AB')
    ta, tb = (load_table(os.path.join(dirp, f'p_{x}.csv')) for x in 'AB')
    judges = load_judges(dirp)
    ident = tie = beyond = unknown = 0; assumed = 0
    for key in ta:
        a, wa = pick(pa.get(key, []), ta[key], key=key, **kw)
        b, wb = pick(pb.get(key, []), tb[key], key=key, **kw)
        assumed += (wa == 'assumed') + (wb == 'assumed')
        if a == b: ident += 1; continue
        r = judges.get((key, a, b))
        if r is None and (key, b, a) in judges: r = 1 / judges[(key, b, a)]
        if r is None: r = estimate(key, a, b, pa, pb)
        if r is None: unknown += 1
        elif abs(r - 1) <= 0.01: tie += 1
        else: beyond += 1
    n = len(ta)
    return f'identical {ident}, tie {tie}, beyond {beyond}, unknown {unknown}, agree {100*(ident+tie)/n:.1f}%-{100*(ident+tie+unknown)/n:.1f}% ({assumed} picks assumed confirmed)'
base = dict(band_default=0.01, order_band=0.01, margin_cb=0.02, margin_mem=0.0, conf_margin_cb=0.02, conf_margin_mem=0.01)
sets = {
 'current (s30 rules)': base,
 'order 0.005': dict(base, order_band=0.005),
 'margins 0.005': dict(base, margin_cb=0.005, conf_margin_cb=0.005, conf_margin_mem=0.005),
 'margins 0.005 + default band 0.005': dict(base, margin_cb=0.005, conf_margin_cb=0.005, conf_margin_mem=0.005, band_default=0.005),
 'margins 0 + default band 0.005': dict(base, margin_cb=0.0, conf_margin_cb=0.0, conf_margin_mem=0.0, band_default=0.005),
 'margins 0 + default band 0.005 + order 0.005': dict(base, margin_cb=0.0, conf_margin_cb=0.0, conf_margin_mem=0.0, band_default=0.005, order_band=0.005),
 'margins 0 + default band 0': dict(base, margin_cb=0.0, conf_margin_cb=0.0, conf_margin_mem=0.0, band_default=0.0),
 'margins 0.01 + default band 0.005': dict(base, margin_cb=0.01, conf_margin_cb=0.01, conf_margin_mem=0.005, band_default=0.005),
}
for d in sys.argv[1:]:
    print('==', d)
    for name, kw in sets.items(): print(f'  {name:48s} {run(d, **kw)}')
