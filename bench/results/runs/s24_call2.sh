#!/usr/bin/env bash
# Written in session 23 for session 24 (one H100, right after s24_call1.sh on the warm machine;
# carry scratch/tgemm.gz, scratch/COMMIT): issue 3's first must-show with the planned slots: the
# whole-suite bench of session 22's cuBLASLt-only table A (studies/s22/p_A.csv: 1.039x, 3 below
# 0.98x with the old slots, two of them the M = 8192 A/A rows, the third 1x28672x4096 at 0.975x),
# twice, beside the shipped table once.
S=/tmp/s24b
END=${END:-560}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for t in A1 shipped A2; do
  [ $(left) -lt 190 ] && { echo "skip $t: $(left) s left"; continue; }
  f=bench/results/studies/s22/p_A.csv; [ $t = shipped ] && f=configs/bf16_tuned_gemm.csv
  t0=$SECONDS
  TGEMM_CONFIG_GEMM_BF16=$f timeout 185 tgemm bench --json $S/suite_$t.json > $S/suite_$t.log 2>&1
  echo "$t rc=$? $((SECONDS - t0)) s: $(grep -i geomean $S/suite_$t.log)"
  grep -E " 0\.9[0-7][0-9]x" $S/suite_$t.log | cut -c1-75
done
tar czf $OUT/s24b.tgz -C $S . ; ls -la $OUT
