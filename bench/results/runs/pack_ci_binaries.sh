#!/usr/bin/env bash
# Run here (no GPU), not on the device: builds the CI preset (host code, bf16 skinny kernels with
# M <= 16 - all versions -, cuBLASLt, 2 CUTLASS instances) and packs its CLI and its skinny and
# tuner GPU tests into scratch/ for a device call that needs no device build (s10_call0.sh). ~5 MB gzipped.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cmake --build build/ci -j"$(nproc)"
mkdir -p scratch/ci
strip -o /tmp/tgemm_ci build/ci/tools/cli/tgemm && gzip -1 -c /tmp/tgemm_ci > scratch/tgemm.gz
strip -o /tmp/tskinny_ci build/ci/tests/gpu/test_gpu_skinny && gzip -1 -c /tmp/tskinny_ci > scratch/ci/test_gpu_skinny.gz
strip -o /tmp/ttune_ci build/ci/tests/gpu/test_gpu_tune && gzip -1 -c /tmp/ttune_ci > scratch/ci/test_gpu_tune.gz
git rev-parse HEAD > scratch/COMMIT
git diff --quiet HEAD -- src kernels tools || echo "warning: uncommitted changes under src, kernels or tools: the binaries are not HEAD's"
ls -la scratch/tgemm.gz scratch/ci/test_gpu_skinny.gz scratch/ci/test_gpu_tune.gz
