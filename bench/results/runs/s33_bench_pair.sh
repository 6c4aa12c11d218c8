#!/usr/bin/env bash
# Session 33, issue 3's bench must-show for the option set of session 33's second pair
# (--reconfirm_margin 0.06 with --reconfirm_alternatives 3; tables in studies/s33/pair_m06):
# each cuBLASLt-only table benched on the whole suite beside the cuBLASLt default
# (TGEMM_CONFIG_GEMM_BF16 names the table alone: no card overlay). nvidia-h200; carry
# scratch/tgemm.gz, scratch/COMMIT.
#   END=420 bash bench/results/runs/s33_bench_pair.sh
S=/tmp/s33b
END=${END:-420}
. bench/results/runs/chain_lib.sh
mkdir -p $S
nvidia-smi --query-gpu=name --format=csv,noheader
for t in A B; do
  [ $(left) -lt 170 ] && { echo "skip $t: $(left) s left"; continue; }
  TGEMM_CONFIG_GEMM_BF16=$PWD/bench/results/studies/s33/pair_m06/p_$t.csv timeout $(( $(left) - 5 )) tgemm bench \
    --json $S/bench_p$t.json > $S/bench_p$t.log 2>&1
  echo "table $t rc=$? at $SECONDS s: $(grep -i geomean $S/bench_p$t.log)"
done
tar czf $OUT/s33b.tgz -C $S . ; ls -la $OUT
