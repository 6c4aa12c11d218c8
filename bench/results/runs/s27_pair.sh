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
    tar czf $OUT/run.tgz -C $S $(cd $S && ls bench_big_* 2>/dev/null; for x in A B; do [ -f p_$x.ended ] && ls p_$x.log p_$x.csv; done 2>/dev/null) ;;
  cmp)
    pair_report
    [ -f $S/p_A.ended ] && [ -f $S/p_B.ended ] || { echo "tunes not finished"; exit 1; }
    pack_profiles
    tar czf $OUT/tables.tgz -C $S p_A.csv p_B.csv p_A.log p_B.log prof_p_A.csv.gz prof_p_B.csv.gz
    local_i=1  # short-slot judges while the call has time for one (~100 s each)
    while [ $local_i -le 3 ] && [ $(left) -gt 110 ]; do
      timeout $(( $(left) - 10 )) tgemm compare --measure --placements 4 --short_slots $S/p_A.csv $S/p_B.csv \
        --json $S/cmp_short_p_$local_i.json > /dev/null 2>&1; echo "judge $local_i rc=$? at $SECONDS s"; local_i=$((local_i + 1))
    done
    python3 bench/tune_agreement.py $S/p_A.csv $S/p_B.csv --profiles $S/prof_p_A.csv $S/prof_p_B.csv \
      --compare $(ls $S/cmp_short_p_*.json) > $S/agreement_p.txt 2>&1; tail -14 $S/agreement_p.txt
    tar czf $OUT/cmp.tgz -C $S p_A.csv p_B.csv p_A.log p_B.log prof_p_A.csv.gz prof_p_B.csv.gz \
      $(cd $S && ls cmp_short_p_* bench_big_* 2>/dev/null) agreement_p.txt ;;
esac
