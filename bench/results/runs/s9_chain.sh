#!/usr/bin/env bash
# Session 9's resumable chain (the pattern of s8_chain.sh): each call runs the steps still undone,
# in this order, each only when its time is left before $END seconds; a finished step leaves a
# marker under /tmp/s9. Needs /tmp/bin/tgemm (s9_call1.sh builds it) or scratch/tgemm.gz.
# Steps:
# (p) pytest of tests/python (package from s9_call1.sh's pybuild) and the overhead probe;
#     compute-sanitizer memcheck and racecheck of the skinny subset (with the GEMV variants); then
#     the decode bench (M = 1, 16, shipped table) with skinny v1-2 launched plainly and as
#     programmatic dependent launches (TGEMM_SKINNY_V2_PDL=1, session 8): issue 4's geomean
#     (1.070x) with and without. Prediction: +3-8% with PDL if the per-launch cost dominates.
#     Then dec1: the 16 M = 1 rows retuned with skinny (now with version 4, GEMV on CUDA cores)
#     and cuBLASLt, benched in place of the shipped M = 1 rows. Prediction: M = 1 at ~1.15x
#     (now 1.07x) if GEMV runs near the floor.
# (0) sub_A, sub_B: two independent cuBLASLt tunes (options of session 7: --final_placements 4
#     --confirm_best) of the 64 suite problems with M <= 128, with the screen's first-use relaunch
#     (session 8, racer); then `compare --measure --placements 4` of the two. Session 7's tunes
#     agreed or tied on 79.7% of these 64 rows (13 beyond the band); prediction: 85-90%.
# (1) gelu_kept: retune the shipped erf-GELU + bias rows that kept cuBLASLt's fp32-staged default
#     (12 rows, M >= 512), now that the race's default there is the staged split path
#     (racer change of session 8); merge them into the shipped table; gelu bench with it.
#     Prediction: those rows ~1.00x (were ~0.988x), the 48 gelu problems ~1.05x, <= 1 below 0.98x.
# (2) fixed: the skinny fixed-cost attribution (docs/perf-notes.md, skinny, "Session 8"): floors
#     and dispatch of bench/shapes/skinny_fixed_cost.csv at M = 1, 16 (K from 64 up: the
#     intercept of time over bytes), then a tune of the same 18 problems with skinny and cuBLASLt,
#     every candidate's time in the profile; and a skinny-only tune with TGEMM_SKINNY_PDL=0.
# (3) ncu of the skinny dispatch and cuBLASLt's default on 1x576x64, 1x576x7168, 1x8192x1024.
END=${END:-570}
S=/tmp/s9
. bench/results/runs/chain_lib.sh
TABLE=configs/bf16_tuned_gemm.csv
kept_input() {  # the shipped gelu rows that kept cuBLASLt's default, as tuner input
  [ -f $S/gelu_kept_in.csv ] && return 0
  echo "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue" > $S/gelu_kept_in.csv
  awk -F, '$19 == "gelu" && $15 == "cublaslt:heuristic" {print $3","$4","$5","$6","$7","$8","$9","$10","$19}' \
    $TABLE >> $S/gelu_kept_in.csv
}
KEPT=$(awk -F, '$19 == "gelu" && $15 == "cublaslt:heuristic"' $TABLE | wc -l)
gelu_kept_bench() {  # the shipped table with those rows replaced by the retune's
  awk -F, '!($19 == "gelu" && $15 == "cublaslt:heuristic")' $TABLE > $S/with_gelu_kept.csv
  tail -n +2 $S/gelu_kept.csv >> $S/with_gelu_kept.csv
  TGEMM_CONFIG_GEMM_BF16=$S/with_gelu_kept.csv timeout 100 tgemm bench --epilogue gelu --bias --m 512,2048,8192 \
    --json $S/bench_gelu_kept.json > $S/bench_gelu_kept.log 2>&1; grep -i geomean $S/bench_gelu_kept.log
}
fixed_bench() {
  timeout 80 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 --json $S/bench_fixed.json \
    > $S/bench_fixed.log 2>&1; grep -i geomean $S/bench_fixed.log
}
fixed_input() { [ -f $S/fixed_in.csv ] || tgemm shapes --suite bench/shapes/skinny_fixed_cost.csv --nsets 1,16 -o $S/fixed_in.csv > /dev/null; }
ncu_fixed() {
  local D=$(ls -d build/pip/*/ 2>/dev/null | head -1)
  [ -n "$D" ] || { echo "no build tree for ncu"; return 1; }
  GPU_CHECK_DIR=$S/prof GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="profile" PROFILE_SHAPES="1,576,64 1,576,7168 1,8192,1024" \
    timeout 150 scripts/gpu-check 2>&1 | tail -2
}

sub_input() { [ -f $S/sub_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16,64,128 -o $S/sub_in.csv > /dev/null; }
compare_sub() {
  timeout 120 tgemm compare --measure --placements 4 $S/sub_A.csv $S/sub_B.csv > $S/compare_sub_AB.txt 2>&1
  tail -2 $S/compare_sub_AB.txt
}
OPTS="--final_placements 4 --confirm_best --libtype cublaslt"
pytests() {  # the Python tests against the package pybuild installed (new: the staged-default shape)
  GPU_CHECK_DIR=$S/py GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="python" timeout 170 scripts/gpu-check 2>&1 | tail -2
}
step pytests 175 pytests
san_skinny() {  # memcheck and racecheck of the skinny sanitizer subset (new: the GEMV variants)
  local B=$(ls -d build/pip/*/ | head -1)tests/gpu/test_gpu_skinny
  compute-sanitizer --tool memcheck --error-exitcode 17 $B --gtest_filter='*Sanitizer*' > $S/san_skinny.log 2>&1
  compute-sanitizer --tool racecheck --error-exitcode 17 $B --gtest_filter='*Sanitizer*' >> $S/san_skinny.log 2>&1
  grep -E "ERROR SUMMARY|PASSED|FAILED" $S/san_skinny.log | sort | uniq -c
}
step san_skinny 90 san_skinny
pdl_bench() {  # the decode bench, shipped table, skinny v1-2 launched plainly and as PDL, one after the other
  timeout 60 tgemm bench --m 1,16 --json $S/bench_decode_pdl0.json > $S/bench_decode_pdl0.log 2>&1
  TGEMM_SKINNY_V2_PDL=1 timeout 60 tgemm bench --m 1,16 --json $S/bench_decode_pdl1.json > $S/bench_decode_pdl1.log 2>&1
  grep -i geomean $S/bench_decode_pdl0.log $S/bench_decode_pdl1.log
}
step pdl_bench 125 pdl_bench
# Skinny version 4 (GEMV, M <= 4; session 8): retune the 16 M = 1 suite rows with skinny and
# cuBLASLt, put them in place of the shipped M = 1 rows, bench M = 1, 16.
dec1_input() { [ -f $S/dec1_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1 -o $S/dec1_in.csv > /dev/null; }
dec1_bench() {
  awk -F, 'NR == 1 || $3 != 1' $TABLE > $S/with_dec1.csv
  tail -n +2 $S/dec1.csv >> $S/with_dec1.csv
  TGEMM_CONFIG_GEMM_BF16=$S/with_dec1.csv timeout 60 tgemm bench --m 1,16 --json $S/bench_decode_dec1.json \
    > $S/bench_decode_dec1.log 2>&1; grep -i geomean $S/bench_decode_dec1.log
}
dec1_input
tune_until dec1 16 --batch 4 --libtype skinny,cublaslt -i $S/dec1_in.csv && step dec1_bench 65 dec1_bench
sub_input
tune_until sub_A 64 --batch 4 $OPTS -i $S/sub_in.csv && tune_until sub_B 64 --batch 4 $OPTS -i $S/sub_in.csv && \
  step compare_sub 125 compare_sub
kept_input
tune_until gelu_kept $KEPT --batch 2 --libtype cutlass,cublaslt,split -i $S/gelu_kept_in.csv && step gelu_kept_bench 105 gelu_kept_bench
step fixed_bench 85 fixed_bench
fixed_input
tune_until fixed 18 --batch 2 --libtype skinny,cublaslt -i $S/fixed_in.csv
# The same problems, skinny only, with programmatic dependent launch off for the version-3 kernels
# (the only ones that use it): their times against the tune above separate PDL's share of the
# per-launch cost.
TGEMM_SKINNY_PDL=0 tune_until fixed_nopdl 18 --batch 6 --libtype skinny -i $S/fixed_in.csv
# And with versions 1-2 launched as PDL (session 8's TGEMM_SKINNY_V2_PDL): their times against
# the first tune's give PDL's share for them.
TGEMM_SKINNY_V2_PDL=1 tune_until fixed_v2pdl 18 --batch 6 --libtype skinny -i $S/fixed_in.csv
step ncu_fixed 155 ncu_fixed
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
