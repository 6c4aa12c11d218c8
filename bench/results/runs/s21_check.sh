#!/usr/bin/env bash
# Session 21, last call: gpu-check (release build with every kernel, GPU and host tests, the
# sanitizer subset) of version 7 with two accumulator sets and the r8 c2 w4 u2 tile
# (m16_n8_wn1_wk4_u2_b2) and of the tuner's lazy checks (RaceProblem.ChecksCoverEveryContender);
# then the suite's M = 16 rows retuned (cuBLASLt + skinny, --reconfirm) with that build, and
# `tgemm bench --m 1,16` against cuBLASLt's default with the shipped table and with the retuned
# M = 16 rows merged into it.
#   carry [".deps/wheels"]: TGEMM_COMMIT=<sha> bash bench/results/runs/s21_check.sh
set -uo pipefail
S=/tmp/s21c
mkdir -p $S/cfg
GPU_CHECK_STEPS="build tests sanitizer" GPU_CHECK_DIR=$S/gc scripts/gpu-check
T=$PWD/build/release/tools/cli/tgemm
export TGEMM_CONFIG_DIR=$PWD/configs PYTHONUNBUFFERED=1
if [ -x $T ]; then
  $T shapes --suite bench/shapes/llm_shapes.csv --nsets 16 -o $S/m16_in.csv > /dev/null
  timeout 170 $T tune -i $S/m16_in.csv -o $S/m16.csv --libtype cublaslt,skinny --reconfirm \
    --profile_file $S/prof_m16.csv > $S/tune_m16.log 2>&1
  echo "tune m16 rc=$? rows $(($(wc -l < $S/m16.csv) - 1))"; grep -E "summary|GPU work|of which|reverted|kept" $S/tune_m16.log | tail -4
  timeout 90 $T bench --m 1,16 --json $S/bench_shipped.json > $S/bench_shipped.log 2>&1
  echo "bench (shipped table) rc=$?"; grep -iE "geomean|below" $S/bench_shipped.log | tail -3
  python3 bench/results/runs/merge_rows.py configs/bf16_tuned_gemm.csv $S/m16.csv > $S/cfg/bf16_tuned_gemm.csv
  TGEMM_CONFIG_DIR=$S/cfg timeout 90 $T bench --m 1,16 --json $S/bench_m16new.json > $S/bench_m16new.log 2>&1
  echo "bench (retuned M = 16 rows) rc=$?"; grep -iE "geomean|below" $S/bench_m16new.log | tail -3
  gzip -f $S/prof_m16.csv
fi
tar czf "$OUT"/s21c.tgz -C /tmp --exclude=s21c/gc s21c
cat $S/gc/summary.txt
