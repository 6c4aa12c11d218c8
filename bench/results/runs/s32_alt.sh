#!/usr/bin/env bash
# Session 32, issue 3: does a reconfirmation that may pick among each problem's top candidates, in a
# fresh process, make two tunes agree? Session 32's pair (--sustained_confirm_all options, 81.3%)
# replayed from its own tune stages: each tune's table as it stood before its reconfirmation
# (studies/s32_inputs/pre_X.csv, pre_reconfirm.py) reconfirmed again with the pair's rule
# (2 placements, 6 rounds, margin 0, tolerance 0.02) and `--alternatives 3 --profile` the tune's
# own profile; then two short-slot judges of the two results (as pair_cmp). In-tune confirmations
# read some picks 3-8% above what a fresh process reads (64x24576x1536 tile164: 1.033/1.035 in both
# tunes, 0.964/0.961 reconfirmed; perf-notes, tuner, "Session 32"). CI binaries with --alternatives
# (carry scratch/tgemm.gz, scratch/COMMIT).
#   END=590 bash bench/results/runs/s32_alt.sh   (twice if the first call runs out: steps resume)
S=/tmp/s32a
END=${END:-590}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
I=bench/results/studies/s32_inputs P=bench/results/studies/s32/pair
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
alt() {  # X
  [ -f $S/prof_p_$1.csv ] || gunzip -c $P/prof_p_$1.csv.gz > $S/prof_p_$1.csv
  timeout $(( $(left) < 295 ? $(left) - 5 : 290 )) tgemm reconfirm $I/pre_$1.csv -o $S/r_$1.csv --libtype cublaslt --errRatio 0.05 \
    --placements 2 --rounds 6 --margin 0 --sustained_margin 0 --placement_tolerance 0.02 --min_rotation_sets 1 \
    --short_slots --alternatives 3 --profile $S/prof_p_$1.csv > $S/r_$1.log 2>&1
  echo "reconfirm $1 rc=$?"; tail -1 $S/r_$1.log
}
step alt_A 280 alt A
step alt_B 280 alt B
judge() {  # i
  timeout $(( $(left) - 5 )) tgemm compare --measure --placements 4 --short_slots $S/r_A.csv $S/r_B.csv \
    --json $S/cmp_short_r_$1.json > $S/cmp_short_r_$1.log 2>&1; echo "judge $1 rc=$?"; tail -1 $S/cmp_short_r_$1.log
}
[ -f $S/alt_A.done ] && [ -f $S/alt_B.done ] && { step judge_1 150 judge 1; step judge_2 150 judge 2; }
if [ -f $S/judge_1.done ]; then
  cp $S/r_A.csv $S/p_A.csv; cp $S/r_B.csv $S/p_B.csv
  python3 bench/tune_agreement.py $S/p_A.csv $S/p_B.csv --profiles $S/prof_p_A.csv $S/prof_p_B.csv --compare $(ls $S/cmp_short_r_*.json) \
    > $S/agreement_r.txt 2>&1; tail -8 $S/agreement_r.txt
fi
tar czf $OUT/alt.tgz -C $S $(cd $S && ls r_* cmp_short_r_* agreement_r.txt steps.txt 2>/dev/null)
