#!/usr/bin/env bash
# Session 26, issue 5 (fused GELU at decode) on a fresh machine (carry .deps/wheels): build every
# kernel with the tests (gpu-check's build and tests steps), memcheck of the skinny sanitizer
# subset (activations included), then `tgemm bench --epilogue gelu --bias --m 1,16` with the
# shipped tables (no decode gelu rows: the default rules), the M = 1, 16 gelu rows tuned with
# every backend (the screen's per-problem lazy-loading guard for heuristic names), and the bench
# again with those rows merged in.
S=/tmp/s26g
END=${END:-575}
mkdir -p $S/cfg
export PATH=$PWD/build/release/tools/cli:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
left() { echo $((END - SECONDS)); }
GPU_CHECK_DIR=$S/gc GPU_CHECK_STEPS="build tests" timeout 330 scripts/gpu-check > $S/gc.log 2>&1
echo "gpu-check rc=$? at $SECONDS s"; tail -5 $S/gc.log
grep -h "FAILED\|Failed" $S/gc/*.log | head -20
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 17 --leak-check no build/release/tests/gpu/test_gpu_skinny \
  --gtest_filter='*Sanitizer*' > $S/san.log 2>&1
echo "memcheck rc=$? at $SECONDS s: $(grep 'ERROR SUMMARY' $S/san.log)"
bench() {  # tag, config dir
  [ $(left) -lt 40 ] && { echo "skip bench $1"; return; }
  TGEMM_CONFIG_DIR=$2 timeout 60 tgemm bench --epilogue gelu --bias --m 1,16 --json $S/gelu_$1.json > $S/gelu_$1.log 2>&1
  echo "bench $1 rc=$? at $SECONDS s: $(grep -i geomean $S/gelu_$1.log)"
}
bench default $PWD/configs
tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/dec.csv > /dev/null
sed -e '1!s/,False,\(torch[^,]*\),\(torch[^,]*\),False,False,none$/,True,\1,\2,False,False,gelu/' $S/dec.csv > $S/gelu_in.csv
t=$(( $(left) - 60 )); [ $t -gt 200 ] && t=200
if [ $t -gt 60 ]; then
  timeout -s TERM $t tgemm tune --libtype all --batch 8 -i $S/gelu_in.csv -o $S/gelu.csv --profile_file $S/prof_gelu.csv > $S/tune.log 2>&1
  echo "tune rc=$? rows $(($(wc -l < $S/gelu.csv) - 1)) at $SECONDS s"; tail -2 $S/tune.log
  tgemm merge --later-wins configs/bf16_tuned_gemm.csv $S/gelu.csv -o $S/cfg/bf16_tuned_gemm.csv
  [ -d configs/h200 ] && cp -r configs/h200 $S/cfg/
  bench tuned $S/cfg
fi
tar czf $OUT/s26g.tgz -C $S --exclude=gc/build.log . ; ls -la $OUT
