#!/usr/bin/env bash
# Session 14, second chain (after s14_chain.sh: the wider pair agreed on 87.5%, and took 635 s and
# 613 s): a pair of 112-problem cuBLASLt tunes with the defaults except that a compute-bound
# problem's winner must beat the default by 1% (the tie band) instead of 2%, in the finals and the
# confirmation, and the confirmation runs 4 rounds a placement instead of 6 (time for the extra
# confirmations); three measured compares; then the whole-suite bench of the shipped table.
#   END=560 bash bench/results/runs/s14b_chain.sh; tar czf $OUT/s14bN.tgz --exclude='prof_*.csv' -C /tmp s14b
END=${END:-560}
S=/tmp/s14b
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
[ -d scratch/s14b ] && for f in scratch/s14b/*.csv scratch/s14b/*.done; do [ -f $S/$(basename $f) ] || cp $f $S/; done
[ -f $S/all_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16,64,128,512,2048,8192 -o $S/all_in.csv > /dev/null
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --sustained_margin 0.01 --confirm_rounds 4"
cmp3() {
  for i in 1 2 3; do
    timeout 170 tgemm compare --measure --placements 4 $S/m1_A.csv $S/m1_B.csv --json $S/cmp_m1_$i.json > /dev/null 2>&1
  done
  python3 bench/compare_runs.py $S/cmp_m1_{1,2,3}.json > $S/cmp_m1_runs.txt 2>&1; tail -2 $S/cmp_m1_runs.txt
}
suite() {
  timeout 200 tgemm bench --json $S/bench_suite.json > $S/bench_suite.log 2>&1; echo "bench rc=$?"
  grep -i geomean $S/bench_suite.log
}
tune_until m1_A 112 $OPTS && tune_until m1_B 112 $OPTS && step cmp3_m1 200 cmp3 && step suite 150 suite
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
