#!/usr/bin/env bash
# Session 23, call 3 (one H100; carry scratch/tgemm.gz, scratch/COMMIT): call 2 showed the M = 8192
# gap is the harness (both sides the baseline: 0.950-0.964x; graph 1 slower in both round
# orders). Which part: `tgemm bench --aa baseline --timing private|shared|recapture`, twice each,
# on the two worst problems; --rounds 20 once with private to see the drift.
S=/tmp/s23c
END=${END:-300}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for rep in 1 2; do
  for f in llama3-8b/gate_up dsv3/o; do
    for mode in private shared recapture; do
      [ $(left) -lt 30 ] && continue
      tag=${f%%/*}_${f##*/}_${mode}_$rep
      timeout 60 tgemm bench --m 8192 --filter $f --aa baseline --timing $mode --json $S/$tag.json > $S/$tag.log 2>&1
      echo "$tag rc=$?: $(grep -E "^(llama3|dsv3)" $S/$tag.log | cut -c1-80)"
    done
  done
done
[ $(left) -gt 40 ] && timeout 60 tgemm bench --m 8192 --filter dsv3/o --aa baseline --rounds 20 --json $S/dsv3_o_private_r20.json > $S/dsv3_o_private_r20.log 2>&1
tar czf $OUT/s23c.tgz -C $S . ; ls -la $OUT
