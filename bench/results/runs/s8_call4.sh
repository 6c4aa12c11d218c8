#!/usr/bin/env bash
# Session 8's last device call (fresh nvidia-h200, ~385 s of budget left, carry ["scratch",
# ".deps/wheels"]): build every kernel, the GPU and host tests (the fixed RaceProblem test, the
# new Split.DefaultStagesTheErfGeluWithBiasAtLargeM), then the gelu bench with an empty table:
# the default rules alone (CUTLASS v4 + the staged erf-GELU default, predicted ~1.008x, 1 below
# 0.98x at M = 512/2048/8192). No sanitizer pass: call 1 of this session ran it on this branch.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT) GPU_CHECK_DIR=/tmp/s8/gc4
S=/tmp/s8; mkdir -p $S /tmp/bin
GPU_CHECK_STEPS="pybuild" timeout 200 scripts/gpu-check 2>&1 | tail -2
D=$(ls -d build/pip/*/ | head -1); cp ${D}tools/cli/tgemm /tmp/bin/tgemm
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests" timeout 90 scripts/gpu-check 2>&1 | tail -4
grep -E "Failed|\*\*\*" $GPU_CHECK_DIR/gpu_tests.log | head -10
echo "tests done at $SECONDS s"
mkdir -p /tmp/empty; head -1 configs/bf16_tuned_gemm.csv > /tmp/empty/e.csv
TGEMM_CONFIG_DIR=/tmp/empty TGEMM_CONFIG_GEMM_BF16=/tmp/empty/e.csv timeout $((330 - SECONDS)) tgemm bench --epilogue gelu \
  --bias --m 512,2048,8192 --json $S/bench_gelu_rule_v5.json > $S/bench_gelu_rule_v5.log 2>&1
grep -i geomean $S/bench_gelu_rule_v5.log
tar czf $OUT/s8c4.tgz -C /tmp s8/gc4 s8/bench_gelu_rule_v5.json s8/bench_gelu_rule_v5.log
echo "end at $SECONDS s"
