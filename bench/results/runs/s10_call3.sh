#!/usr/bin/env bash
# Session 10, call 3 (nvidia-h200, carry ["scratch"], no device build; run
# bench/results/runs/pack_ci_binaries.sh here first): the CI preset's skinny GPU tests (the M =
# 9-16 default rule in Skinny.DefaultRuleCoversDecodeOnly), then benches with that rule: the 14
# untuned (N, K) pairs at M = 1, 4, 8, 12, 16 (predicted: M = 12 and 16 rows in the region at
# 1.07-1.27x, the others ~1.00x as in s10_exp.sh's max-8 run), the fixed-cost suite and the
# decode suite (tuned rows: unchanged); and s10_exp2.sh's tune of the untuned pairs at M = 1, 4, 8.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin TGEMM_COMMIT=$(cat scratch/COMMIT) TGEMM_CONFIG_DIR=$PWD/configs
S=/tmp/s10w; mkdir -p $S /tmp/bin
gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; gunzip -c scratch/ci/test_gpu_skinny.gz > $S/test_gpu_skinny
chmod +x /tmp/bin/tgemm $S/test_gpu_skinny
timeout 150 $S/test_gpu_skinny > $S/test_skinny.log 2>&1; echo "test_gpu_skinny rc=$?"
tail -3 $S/test_skinny.log; grep -E "^\[  FAILED" $S/test_skinny.log | head
rm -f $S/test_gpu_skinny
timeout 120 tgemm bench --suite bench/shapes/skinny_untuned_m16.csv --m 1,4,8,12,16 --json $S/untuned_rule16.json \
  > $S/untuned_rule16.log 2>&1; grep -i geomean $S/untuned_rule16.log
timeout 60 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 --json $S/bench_fixed.json \
  > $S/bench_fixed.log 2>&1; grep -i geomean $S/bench_fixed.log
timeout 60 tgemm bench --m 1,16 --json $S/decode.json > $S/decode.log 2>&1; grep -i geomean $S/decode.log
tar czf $OUT/s10w.tgz -C /tmp s10w
bash bench/results/runs/s10_exp2.sh
echo "call ends at $SECONDS s"
