#!/usr/bin/env bash
# Session 22: is the bench's A/A gap at M = 8192 (tgemm running the baseline's own cuBLASLt
# configuration at 0.94-0.97x on 8192x28672x4096 and 8192x7168x16384, every bench of s22_big.sh)
# the workspace size given to cublasLtMatmul? tgemm passes its 32 MiB pool buffer, the bench's
# baseline exactly what its heuristic result asks for, PyTorch its whole cuBLASLt workspace.
# `tgemm bench --m 8192` (shipped table) with the baseline's workspace exact / 32 MiB, alternated
# twice; then, while time is left, the M >= 512 rows shipped / merged (s22_big.sh) with 32 MiB.
S=/tmp/s22w
END=${END:-380}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
b() {  # tag table ms workspace
  [ $(left) -lt $5 ] && { echo "skip $1: $(left) s left"; return; }
  local t0=$SECONDS
  TGEMM_CONFIG_GEMM_BF16=$2 timeout 150 tgemm bench --m $3 --baseline-workspace $4 --json $S/$1.json > $S/$1.log 2>&1
  echo "$1 rc=$? $((SECONDS - t0)) s: $(grep -i geomean $S/$1.log)"
  grep -E " 0\.9[0-7][0-9]x" $S/$1.log | cut -c1-60
}
for rep in 1 2; do
  b m8192_exact_$rep configs/bf16_tuned_gemm.csv 8192 0 60
  b m8192_full_$rep configs/bf16_tuned_gemm.csv 8192 33554432 60
done
b big_merged_full scratch/s22b/merged.csv 512,2048,8192 33554432 95
b big_shipped_full configs/bf16_tuned_gemm.csv 512,2048,8192 33554432 95
tar czf $OUT/ws.tgz -C $S . ; ls -la $OUT
