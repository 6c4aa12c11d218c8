#!/usr/bin/env bash
# Session 18, fifth chain: version 7's m16_n16_wn1_wk4_u4_b1 as the M = 9-16 default (in place of
# version 1's m16_n16_wn1_wk4_u4). The CI build's skinny GPU tests (DefaultRuleCoversDecodeOnly
# checks the rule), then untuned benches (no table: dispatch is the default rule) at M = 9, 12,
# 16 with the previous CLI (scratch/tgemm_old.gz, built at 13455d3: version 1 default) and the new
# one, one after the other, then the shipped table's decode bench with the new CLI.
# nvidia-h200, carry ["scratch"]:
#   END=200 timeout 215 bash bench/results/runs/s18e_chain.sh; tar czf $OUT/s18e.tgz -C /tmp s18e
END=${END:-200}
S=/tmp/s18e
. bench/results/runs/chain_lib.sh
gunzip -c scratch/tgemm_old.gz > /tmp/bin/tgemm_old && chmod +x /tmp/bin/tgemm_old
step skinny_test 60 run_gpu_test test_gpu_skinny
grep -q "FAILED" $S/test_gpu_skinny.log && { echo "skinny tests failed"; exit 1; }
untuned() {
  mkdir -p $S/empty
  local cli
  for cli in tgemm_old tgemm tgemm_old tgemm; do
    TGEMM_CONFIG_DIR=$S/empty timeout 60 $cli bench --m 9,12,16 --json $S/untuned_${cli}_$SECONDS.json > $S/untuned_$cli.log 2>&1
    echo "$cli: rc=$? $(grep -i geomean $S/untuned_$cli.log)"
  done
}
step untuned 100 untuned
shipped() {
  TGEMM_CONFIG_DIR=$PWD/configs timeout 60 tgemm bench --m 1,16 --json $S/bench_dec.json > $S/bench_dec.log 2>&1
  echo "shipped: rc=$? $(grep -i geomean $S/bench_dec.log)"
}
step shipped 30 shipped
echo "chain ends at $SECONDS s"
