#!/usr/bin/env bash
# Session 27, one warm H200 over consecutive calls (steps leave $S/<name>.done; rerun the same
# command until "all steps done"). Carry .deps/wheels. TGEMM_COMMIT=<sha> END=<s> bash <this>.
# 1. gpu-check: pybuild, GPU tests, sanitizer, pytest, A/A, decode bench (covers e9dda0c's mends);
# 2. issue 5's Python clause: torch_bench --gelu --bias (fused against F.gelu(F.linear) and
#    against gemm_a16w16 + F.gelu) on the whole suite;
# 3. issue 5's M >= 512 clause on the H200: the 48 plain M = 512, 2048, 8192 problems tuned with
#    every backend (detached, so a call's limit does not cut it), then
# 4. `tgemm bench --m 512,2048,8192` with the shipped tables and with those rows merged into the
#    H200 overlay, alternated twice.
S=/tmp/s27
END=${END:-575}
mkdir -p $S/cfg/h200
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
for d in build/pip/*/; do [ -x "$d/tools/cli/tgemm" ] && export PATH=$PWD/${d%/}/tools/cli:$PATH; done
left() { echo $((END - SECONDS)); }
step() { local name=$1 need=$2; shift 2
  [ -f $S/$name.done ] && return 0
  [ $(left) -lt $need ] && { echo "skip $name: $(left) s left, needs $need"; return 1; }
  local t0=$SECONDS; "$@"; local rc=$?; echo "$name rc=$rc in $((SECONDS - t0)) s (at $SECONDS)" | tee -a $S/steps.txt
  [ $rc = 0 ] && touch $S/$name.done; return $rc; }
gpucheck() {
  BENCH_M=1,16 GPU_CHECK_DIR=$S/gc GPU_CHECK_STEPS="pybuild tests sanitizer python aa bench" \
    timeout $(( $(left) - 5 )) scripts/gpu-check > $S/gc.log 2>&1; local rc=$?
  tail -25 $S/gc.log
  for d in build/pip/*/; do [ -x "$d/tools/cli/tgemm" ] && export PATH=$PWD/${d%/}/tools/cli:$PATH; done
  echo "gpu-check rc=$rc"; }  # done either way: its summary says what failed
pygelu() {
  timeout $(( $(left) - 5 )) python3 bench/torch_bench.py --gelu --bias --m 1,16,64,128,512,2048,8192 --no-overhead \
    --json $S/torch_gelu.json --png $S/torch_gelu.png > $S/torch_gelu.log 2>&1; local rc=$?
  tail -8 $S/torch_gelu.log; echo "torch_bench rc=$rc"; }
tune_start() {
  tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 -o $S/in.csv > /dev/null || return 1
  date +%s > $S/tune.started
  setsid nohup bash -c "tgemm tune --libtype all --batch 8 -i $S/in.csv -o $S/big.csv --profile_file $S/prof_big.csv \
    > $S/tune.log 2>&1; echo \$? > $S/tune.rc; date +%s > $S/tune.ended" < /dev/null > /dev/null 2>&1 &
  echo "tune started ($(which tgemm))"; }
tune_wait() {
  while [ ! -f $S/tune.ended ] && [ $(left) -gt 12 ]; do sleep 5; done
  echo "tune: rows $(($(wc -l < $S/big.csv 2>/dev/null || echo 1) - 1)) of 48, rc $(cat $S/tune.rc 2>/dev/null || echo running)," \
    "$(( $(cat $S/tune.ended 2>/dev/null || date +%s) - $(cat $S/tune.started) )) s"
  grep -E "tune summary|GPU work by stage|candidates per problem|reconfirm summary" $S/tune.log | tail -5
  [ -f $S/tune.ended ]; }
bench() {
  tgemm merge --later-wins configs/h200/bf16_tuned_gemm.csv $S/big.csv -o $S/cfg/h200/bf16_tuned_gemm.csv
  cp configs/bf16_tuned_gemm.csv $S/cfg/
  local rep t d
  for rep in 1 2; do
    for t in shipped overlay; do
      d=$PWD/configs; [ $t = overlay ] && d=$S/cfg
      TGEMM_CONFIG_DIR=$d timeout 120 tgemm bench --m 512,2048,8192 --json $S/bench_${t}_$rep.json > $S/bench_${t}_$rep.log 2>&1
      echo "$t $rep: $(grep -i geomean $S/bench_${t}_$rep.log | head -2 | tr '\n' ' ')"
    done
  done; }
nvidia-smi --query-gpu=name --format=csv,noheader
step gpucheck 470 gpucheck
step pygelu 100 pygelu
step tune_start 20 tune_start
step tune_wait 15 tune_wait && step bench 300 bench && echo "all steps done"
cat $S/steps.txt
tar czf $OUT/s27.tgz -C $S --exclude=gc/build.log --exclude='gc/*.tgz' . ; ls -la $OUT
