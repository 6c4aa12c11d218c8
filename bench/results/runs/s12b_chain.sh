#!/usr/bin/env bash
# Session 12, calls 4 on (nvidia-h200, no device build: CI binaries of the commit in scratch/COMMIT
# with the finals' contenders, carry ["scratch"]; scratch/s12 holds call 3's acc_A/acc_B tables and
# the 64-problem input). Resumable like s12_chain.sh:
#   END=560 bash bench/results/runs/s12b_chain.sh; tar czf $OUT/s12bN.tgz --exclude='prof_*.csv' -C /tmp s12b
# (t)   test_gpu_tune: RaceProblem.FinalsRunWithContendersBeyondTheMargin is new.
# (acc) finish acc_B (5 problems left when the machine went back; --final_contenders 0, the options
#       acc_A ran with) and compare the acc pair three times.
# (gc)  issue 3: a pair with --graph_screen 50 --min_accurate 48 and the finals' contenders (the new
#       default, 2), three compares. Same-day references: ctl 84.4%, fix2 82.8% (call 2-3).
END=${END:-560}
S=/tmp/s12b
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
[ -f $S/acc_A.csv ] || cp scratch/s12/acc_A.csv scratch/s12/acc_B.csv scratch/s12/sub_in.csv $S/
OPTS="--final_placements 4 --confirm_best --libtype cublaslt"
ACC="--min_accurate 48 --graph_screen 50"
gpu_tests() {
  gunzip -c scratch/ci/test_gpu_tune.gz > $S/test_gpu_tune && chmod +x $S/test_gpu_tune
  timeout 150 $S/test_gpu_tune > $S/test_gpu_tune.log 2>&1; echo "test_gpu_tune rc=$?"
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $S/test_gpu_tune.log | head -10; rm -f $S/test_gpu_tune
}
step gpu_tests 100 gpu_tests
cmp3() {  # tag: three compares of $S/<tag>_A.csv and $S/<tag>_B.csv
  local t=$1
  for i in 1 2 3; do
    timeout 80 tgemm compare --measure --placements 4 $S/${t}_A.csv $S/${t}_B.csv --json $S/cmp_${t}_$i.json > /dev/null 2>&1
  done
  python3 bench/compare_runs.py $S/cmp_${t}_{1,2,3}.json > $S/cmp_${t}_runs.txt 2>&1; tail -2 $S/cmp_${t}_runs.txt
}
tune_until acc_B 64 --batch 4 $OPTS $ACC --final_contenders 0 -i $S/sub_in.csv && step cmp3_acc 40 cmp3 acc
tune_until gc_A 64 --batch 4 $OPTS $ACC -i $S/sub_in.csv && tune_until gc_B 64 --batch 4 $OPTS $ACC -i $S/sub_in.csv && \
  step cmp3_gc 40 cmp3 gc
# (gcall) issue 3's shipped-table check with the gc options: the 112 suite problems tuned in one
#       process (cuBLASLt alone, its wall time is the "<= 10 minutes" figure), then benched alone.
[ -f $S/all_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16,64,128,512,2048,8192 -o $S/all_in.csv > /dev/null
gcall_bench() {
  TGEMM_CONFIG_GEMM_BF16=$S/gcall.csv timeout 150 tgemm bench --json $S/bench_gcall.json > $S/bench_gcall.log 2>&1
  grep -i geomean $S/bench_gcall.log
}
[ -n "${GCALL:-}" ] && tune_until gcall 112 --batch 8 $OPTS $ACC -i $S/all_in.csv && step gcall_bench 120 gcall_bench
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
