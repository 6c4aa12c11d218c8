#!/usr/bin/env bash
# Session 3 run 1 (one H200): one compile of everything (pip build with tests + CLI), GPU + host
# tests, sanitizer subset, Python tests, overhead, layout study; bring back the CLI and the
# installed package for later runs.
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
export GPU_CHECK_DIR=/tmp/gc
GPU_CHECK_STEPS="pybuild tests sanitizer python overhead layout" timeout 560 scripts/gpu-check 2>&1 | tail -30
B=$(ls -d build/pip/*/ | head -1)
strip -o /tmp/tgemm ${B}tools/cli/tgemm && gzip -1 -c /tmp/tgemm > $OUT/tgemm.gz
PKG=$(python3 -c "import tgemm, os; print(os.path.dirname(tgemm.__file__))" 2>/dev/null)
echo "package at $PKG"; ls -la $PKG | head -20
[ -n "$PKG" ] && tar czf $OUT/tgemm_pkg.tgz -C $(dirname $PKG) $(basename $PKG) --exclude=__pycache__
ls -la $OUT; echo "done at $SECONDS s"
