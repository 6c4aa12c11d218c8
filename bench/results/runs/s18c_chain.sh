#!/usr/bin/env bash
# Session 18, third chain: version 7 with its K-tail step out of line and a short store path
# (the lab's lib7x bisection put the library's 0.3-0.5 us over bt in the epilogue's code and the
# inline tail). Checks the CI build's skinny GPU tests and the sanitizers on them, the lab A/B
# (lib v7 beside bt), then retunes the 16 M = 16 problems (cuBLASLt + skinny) and benches
# M in {1, 16} twice in one process each: the shipped table, then the shipped table with the
# retune's skinny rows merged in.
# nvidia-h200, carry ["scratch"]:
#   END=300 timeout 315 bash bench/results/runs/s18c_chain.sh; tar czf $OUT/s18c.tgz -C /tmp s18c
END=${END:-300}
S=/tmp/s18c
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
step skinny_test 120 run_gpu_test test_gpu_skinny
grep -q "FAILED" $S/test_gpu_skinny.log && { echo "skinny tests failed: no retune"; exit 1; }
step sanitizer 150 sanitize_skinny memcheck racecheck synccheck
step lab 30 run_lab decode16_lab "lib v7|bt r|floor" 576 7168 1280 8192 1536 7168 4096 4096
[ -f $S/m16_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 16 -o $S/m16_in.csv > /dev/null
tune_until m16 16 --batch 4 --libtype cublaslt,skinny -i $S/m16_in.csv
benches() {
  { head -1 $S/m16.csv; grep ',skinny,' $S/m16.csv; } > $S/m16_skinny.csv
  python3 bench/results/runs/merge_rows.py configs/bf16_tuned_gemm.csv $S/m16_skinny.csv > $S/merged.csv
  timeout 60 tgemm bench --m 1,16 --json $S/bench_shipped.json > $S/bench_shipped.log 2>&1
  echo "shipped: rc=$? $(grep -i geomean $S/bench_shipped.log)"
  TGEMM_CONFIG_GEMM_BF16=$S/merged.csv timeout 60 tgemm bench --m 1,16 --json $S/bench_merged.json > $S/bench_merged.log 2>&1
  echo "merged: rc=$? $(grep -i geomean $S/bench_merged.log)"
}
[ "$(rows $S/m16.csv)" -ge 16 ] && step benches 100 benches
pack_profiles
echo "chain ends at $SECONDS s"
