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
tune_test() {
  gunzip -c scratch/ci/test_gpu_tune.gz > /tmp/bin/test_gpu_tune && chmod +x /tmp/bin/test_gpu_tune
  timeout 300 /tmp/bin/test_gpu_tune > $S/test_gpu_tune.log 2>&1; echo "test_gpu_tune rc=$?"; tail -4 $S/test_gpu_tune.log
}
step tune_test 200 tune_test
lab16() {  # issue 4, M = 16: the lab with session 15's xs and nox kernels (build it here into scratch/lab)
  timeout 120 scratch/lab/decode16_lab > $S/lab16.txt 2>&1; echo "decode16_lab rc=$?"; grep -E "xs|nox|floor|lib" $S/lab16.txt | head -80
}
[ -x scratch/lab/decode16_lab ] && step lab16 60 lab16
lab1() {  # issue 4, M = 1: decode_lab with session 15's swapped launch bounds (lib w8 c4 lb4, rows lb5)
  timeout 120 scratch/lab/decode_lab > $S/lab1.txt 2>&1; echo "decode_lab rc=$?"; grep -E "rows|lib|floor " $S/lab1.txt | head -60
}
[ -x scratch/lab/decode_lab ] && step lab1 60 lab1
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --sustained_confirm_all --confirm_tries 4 --confirm_margin 0.005 --sustained_margin 0.005 --confirm_rounds 4 --confirm_placements 3"
tune_until ca_A 112 $OPTS && tune_until ca_B 112 $OPTS && step cmp3_ca 400 cmp3 ca
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
