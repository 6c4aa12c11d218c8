#!/usr/bin/env bash
# Session 27 on one warm H200, carry scratch/tgemm.gz, scratch/COMMIT, scratch/h200_old:
# 1. (first call) the new H200 overlay's M >= 512 rows out of sample: `tgemm bench --m
#    512,2048,8192` with the committed tables and with the previous overlay (scratch/h200_old),
#    alternated once;
# 2. issue 3's same-card agreement pair with `--sustained_margin 0.01` (runbook, session 27 item
#    2), cuBLASLt only, --batch 8, tunes detached (setsid) so a call's limit does not cut them;
# 3. STEP=cmp: three compares in short slots (the default judge since session 24) and the
#    agreement.
#   STEP=run bash bench/results/runs/s27_pair.sh   (repeat until both tunes end)
#   STEP=cmp bash bench/results/runs/s27_pair.sh
S=/tmp/s27p
END=${END:-585}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
OPTS=${OPTS:-"--batch 8 --libtype cublaslt -i $S/all_in.csv --sustained_margin 0.01"}
overlay_bench() {
  local t d
  for t in new old; do
    d=$PWD/configs; [ $t = old ] && d=$PWD/scratch/h200_old
    TGEMM_CONFIG_DIR=$d timeout 100 tgemm bench --m 512,2048,8192 --json $S/bench_big_$t.json > $S/bench_big_$t.log 2>&1
    echo "$t: $(grep -i geomean $S/bench_big_$t.log | head -1)"
  done; }
case ${STEP:?STEP=run or cmp} in
  run)
    nvidia-smi --query-gpu=name --format=csv,noheader
    step overlay_bench 210 overlay_bench
    pair_run
    pair_pack_run $(cd $S && ls bench_big_* 2>/dev/null) ;;
  cmp)
    pair_cmp "$(cd $S && ls bench_big_* 2>/dev/null)" ;;
esac
