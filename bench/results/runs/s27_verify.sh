#!/usr/bin/env bash
# Session 27, last call (~190 s of budget): the tuner's two changes (refine() expands the
# heuristic's bases whatever their screen time; the GPU warmed before each problem's screen) on
# the four problems whose misses traced to them in the margin-1% pair (1x1536x7168 and 1x6144x4096:
# the heuristic's tile448 / tile393 screened slow, their bases never expanded, rows 7.8-7.9%
# faster missed). CI binaries (carry scratch/tgemm.gz, scratch/ci, scratch/COMMIT, scratch/s27v):
# test_gpu_tune's new test and the race tests, then two tunes of the four problems and one
# measured compare of the two tables. Run bench/results/runs/pack_ci_binaries.sh here first (the
# packed binaries must be HEAD's).
S=/tmp/s27v
END=${END:-330}
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
gunzip -c scratch/ci/test_gpu_tune.gz > /tmp/bin/test_gpu_tune && chmod +x /tmp/bin/test_gpu_tune
timeout 120 /tmp/bin/test_gpu_tune --gtest_filter='CublasLtRefine.*:RaceProblem.DefaultIsTheDispatchersDefault:RaceProblem.KeptRowObeysTheConfirmation' > $S/test_gpu_tune.log 2>&1
echo "test_gpu_tune rc=$?"; grep -E "^\[  (  OK|FAILED|PASSED) |tests ran" $S/test_gpu_tune.log | tail -6
for X in X Y; do
  [ $(left) -gt 60 ] || break
  timeout $(( $(left) - 40 )) tgemm tune --libtype cublaslt -i scratch/s27v/in.csv -o $S/t_$X.csv --profile_file $S/prof_t_$X.csv > $S/t_$X.log 2>&1
  echo "tune $X rc=$?"; grep -E "/4\] M=" $S/t_$X.log | sed -E 's/ bias=False dtype=torch.bfloat16 outdtype=torch.bfloat16//; s/, [0-9]+ candidates raced.*//'
done
[ $(left) -gt 30 ] && timeout $(( $(left) - 10 )) tgemm compare --measure --placements 4 --short_slots $S/t_X.csv $S/t_Y.csv --json $S/cmp_XY.json 2>&1 | tail -6
gzip -f $S/prof_t_*.csv 2>/dev/null
tar czf $OUT/verify.tgz -C $S . ; ls -la $OUT
