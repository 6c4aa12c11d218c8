#!/usr/bin/env bash
# Session 7's later device calls on the warm machine of s7_call1.sh (same kind, timeout_s 600):
# the rest of s7_chain.sh. On a fresh machine, carry scratch with tgemm.gz (call 1's CLI) and
# tuned_A.csv / tuned_B.csv (the tunes so far) so the chain resumes. Usage: s7_calln.sh N.
N=${1:?call number}
export TGEMM_COMMIT=$(cat scratch/COMMIT)
nvidia-smi --query-gpu=name --format=csv,noheader
END=575 bash bench/results/runs/s7_chain.sh
tar czf $OUT/s7c$N.tgz --exclude=prof.csv -C /tmp s7A s7B s7agree $( [ -d /tmp/s7 ] && echo s7) 2>/dev/null
ls -la $OUT
