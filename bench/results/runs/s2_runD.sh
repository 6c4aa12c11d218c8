#!/usr/bin/env bash
# Session 2 run D (2 GPUs): build with the tuner's confirmation step; two independent
# cuBLASLt-only tunes of the 112-problem suite (GPU 0 and GPU 1 at once); bench of tune A on GPU 0
# while GPU 1 tunes the erf-GELU+bias rows (M >= 512) over CUTLASS.
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/logs; mkdir -p $L
scripts/setup > $L/setup.log 2>&1
t0=$SECONDS
(cmake --preset release -DTGEMM_BUILD_TESTS=ON && cmake --build --preset release -j 32 --target tgemm_cli) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "build: $((SECONDS-t0)) s"
B=build/release/tools/cli/tgemm
gzip -1 -c $B > $OUT/tgemm.gz
$B shapes --suite bench/shapes/llm_shapes.csv -o /tmp/all.csv > /dev/null
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 --bias -o /tmp/gelu0.csv > /dev/null
# The untuned CSV's epilogue column: gelu (erf) with bias.
awk -F, 'NR==1{print $0",epilogue"; next}{print $0",gelu"}' /tmp/gelu0.csv > /tmp/gelu.csv; head -2 /tmp/gelu.csv
t0=$SECONDS
CUDA_VISIBLE_DEVICES=0 timeout 400 $B tune --libtype cublaslt -i /tmp/all.csv -o $OUT/tune_lt_A.csv --profile_file $L/prof_A.csv > $L/tune_A.log 2>&1 &
A=$!
CUDA_VISIBLE_DEVICES=1 timeout 400 $B tune --libtype cublaslt -i /tmp/all.csv -o $OUT/tune_lt_B.csv --profile_file $L/prof_B.csv > $L/tune_B.log 2>&1 &
BB=$!
wait $A; echo "tune A rc=$? $((SECONDS-t0)) s"; tail -3 $L/tune_A.log
wait $BB; echo "tune B rc=$? $((SECONDS-t0)) s"; tail -3 $L/tune_B.log
grep -c "default kept" $L/tune_A.log $L/tune_B.log
left=$((585 - SECONDS)); echo "left $left s"
CUDA_VISIBLE_DEVICES=1 timeout $left $B tune --libtype cutlass,cublaslt -i /tmp/gelu.csv -o $OUT/tune_gelu.csv --profile_file $L/prof_gelu.csv > $L/tune_gelu.log 2>&1 &
G=$!
CUDA_VISIBLE_DEVICES=0 TGEMM_CONFIG_GEMM_BF16=$OUT/tune_lt_A.csv timeout $left $B bench --json $OUT/bench_lt_A.json > $L/bench_lt_A.log 2>&1; echo "bench A rc=$?"; grep -E "geomean" $L/bench_lt_A.log | tail -2
wait $G; echo "tune gelu rc=$?"; tail -2 $L/tune_gelu.log
tar czf $OUT/logs.tgz -C /tmp logs
