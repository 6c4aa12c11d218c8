#!/usr/bin/env bash
# Session 2 run B: build; rerun fixed tests; keep the CLI; skinny v3 decode tune + bench; start the
# M >= 512 tune with CUTLASS (resumable).
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/logs; mkdir -p $L
scripts/setup > $L/setup.log 2>&1
t0=$SECONDS
(cmake --preset release -DTGEMM_BUILD_TESTS=ON && cmake --build --preset release -j 16) > $L/build.log 2>&1 || { tail -30 $L/build.log; }
echo "build: $((SECONDS-t0)) s"
for t in dispatch epilogue; do build/release/tests/gpu/test_gpu_$t > $L/test_$t.log 2>&1; echo "test_gpu_$t rc=$?"; grep -E "^\[  FAILED|PASSED" $L/test_$t.log | head -5; done
B=build/release/tools/cli/tgemm
gzip -1 -c $B > $OUT/tgemm.gz; ls -la $OUT/tgemm.gz
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o /tmp/dec.csv > /dev/null
t0=$SECONDS
timeout 150 $B tune -i /tmp/dec.csv -o $OUT/tune_dec.csv --profile_file $L/prof_dec.csv > $L/tune_dec.log 2>&1; echo "tune dec rc=$? $((SECONDS-t0)) s"; tail -3 $L/tune_dec.log
t0=$SECONDS
TGEMM_CONFIG_GEMM_BF16=$OUT/tune_dec.csv timeout 60 $B bench --m 1,16 --json $OUT/bench_dec.json > $L/bench_dec.log 2>&1; echo "bench dec rc=$? $((SECONDS-t0)) s"; grep -E "geomean|below" $L/bench_dec.log | tail -3
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 -o /tmp/big.csv > /dev/null
left=$((575 - SECONDS)); echo "big tune budget $left s"
timeout $left $B tune -i /tmp/big.csv -o $OUT/tune_big.csv --profile_file $L/prof_big.csv > $L/tune_big.log 2>&1; echo "tune big rc=$?"; tail -3 $L/tune_big.log; wc -l $OUT/tune_big.csv
cut -d, -f11 $OUT/tune_big.csv | sort | uniq -c
tar czf $OUT/logs.tgz -C /tmp logs
