#!/usr/bin/env bash
# Prepared in session 6 (no device was lent that session); run as session 7's first call, on
# nvidia-h200, carry ["scratch", ".deps/wheels"], after `git rev-parse HEAD > scratch/COMMIT`.
# Builds the branch with the unverified session-5/6 work once (pip, with the C++ tests and the
# CLI), GPU + host tests (new: LaunchFingerprint.*, RaceProblem with final placements and
# deduplication, TimeSolutionPair placements), sanitizer subset; then the cheap measurements:
# lt-space --launches (how much dedupe removes), compare --measure over 4 placements of session
# 5's tables A and B, the gelu benches (shipped retuned rows; empty table = default rule v3).
# Everything under /tmp/s7, ONE tar in $OUT. Leaves /tmp/bin/tgemm for the next calls.
set -o pipefail
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
export GPU_CHECK_DIR=/tmp/s7/gc
L=/tmp/s7; mkdir -p $L /tmp/bin
GPU_CHECK_STEPS="pybuild" timeout 320 scripts/gpu-check 2>&1 | tail -3
D=$(ls -d build/pip/*/ | head -1); B=${D}tools/cli/tgemm
cp $B /tmp/bin/tgemm
strip -o /tmp/tgemm.s $B && gzip -1 -c /tmp/tgemm.s > $L/tgemm.gz
echo "built at $SECONDS s"
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests sanitizer" timeout 240 scripts/gpu-check 2>&1 | tail -6
grep -E "Failed|\*\*\*" $L/gc/gpu_tests.log | head -20
echo "tests done at $SECONDS s"
for s in "-m 1 -n 576 -k 7168" "-m 16 -n 1280 -k 8192" "-m 2048 -n 5120 -k 8192"; do
  timeout 60 tgemm lt-space $s --launches 2>&1 | grep -v "^  algo" >> $L/lt_launches.txt
done
echo "lt-space at $SECONDS s"; grep -E "^launches|configurations in the whole" $L/lt_launches.txt
T=bench/results/tables
timeout 120 tgemm compare --measure --placements 4 $T/tune_lt_A_s5-h200-20261123.csv $T/tune_lt_B_s5-h200-20261123.csv > $L/compare_p4.txt 2>&1
echo "compare rc=$? at $SECONDS s"; tail -2 $L/compare_p4.txt
left=$((575 - SECONDS)); [ $left -gt 100 ] && left=100
[ $left -gt 30 ] && timeout $left tgemm bench --epilogue gelu --bias --m 512,2048,8192 --json $L/bench_gelu_shipped.json > $L/bench_gelu_shipped.log 2>&1
echo "gelu shipped rc=$? at $SECONDS s"; grep -i geomean $L/bench_gelu_shipped.log
mkdir -p /tmp/empty; head -1 configs/bf16_tuned_gemm.csv > /tmp/empty/e.csv
left=$((580 - SECONDS)); [ $left -gt 80 ] && left=80
[ $left -gt 30 ] && TGEMM_CONFIG_DIR=/tmp/empty TGEMM_CONFIG_GEMM_BF16=/tmp/empty/e.csv timeout $left tgemm bench --epilogue gelu --bias --m 512,2048 --json $L/bench_gelu_rule.json > $L/bench_gelu_rule.log 2>&1
echo "gelu rule v3 rc=$? at $SECONDS s"; grep -i geomean $L/bench_gelu_rule.log
tar czf $OUT/s7r1.tgz -C /tmp s7
