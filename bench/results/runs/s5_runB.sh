#!/usr/bin/env bash
# Session 5, call B1 (one H200, carried CLI built at scratch/COMMIT): tune B of the suite,
# cuBLASLt only, independent of tune A (run 2/3), for issue 3's agreement. Everything under /tmp/b
# (kept for the next call on the same machine), packed into $OUT/b1.tgz.
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p /tmp/b /tmp/bin; gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm && chmod +x /tmp/bin/tgemm
B=/tmp/bin/tgemm; L=/tmp/b
$B shapes --suite bench/shapes/llm_shapes.csv -o $L/all.csv >/dev/null
timeout -s TERM $((580 - SECONDS)) $B tune --libtype cublaslt --batch 4 -i $L/all.csv -o $L/tuned_B.csv --profile_file $L/prof_B.csv > $L/tune_B.log 2>&1
echo "tune B rc=$? rows $(($(wc -l < $L/tuned_B.csv) - 1)) at $SECONDS s"; tail -3 $L/tune_B.log
tar czf $OUT/b1.tgz -C /tmp b
