#!/usr/bin/env bash
# Session 22, issue 5: the suite's M >= 512 plain rows from tune A of the s22 pair (cuBLASLt only,
# tuned on an H100, bench/results/studies/s22/p_A.csv) in place of the shipped ones
# (scratch/s22b/merged.csv, made by merge_rows.py), benched against the shipped table: each
# `tgemm bench --m 512,2048,8192` (tgemm dispatch against the cuBLASLt default in one run),
# shipped / merged alternated, twice (carry ["scratch"]).
S=/tmp/s22b
END=${END:-480}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for rep in 1 2; do
  for t in shipped merged; do
    [ $(left) -lt 110 ] && { echo "skip $t $rep: $(left) s left"; continue; }
    f=configs/bf16_tuned_gemm.csv; [ $t = merged ] && f=scratch/s22b/merged.csv
    t0=$SECONDS
    TGEMM_CONFIG_GEMM_BF16=$f timeout 200 tgemm bench --m 512,2048,8192 --json $S/big_${t}_$rep.json > $S/big_${t}_$rep.log 2>&1
    echo "$t $rep rc=$? $((SECONDS - t0)) s: $(grep -i geomean $S/big_${t}_$rep.log)"
  done
done
tar czf $OUT/big.tgz -C $S . ; ls -la $OUT
