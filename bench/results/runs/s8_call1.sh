#!/usr/bin/env bash
# Session 8's first device call (nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"],
# after `git rev-parse HEAD > scratch/COMMIT` on branch session7-unverified): build (pybuild),
# GPU + host tests, sanitizer subset, then s8_chain.sh for the rest of the call. Later calls on
# the warm machine: `END=575 bash bench/results/runs/s8_chain.sh; tar czf $OUT/s8cN.tgz -C /tmp s8`.
set -o pipefail
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
export GPU_CHECK_DIR=/tmp/s8/gc
mkdir -p /tmp/s8 /tmp/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
GPU_CHECK_STEPS="pybuild" timeout 320 scripts/gpu-check 2>&1 | tail -3
D=$(ls -d build/pip/*/ | head -1); B=${D}tools/cli/tgemm
cp $B /tmp/bin/tgemm
strip -o /tmp/tgemm.s $B && gzip -1 -c /tmp/tgemm.s > $OUT/tgemm.gz
echo "built at $SECONDS s"
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests sanitizer" timeout 240 scripts/gpu-check 2>&1 | tail -6
grep -E "Failed|\*\*\*" /tmp/s8/gc/gpu_tests.log | head -20
echo "tests done at $SECONDS s"
END=$((575 - SECONDS)) bash bench/results/runs/s8_chain.sh
tar czf $OUT/s8c1.tgz --exclude='prof_*.csv' -C /tmp s8
ls -la $OUT
