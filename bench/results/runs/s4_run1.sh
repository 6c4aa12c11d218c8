#!/usr/bin/env bash
# Session 4 run 1 (one H200): one compile of everything (pip build with tests + CLI), GPU + host
# tests, Python tests, overhead; the tune's flush on SIGTERM; ncu profile of decode kernels;
# bring back the CLI and the installed package for later runs.
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
export GPU_CHECK_DIR=/tmp/gc
L=/tmp/gc
GPU_CHECK_STEPS="pybuild" timeout 300 scripts/gpu-check 2>&1 | tail -4
B=$(ls -d build/pip/*/ | head -1)tools/cli/tgemm
strip -o /tmp/tgemm $B && gzip -1 -c /tmp/tgemm > $OUT/tgemm.gz
PKG=$(python3 -c "import tgemm, os; print(os.path.dirname(tgemm.__file__))" 2>/dev/null)
[ -n "$PKG" ] && tar czf $OUT/tgemm_pkg.tgz -C $(dirname $PKG) $(basename $PKG) --exclude=__pycache__
echo "packed at $SECONDS s"
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests python overhead" timeout 250 scripts/gpu-check 2>&1 | tail -12
echo "checks done at $SECONDS s"
# SIGTERM flush: 16 decode problems, --batch 100 (no batch write before the signal).
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o /tmp/dec.csv > /dev/null
timeout -s TERM 25 $B tune --libtype cublaslt --batch 100 -i /tmp/dec.csv -o $L/sig.csv > $L/sig.log 2>&1
echo "tune under timeout -s TERM: rc=$? rows written $(($(wc -l < $L/sig.csv) - 1))"
tail -5 $L/sig.log
echo "profile from $SECONDS s"
PROFILE_SHAPES="1,576,7168 16,576,7168 1,1280,8192 16,4096,4096 1,6144,4096" GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="profile" timeout $((590 - SECONDS)) scripts/gpu-check 2>&1 | tail -4
tar czf $OUT/gc.tgz -C /tmp gc --exclude='*.csv.gz'
ls -la $OUT; echo "done at $SECONDS s"
