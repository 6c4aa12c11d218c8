#!/usr/bin/env bash
# Session 23, call 6 (one H100; carry scratch/tgemm.gz, scratch/COMMIT): call 5's A/A with 10
# settle rounds flipped sign (graph 0 slower by 0.4-2.4%): a slot bias with a period of ~2 rounds
# (ABBA keeps each graph's phase). Shorter slots and more rounds (--launches 2 --rounds 60: ~27 ms
# a slot instead of ~270 ms), with ABBA and with a shuffled order, against the default, A/A on the
# two worst M = 8192 problems; then `--m 8192` tgemm vs baseline with the best setting.
S=/tmp/s23f
END=${END:-300}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for rep in 1 2; do
  for f in llama3-8b/gate_up dsv3/o; do
    for v in "def:" "short:--launches 2 --rounds 60" "shuf:--launches 2 --rounds 60 --shuffle"; do
      [ $(left) -lt 20 ] && continue
      tag=${f%%/*}_${f##*/}_${v%%:*}_$rep
      timeout 60 tgemm bench --m 8192 --filter $f --aa baseline ${v#*:} --json $S/aa_$tag.json > $S/aa_$tag.log 2>&1
      echo "aa $tag rc=$?: $(grep -E "^(llama3|dsv3)" $S/aa_$tag.log | cut -c1-80)"
    done
  done
done
[ $(left) -gt 80 ] && { timeout 120 tgemm bench --m 8192 --launches 2 --rounds 60 --shuffle --json $S/m8192_shuf.json > $S/m8192_shuf.log 2>&1; tail -2 $S/m8192_shuf.log; grep -E " 0\.9[0-7][0-9]x" $S/m8192_shuf.log | cut -c1-70; }
tar czf $OUT/s23f.tgz -C $S . ; ls -la $OUT
