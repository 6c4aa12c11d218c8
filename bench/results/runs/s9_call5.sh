#!/usr/bin/env bash
# Session 9's fifth device call (carry ["scratch"]; CI-preset CLI built here at scratch/COMMIT):
# skinny v1-2 PDL without its L2 prefetch (TGEMM_SKINNY_V2_PDL_PREFETCH=0), against plain launches
# and PDL with the prefetch, in one run: separates the prefetch's share of call 4's loss.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin TGEMM_COMMIT=$(cat scratch/COMMIT) TGEMM_CONFIG_DIR=$PWD/configs
S=/tmp/s9e; mkdir -p $S /tmp/bin
gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; chmod +x /tmp/bin/tgemm
run() {  # name, env...
  local name=$1; shift
  env "$@" timeout 60 tgemm bench --m 1,16 --json $S/decode_$name.json > $S/decode_$name.log 2>&1
  env "$@" timeout 40 tgemm bench --suite bench/shapes/skinny_fixed_cost.csv --m 1,16 \
    --json $S/fixed_$name.json > $S/fixed_$name.log 2>&1
}
run plain TGEMM_SKINNY_V2_PDL=0
run pdl_nopf TGEMM_SKINNY_V2_PDL=1 TGEMM_SKINNY_V2_PDL_PREFETCH=0
run pdl_pf TGEMM_SKINNY_V2_PDL=1
grep -i geomean $S/*.log
tar czf $OUT/s9c5.tgz -C /tmp s9e
echo "call ends at $SECONDS s"
