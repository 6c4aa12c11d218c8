#!/usr/bin/env bash
# Session 2 run A: full build, GPU+host tests, sanitizer; keep the CLI for later runs.
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin
export TGEMM_COMMIT=${TGEMM_COMMIT:-unknown}
G=/tmp/g
t0=$SECONDS
GPU_CHECK_DIR=$G GPU_CHECK_STEPS="build" scripts/gpu-check > $OUT/build_step.log 2>&1
echo "build step: $((SECONDS-t0)) s"; tail -3 $OUT/build_step.log
grep -E "cutlass_instances/.*\.cu\.o" $G/build.log | wc -l
mkdir -p $OUT/bin && cp build/release/tools/cli/tgemm $OUT/bin/ && strip $OUT/bin/tgemm 2>/dev/null; ls -la $OUT/bin
t1=$SECONDS
GPU_CHECK_DIR=$G GPU_CHECK_STEPS="tests sanitizer overhead" timeout $((560 - SECONDS)) scripts/gpu-check 2>&1 | tail -12
echo "tests+san: $((SECONDS-t1)) s"
grep -hE "^\[  FAILED  \]|Failure|error:" $G/gpu_tests.log | head -40
grep -E "Test +#|tests passed|tests failed" $G/gpu_tests.log | tail -15
tar czf $OUT/g.tgz -C /tmp g
