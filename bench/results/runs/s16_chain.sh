#!/usr/bin/env bash
# Session 16 chain (written in session 15, not yet run). Issue 3: a pair of 112-problem cuBLASLt
# tunes in which compute-bound problems are decided by the confirmation alone
# (`--sustained_confirm_all`: no finals; every finalist confirmed against the default; the best
# median ratio kept) with a margin inside the compare's 1% tie band (0.5%), so a row that one tune
# keeps and the other does not is a tie by the compare (docs/perf-notes.md, tuner, "Session 15").
# Prediction: >= 90% agreement, ~520-560 s a tune. First test_gpu_tune (its new case
# RaceProblem.SustainedConfirmAllConfirmsEveryFinalist) from the CI binaries, and the M = 16 lab
# (bench/micro/decode16_lab.cu, with session 15's x-in-shared-memory kernels; its header has the build line).
# nvidia-h200, carry ["scratch"] after bench/results/runs/pack_ci_binaries.sh here:
#   END=560 timeout 575 bash bench/results/runs/s16_chain.sh; tar czf $OUT/s16N.tgz --exclude='prof_*.csv' -C /tmp s16
# (timeout_s 600: the outer timeout leaves the tar its time even when a step overruns its guard)
# Three compares took ~120 s each in session 15's m1c pair (more differing rows than r20's ~60 s):
# give cmp3 its own call if less than ~400 s are left. A fresh machine resumes from scratch/s16.
END=${END:-560}
S=/tmp/s16
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
step tune_test 200 run_gpu_test test_gpu_tune
# Issue 4: M = 16, session 15's xs/xr/nox kernels; M = 1, the swapped launch bounds (lib lb4, rows lb5).
[ -x scratch/lab/decode16_lab ] && step lab16 60 run_lab decode16_lab "xs|xr|nox|floor|lib"
[ -x scratch/lab/decode_lab ] && step lab1 60 run_lab decode_lab "rows|lib|floor "
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --sustained_confirm_all --confirm_tries 4 --confirm_margin 0.005 --sustained_margin 0.005 --confirm_rounds 4 --confirm_placements 3"
tune_until ca_A 112 $OPTS && tune_until ca_B 112 $OPTS && step cmp3_ca 400 cmp3 ca
pack_profiles
echo "chain ends at $SECONDS s"
