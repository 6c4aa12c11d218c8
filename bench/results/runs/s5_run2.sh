#!/usr/bin/env bash
# Session 5 run 2 (one H200): one compile of everything (pip build with tests + CLI), GPU + host
# tests, memcheck of the epilogue tests, bring back the CLI and the package, then tune A
# (cuBLASLt only, the placement-confirmed tuner) for the rest of the call (resumed in run 3).
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
export GPU_CHECK_DIR=/tmp/gc
L=$OUT/logs; mkdir -p $L
GPU_CHECK_STEPS="pybuild" timeout 320 scripts/gpu-check 2>&1 | tail -3
B=$(ls -d build/pip/*/ | head -1)tools/cli/tgemm
T=$(ls -d build/pip/*/ | head -1)tests/gpu
strip -o /tmp/tgemm $B && gzip -1 -c /tmp/tgemm > $OUT/tgemm.gz
PKG=$(python3 -c "import tgemm, os; print(os.path.dirname(tgemm.__file__))" 2>/dev/null)
[ -n "$PKG" ] && tar czf $OUT/tgemm_pkg.tgz --exclude=__pycache__ -C $(dirname $PKG) $(basename $PKG)
echo "packed at $SECONDS s"
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests" timeout 150 scripts/gpu-check 2>&1 | tail -4
grep -E "Failed|\*\*\*" /tmp/gc/gpu_tests.log | head -20
compute-sanitizer --tool memcheck --error-exitcode 17 --leak-check no $T/test_gpu_epilogue > $L/san_epilogue.log 2>&1; echo "memcheck epilogue rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $L/san_epilogue.log | tail -3
cp /tmp/gc/*.log $L/ 2>/dev/null
echo "tune A from $SECONDS s"
$B shapes --suite bench/shapes/llm_shapes.csv -o $L/all.csv > /dev/null
timeout -s TERM $((585 - SECONDS)) $B tune --libtype cublaslt --batch 4 -i $L/all.csv -o $L/tuned_A.csv --profile_file $L/prof_A.csv > $L/tune_A.log 2>&1
echo "tune A rc=$? rows $(($(wc -l < $L/tuned_A.csv) - 1)) at $SECONDS s"; tail -3 $L/tune_A.log
gzip -f $L/prof_A.csv
