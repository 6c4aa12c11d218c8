#!/usr/bin/env bash
# Prepared in session 6; after both s7_tune.sh calls, same warm machine: the agreement of tunes
# A and B (tables, then measured over 4 placements, median judged) and the bench of table A
# against the cuBLASLt default (issue 3's bench targets for the new tuner options).
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin
L=/tmp/s7agree; mkdir -p $L
tgemm compare /tmp/s7A/tuned.csv /tmp/s7B/tuned.csv > $L/compare.txt 2>&1; tail -2 $L/compare.txt
python3 bench/tune_agreement.py /tmp/s7A/tuned.csv /tmp/s7B/tuned.csv --profiles /tmp/s7A/prof.csv /tmp/s7B/prof.csv \
  > $L/agreement.txt 2>&1; tail -2 $L/agreement.txt
timeout 150 tgemm compare --measure --placements 4 /tmp/s7A/tuned.csv /tmp/s7B/tuned.csv > $L/compare_measured.txt 2>&1
echo "compare --measure rc=$? at $SECONDS s"; tail -2 $L/compare_measured.txt
TGEMM_CONFIG_GEMM_BF16=/tmp/s7A/tuned.csv timeout 200 tgemm bench --json $L/bench_A.json > $L/bench_A.log 2>&1
echo "bench rc=$? at $SECONDS s"; grep -i geomean $L/bench_A.log
tar czf $OUT/s7agree.tgz -C /tmp s7agree
