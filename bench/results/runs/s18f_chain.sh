#!/usr/bin/env bash
# Session 18, sixth chain: the GEMV (version 4) with its K-straddle chunk out of line and a direct
# store for the common case (the version-7 recipe). The CI build's skinny GPU tests and memcheck on
# their subset, decode_lab (lib w8 c4 against the lab's rows c4, which the library trailed by
# 0.03-0.2 us in session 16), then `tgemm bench --m 1` on the shipped table with the previous CLI
# (scratch/tgemm_old.gz, 47b0170) and the new one alternated twice, and the decode bench.
# nvidia-h200, carry ["scratch"]:
#   END=200 timeout 215 bash bench/results/runs/s18f_chain.sh; tar czf $OUT/s18f.tgz -C /tmp s18f
END=${END:-200}
S=/tmp/s18f
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
gunzip -c scratch/tgemm_old.gz > /tmp/bin/tgemm_old && chmod +x /tmp/bin/tgemm_old
step skinny_test 60 run_gpu_test test_gpu_skinny
grep -q "FAILED" $S/test_gpu_skinny.log && { echo "skinny tests failed"; exit 1; }
step memcheck 60 sanitize_skinny memcheck
step lab 30 run_lab decode_lab "floor|rows\(|lib w" 576 7168 8192 1024 1280 8192 1536 7168 4096 4096 10240 5120
ab() {
  local cli i
  for i in 1 2; do
    for cli in tgemm_old tgemm; do
      timeout 60 $cli bench --m 1 --json $S/m1_${cli}_$i.json > $S/m1_${cli}_$i.log 2>&1
      echo "$cli ($i): rc=$? $(grep -i geomean $S/m1_${cli}_$i.log)"
    done
  done
}
step ab 60 ab
shipped() {
  timeout 60 tgemm bench --m 1,16 --json $S/bench_dec.json > $S/bench_dec.log 2>&1
  echo "shipped: rc=$? $(grep -i geomean $S/bench_dec.log)"
}
step shipped 30 shipped
echo "chain ends at $SECONDS s"
