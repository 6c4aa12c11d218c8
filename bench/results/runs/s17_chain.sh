#!/usr/bin/env bash
# Session 17: version 7 of the skinny kernels (kernels/sm90/sm90_gemm_skinny_bop.cuh, the weight
# as the MMA's B operand) verified and tuned: the skinny GPU tests (CI binary: bf16, every
# variant with tails, bias, each output dtype), compute-sanitizer memcheck and racecheck on the
# subset, the suite's 16 M = 16 problems retuned with cuBLASLt and skinny (the only libtypes the
# shipped M = 16 rows use), then `tgemm bench --m 1,16` with the shipped table's M = 16 rows
# replaced (the decode must-show of issue 4, side by side with the cuBLASLt default).
# Built here: bench/results/runs/pack_ci_binaries.sh (CI CLI + tests). nvidia-h200, carry ["scratch"]:
#   END=400 timeout 415 bash bench/results/runs/s17_chain.sh; tar czf $OUT/s17.tgz --exclude='prof_*.csv' -C /tmp s17
END=${END:-400}
S=/tmp/s17
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
step skinny_test 200 run_gpu_test test_gpu_skinny
grep -q "FAILED" $S/test_gpu_skinny.log && { echo "skinny tests failed: no retune"; exit 1; }
step sanitizer 150 sanitize_skinny memcheck racecheck
[ -f $S/m16_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 16 -o $S/m16_in.csv > /dev/null
tune_until m16 16 --batch 4 --libtype cublaslt,skinny -i $S/m16_in.csv
merged_bench() {  # the shipped table with its M = 16 rows replaced by the retune's; M in {1, 16}
  python3 bench/results/runs/merge_rows.py configs/bf16_tuned_gemm.csv $S/m16.csv > $S/merged.csv
  TGEMM_CONFIG_GEMM_BF16=$S/merged.csv timeout 120 tgemm bench --m 1,16 --json $S/bench_dec.json > $S/bench_dec.log 2>&1
  echo "bench rc=$?"; grep -i geomean $S/bench_dec.log
}
[ "$(rows $S/m16.csv)" -ge 16 ] && step merged_bench 110 merged_bench
other_tests() {  # the dispatch and public-API GPU tests of the CI build (tables resolve, routes)
  run_gpu_test test_gpu_dispatch
  run_gpu_test test_gpu_gemm_a16w16
}
step other_tests 60 other_tests
pack_profiles
echo "chain ends at $SECONDS s"
