#!/usr/bin/env bash
# Session 23, call 5 (one H100; carry scratch/tgemm.gz, scratch/COMMIT): the A/A check with 10
# settle rounds on the H100 (where call 2-3 measured 0.950-0.964x without), then issue 5's M >= 512
# bench with --settle-rounds 10: the shipped table and best_of_two.csv.
S=/tmp/s23e
END=${END:-400}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for rep in 1 2; do
  for f in llama3-8b/gate_up dsv3/o; do
    tag=${f%%/*}_${f##*/}_settle10_$rep
    timeout 90 tgemm bench --m 8192 --filter $f --aa baseline --settle-rounds 10 --json $S/aa_$tag.json > $S/aa_$tag.log 2>&1
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
b big_best2 bench/results/studies/s22/big/best_of_two.csv 140
b big_shipped configs/bf16_tuned_gemm.csv 140
tar czf $OUT/s23e.tgz -C $S . ; ls -la $OUT
