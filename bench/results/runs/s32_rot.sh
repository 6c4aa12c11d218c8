#!/usr/bin/env bash
# Session 32, issue 3 lead (perf-notes, tuner, "Session 31"): does the heuristic's slow reading on
# the big decode weights (5-9% between processes, and against its alone time) go away when the
# weight is not re-read from L2 launch after launch? Nine rows at M <= 128 on the 28672x4096,
# 7168x16384, 7168x8192 and 51200x5120 weights where a session-30/31 tune kept a non-default
# pick: the heuristic (s32_inputs/rot_heur.csv) against that pick (rot_pick.csv), paired in short
# slots on 4 placements, with --min_rotation_sets 1 (as the tunes and judges ran) and 2,
# alternating, three fresh processes each (~15-30 s a process; session 31's judges took ~3.3 s a
# row over the whole suite, less at decode sizes). Prints each row's median ratio per setting and the
# spread over the three processes. Carry scratch/tgemm.gz, scratch/COMMIT.
#   END=240 bash bench/results/runs/s32_rot.sh
S=/tmp/s32r
END=${END:-240}
. bench/results/runs/chain_lib.sh
I=bench/results/studies/s32_inputs
nvidia-smi --query-gpu=name --format=csv,noheader
for i in 1 2 3; do
  for r in 1 2; do
    [ $(left) -gt 45 ] || break 2
    timeout $(( $(left) - 5 )) tgemm compare --measure --placements 4 --short_slots --min_rotation_sets $r \
      $I/rot_heur.csv $I/rot_pick.csv --json $S/rot${r}_$i.json > $S/rot${r}_$i.log 2>&1
    echo "rotation sets $r, process $i: rc=$? at $SECONDS s"
  done
done
python3 - $S <<'PY'
import json, glob, re, statistics, sys
S = sys.argv[1]
by = {}
for p in sorted(glob.glob(f'{S}/rot*_*.json')):
    r = re.search(r'rot(\d)_(\d)', p).group(1)
    for x in json.load(open(p))['rows']:
        if 'ratio' not in x: continue
        k = (x['m'],) + tuple(int(v) for v in re.findall(r'[NK]=(\d+)', x['problem']))
        by.setdefault(k, {}).setdefault(r, []).append(x['ratio'])
print('M N K: heuristic time / pick time per process (median of 4 placements); sets 1 | sets 2')
for k in sorted(by):
    f = lambda v: ' '.join(f'{q:.3f}' for q in v) + (f' (med {statistics.median(v):.3f})' if v else '')
    print(k, f(by[k].get('1', [])), '|', f(by[k].get('2', [])))
PY
tar czf $OUT/rot.tgz -C $S $(cd $S && ls rot*)
