#!/usr/bin/env bash
# Session 16, call "c": the GEMV spill fix (kernels/sm90/sm90_gemv_skinny.cuh, commit bbafaa0)
# measured and shipped. The M = 1 lab (lib w8 c4 against the lab's rows c4: predicted within
# 0.1 us), the skinny GPU tests (CI binary: every GEMV instance with tails, bias, each output
# dtype), the suite's 16 M = 1 problems retuned with every backend (full CLI) under the default
# options, then the whole suite benched with the shipped table's M = 1 rows replaced.
# Built here: bench/results/runs/pack_ci_binaries.sh, the full CLI (s16b_chain.sh's header),
# scratch/lab/decode_lab. nvidia-h200, carry ["scratch"]:
#   END=440 timeout 455 bash bench/results/runs/s16c_chain.sh; tar czf $OUT/s16cN.tgz --exclude='prof_*.csv' -C /tmp s16c
END=${END:-440}
S=/tmp/s16c
export TGEMM_CONFIG_DIR=$PWD/configs
mkdir -p /tmp/bin
if [ -f scratch/tgemm_full.gz ] && [ ! -f /tmp/bin/.full ]; then
  gunzip -c scratch/tgemm_full.gz > /tmp/bin/tgemm && chmod +x /tmp/bin/tgemm && touch /tmp/bin/.full
fi
. bench/results/runs/chain_lib.sh
export TGEMM_COMMIT=$(cat scratch/COMMIT_FULL)
step lab1 40 run_lab decode_lab "rows\(|lib w8 c4|floor "
step skinny_test 200 run_gpu_test test_gpu_skinny
[ -f $S/m1_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1 -o $S/m1_in.csv > /dev/null
tune_until m1 16 --batch 4 --libtype all -i $S/m1_in.csv
merged_bench() {  # the shipped table with its M = 1 rows replaced by the retune's, the whole suite
  python3 bench/results/runs/merge_rows.py configs/bf16_tuned_gemm.csv $S/m1.csv > $S/merged.csv
  TGEMM_CONFIG_GEMM_BF16=$S/merged.csv timeout 150 tgemm bench --json $S/bench_merged.json > $S/bench_merged.log 2>&1
  echo "bench rc=$?"; grep -i geomean $S/bench_merged.log
}
[ "$(rows $S/m1.csv)" -ge 16 ] && step merged_bench 160 merged_bench
pack_profiles
echo "chain ends at $SECONDS s"
