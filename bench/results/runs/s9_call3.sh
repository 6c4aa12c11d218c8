#!/usr/bin/env bash
# Session 9's third device call (fresh nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"],
# after `git rev-parse HEAD > scratch/COMMIT`): build every kernel; GPU, host and Python tests
# (the python step failed at once in call 1: gpu-check tailed a pip log that a reused build does
# not have, fixed); memcheck of the skinny PDL test; then, with the shipped table (now with the
# dec1 and gelu_kept rows), the decode bench with skinny v1-2 launched plainly and as PDL with
# the bounded L2 prefetch (call 1's unbounded prefetch: 0.937x); the same pair on the fixed-cost
# suite; and the whole 112-problem suite if time is left.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT) GPU_CHECK_DIR=/tmp/s9b/gc
S=/tmp/s9b; mkdir -p $S /tmp/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
GPU_CHECK_STEPS="pybuild" timeout 240 scripts/gpu-check 2>&1 | tail -2
D=$(ls -d build/pip/*/ | head -1); cp ${D}tools/cli/tgemm /tmp/bin/tgemm
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests" timeout 120 scripts/gpu-check 2>&1 | tail -3
grep -E "Failed|\*\*\*" $GPU_CHECK_DIR/gpu_tests.log | head -10
GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="python" timeout 170 scripts/gpu-check 2>&1 | tail -2
tail -15 $GPU_CHECK_DIR/python.log > $S/python_tail.log
compute-sanitizer --tool memcheck --error-exitcode 17 ${D}tests/gpu/test_gpu_skinny --gtest_filter='*Pdl*' \
  > $S/san_pdl.log 2>&1; grep -E "ERROR SUMMARY|PASSED|FAILED" $S/san_pdl.log
echo "tests done at $SECONDS s"
for v in 0 1; do
  TGEMM_SKINNY_V2_PDL=$v timeout 60 tgemm bench --m 1,16 --json $S/bench_decode_v2pdl$v.json > $S/bench_decode_v2pdl$v.log 2>&1
  TGEMM_SKINNY_V2_PDL=$v timeout 40 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 \
    --json $S/bench_fixed_v2pdl$v.json > $S/bench_fixed_v2pdl$v.log 2>&1
done
grep -i geomean $S/bench_*.log
echo "decode benches done at $SECONDS s"
[ $SECONDS -lt 420 ] && timeout $((560 - SECONDS)) tgemm bench --json $S/bench_all.json > $S/bench_all.log 2>&1
grep -i geomean $S/bench_all.log
cp $GPU_CHECK_DIR/summary.txt $S/ 2>/dev/null
tar czf $OUT/s9c3.tgz -C /tmp s9b/bench_decode_v2pdl0.json s9b/bench_decode_v2pdl1.json s9b/bench_fixed_v2pdl0.json \
  s9b/bench_fixed_v2pdl1.json s9b/bench_all.json s9b/python_tail.log s9b/san_pdl.log $(cd /tmp && ls s9b/*.log)
echo "call ends at $SECONDS s"
