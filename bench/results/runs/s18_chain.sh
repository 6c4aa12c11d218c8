#!/usr/bin/env bash
# Session 18, first call (written in session 17; nothing here has run yet): what session 17 could
# not measure for lack of device time.
#  1. decode16_lab on the four weights version 7 ships on: the library's kernel ("lib v7") beside
#     the lab's bt of the same tiles (session 17: the library 0.3-0.5 us behind in the bench,
#     same SASS main loop), and bt with 4 chunks a lane.
#  2. `tgemm bench --m 1,16` on the shipped table as committed (3760133 and later: the four
#     version-7 rows beside the s16 table's other rows; never benched together).
#  3. The tuner/bench disagreement on 16x28672x4096 (docs/perf-notes.md, tuner, "What happened
#     (session 17)"): the two configurations (the heuristic's tile394 cluster3 and tile229 cluster2)
#     timed by `tgemm compare --measure` (the bench's paired harness) in both orders, then a
#     tune of that one problem with cuBLASLt alone (the tuner's harness), twice.
# Built here: scratch/tgemm.gz (CI CLI) and scratch/lab/decode16_lab. nvidia-h200, carry ["scratch"]:
#   END=300 timeout 315 bash bench/results/runs/s18_chain.sh; tar czf $OUT/s18.tgz -C /tmp s18
END=${END:-300}
S=/tmp/s18
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
step skinny 60 run_gpu_test test_gpu_skinny
step lab 60 run_lab decode16_lab "floor|lib v7|bt r8 c2 w8 u2|bt r16 c1 w4 u4|c4" 576 7168 1280 8192 1536 7168 4096 4096
shipped_bench() {
  timeout 90 tgemm bench --m 1,16 --json $S/bench_dec_shipped.json > $S/bench_dec_shipped.log 2>&1
  echo "bench rc=$?"; grep -i geomean $S/bench_dec_shipped.log
}
step shipped_bench 90 shipped_bench
disagreement() {
  local h=$S/one_heuristic.csv t=$S/one_tile229.csv
  head -1 configs/bf16_tuned_gemm.csv > $h
  grep "^sm_90a,132,16,28672,4096," configs/bf16_tuned_gemm.csv >> $h
  { head -1 $h; grep '^sm_90a,132,16,28672,4096,' bench/results/studies/s17/m16.csv; } > $t  # the s17 retune's tile229 row
  timeout 60 tgemm compare --measure --placements 4 $h $t --json $S/cmp_ht.json > $S/cmp_ht.log 2>&1; tail -3 $S/cmp_ht.log
  timeout 60 tgemm compare --measure --placements 4 $t $h --json $S/cmp_th.json > $S/cmp_th.log 2>&1; tail -3 $S/cmp_th.log
  grep -E '^M,|^16,28672,4096,' bench/results/studies/s17/m16_in.csv > $S/one_in.csv
  local i
  for i in 1 2; do
    timeout 90 tgemm tune -i $S/one_in.csv -o $S/one_tune_$i.csv --libtype cublaslt --profile_file $S/prof_one_$i.csv > $S/one_tune_$i.log 2>&1
    echo "tune $i rc=$?"; cut -d, -f3-5,14,15 $S/one_tune_$i.csv | tail -1
    grep -E "heuristic|tile394_stages35_splitk1_red0_swz0_opt1_inner0_cluster3_|tile229_stages35_splitk1_red0_swz0_opt0_inner0_cluster2_" $S/prof_one_$i.csv | cut -d, -f11-18
  done
}
step disagreement 150 disagreement
echo "chain ends at $SECONDS s"
