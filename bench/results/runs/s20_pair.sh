#!/usr/bin/env bash
# Session 20 (written in session 19, not run): issue 3, one configuration for both figures
# (>= 90% agreement and <= 10 minutes a tune). A same-day pair with --reconfirm --no-confirm_best
# (the reconfirmation's ~54 s taken out of the in-process confirmation, which stops at the first
# finalist that passes instead of confirming all three tries), each tune whole in one call so that
# its wall time is the figure (docs/gpu-runbook.md, "Order for the open issues (session 20)").
#   call 1: STEP=A bash bench/results/runs/s20_pair.sh   (carry ["scratch"], timeout_s 600)
#   call 2: STEP=B ...   call 3: STEP=cmp ...
# Between calls copy $OUT/p_<X>.csv to scratch/s20p/ (a fresh machine starts with nothing).
set -u
S=/tmp/s20p
export TGEMM_CONFIG_DIR=$PWD/configs
END=600
. bench/results/runs/chain_lib.sh
mkdir -p scratch/s20p
for f in scratch/s20p/*.csv; do [ -f "$f" ] && cp -n "$f" $S/; done
[ -f $S/all_in.csv ] || cp bench/results/studies/s19/all_in.csv $S/ 2>/dev/null || chain_inputs
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --reconfirm --no-confirm_best"
case ${STEP:?STEP=A, B or cmp} in
  A|B)
    t0=$SECONDS
    timeout -s TERM 585 tgemm tune $OPTS -o $S/p_$STEP.csv --profile_file $S/prof_p_$STEP.csv > $S/p_$STEP.log 2>&1
    echo "tune p_$STEP rc=$? rows $(rows $S/p_$STEP.csv) of 112 in $((SECONDS - t0)) s (tune and reconfirmation)"
    grep -E "summary|GPU work by stage|candidates per problem" $S/p_$STEP.log | tail -4
    gzip -f $S/prof_p_$STEP.csv
    cp $S/p_$STEP.csv $S/p_$STEP.log $S/prof_p_$STEP.csv.gz "$OUT"/ ;;
  cmp)
    for i in 1 2 3; do
      timeout 170 tgemm compare --measure --placements 4 $S/p_A.csv $S/p_B.csv --json $S/cmp_p_$i.json > /dev/null 2>&1
    done
    python3 bench/compare_runs.py $S/cmp_p_{1,2,3}.json > $S/cmp_p_runs.txt 2>&1; tail -2 $S/cmp_p_runs.txt
    cp $S/cmp_p_*.json $S/cmp_p_runs.txt "$OUT"/ ;;
esac
