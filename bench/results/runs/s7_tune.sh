#!/usr/bin/env bash
# Prepared in session 6; session 7's tune calls (issue 3's agreement), on the warm machine of
# s7_run1.sh (else carry scratch/tgemm.gz, the CLI from s7r1.tgz). Usage: bash s7_tune.sh A|B.
# Tunes the 112-problem suite, cuBLASLt only, with the session-6 options: --dedupe_launches,
# --final_placements 4, --confirm_best. Resumable: a second call with the same letter continues
# (the tuned file stays under /tmp on a warm machine; carry scratch/tuned_<X>.csv otherwise).
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin
X=${1:?A or B}
L=/tmp/s7$X; mkdir -p $L /tmp/bin
[ -x /tmp/bin/tgemm ] || { gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; chmod +x /tmp/bin/tgemm; }
[ -f $L/tuned.csv ] || { [ -f scratch/tuned_$X.csv ] && cp scratch/tuned_$X.csv $L/tuned.csv; }
tgemm shapes --suite bench/shapes/llm_shapes.csv -o $L/all.csv > /dev/null
timeout -s TERM $((575 - SECONDS)) tgemm tune --libtype cublaslt --dedupe_launches --final_placements 4 --confirm_best \
  --batch 4 -i $L/all.csv -o $L/tuned.csv --profile_file $L/prof.csv >> $L/tune.log 2>&1
echo "tune $X rc=$? rows $(($(wc -l < $L/tuned.csv) - 1)) at $SECONDS s"; tail -4 $L/tune.log
gzip -kf $L/prof.csv; tar czf $OUT/s7$X.tgz --exclude=prof.csv -C /tmp s7$X
