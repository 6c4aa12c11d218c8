#!/usr/bin/env bash
# Session 8's first device call (nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"],
# after `git rev-parse HEAD > scratch/COMMIT` on branch session7-unverified): build and tests
# (build_and_test.sh), then s8_chain.sh for the rest of the call. Later calls on the warm machine:
# `END=575 bash bench/results/runs/s8_chain.sh; tar czf $OUT/s8cN.tgz --exclude='prof_*.csv' -C /tmp s8`.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
bash bench/results/runs/build_and_test.sh /tmp/s8/gc
END=$((575 - SECONDS)) bash bench/results/runs/s8_chain.sh
tar czf $OUT/s8c1.tgz --exclude='prof_*.csv' -C /tmp s8
ls -la $OUT
