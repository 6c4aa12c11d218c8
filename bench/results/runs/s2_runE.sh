#!/usr/bin/env bash
# Session 2 run E (one GPU): carried CLI (commit 30236de: tuner with the confirmation step);
# cuBLASLt-only tune of the 112-problem suite, then tgemm bench of that table.
set -o pipefail
L=/tmp/logs; mkdir -p $L
gunzip -c scratch/tgemm.gz > /tmp/tgemm && chmod +x /tmp/tgemm
B=/tmp/tgemm
$B shapes --suite bench/shapes/llm_shapes.csv -o /tmp/all.csv > /dev/null
t0=$SECONDS
timeout 300 $B tune --libtype cublaslt -i /tmp/all.csv -o $OUT/tune_lt.csv --profile_file $L/prof_lt.csv > $L/tune_lt.log 2>&1; echo "tune rc=$? $((SECONDS-t0)) s"; tail -3 $L/tune_lt.log
grep -c "default kept" $L/tune_lt.log; wc -l $OUT/tune_lt.csv
t0=$SECONDS
TGEMM_CONFIG_GEMM_BF16=$OUT/tune_lt.csv timeout 95 $B bench --json $OUT/bench_lt.json > $L/bench_lt.log 2>&1; echo "bench rc=$? $((SECONDS-t0)) s"; grep -E "geomean" $L/bench_lt.log | tail -2
gzip -f $L/prof_lt.csv
tar czf $OUT/logs.tgz -C /tmp logs
