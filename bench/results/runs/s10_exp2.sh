#!/usr/bin/env bash
# Session 10, experiment 2 (nvidia-h200, carry ["scratch"], no device build; the binary of
# s10_exp.sh): the 14 untuned (N, K) pairs at M = 1, 4 and 8 tuned with skinny and cuBLASLt, every
# candidate's time in the profile, to re-fit the default rule where its pick lost (M = 4 and 8 on
# 5120x2048 and 6144x1024, the wk4_u8 variants: 0.944-0.983x in s10_exp.sh).
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin TGEMM_CONFIG_DIR=$PWD/configs
export TGEMM_COMMIT="$(cat scratch/COMMIT)+s10_exp_default_max_m.patch"
S=/tmp/s10y; mkdir -p $S /tmp/bin
[ -x /tmp/bin/tgemm ] || { gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; chmod +x /tmp/bin/tgemm; }
tgemm shapes --suite bench/shapes/skinny_untuned_m16.csv --nsets 1,4,8 -o $S/u148.csv > /dev/null
timeout 240 tgemm tune --libtype skinny,cublaslt -i $S/u148.csv -o $S/u148_tuned.csv --profile_file $S/prof_u148.csv \
  > $S/u148.log 2>&1; tail -3 $S/u148.log
gzip -f $S/prof_u148.csv
tar czf $OUT/s10y.tgz -C /tmp s10y
echo "call ends at $SECONDS s"
