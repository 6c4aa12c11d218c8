#!/usr/bin/env bash
# Session 9's first device call (nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"],
# after `git rev-parse HEAD > scratch/COMMIT` on branch session8-unverified): build every kernel,
# the GPU and host tests (new: RaceProblem.DefaultIsTheDispatchersDefault), then s9_chain.sh for
# the rest of the call. Later calls on the warm machine:
# `END=575 bash bench/results/runs/s9_chain.sh; tar czf $OUT/s9cN.tgz --exclude='prof_*.csv' -C /tmp s9`.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT) GPU_CHECK_DIR=/tmp/s9/gc
mkdir -p /tmp/s9 /tmp/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
GPU_CHECK_STEPS="pybuild" timeout 240 scripts/gpu-check 2>&1 | tail -2
D=$(ls -d build/pip/*/ | head -1); cp ${D}tools/cli/tgemm /tmp/bin/tgemm
strip -o /tmp/tgemm.s ${D}tools/cli/tgemm && gzip -1 -c /tmp/tgemm.s > $OUT/tgemm.gz
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests" timeout 120 scripts/gpu-check 2>&1 | tail -4
grep -E "Failed|\*\*\*" $GPU_CHECK_DIR/gpu_tests.log | head -10
echo "tests done at $SECONDS s"
END=$((575 - SECONDS)) bash bench/results/runs/s9_chain.sh
tar czf $OUT/s9c1.tgz --exclude='prof_*.csv' -C /tmp s9
ls -la $OUT
