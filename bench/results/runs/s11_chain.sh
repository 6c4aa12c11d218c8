#!/usr/bin/env bash
# Session 11's resumable chain (nvidia-h200, carry ["scratch"], no device build: run
# bench/results/runs/pack_ci_binaries.sh here first). Each call runs the steps still undone, each
# only when its time is left before $END seconds (chain_lib.sh); results under /tmp/s11, packed
# into one tar under $OUT by the caller:
#   END=570 bash bench/results/runs/s11_chain.sh; tar czf $OUT/s11cN.tgz --exclude='prof_*.csv' -C /tmp s11
# Steps:
# (t) test_gpu_tune: the tuner's GPU tests, new: the race's stages (screen, accurate, final,
#     confirm) with their ratios, and a race with 16 finalists over 8 rounds on 4 placements.
# (0) wide_A, wide_B: two independent cuBLASLt tunes of the 64 suite problems with M <= 128, with
#     session 9's options (--final_placements 4 --confirm_best) and a wider final: 16 finalists
#     (was 6) within 3% of the fastest accurate time, 8 rounds (was 4). Session 9's profiles: the
#     two picks of a differing row were both among the other tune's finalists in 3 of 24 rows, so
#     most disagreements start before the finals; the finals' paired ratios are repeatable
#     within a day to ~0.1-0.3% (session 10's three compares). Then three `compare --measure
#     --json` runs and bench/compare_runs.py. Prediction: 88-94% agree or tie by the median
#     (session 9's tunes: 89.1%); tune time ~+30 s each (finals are ~1-6 ms a candidate a round
#     at these sizes).
END=${END:-570}
S=/tmp/s11
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
gpu_tests() {
  gunzip -c scratch/ci/test_gpu_tune.gz > $S/test_gpu_tune && chmod +x $S/test_gpu_tune
  timeout 200 $S/test_gpu_tune > $S/test_tune.log 2>&1; echo "test_gpu_tune rc=$?"
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $S/test_tune.log | head -20
  rm -f $S/test_gpu_tune
}
step gpu_tests 210 gpu_tests
# NSETS: the M values of the suite to tune (fix: 16,128, the 32 problems a last call could afford).
NSETS=${NSETS:-1,16,64,128}
IN=$S/sub_in_${NSETS//,/_}.csv
sub_input() { [ -f $IN ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets $NSETS -o $IN > /dev/null; }
# TAG names the pair of tunes (wide: the options above; wide6: the same with --confirm_tries 6,
# so that a finalist whose finals ratio the confirmation does not reproduce does not use up the
# tries: in wide's profiles, 16x51200x5120 kept the default in B after its three fastest finalists
# (tile220, 0.94 of the default in the finals) measured 0.98 in the confirmation, while tile312,
# A's pick at 1.055x, was B's fourth; gs: wide6 with --graph_screen 50, candidates of < 50 us
# screened by graph replays, since wide6's profiles show the screen of ~10 us problems timed by
# the host: the same configuration at 11.3 us in one tune and 14.8 us in the other, and 6 of its
# 11 rows beyond the band have a pick the other tune never timed accurately). EXTRA: more tune
# options.
TAG=${TAG:-wide}
cmp3() {
  for i in 1 2 3; do
    timeout 80 tgemm compare --measure --placements 4 $S/${TAG}_A.csv $S/${TAG}_B.csv --json $S/cmp_${TAG}_$i.json \
      > $S/cmp_${TAG}_$i.txt 2>&1; tail -1 $S/cmp_${TAG}_$i.txt
  done
  python3 bench/compare_runs.py $S/cmp_${TAG}_1.json $S/cmp_${TAG}_2.json $S/cmp_${TAG}_3.json > $S/cmp_${TAG}_runs.txt 2>&1
  tail -2 $S/cmp_${TAG}_runs.txt
}
# ctl (BASE="--final_placements 4 --confirm_best"): the control, session 9's options, on the same
# day and machine; cmp_s9: session 9's two tables compared today (three runs). fix (BASE as ctl,
# NSETS=16,128): after the race's fix (candidates left out of the finals may not win or be
# confirmed: CandidateResult::beyond_finals), on the 32 problems with M = 16 and 128, where ctl
# agreed on 26 (81%). Prediction: >= 29 of 32 (90%); measured 28 (87.5%).
# Session 12 (runbook): fix2 (the fix on all 64), acc (EXTRA="--min_accurate 48 --graph_screen 50").
OPTS="${BASE:---final_placements 4 --confirm_best --finalists 16 --final_rounds 8} --libtype cublaslt ${EXTRA:-}"
cmp_s9() {
  # CTRL_A, CTRL_B: another pair of committed tables as the same-day control (session 12: session
  # 11's bench/results/studies/s11/ctl_{A,B}.csv).
  local A=${CTRL_A:-bench/results/tables/tune_sub_A_s9-h200-20261123.csv}
  local B=${CTRL_B:-bench/results/tables/tune_sub_B_s9-h200-20261123.csv}
  for i in 1 2 3; do
    timeout 60 tgemm compare --measure --placements 4 $A $B --json $S/cmp_s9_$i.json > $S/cmp_s9_$i.txt 2>&1
  done
  python3 bench/compare_runs.py $S/cmp_s9_1.json $S/cmp_s9_2.json $S/cmp_s9_3.json > $S/cmp_s9_runs.txt 2>&1
  tail -2 $S/cmp_s9_runs.txt
}
[ -n "${WITH_S9:-}" ] && step cmp_s9 100 cmp_s9
sub_input
ROWS=$(( $(wc -l < $IN) - 1 ))
tune_until ${TAG}_A $ROWS --batch 4 $OPTS -i $IN && tune_until ${TAG}_B $ROWS --batch 4 $OPTS -i $IN && \
  step cmp3_${TAG} 60 cmp3
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
