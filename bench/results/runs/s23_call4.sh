#!/usr/bin/env bash
# Session 23, call 4 (H200 if lent; carry scratch/tgemm.gz, scratch/COMMIT): 1) the A/A check
# (both sides the baseline) on the two worst M = 8192 problems without and with 10 settle rounds
# (call 3's 20-round run converged after ~10); 2) issue 5: best_of_two.csv vs the shipped table,
# M >= 512, with --settle-rounds 10, alternated.
S=/tmp/s23d
END=${END:-520}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for f in llama3-8b/gate_up dsv3/o; do
  for st in 0 10 10; do
    tag=${f%%/*}_${f##*/}_settle${st}_$RANDOM
    timeout 90 tgemm bench --m 8192 --filter $f --aa baseline --settle-rounds $st --json $S/aa_$tag.json > $S/aa_$tag.log 2>&1
    echo "aa $tag rc=$?: $(grep -E "^(llama3|dsv3)" $S/aa_$tag.log | cut -c1-80)"
  done
done
b() {  # tag table need
  [ $(left) -lt $3 ] && { echo "skip $1: $(left) s left"; return; }
  local t0=$SECONDS
  TGEMM_CONFIG_GEMM_BF16=$2 timeout 250 tgemm bench --m 512,2048,8192 --settle-rounds 10 --json $S/$1.json > $S/$1.log 2>&1
  echo "$1 rc=$? $((SECONDS - t0)) s: $(grep -i geomean $S/$1.log)"
  grep -E " 0\.9[0-7][0-9]x" $S/$1.log | cut -c1-70
}
b big_shipped_1 configs/bf16_tuned_gemm.csv 130
b big_best2_1 bench/results/studies/s22/big/best_of_two.csv 130
b big_shipped_2 configs/bf16_tuned_gemm.csv 130
b big_best2_2 bench/results/studies/s22/big/best_of_two.csv 130
tar czf $OUT/s23d.tgz -C $S . ; ls -la $OUT
