#!/usr/bin/env bash
# Session 8's resumable chain (the pattern of s7_chain.sh): every call runs the steps still undone,
# in this order, each only when its time is left before $END seconds; a finished step leaves a
# marker under /tmp/s8, so the next call on the same warm machine goes on where this one stopped.
# Steps: (1) all-backend tune of the 48 plain M >= 512 rows (resumable), then its bench; (2) gelu
# bench, empty table (default rule v4), M = 512/2048/8192; (3) bench of session 7's cuBLASLt
# table A (tuner options on); (4) tune of the 16 M = 8192 erf-GELU+bias rows (resumable); (5) gelu
# bench with those rows added to the shipped table; (6) measured compare of session 7's tables A
# and B over 4 placements. Needs /tmp/bin/tgemm (s8_call1.sh) or scratch/tgemm.gz.
END=${END:-570}
S=/tmp/s8
. bench/results/runs/chain_lib.sh
T=bench/results/tables
gelu_rule() {
  mkdir -p /tmp/empty; head -1 configs/bf16_tuned_gemm.csv > /tmp/empty/e.csv
  TGEMM_CONFIG_DIR=/tmp/empty TGEMM_CONFIG_GEMM_BF16=/tmp/empty/e.csv timeout 90 tgemm bench --epilogue gelu --bias \
    --m 512,2048,8192 --json $S/bench_gelu_rule_v4.json > $S/bench_gelu_rule_v4.log 2>&1; grep -i geomean $S/bench_gelu_rule_v4.log
}
bench_a7() {
  TGEMM_CONFIG_GEMM_BF16=$T/tune_lt_A_s7-h200-20261123.csv timeout 110 tgemm bench --json $S/bench_lt_A_s7.json > $S/bench_lt_A_s7.log 2>&1
  grep -i geomean $S/bench_lt_A_s7.log
}
measure_ab7() {
  timeout 150 tgemm compare --measure --placements 4 $T/tune_lt_A_s7-h200-20261123.csv $T/tune_lt_B_s7-h200-20261123.csv \
    > $S/compare_lt_A_B_s7_measured.txt 2>&1; tail -2 $S/compare_lt_A_B_s7_measured.txt
}
gelu8192_input() {
  [ -f $S/gelu8192_in.csv ] && return 0
  tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 8192 --bias -o $S/gelu8192_0.csv > /dev/null
  sed '2,$ s/,none$/,gelu/' $S/gelu8192_0.csv > $S/gelu8192_in.csv
}
gelu8192_bench() {
  cp configs/bf16_tuned_gemm.csv $S/with_gelu8192.csv && tail -n +2 $S/gelu8192.csv >> $S/with_gelu8192.csv
  TGEMM_CONFIG_GEMM_BF16=$S/with_gelu8192.csv timeout 100 tgemm bench --epilogue gelu --bias --m 512,2048,8192 \
    --json $S/bench_gelu_with8192.json > $S/bench_gelu_with8192.log 2>&1; grep -i geomean $S/bench_gelu_with8192.log
}
big_input() { [ -f $S/big_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 -o $S/big_in.csv > /dev/null; }
big_bench() {
  TGEMM_CONFIG_GEMM_BF16=$S/big.csv timeout 90 tgemm bench --m 512,2048,8192 --json $S/bench_big_all.json > $S/bench_big_all.log 2>&1
  grep -i geomean $S/bench_big_all.log
}

# Order by what the open targets need most: issue 5's M >= 512 target first (tune + bench), then
# the default-rule and table-A benches, the M = 8192 gelu rows, and the measured compare last.
big_input
tune_until big 48 --batch 2 --libtype all -i $S/big_in.csv && step big_bench 95 big_bench
step gelu_rule 95 gelu_rule
step bench_A7 115 bench_a7
gelu8192_input
tune_until gelu8192 16 --batch 2 --libtype cutlass,cublaslt,split -i $S/gelu8192_in.csv && step gelu8192_bench 105 gelu8192_bench
step measure_AB7 155 measure_ab7
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
