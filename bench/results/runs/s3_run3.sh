#!/usr/bin/env bash
# Session 3 run 3 (2 x H200): CLI built here (paired bench estimator). All-backend tune of the
# 112-problem suite (--mp 2); then GPU 0: bench of that table, GPU 1: tune of the erf-GELU+bias
# rows (M >= 512; CUTLASS, cuBLASLt, split); then GPU 0: bench of run 2's cuBLASLt-only table A,
# GPU 1: gelu bench with the gelu rows.
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin
export TGEMM_COMMIT=$(cat scratch/COMMIT)
L=/tmp/logs; mkdir -p $L
scripts/setup > $L/setup.log 2>&1
t0=$SECONDS
(cmake --preset release > /dev/null && cmake --build --preset release -j 32 --target tgemm_cli) > $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "build: $((SECONDS-t0)) s"
B=build/release/tools/cli/tgemm
$B shapes --suite bench/shapes/llm_shapes.csv -o /tmp/all.csv > /dev/null
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 --bias -o /tmp/gelu0.csv > /dev/null
sed '2,$ s/,none$/,gelu/' /tmp/gelu0.csv > /tmp/gelu.csv
t0=$SECONDS
timeout 235 $B tune --mp 2 --batch 8 -i /tmp/all.csv -o $L/tuned_all.csv --profile_file $L/prof_all.csv > $L/tune_all.log 2>&1
echo "tune all rc=$? $((SECONDS-t0)) s; rows $(($(wc -l < $L/tuned_all.csv) - 1))"; tail -4 $L/tune_all.log
t0=$SECONDS
CUDA_VISIBLE_DEVICES=1 timeout 150 $B tune --batch 4 --libtype cutlass,cublaslt,split -i /tmp/gelu.csv -o $L/tune_gelu.csv --profile_file $L/prof_gelu.csv > $L/tune_gelu.log 2>&1 &
G=$!
CUDA_VISIBLE_DEVICES=0 TGEMM_CONFIG_GEMM_BF16=$L/tuned_all.csv timeout 150 $B bench --json $L/bench_all.json > $L/bench_all.log 2>&1; echo "bench all rc=$? $((SECONDS-t0)) s"; grep -E "geomean" $L/bench_all.log | tail -1
wait $G; echo "tune gelu rc=$? $((SECONDS-t0)) s; rows $(($(wc -l < $L/tune_gelu.csv) - 1))"; tail -3 $L/tune_gelu.log
left=$((592 - SECONDS)); echo "left $left s"
CUDA_VISIBLE_DEVICES=1 TGEMM_CONFIG_GEMM_BF16=$L/tune_gelu.csv timeout $left $B bench --m 512,2048,8192 --bias --epilogue gelu --json $L/bench_gelu.json > $L/bench_gelu.log 2>&1 &
GB=$!
CUDA_VISIBLE_DEVICES=0 TGEMM_CONFIG_GEMM_BF16=scratch/tuned_A.csv timeout $left $B bench --json $L/bench_lt_A.json > $L/bench_lt_A.log 2>&1; echo "bench A rc=$?"; grep -E "geomean" $L/bench_lt_A.log | tail -1
wait $GB; echo "bench gelu rc=$?"; grep -E "geomean" $L/bench_gelu.log | tail -1
tar czf $OUT/logs.tgz -C /tmp logs
echo "done at $SECONDS s"
