#!/usr/bin/env bash
# Session 15 chain (written in session 14, not yet run): a pair of 112-problem cuBLASLt tunes with
# the defaults except `--sustained_round_ms 20`, so that the compute-bound problems' finals run
# each finalist ~20-25 ms at a time, interleaved, as the confirmation, the compare and the bench
# do (session 14: in 100 ms windows every finalist of 2048x8192x3584 ran at the default's time,
# while the compares saw the kept row 5% faster; docs/perf-notes.md, tuner, "What happened
# (session 14)"); three measured compares; the whole-suite bench of the shipped table. First, the
# M = 16 lab (bench/micro/decode16_lab.cu; build it here into scratch/lab, its header has the line).
# nvidia-h200, no device build, carry ["scratch"] after bench/results/runs/pack_ci_binaries.sh here:
#   END=560 bash bench/results/runs/s15_chain.sh; tar czf $OUT/s15N.tgz --exclude='prof_*.csv' -C /tmp s15
# Issue the next call at once when one returns (the machine goes back after 30 s idle); a fresh
# machine resumes from the tables copied to scratch/s15.
END=${END:-560}
S=/tmp/s15
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
lab16() {  # issue 4, M = 16: bench/micro/decode16_lab.cu, built here into scratch/lab (seconds)
  timeout 120 scratch/lab/decode16_lab > $S/lab16.txt 2>&1; echo "decode16_lab rc=$?"; cat $S/lab16.txt
}
[ -x scratch/lab/decode16_lab ] && step lab16 60 lab16
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --sustained_round_ms 20"
tune_until r20_A 112 $OPTS && tune_until r20_B 112 $OPTS && step cmp3_r20 320 cmp3 r20 && step suite 100 suite_bench
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
