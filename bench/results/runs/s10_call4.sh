#!/usr/bin/env bash
# Session 10, call 4 (nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"], after
# `git rev-parse HEAD > scratch/COMMIT`): the branch's final state, everything built on the device:
# every kernel (pybuild), GPU and host tests (the default rule's M = 9-16 tile and its M = 2-8
# short-row exclusion in Skinny.DefaultRuleCoversDecodeOnly), the untuned, fixed-cost and decode
# benches, the Python tests, then the whole suite if time is left.
# Predictions: untuned 70: the M = 4 and 8 rows of 5120x2048 and 6144x1024 at ~1.00x (were
# 0.93-0.98x), 0 below 0.98x, geomean ~1.13x; decode unchanged (~1.07x, tuned rows).
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT) GPU_CHECK_DIR=/tmp/s10f/gc
S=/tmp/s10f; mkdir -p $S /tmp/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
GPU_CHECK_STEPS="pybuild" timeout 260 scripts/gpu-check 2>&1 | tail -2
D=$(ls -d build/pip/*/ | head -1); cp ${D}tools/cli/tgemm /tmp/bin/tgemm
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests" timeout 120 scripts/gpu-check 2>&1 | tail -3
grep -E "Failed|\*\*\*|FAILED" $GPU_CHECK_DIR/gpu_tests.log | head -20
echo "tests done at $SECONDS s"
timeout 60 tgemm bench --suite bench/shapes/skinny_untuned_m16.csv --m 1,4,8,12,16 --json $S/untuned.json \
  > $S/untuned.log 2>&1; grep -i geomean $S/untuned.log
timeout 40 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 --json $S/fixed.json > $S/fixed.log 2>&1
grep -i geomean $S/fixed.log
timeout 40 tgemm bench --m 1,16 --json $S/decode.json > $S/decode.log 2>&1; grep -i geomean $S/decode.log
tar czf $OUT/s10f.tgz --exclude=gc -C /tmp s10f
GPU_CHECK_DIR=$S/py GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="python" timeout 170 scripts/gpu-check 2>&1 | tail -2
echo "python done at $SECONDS s"
if [ $SECONDS -lt 430 ]; then
  timeout $((585 - SECONDS)) tgemm bench --json $S/all.json > $S/all.log 2>&1; grep -i geomean $S/all.log
fi
tar czf $OUT/s10f.tgz --exclude=gc --exclude=py -C /tmp s10f
echo "call ends at $SECONDS s"
