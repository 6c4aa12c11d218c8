#!/usr/bin/env bash
# Session 10's resumable chain (pattern of s9_chain.sh): each call runs the steps still undone,
# in order, each only when its time is left before $END seconds. Needs /tmp/bin/tgemm
# (s10_call1.sh builds it). Steps:
# - san_skinny: memcheck, racecheck and synccheck of the skinny sanitizer subset (version 5's
#   mbarrier/bulk-copy ring: call 0 found a racecheck report, every consumer lane now arrives);
# - fixed_bench: the fixed-cost suite, whose untuned 1x576x{64,512,2048} rows take the GEMV
#   default (session 9 branch). Predicted 1.3x, 1.5x, 2.0x over cuBLASLt's default;
# - recon: `tgemm reconfirm` of session 9's sub_A and sub_B (cuBLASLt-only tunes of the 64
#   problems with M <= 128), each in its own process: a non-default row is kept only if it beats
#   the default again there. Then cmp3r: three `compare --measure --json` runs of the two
#   reconfirmed tables. Prediction: agreement 84.4% -> 88-92% (rows whose win was one process's
#   state revert in both), 5-15 rows reverted a table;
# - cmp3: `compare --measure --json` of session 9's sub_A and sub_B, three times (three
#   processes), then bench/compare_runs.py (agreement by the median of the runs);
# - pytests;
# - pdl_ab: skinny v1-2 PDL with and without its L2 prefetch against plain launches.
END=${END:-570}
S=/tmp/s10
. bench/results/runs/chain_lib.sh
TABLE=configs/bf16_tuned_gemm.csv
san_skinny() {
  local B=$(ls -d build/pip/*/ | head -1)tests/gpu/test_gpu_skinny
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 17 $B --gtest_filter='*Sanitizer*' >> $S/san_skinny.log 2>&1
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $S/san_skinny.log | sort | uniq -c
}
step san_skinny 120 san_skinny
fixed_bench() {
  timeout 60 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 --json $S/bench_fixed.json \
    > $S/bench_fixed.log 2>&1; grep -i geomean $S/bench_fixed.log
}
step fixed_bench 30 fixed_bench
cmp3() {
  local A=bench/results/tables/tune_sub_A_s9-h200-20261123.csv B=bench/results/tables/tune_sub_B_s9-h200-20261123.csv
  for i in 1 2 3; do
    timeout 60 tgemm compare --measure --placements 4 $A $B --json $S/cmp_sub_$i.json > $S/cmp_sub_$i.txt 2>&1
    tail -1 $S/cmp_sub_$i.txt
  done
  python3 bench/compare_runs.py $S/cmp_sub_1.json $S/cmp_sub_2.json $S/cmp_sub_3.json > $S/cmp_sub_runs.txt 2>&1
  tail -2 $S/cmp_sub_runs.txt
}
recon() {
  local A=bench/results/tables/tune_sub_A_s9-h200-20261123.csv B=bench/results/tables/tune_sub_B_s9-h200-20261123.csv
  timeout 150 tgemm reconfirm $A --libtype cublaslt -o $S/sub_A_r.csv > $S/recon_A.log 2>&1; tail -1 $S/recon_A.log
  timeout 150 tgemm reconfirm $B --libtype cublaslt -o $S/sub_B_r.csv > $S/recon_B.log 2>&1; tail -1 $S/recon_B.log
}
step recon 160 recon
cmp3r() {
  for i in 1 2 3; do
    timeout 60 tgemm compare --measure --placements 4 $S/sub_A_r.csv $S/sub_B_r.csv --json $S/cmpr_sub_$i.json \
      > $S/cmpr_sub_$i.txt 2>&1
    tail -1 $S/cmpr_sub_$i.txt
  done
  python3 bench/compare_runs.py $S/cmpr_sub_1.json $S/cmpr_sub_2.json $S/cmpr_sub_3.json > $S/cmpr_sub_runs.txt 2>&1
  tail -2 $S/cmpr_sub_runs.txt
}
[ -f $S/sub_A_r.csv ] && [ -f $S/sub_B_r.csv ] && step cmp3r 100 cmp3r
step cmp3 100 cmp3
pdl_ab() {
  for v in plain nopf pf; do
    case $v in plain) e="TGEMM_SKINNY_V2_PDL=0";; nopf) e="TGEMM_SKINNY_V2_PDL=1 TGEMM_SKINNY_V2_PDL_PREFETCH=0";;
      pf) e="TGEMM_SKINNY_V2_PDL=1";; esac
    env $e timeout 40 tgemm bench --m 1,16 --json $S/decode_pdl_$v.json > $S/decode_pdl_$v.log 2>&1
  done
  grep -i geomean $S/decode_pdl_*.log
}
pytests() {
  GPU_CHECK_DIR=$S/py GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="python" timeout 170 scripts/gpu-check 2>&1 | tail -2
}
step pytests 175 pytests
step pdl_ab 60 pdl_ab
echo "chain ends at $SECONDS s"
