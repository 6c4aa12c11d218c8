#!/usr/bin/env bash
# Session 23, call 2 (one H100; carry scratch/tgemm.gz, scratch/COMMIT, scratch/lab): the M = 8192
# A/A gap (rows running the baseline's bytewise-identical algorithm at 0.95-0.97x, call 1).
# `tgemm bench --m 8192 --aa MODE` on the two worst problems: off (tgemm vs baseline), baseline
# (both sides the baseline: the harness alone), dispatch (both sides tgemm's dispatch), each twice,
# modes alternated. Then Nsight Compute of the GEMV vs bt's stream (s23_ncu.sh, regexes fixed).
S=/tmp/s23b
END=${END:-400}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); export NCU
for rep in 1 2; do
  for f in llama3-8b/gate_up dsv3/o; do
    for mode in off baseline dispatch; do
      [ $(left) -lt 30 ] && continue
      tag=${f%%/*}_${f##*/}_${mode}_$rep
      timeout 60 tgemm bench --m 8192 --filter $f --aa $mode --json $S/$tag.json > $S/$tag.log 2>&1
      echo "$tag rc=$?: $(grep -E "^(llama3|dsv3)" $S/$tag.log | cut -c1-80)"
    done
  done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
[ $(left) -gt 150 ] && bash bench/results/runs/s23_ncu.sh
tar czf $OUT/s23b.tgz -C $S . ; ls -la $OUT
