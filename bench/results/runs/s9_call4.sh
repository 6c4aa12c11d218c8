#!/usr/bin/env bash
# Session 9's fourth device call (fresh nvidia-h200, ~90 s; carry ["scratch"]): no device build.
# scratch/tgemm.gz and scratch/ci/test_gpu_skinny.gz are the CI-preset binaries built here (bf16
# skinny M <= 16, all of them; 2 CUTLASS instances) at the commit in scratch/COMMIT. Checks the
# skinny v1-2 PDL change (the next grid's launch allowed after the main loop, not at the start):
# the PDL GPU test, then the decode and fixed-cost benches with TGEMM_SKINNY_V2_PDL 0 and 1.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin TGEMM_COMMIT=$(cat scratch/COMMIT)
export TGEMM_CONFIG_DIR=$PWD/configs
S=/tmp/s9d; mkdir -p $S /tmp/bin
gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; gunzip -c scratch/ci/test_gpu_skinny.gz > $S/test_gpu_skinny
chmod +x /tmp/bin/tgemm $S/test_gpu_skinny
ldd /tmp/bin/tgemm | grep "not found"
$S/test_gpu_skinny > $S/test_skinny.log 2>&1; tail -3 $S/test_skinny.log
for v in 0 1; do
  TGEMM_SKINNY_V2_PDL=$v timeout 60 tgemm bench --m 1,16 --json $S/decode_v2pdl$v.json > $S/decode_v2pdl$v.log 2>&1
  TGEMM_SKINNY_V2_PDL=$v timeout 40 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 \
    --json $S/fixed_v2pdl$v.json > $S/fixed_v2pdl$v.log 2>&1
done
grep -i geomean $S/*.log
tar czf $OUT/s9c4.tgz -C /tmp s9d/decode_v2pdl0.json s9d/decode_v2pdl1.json s9d/fixed_v2pdl0.json s9d/fixed_v2pdl1.json \
  $(cd /tmp && ls s9d/*.log)
echo "call ends at $SECONDS s"
