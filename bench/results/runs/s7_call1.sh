#!/usr/bin/env bash
# Session 7's first device call (nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"],
# after `git rev-parse HEAD > scratch/COMMIT`): s7_run1.sh's build and tests of the branch
# (pybuild, GPU + host tests, sanitizer subset), lt-space --launches on three problems, then
# s7_chain.sh for the rest of the call (tune A first). If the GPU tests fail, the chain runs
# without the tunes (they use the options those tests cover). Later calls: s7_callN.sh.
set -o pipefail
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
export GPU_CHECK_DIR=/tmp/s7/gc
L=/tmp/s7; mkdir -p $L /tmp/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
GPU_CHECK_STEPS="pybuild" timeout 320 scripts/gpu-check 2>&1 | tail -3
D=$(ls -d build/pip/*/ | head -1); B=${D}tools/cli/tgemm
cp $B /tmp/bin/tgemm
strip -o /tmp/tgemm.s $B && gzip -1 -c /tmp/tgemm.s > $OUT/tgemm.gz
echo "built at $SECONDS s"
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests sanitizer" timeout 240 scripts/gpu-check 2>&1 | tail -6
grep -E "Failed|\*\*\*" $L/gc/gpu_tests.log | head -20
grep -q "100% tests passed" $L/gc/gpu_tests.log || export SKIP_TUNE=1
echo "tests done at $SECONDS s SKIP_TUNE=${SKIP_TUNE:-}"
for s in "-m 1 -n 576 -k 7168" "-m 16 -n 1280 -k 8192" "-m 2048 -n 5120 -k 8192"; do
  timeout 40 tgemm lt-space $s --launches 2>&1 | grep -v "^  algo" >> $L/lt_launches.txt
done
echo "lt-space at $SECONDS s"; grep -E "^launches|configurations in the whole" $L/lt_launches.txt
END=$((575 - SECONDS)) bash bench/results/runs/s7_chain.sh
tar czf $OUT/s7c1.tgz --exclude=prof.csv -C /tmp s7 s7A s7B s7agree 2>/dev/null
ls -la $OUT
