#!/usr/bin/env bash
# Written in session 23 for session 24, issue 3: a same-card agreement pair with the tune
# defaults (`--reconfirm --no-confirm_best --finalists_mem 16`) plus `--short_slots` (session 23:
# the finals' and confirmation's ~100-150 ms slots biased by 2-5% on compute-bound problems in
# the bench's A/A), cuBLASLt only, --batch 8, both tunes on ONE GPU one after the other (session
# 22 ran them on two cards at once, and 9 of its 13 rows beyond the band differed by card).
# Tunes run detached (setsid), so a call's 600 s limit does not cut them; make the calls back to
# back on the warm machine (idle release: 30 s). One-chip machines count 50-67% of held time.
#   calls 1-3: STEP=run bash bench/results/runs/s24_pair.sh   (tune A, then B; repeat until both end)
#   call 4:    STEP=cmp bash bench/results/runs/s24_pair.sh   (three measured compares with the
#              old judge and three with --short_slots, agreement, a bench of table A)
# carry: scratch/tgemm.gz, scratch/COMMIT
S=/tmp/s24p
END=${END:-585}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
OPTS=${OPTS:-"--batch 8 --libtype cublaslt -i $S/all_in.csv --short_slots"}  # session 25: short slots are the default
case ${STEP:?STEP=run or cmp} in
  run)
    nvidia-smi --query-gpu=name --format=csv,noheader
    pair_run
    pair_pack_run ;;
  cmp)
    pair_report
    [ -f $S/p_A.ended ] && [ -f $S/p_B.ended ] || { echo "tunes not finished"; exit 1; }
    pack_profiles
    cmp3 p                      # the judge of sessions 13-22 (~20 ms graphs)
    cmp3 p _short --short_slots  # the same in short slots (tgemm compare --short_slots)
    python3 bench/tune_agreement.py $S/p_A.csv $S/p_B.csv --profiles $S/prof_p_A.csv $S/prof_p_B.csv \
      --compare $S/cmp_p_1.json $S/cmp_p_2.json $S/cmp_p_3.json > $S/agreement_p.txt 2>&1; tail -12 $S/agreement_p.txt
    [ $(left) -gt 200 ] && { TGEMM_CONFIG_GEMM_BF16=$S/p_A.csv timeout 190 tgemm bench --json $S/bench_pA.json > $S/bench_pA.log 2>&1; grep -i geomean $S/bench_pA.log; }
    tar czf $OUT/cmp.tgz -C $S p_A.csv p_B.csv p_A.log p_B.log prof_p_A.csv.gz prof_p_B.csv.gz cmp_p_1.json cmp_p_2.json \
      cmp_p_3.json cmp_p_runs.txt $(cd $S && ls cmp_short_p_* bench_pA.* 2>/dev/null) agreement_p.txt ;;
esac
