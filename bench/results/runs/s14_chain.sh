#!/usr/bin/env bash
# Session 14's resumable chain (pattern of s13_chain.sh): nvidia-h200, no device build, carry
# ["scratch"] after bench/results/runs/pack_ci_binaries.sh here (scratch/v7b: e2efed1's binaries,
# the GEMV before this session's change; scratch/lab/decode_lab built here with nvcc):
#   END=560 bash bench/results/runs/s14_chain.sh; tar czf $OUT/s14cN.tgz --exclude='prof_*.csv' -C /tmp s14
# A fresh machine resumes from the tables in scratch/s14 (copy the last tar's CSVs and .done there).
# Steps (docs/gpu-runbook.md, "Order for the open issues (session 14)"):
# (gpu_tests) test_gpu_tune: the race's stage timings and the new --confirm_rounds/--sustained_round_ms plumbing.
# (lab)  issue 4: decode_lab, the library's GEMV (now without runtime divisions or 64-bit
#        indices) alternated three times with the lab's rows kernel on the same geometry.
# (dec14) issue 4: test_gpu_skinny, the memcheck subset, the M = 1 retune (skinny + cuBLASLt) and
#        the decode bench: v7b's binary with the shipped table against this binary with new M = 1 rows.
# (wide) issue 3: two 112-problem cuBLASLt tunes with more bases expanded and more finalists, the
#        finals' sustained rounds and the confirmation's rounds shortened to pay for it, then three
#        measured compares. Session 13 (defaults): 89.3%, 580 s and 584 s.
END=${END:-560}
S=/tmp/s14
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
gpu_tests() {
  gunzip -c scratch/ci/test_gpu_tune.gz > $S/test_gpu_tune && chmod +x $S/test_gpu_tune
  timeout 150 $S/test_gpu_tune > $S/test_gpu_tune.log 2>&1; echo "test_gpu_tune rc=$?"
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $S/test_gpu_tune.log | head -10; rm -f $S/test_gpu_tune
}
step gpu_tests 60 gpu_tests
lab() {
  timeout 120 scratch/lab/decode_lab > $S/lab.txt 2>&1; echo "decode_lab rc=$?"
  grep -E "device|floor |rows c4|rows\(r|lib w8 c4" $S/lab.txt
}
step lab 60 lab
dec14() {
  gunzip -c scratch/ci/test_gpu_skinny.gz > $S/tsk && chmod +x $S/tsk
  gunzip -c scratch/v7b/tgemm.gz > $S/tgemm_old && chmod +x $S/tgemm_old
  timeout 150 $S/tsk > $S/test_skinny.log 2>&1; echo "test_gpu_skinny rc=$?"
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $S/test_skinny.log | head -10
  timeout 150 compute-sanitizer --tool memcheck $S/tsk --gtest_filter='*Sanitizer*' > $S/memcheck.log 2>&1
  echo "memcheck rc=$?"; tail -2 $S/memcheck.log
  awk -F, 'NR == 1 || $1 == 1' $S/all_in.csv > $S/dec1_in.csv
  timeout 150 tgemm tune -i $S/dec1_in.csv -o $S/dec14.csv --libtype skinny,cublaslt --profile_file $S/prof_dec14.csv > $S/dec14.log 2>&1
  echo "tune dec14 rc=$?"; tail -3 $S/dec14.log
  tgemm merge --later-wins configs/bf16_tuned_gemm.csv $S/dec14.csv -o $S/cand14.csv > /dev/null
  timeout 60 $S/tgemm_old bench --m 1,16 --json $S/bench_dec_old.json > $S/bench_dec_old.log 2>&1; grep -i geomean $S/bench_dec_old.log
  TGEMM_CONFIG_GEMM_BF16=$S/cand14.csv timeout 60 tgemm bench --m 1,16 --json $S/bench_dec14.json > $S/bench_dec14.log 2>&1
  grep -i geomean $S/bench_dec14.log
}
step dec14 120 dec14
WIDE="--batch 8 --libtype cublaslt -i $S/all_in.csv --refine_bases 48 --finalists 10 --sustained_round_ms 60 --confirm_rounds 4"
tune_until wide_A 112 $WIDE && tune_until wide_B 112 $WIDE && step cmp3_wide 200 cmp3 wide
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
