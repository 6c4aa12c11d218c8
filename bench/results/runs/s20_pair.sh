#!/usr/bin/env bash
# Session 20 (written in session 19, not run): issue 3, one configuration for both figures
# (>= 90% agreement and <= 10 minutes a tune). A same-day pair with --reconfirm --no-confirm_best
# (the reconfirmation's ~54 s taken out of the in-process confirmation, which stops at the first
# finalist that passes instead of confirming all three tries), each tune whole in one call so that
# its wall time is the figure (docs/gpu-runbook.md, "Order for the open issues (session 20)").
#   call 1: STEP=A bash bench/results/runs/s20_pair.sh   (carry ["scratch"], timeout_s 600)
#   call 2: STEP=B ...   call 3: STEP=cmp ...
# Between calls copy $OUT/p_<X>.csv to scratch/s20p/ (chain_inputs copies it in on a fresh machine).
S=/tmp/s20p
END=593  # tune_until's timeout: END - 8 = 585 s, inside a 600 s call
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --reconfirm --no-confirm_best"
case ${STEP:?STEP=A, B or cmp} in
  A|B) tune_until p_$STEP 112 $OPTS; grep -E "summary|GPU work by stage|candidates per problem" $S/p_$STEP.log | tail -4
       pack_profiles; cp $S/p_$STEP.csv $S/p_$STEP.log $S/prof_p_$STEP.csv.gz "$OUT"/ ;;
  cmp) cmp3 p; cp $S/cmp_p_*.json $S/cmp_p_runs.txt "$OUT"/ ;;
esac
