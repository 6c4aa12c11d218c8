#!/usr/bin/env bash
# Session 7's first device call (nvidia-h200, timeout_s 600, carry ["scratch", ".deps/wheels"],
# after `git rev-parse HEAD > scratch/COMMIT`): build and tests of the branch (build_and_test.sh),
# lt-space --launches on three problems, then s7_chain.sh for the rest of the call (tune A
# first). If a GPU test fails, the chain runs without the tunes (they use the options those
# tests cover). Later calls: s7_calln.sh.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
L=/tmp/s7; mkdir -p $L
bash bench/results/runs/build_and_test.sh $L/gc || export SKIP_TUNE=1
echo "SKIP_TUNE=${SKIP_TUNE:-}"
for s in "-m 1 -n 576 -k 7168" "-m 16 -n 1280 -k 8192" "-m 2048 -n 5120 -k 8192"; do
  timeout 40 tgemm lt-space $s --launches 2>&1 | grep -v "^  algo" >> $L/lt_launches.txt
done
echo "lt-space at $SECONDS s"; grep -E "^launches|configurations in the whole" $L/lt_launches.txt
END=$((575 - SECONDS)) bash bench/results/runs/s7_chain.sh
tar czf $OUT/s7c1.tgz --exclude=prof.csv -C /tmp s7 s7A s7B s7agree 2>/dev/null
ls -la $OUT
