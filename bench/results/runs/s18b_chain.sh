#!/usr/bin/env bash
# Session 18, second call: is the paired harness biased toward the second path?
# s18_chain's compares of 16x28672x4096 found B faster in both orders (heuristic vs tile229:
# B -1.8% one way, B -5.6% the other). Tests:
#  1. A/A bench: every row of the shipped table renamed to cublaslt:heuristic, so dispatch runs
#     exactly the baseline's solution; the bench's speedups are then pure harness noise/bias
#     (the whole suite, 112 problems).
#  2. A/A compare: cublaslt:heuristic against the explicit configuration it resolves to
#     (tile394 cluster3) on 16x28672x4096, both orders, twice.
#  3. The A/B compare heuristic vs tile229 again, both orders, twice more.
# nvidia-h200, carry ["scratch"]:
#   END=300 timeout 315 bash bench/results/runs/s18b_chain.sh; tar czf $OUT/s18b.tgz -C /tmp s18b
END=${END:-300}
S=/tmp/s18b
. bench/results/runs/chain_lib.sh
mkdir -p $S/aa
sed -E '2,$ s/^(([^,]*,){10})[^,]*,[^,]*,[^,]*,([^,]*),[^,]*,/\1cublaslt,-1,0,\3,cublaslt:heuristic,/' configs/bf16_tuned_gemm.csv > $S/aa/bf16_tuned_gemm.csv
aa_bench() {
  TGEMM_CONFIG_DIR=$S/aa timeout 200 tgemm bench --json $S/bench_aa.json > $S/bench_aa.log 2>&1
  echo "bench rc=$?"; grep -i geomean $S/bench_aa.log
}
step aa_bench 200 aa_bench
export TGEMM_CONFIG_DIR=$PWD/configs
compares() {
  local h=$S/h.csv t=$S/t229.csv e=$S/t394.csv i
  head -1 configs/bf16_tuned_gemm.csv > $h
  grep "^sm_90a,132,16,28672,4096," configs/bf16_tuned_gemm.csv >> $h
  { head -1 $h; grep '^sm_90a,132,16,28672,4096,' bench/results/studies/s17/m16.csv; } > $t
  sed 's/cublaslt,-1,0,\([^,]*\),cublaslt:heuristic/cublaslt,0,1,\1,cublaslt:algo66_tile394_stages35_splitk1_red0_swz0_opt1_inner0_cluster3_v130100/' $h > $e
  cat $e
  for i in 1 2; do
    for pair in "h t394" "t394 h" "h t229" "t229 h"; do
      set -- $pair
      timeout 60 tgemm compare --measure --placements 4 $S/$1.csv $S/$2.csv --json $S/cmp_${1}_${2}_$i.json > $S/cmp_${1}_${2}_$i.log 2>&1
      echo "$1 vs $2 ($i): $(grep -o '(B [^;]*;' $S/cmp_${1}_${2}_$i.log)"
    done
  done
}
step compares 100 compares
echo "chain ends at $SECONDS s"
