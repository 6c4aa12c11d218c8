#!/usr/bin/env bash
# Session 12, last call (nvidia-h200, no device build: CI binaries of scratch/COMMIT, whose
# `tgemm tune` defaults are the gc set; carry ["scratch"]; scratch/s12 holds the tables of calls 1-6):
#   END=400 bash bench/results/runs/s12c_chain.sh; tar czf $OUT/s12c.tgz --exclude='prof_*.csv' -C /tmp s12c
# (decgc) the 32 decode problems tuned with skinny and cuBLASLt under the new defaults (no stage options given).
# (cand)  the candidate shipped table: the shipped one with its plain rows replaced by call 1's M >= 512
#         retune (all backends), call 5's M = 64, 128 rows (cuBLASLt, gc options) and decgc's M = 1, 16
#         rows; benched over the whole suite.
# (cmp)   call 5's 112-problem tune (its M <= 128 rows) against call 4's gc_A: a third pair, same options.
END=${END:-400}
S=/tmp/s12c
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
D=scratch/s12
tune_until decgc 32 --batch 4 --libtype skinny,cublaslt -i $D/dec_in.csv
cand() {
  python3 - configs/bf16_tuned_gemm.csv $D/big.csv $D/gcall_m64_128.csv $S/decgc.csv > $S/cand.csv <<'PY'
import csv, sys
def key(r): return (r["M"], r["N"], r["K"], r["bias"], r["dtype"], r["outdtype"], r["scaleAB"], r["bpreshuffle"], r.get("epilogue", "none"))
with open(sys.argv[1]) as f: rd = csv.DictReader(f); fields = rd.fieldnames; ship = list(rd)
new = {}
for p in sys.argv[2:]:
    with open(p) as f:
        for r in csv.DictReader(f): r.setdefault("epilogue", "none"); new[key(r)] = r
out = csv.DictWriter(sys.stdout, fields, extrasaction="ignore", lineterminator="\n"); out.writeheader()
for r in ship: out.writerow(new.pop(key(r), r))
for r in new.values(): out.writerow(r)
PY
  TGEMM_CONFIG_GEMM_BF16=$S/cand.csv timeout 150 tgemm bench --json $S/bench_cand.json > $S/bench_cand.log 2>&1
  grep -i geomean $S/bench_cand.log
}
[ "$(rows $S/decgc.csv)" -ge 32 ] && step cand 110 cand
cmp3() {
  for i in 1 2 3; do
    timeout 80 tgemm compare --measure --placements 4 $D/gcall_small.csv $D/gc_A.csv --json $S/cmp_gcall_gcA_$i.json > /dev/null 2>&1
  done
  python3 bench/compare_runs.py $S/cmp_gcall_gcA_{1,2,3}.json > $S/cmp_gcall_gcA_runs.txt 2>&1; tail -2 $S/cmp_gcall_gcA_runs.txt
}
step cmp3 40 cmp3
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
