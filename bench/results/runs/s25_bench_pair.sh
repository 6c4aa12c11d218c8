#!/usr/bin/env bash
# Session 25, issue 3's first must-show with the final tune defaults (nvidia-h200; carry
# scratch/tgemm.gz, scratch/COMMIT): the two cuBLASLt-only tables of session 25's same-card pair
# (studies/s25/c2_pair/p_A.csv, p_B.csv, tuned on an H200 with the session-24 defaults, no flags
# beyond --libtype cublaslt --batch 8) each benched on the whole suite beside the cuBLASLt
# default (TGEMM_CONFIG_GEMM_BF16 names the table alone: no card overlay, so cuBLASLt rows only).
S=/tmp/s25b
END=${END:-570}
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for t in A B; do
  [ $(left) -lt 200 ] && { echo "skip $t: $(left) s left"; continue; }
  TGEMM_CONFIG_GEMM_BF16=$PWD/bench/results/studies/s25/c2_pair/p_$t.csv timeout 195 tgemm bench \
    --json $S/bench_p$t.json > $S/bench_p$t.log 2>&1
  echo "table $t rc=$?: $(grep -i geomean $S/bench_p$t.log)"
done
tar czf $OUT/s25b.tgz -C $S . ; ls -la $OUT
