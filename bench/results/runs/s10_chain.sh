#!/usr/bin/env bash
# Session 10's resumable chain (pattern of s9_chain.sh): each call runs the steps still undone,
# in order, each only when its time is left before $END seconds. Needs /tmp/bin/tgemm
# (s10_call1.sh builds it). Steps:
# - san_skinny: memcheck, racecheck and synccheck of the skinny sanitizer subset (new: version 5,
#   an mbarrier/bulk-copy ring);
# - fixed_bench: the fixed-cost suite, whose untuned 1x576x{64,512,2048} rows take the GEMV
#   default (session 9 branch). Predicted 1.3x, 1.5x, 2.0x over cuBLASLt's default;
# - dec5: the 32 M = 1 and 16 suite rows tuned with skinny (v1-v6) and cuBLASLt, benched in
#   place of the shipped rows. Predicted: M = 1 ~1.12x (perf-notes, "Version 5"), M = 16 ~1.12x
#   ("Version 6"), decode ~1.12x;
# - cmp3: `compare --measure --json` of session 9's sub_A and sub_B, three times (three
#   processes), then bench/compare_runs.py (agreement by the median of the runs);
# - pdl_ab: skinny v1-2 PDL with and without its L2 prefetch against plain launches;
# - pytests.
END=${END:-570}
S=/tmp/s10
. bench/results/runs/chain_lib.sh
TABLE=configs/bf16_tuned_gemm.csv
san_skinny() {
  local B=$(ls -d build/pip/*/ | head -1)tests/gpu/test_gpu_skinny
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 17 $B --gtest_filter='*Sanitizer*' >> $S/san_skinny.log 2>&1
  done
  grep -E "ERROR SUMMARY|PASSED|FAILED" $S/san_skinny.log | sort | uniq -c
}
step san_skinny 120 san_skinny
fixed_bench() {
  timeout 60 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 --json $S/bench_fixed.json \
    > $S/bench_fixed.log 2>&1; grep -i geomean $S/bench_fixed.log
}
step fixed_bench 30 fixed_bench
dec_input() { [ -f $S/dec_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/dec_in.csv > /dev/null; }
dec5_bench() {
  awk -F, 'NR == 1 || ($3 != 1 && $3 != 16)' $TABLE > $S/with_dec5.csv
  tail -n +2 $S/dec5.csv >> $S/with_dec5.csv
  TGEMM_CONFIG_GEMM_BF16=$S/with_dec5.csv timeout 60 tgemm bench --m 1,16 --json $S/bench_decode_dec5.json \
    > $S/bench_decode_dec5.log 2>&1; grep -i geomean $S/bench_decode_dec5.log
}
dec_input
tune_until dec5 32 --batch 4 --libtype skinny,cublaslt -i $S/dec_in.csv && step dec5_bench 40 dec5_bench
cmp3() {
  local A=bench/results/tables/tune_sub_A_s9-h200-20261123.csv B=bench/results/tables/tune_sub_B_s9-h200-20261123.csv
  for i in 1 2 3; do
    timeout 60 tgemm compare --measure --placements 4 $A $B --json $S/cmp_sub_$i.json > $S/cmp_sub_$i.txt 2>&1
    tail -1 $S/cmp_sub_$i.txt
  done
  python3 bench/compare_runs.py $S/cmp_sub_1.json $S/cmp_sub_2.json $S/cmp_sub_3.json > $S/cmp_sub_runs.txt 2>&1
  tail -2 $S/cmp_sub_runs.txt
}
step cmp3 50 cmp3
pdl_ab() {
  for v in plain nopf pf; do
    case $v in plain) e="TGEMM_SKINNY_V2_PDL=0";; nopf) e="TGEMM_SKINNY_V2_PDL=1 TGEMM_SKINNY_V2_PDL_PREFETCH=0";;
      pf) e="TGEMM_SKINNY_V2_PDL=1";; esac
    env $e timeout 40 tgemm bench --m 1,16 --json $S/decode_pdl_$v.json > $S/decode_pdl_$v.log 2>&1
  done
  grep -i geomean $S/decode_pdl_*.log
}
step pdl_ab 60 pdl_ab
pytests() {
  GPU_CHECK_DIR=$S/py GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="python" timeout 170 scripts/gpu-check 2>&1 | tail -2
}
step pytests 175 pytests
echo "chain ends at $SECONDS s"
