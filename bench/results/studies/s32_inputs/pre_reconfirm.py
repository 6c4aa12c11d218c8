"""Session 32: a pair's tables as they stood before the tune's reconfirmation (its reverted rows put
back to the tune's own pick, from the tune's log and profile), for a replay of the reconfirmation
with `tgemm reconfirm --alternatives` (bench/results/runs/s32_alt.sh).
  python3 pre_reconfirm.py DIR OUTDIR   (DIR: p_X.csv, p_X.log, prof_p_X.csv.gz for X in A, B)"""
import csv, gzip, os, re, sys

src, dst = sys.argv[1:3]
os.makedirs(dst, exist_ok=True)
for x in 'AB':
    reverts = {}
    for line in open(os.path.join(src, f'p_{x}.log')):
        m = re.search(r'N=(\d+) K=(\d+) .* M=(\d+): (\S+) reverted to ', line)
        if m:
            reverts[(m.group(3), m.group(1), m.group(2))] = m.group(4)
    prof = {}
    for r in csv.DictReader(gzip.open(os.path.join(src, f'prof_p_{x}.csv.gz'), 'rt')):
        k = (r['M'], r['N'], r['K'])
        if reverts.get(k) == r['kernelName']:
            prof[k] = r
    rows = list(csv.DictReader(open(os.path.join(src, f'p_{x}.csv'))))
    put_back = 0
    for r in rows:
        k = (r['M'], r['N'], r['K'])
        if k not in reverts:
            continue
        p = prof[k]
        name = reverts[k]
        r['libtype'] = 'cublaslt'
        r['solidx'] = re.search(r'algo(\d+)', name).group(1)
        r['splitK'] = re.search(r'splitk(\d+)', name).group(1)
        r['us'] = p['us']
        r['kernelName'] = name
        r['err_ratio'] = p['err_ratio']
        flops = 2 * int(r['M']) * int(r['N']) * int(r['K'])
        byts = 2 * (int(r['M']) * int(r['K']) + int(r['N']) * int(r['K']) + int(r['M']) * int(r['N']))
        r['tflops'] = f"{flops / (float(r['us']) * 1e6):.4f}"
        r['bw'] = f"{byts / (float(r['us']) * 1e-6) / 1e9:.2f}"
        put_back += 1
    with open(os.path.join(dst, f'pre_{x}.csv'), 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator='\n')
        w.writeheader()
        w.writerows(rows)
    print(f'{x}: {len(rows)} rows, {put_back} reverts put back of {len(reverts)}')
