#!/usr/bin/env bash
# Session 27, issue 5's M >= 512 clause on the H200 (runbook, "Order for the open issues (session
# 27)", item 1), written in session 26, not run yet. Carry .deps/wheels; run it in consecutive
# calls on one warm H200 (steps leave $S/<name>.done, the tune resumes from its batches):
# 1. every kernel (gpu-check's build step);
# 2. the 48 plain M = 512, 2048, 8192 problems tuned with every backend (~470 s: a call of its own);
# 3. `tgemm bench --m 512,2048,8192` with the shipped tables and with the rows merged into the
#    H200 overlay, alternated twice.
S=/tmp/s27b
END=${END:-575}
mkdir -p $S/cfg/h200
export PATH=$PWD/build/release/tools/cli:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
left() { echo $((END - SECONDS)); }
step() { local name=$1 need=$2; shift 2
  [ -f $S/$name.done ] && return 0
  [ $(left) -lt $need ] && { echo "skip $name: $(left) s left, needs $need"; return 1; }
  local t0=$SECONDS; "$@"; local rc=$?; echo "$name rc=$rc in $((SECONDS - t0)) s (at $SECONDS)"
  [ $rc = 0 ] && touch $S/$name.done; return $rc; }
build() { GPU_CHECK_DIR=$S/gc GPU_CHECK_STEPS="build" timeout 300 scripts/gpu-check > $S/gc.log 2>&1; }
tune() {  # resumable: problems already in the tuned file are skipped
  [ -f $S/in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 -o $S/in.csv > /dev/null
  timeout -s TERM $(( $(left) - 10 )) tgemm tune --libtype all --batch 8 -i $S/in.csv -o $S/big.csv \
    --profile_file $S/prof_big_$SECONDS.csv >> $S/tune.log 2>&1
  local rows=$(($(wc -l < $S/big.csv) - 1)); echo "rows $rows of 48"; tail -2 $S/tune.log; [ $rows -ge 48 ]; }
bench() {
  tgemm merge --later-wins configs/h200/bf16_tuned_gemm.csv $S/big.csv -o $S/cfg/h200/bf16_tuned_gemm.csv
  cp configs/bf16_tuned_gemm.csv $S/cfg/
  local rep t d
  for rep in 1 2; do
    for t in shipped overlay; do
      d=$PWD/configs; [ $t = overlay ] && d=$S/cfg
      TGEMM_CONFIG_DIR=$d timeout 120 tgemm bench --m 512,2048,8192 --json $S/bench_${t}_$rep.json > $S/bench_${t}_$rep.log 2>&1
      echo "$t $rep: $(grep -i geomean $S/bench_${t}_$rep.log)"
    done
  done; }
nvidia-smi --query-gpu=name --format=csv,noheader
step build 280 build || { tail -5 $S/gc.log; }
step tune 120 tune
step bench 320 bench
tar czf $OUT/s27b.tgz -C $S --exclude=gc/build.log . ; ls -la $OUT
