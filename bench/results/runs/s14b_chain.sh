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
chain_inputs
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --sustained_margin 0.01 --confirm_rounds 4"
tune_until m1_A 112 $OPTS && tune_until m1_B 112 $OPTS && step cmp3_m1 200 cmp3 m1 && step suite 150 suite_bench
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
