#!/usr/bin/env bash
# Session 10's first device call (nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"],
# after `git rev-parse HEAD > scratch/COMMIT` on branch session9-unverified): build every kernel,
# the GPU and host tests (new: skinny version 5 in every variant test,
# Skinny.BulkRingAndPersistentGrid, the GEMV default in Skinny.DefaultRuleCoversDecodeOnly,
# Reconfirm.TheDefaultIsKeptAndASlowRowReverts),
# then s10_chain.sh for the rest of the call. Later calls on the warm machine:
# `END=575 bash bench/results/runs/s10_chain.sh; tar czf $OUT/s10cN.tgz --exclude='prof_*.csv' -C /tmp s10`.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT) GPU_CHECK_DIR=/tmp/s10/gc
mkdir -p /tmp/s10 /tmp/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
GPU_CHECK_STEPS="pybuild" timeout 240 scripts/gpu-check 2>&1 | tail -2
D=$(ls -d build/pip/*/ | head -1); cp ${D}tools/cli/tgemm /tmp/bin/tgemm
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests" timeout 120 scripts/gpu-check 2>&1 | tail -4
grep -E "Failed|\*\*\*|FAILED" $GPU_CHECK_DIR/gpu_tests.log | head -20
echo "tests done at $SECONDS s"
END=$((575 - SECONDS)) bash bench/results/runs/s10_chain.sh
for f in /tmp/s10/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
tar czf $OUT/s10c1.tgz --exclude='prof_*.csv' -C /tmp s10
ls -la $OUT
