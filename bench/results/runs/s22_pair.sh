#!/usr/bin/env bash
# Session 22, issue 3 on the 2-GPU kind (nvidia-h100-x2): the agreement pair as two whole tunes at
# once, tune A on GPU 0 and tune B on GPU 1 (independent processes on two cards of one host),
# with `--reconfirm --no-confirm_best --finalists_mem 16` (cuBLASLt, --batch 8). Each tune runs
# detached (setsid), so a tune longer than one call's 600 s is not cut: call 1 starts both and
# waits, call 2 (made at once, on the still-warm machine) waits for the rest and goes on.
#   call 1: STEP=start bash bench/results/runs/s22_pair.sh   (kind nvidia-h100-x2, carry ["scratch"])
#   call 2: STEP=finish ...: three measured compares of A and B on GPU 0 beside a whole-suite
#           bench of table A (cuBLASLt rows only) on GPU 1; then `--mp 2` over both GPUs (the
#           16 problems at M = 16) and test_gpu_tune.
# Each tune's wall time is its own summary line and, with the reconfirmation, started/ended stamps.
S=/tmp/s22
END=${END:-588}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --reconfirm --no-confirm_best --finalists_mem 16"
start_tune() {  # X gpu
  [ -f $S/p_$1.started ] && return 0
  date +%s > $S/p_$1.started
  CUDA_VISIBLE_DEVICES=$2 setsid nohup bash -c "tgemm tune $OPTS -o $S/p_$1.csv --profile_file $S/prof_p_$1.csv \
    > $S/p_$1.log 2>&1; echo \$? > $S/p_$1.rc; date +%s > $S/p_$1.ended" < /dev/null > /dev/null 2>&1 &
}
wait_tunes() {
  while { [ ! -f $S/p_A.ended ] || [ ! -f $S/p_B.ended ]; } && [ $(left) -gt 15 ]; do
    pgrep -f "tgemm tune" > /dev/null || { echo "no tune running (ended or killed)"; break; }
    sleep 5
  done
}
report() {
  local x
  for x in A B; do
    echo "tune $x: rows $(rows $S/p_$x.csv), rc $(cat $S/p_$x.rc 2>/dev/null || echo running)," \
      "wall $(( $(cat $S/p_$x.ended 2>/dev/null || date +%s) - $(cat $S/p_$x.started) )) s with the reconfirmation"
    grep -E "tune summary|GPU work by stage|of which|candidates per problem|reconfirm summary" $S/p_$x.log | tail -6
  done
}
pack() {  # name files...: one tarball in $OUT (at most 8 files come back)
  local name=$1; shift
  tar czf "$OUT/$name.tgz" -C $S "$@" 2>/dev/null; ls -la "$OUT/$name.tgz"
}
case ${STEP:?STEP=start or finish} in
  start)
    start_tune A 0; start_tune B 1; sleep 2; nvidia-smi --query-gpu=index,name,memory.used --format=csv
    wait_tunes; report
    pack start p_A.log p_B.log $(cd $S && ls p_?.csv 2>/dev/null) ;;
  finish)
    wait_tunes; report
    [ -f $S/p_A.ended ] && [ -f $S/p_B.ended ] || { echo "tunes not finished"; pack partial p_A.log p_B.log; exit 1; }
    pack_profiles
    ( CUDA_VISIBLE_DEVICES=0 cmp3 p > $S/cmp.out 2>&1 ) &
    ( CUDA_VISIBLE_DEVICES=1 TGEMM_CONFIG_GEMM_BF16=$S/p_A.csv timeout 300 tgemm bench --json $S/bench_pA.json \
        > $S/bench_pA.log 2>&1; echo "bench rc=$?" >> $S/bench_pA.log ) &
    wait
    cat $S/cmp.out; grep -iE "geomean|below|rc=" $S/bench_pA.log | tail -8
    tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 16 -o $S/mp_in.csv > /dev/null
    t0=$SECONDS
    ( for i in 1 2 3 4 5 6; do sleep 3; nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader; done \
        > $S/mp2_smi.txt 2>&1 ) &
    timeout 200 tgemm tune --mp 2 --batch 4 --libtype cublaslt -i $S/mp_in.csv -o $S/mp2.csv > $S/mp2.log 2>&1
    wait; echo "processes on the GPUs while it ran:"; sort -u $S/mp2_smi.txt | head -8
    echo "mp2 rc=$? rows $(rows $S/mp2.csv) in $((SECONDS - t0)) s"; grep -E "GPU|worker|summary" $S/mp2.log | head -12
    run_gpu_test test_gpu_tune
    pack finish p_A.csv p_B.csv p_A.log p_B.log prof_p_A.csv.gz prof_p_B.csv.gz cmp_p_1.json cmp_p_2.json \
      cmp_p_3.json cmp_p_runs.txt cmp.out bench_pA.json bench_pA.log mp_in.csv mp2.csv mp2.log mp2_smi.txt test_gpu_tune.log ;;
esac
