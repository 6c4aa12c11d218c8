#!/usr/bin/env bash
# Session 4 run 2 (one H200): carried CLI (run 1 build, commit in scratch/COMMIT). Issue 3: a
# cuBLASLt-only tune of the 112-problem suite on ONE GPU (timed, profile kept), bench of that
# table (tuned dispatch vs the cuBLASLt default, paired); then every skinny variant's time on the
# 32 decode problems (tune --libtype skinny with a profile) for the skinny balance study.
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin
export TGEMM_COMMIT=$(cat scratch/COMMIT)
L=/tmp/logs; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
gunzip -c scratch/tgemm.gz > /tmp/tgemm && chmod +x /tmp/tgemm
B=/tmp/tgemm
$B shapes --suite bench/shapes/llm_shapes.csv -o /tmp/all.csv > /dev/null
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o /tmp/dec.csv > /dev/null
t0=$SECONDS
timeout 430 $B tune --libtype cublaslt -i /tmp/all.csv -o $L/tuned_A.csv --profile_file $L/prof_A.csv > $L/tune_A.log 2>&1
echo "tune A (one GPU) rc=$? $((SECONDS-t0)) s"; tail -4 $L/tune_A.log
t0=$SECONDS
TGEMM_CONFIG_GEMM_BF16=$L/tuned_A.csv timeout 110 $B bench --json $L/bench_lt_A.json > $L/bench_lt_A.log 2>&1; echo "bench A rc=$? $((SECONDS-t0)) s"; grep -E "geomean|below" $L/bench_lt_A.log | tail -3
left=$((575 - SECONDS)); echo "left $left s"
[ $left -gt 20 ] && timeout $left $B tune --libtype skinny -i /tmp/dec.csv -o $L/tuned_skinny.csv --profile_file $L/prof_skinny.csv > $L/tune_skinny.log 2>&1; echo "skinny tune rc=$?"; tail -3 $L/tune_skinny.log
gzip -f $L/prof_A.csv
tar czf $OUT/logs.tgz -C /tmp logs
echo "done at $SECONDS s"
