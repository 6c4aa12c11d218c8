#!/usr/bin/env bash
# Session 32, last call: the tuner's GPU tests of the refactored pair timing (time_solutions_against
# under time_solution_pair, reconfirm_rows under reconfirm_row) and the new Reconfirm test, then
# `tgemm reconfirm --alternatives 3` on the first 40 rows of tune A's pre-reconfirmation table, for
# its time a try with one placement set a problem (session 32's replay, a set a try: 0.79 s).
# Carry scratch/tgemm.gz, scratch/ci, scratch/COMMIT.
S=/tmp/s32v
END=${END:-200}
. bench/results/runs/chain_lib.sh
gunzip -c scratch/ci/test_gpu_tune.gz > /tmp/bin/test_gpu_tune && chmod +x /tmp/bin/test_gpu_tune
timeout 90 /tmp/bin/test_gpu_tune --gtest_filter='Reconfirm.*:TimeSolutionPair.*' > $S/test_gpu_tune.log 2>&1
echo "test_gpu_tune rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[       OK|tests ran" $S/test_gpu_tune.log | tail -12
gunzip -c bench/results/studies/s32/pair/prof_p_A.csv.gz > $S/prof_p_A.csv
timeout $(( $(left) - 5 )) tgemm reconfirm bench/results/studies/s32_inputs/pre_A40.csv -o $S/r_A40.csv --libtype cublaslt \
  --errRatio 0.05 --placements 2 --rounds 6 --margin 0 --sustained_margin 0 --placement_tolerance 0.02 \
  --min_rotation_sets 1 --short_slots --alternatives 3 --profile $S/prof_p_A.csv > $S/r_A40.log 2>&1
echo "reconfirm rc=$?"; tail -1 $S/r_A40.log; grep -c alternative $S/r_A40.log
tar czf $OUT/verify.tgz -C $S test_gpu_tune.log r_A40.csv r_A40.log
