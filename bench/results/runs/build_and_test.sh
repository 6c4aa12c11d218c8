#!/usr/bin/env bash
# The opening of a session's first device call: one build of every kernel (gpu-check's pybuild:
# the package, the C++ tests and the CLI), the CLI copied to /tmp/bin/tgemm for the calls that
# follow on the warm machine and packed to $OUT/tgemm.gz for a fresh one (carry it in scratch/),
# then the GPU and host tests and the sanitizer subset. Logs under $1 (default /tmp/dev/gc).
# Exit status 0 when every GPU test passed.
set -o pipefail
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export GPU_CHECK_DIR=${1:-/tmp/dev/gc}
mkdir -p "$GPU_CHECK_DIR" /tmp/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
GPU_CHECK_STEPS="pybuild" timeout 320 scripts/gpu-check 2>&1 | tail -3
D=$(ls -d build/pip/*/ | head -1); B=${D}tools/cli/tgemm
cp "$B" /tmp/bin/tgemm
strip -o /tmp/tgemm.s "$B" && gzip -1 -c /tmp/tgemm.s > "$OUT/tgemm.gz"
echo "built at $SECONDS s"
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests sanitizer" timeout 240 scripts/gpu-check 2>&1 | tail -6
grep -E "Failed|\*\*\*" "$GPU_CHECK_DIR/gpu_tests.log" | head -20
echo "tests done at $SECONDS s"
grep -q "100% tests passed" "$GPU_CHECK_DIR/gpu_tests.log"
