#!/usr/bin/env bash
# Session 19 (written in session 18, not run): the same-machine agreement pair with the tune's
# --reconfirm (every non-default row re-timed against the default in a fresh process, reverted if
# it loses: the remedy for by-process bimodal configurations, docs/perf-notes.md, tuner, "What
# happened (session 18)"), then three measured compares. Resumable: each call continues where the
# last stopped (copy /tmp/s19a/*.csv and *.done back into scratch/s19a/ if the machine changes).
# ~530-600 s a tune: three calls of END=560, carry ["scratch"] (the CI CLI in scratch/tgemm.gz):
#   END=560 timeout 575 bash bench/results/runs/s19_agree.sh; tar czf $OUT/s19a.tgz -C /tmp s19a
END=${END:-560}
S=/tmp/s19a
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --reconfirm"
tune_until ra_A 112 $OPTS && tune_until ra_B 112 $OPTS && step cmp3_ra 400 cmp3 ra
pack_profiles
echo "chain ends at $SECONDS s"
