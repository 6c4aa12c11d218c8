#!/usr/bin/env bash
# Session 13's resumable chain, written in session 12 (not yet run). Same pattern as s12b_chain.sh:
# nvidia-h200, no device build, carry ["scratch"] after bench/results/runs/pack_ci_binaries.sh here;
# each call runs the steps still undone while their time is left before $END seconds:
#   END=560 bash bench/results/runs/s13_chain.sh; tar czf $OUT/s13cN.tgz --exclude='prof_*.csv' -C /tmp s13
# The warm machine goes back after 30 minutes held: at most three such calls per machine; a fresh
# machine resumes from the tables in scratch/s13 (copy the last tar's CSVs there first).
# Steps (docs/gpu-runbook.md, "Order for the open issues (session 13)"):
# (lab)  issue 4: decode_lab, the M = 1 GEMV ablations (session 13).
# (t)    test_gpu_tune: race_problem validates its options since session 12's last commits (host-tested only).
# (aa)   issue 5's bench artefact: the suite at M = 8192 with a header-only table, so tgemm
#        dispatches cuBLASLt's default, the baseline's own configuration; every speedup should be
#        1.00 within noise. The rows' round_baseline_us / round_tgemm_us show any order effect.
# (recon) `tgemm reconfirm` of the shipped table in a fresh process (cuBLASLt rows): does the
#        process-level shift revert rows like 16x28672x4096 (kept by two tunes, 0.97-0.98x benched)?
# (full) issue 3 on the whole suite: two 112-problem tunes with tgemm tune's defaults (cuBLASLt,
#        ~10 min each) and three compares. Session 12: 87.5-92.2% on the 64 problems with M <= 128.
END=${END:-560}
S=/tmp/s13
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
[ -d scratch/s13 ] && for f in scratch/s13/*.csv scratch/s13/*.done; do [ -f $S/$(basename $f) ] || cp $f $S/; done
[ -f $S/all_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16,64,128,512,2048,8192 -o $S/all_in.csv > /dev/null
gpu_tests() {  # session 12's last host changes (RaceOptions validation in race_problem) under the tuner's GPU tests
  gunzip -c scratch/ci/test_gpu_tune.gz > $S/test_gpu_tune && chmod +x $S/test_gpu_tune
  timeout 150 $S/test_gpu_tune > $S/test_gpu_tune.log 2>&1; echo "test_gpu_tune rc=$?"
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $S/test_gpu_tune.log | head -10; rm -f $S/test_gpu_tune
}
step gpu_tests 60 gpu_tests
lab() {  # issue 4: where a GEMV's time over the floor goes (bench/micro/decode_lab.cu, built here)
  timeout 120 scratch/lab/decode_lab > $S/lab.txt 2>&1; echo "decode_lab rc=$?"; cat $S/lab.txt
}
[ -x scratch/lab/decode_lab ] && step lab 60 lab
aa() {
  head -1 configs/bf16_tuned_gemm.csv > $S/empty.csv
  TGEMM_CONFIG_GEMM_BF16=$S/empty.csv timeout 120 tgemm bench --m 8192 --json $S/bench_aa_8192.json > $S/bench_aa_8192.log 2>&1
  grep -i geomean $S/bench_aa_8192.log
  python3 bench/round_order.py $S/bench_aa_8192.json | tail -1
}
step aa 100 aa
# Issue 4, one GEMV build (CI binaries in scratch/v<tag>): skinny tests, the memcheck subset, the
# M = 1 retune (skinny + cuBLASLt), then the decode bench of the old binary with the shipped table
# against this binary with the new M = 1 rows.
dec_check() {
  local v=$1
  gunzip -c scratch/v$v/test_gpu_skinny.gz > $S/tsk$v && chmod +x $S/tsk$v
  gunzip -c scratch/v$v/tgemm.gz > $S/tgemm$v && chmod +x $S/tgemm$v
  timeout 150 $S/tsk$v > $S/test_skinny_v$v.log 2>&1; echo "test_gpu_skinny (v$v) rc=$?"
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $S/test_skinny_v$v.log | head -10
  timeout 150 compute-sanitizer --tool memcheck $S/tsk$v --gtest_filter='*Sanitizer*' > $S/memcheck_v$v.log 2>&1
  echo "memcheck rc=$?"; tail -2 $S/memcheck_v$v.log
  awk -F, 'NR == 1 || $1 == 1' $S/all_in.csv > $S/dec1_in.csv
  timeout 150 $S/tgemm$v tune -i $S/dec1_in.csv -o $S/dec$v.csv --libtype skinny,cublaslt --profile_file $S/prof_dec$v.csv > $S/dec$v.log 2>&1
  echo "tune dec$v rc=$?"; tail -2 $S/dec$v.log
  $S/tgemm$v merge --later-wins configs/bf16_tuned_gemm.csv $S/dec$v.csv -o $S/cand$v.csv > /dev/null
  timeout 60 tgemm bench --m 1,16 --json $S/bench_dec_old.json > $S/bench_dec_old.log 2>&1; grep -i geomean $S/bench_dec_old.log
  TGEMM_CONFIG_GEMM_BF16=$S/cand$v.csv timeout 60 $S/tgemm$v bench --m 1,16 --json $S/bench_dec$v.json > $S/bench_dec$v.log 2>&1
  grep -i geomean $S/bench_dec$v.log
}
dec7() { dec_check 7; }  # the GEMV with x loaded beside the weight
[ -d scratch/v7 ] && step dec7 280 dec7
cmp3() {
  for i in 1 2 3; do
    timeout 170 tgemm compare --measure --placements 4 $S/full_A.csv $S/full_B.csv --json $S/cmp_full_$i.json > /dev/null 2>&1
  done
  python3 bench/compare_runs.py $S/cmp_full_{1,2,3}.json > $S/cmp_full_runs.txt 2>&1; tail -2 $S/cmp_full_runs.txt
}
tune_until full_A 112 --batch 8 --libtype cublaslt -i $S/all_in.csv && \
  tune_until full_B 112 --batch 8 --libtype cublaslt -i $S/all_in.csv && step cmp3_full 200 cmp3
dec7b() { dec_check 7b; }  # dec7 plus launch bounds for one wave and the K-tail chunk after the loop
[ -d scratch/v7b ] && step dec7b 90 dec7b
recon() {
  awk -F, 'NR == 1 || $19 == "none"' configs/bf16_tuned_gemm.csv > $S/shipped_plain.csv  # the CI build lacks most CUTLASS gelu instances
  timeout 170 tgemm reconfirm $S/shipped_plain.csv --libtype all -o $S/shipped_reconfirmed.csv > $S/recon.log 2>&1
  echo "reconfirm rc=$?"; tail -5 $S/recon.log
}
step recon 180 recon
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
