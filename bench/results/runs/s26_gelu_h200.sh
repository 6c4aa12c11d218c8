#!/usr/bin/env bash
# Session 26, issue 5 on an H200 (carry .deps/wheels), two calls on one machine (steps leave
# $S/<name>.done; run again to go on). 1: every kernel and the tests (gpu-check build + tests),
# the M = 1, 16 gelu + bias rows retuned with every backend (the screen's lazy-loading guard now
# per problem for heuristic names: the first H200 tune's split:cublaslt:heuristic never reached
# its finals), the decode gelu bench with the shipped tables (defaults) and with the rows.
# 2: the whole suite's gelu bench (M = 1..8192) with the rows, then the M = 64, 128 rows tuned
# and the M = 64, 128 bench with them.
S=/tmp/s26h
END=${END:-575}
mkdir -p $S/cfg
export PATH=$PWD/build/release/tools/cli:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
left() { echo $((END - SECONDS)); }
step() { local name=$1 need=$2; shift 2
  [ -f $S/$name.done ] && return 0
  [ $(left) -lt $need ] && { echo "skip $name: $(left) s left, needs $need"; return 1; }
  local t0=$SECONDS; "$@"; echo "$name rc=$? in $((SECONDS - t0)) s (at $SECONDS)"; touch $S/$name.done; }
build() { GPU_CHECK_DIR=$S/gc GPU_CHECK_STEPS="build tests" timeout 330 scripts/gpu-check > $S/gc.log 2>&1
  tail -4 $S/gc.log; grep -h "FAILED" $S/gc/*.log | head -20; }
inputs() { tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets $1 -o $S/in_$2.csv > /dev/null
  sed -i -e '1!s/,False,\(torch[^,]*\),\(torch[^,]*\),False,False,none$/,True,\1,\2,False,False,gelu/' $S/in_$2.csv; }
tune() {  # tag, max seconds
  local t=$(( $(left) - 50 )); [ $t -gt $2 ] && t=$2
  timeout -s TERM $t tgemm tune --libtype all --batch 8 -i $S/in_$1.csv -o $S/gelu_$1.csv --profile_file $S/prof_$1.csv > $S/tune_$1.log 2>&1
  echo "tune $1 rows $(($(wc -l < $S/gelu_$1.csv) - 1))"; tail -1 $S/tune_$1.log; }
table() {  # the shipped tables with the H200 overlay's gelu rows added: $S/cfg
  rm -rf $S/cfg; mkdir -p $S/cfg/h200; cp configs/bf16_tuned_gemm.csv $S/cfg/
  tgemm merge --later-wins configs/h200/bf16_tuned_gemm.csv $S/gelu_*.csv -o $S/cfg/h200/bf16_tuned_gemm.csv; }
bench() {  # tag, config dir, M list, seconds
  TGEMM_CONFIG_DIR=$2 timeout $4 tgemm bench --epilogue gelu --bias --m $3 --json $S/bench_$1.json > $S/bench_$1.log 2>&1
  echo "bench $1: $(grep -i geomean $S/bench_$1.log)"; }
nvidia-smi --query-gpu=name --format=csv,noheader
step build 250 build
step in_dec 5 inputs 1,16 dec
step tune_dec 120 tune dec 150
step table_dec 5 table
step bench_dec_default 40 bench dec_default $PWD/configs 1,16 60
step bench_dec_rows 40 bench dec_rows $S/cfg 1,16 60
step bench_suite 200 bench suite $S/cfg 1,16,64,128,512,2048,8192 300
step in_mid 5 inputs 64,128 mid
step tune_mid 150 tune mid 330
step table_mid 5 table
step bench_mid 60 bench mid $S/cfg 64,128 90
tar czf $OUT/s26h.tgz -C $S --exclude=gc/build.log . ; ls -la $OUT
