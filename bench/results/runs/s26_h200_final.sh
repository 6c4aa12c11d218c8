#!/usr/bin/env bash
# Session 26, last call (H200, fresh; carry .deps/wheels): the shipped tables as committed at the
# end of the session on an H200. Builds every kernel (gpu-check's build step), runs
# test_gpu_dispatch (ShippedTableRowsAreAllValidOnThisDevice reads the shared table plus this
# card's overlay, which gained 112 gelu rows), then the gelu suite and the plain decode bench
# with the shipped configs.
S=/tmp/s26f
mkdir -p $S
export PATH=$PWD/build/release/tools/cli:$PATH:/usr/local/cuda/bin
GPU_CHECK_DIR=$S/gc GPU_CHECK_STEPS="build" timeout 260 scripts/gpu-check > $S/gc.log 2>&1
echo "build rc=$? at $SECONDS s"; tail -3 $S/gc.log
timeout 60 build/release/tests/gpu/test_gpu_dispatch > $S/dispatch.log 2>&1; echo "test_gpu_dispatch rc=$?"; tail -3 $S/dispatch.log
timeout 120 tgemm bench --epilogue gelu --bias --m 1,16,64,128,512,2048,8192 --json $S/gelu_suite.json > $S/gelu_suite.log 2>&1
echo "gelu suite rc=$?: $(grep -i geomean $S/gelu_suite.log)"
timeout 40 tgemm bench --m 1,16 --json $S/decode.json > $S/decode.log 2>&1; echo "decode rc=$?: $(grep -i geomean $S/decode.log)"
tar czf $OUT/s26f.tgz -C $S --exclude=gc/build.log .
