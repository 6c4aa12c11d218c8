#!/usr/bin/env bash
# Session 10, experiment (nvidia-h200, carry ["scratch"], no device build): should the skinny
# default rule (versions 1-2 register-batch model) also take M = 9-16? scratch/tgemm.gz is the CI
# preset's CLI at scratch/COMMIT plus s10_exp_default_max_m.patch (an env knob,
# TGEMM_EXP_DEFAULT_MAX_M, not committed). 14 untuned (N, K) pairs of 2-32 MiB at M = 1, 4, 8,
# 12, 16, benched with the rule as shipped (max M 8) and widened to 16; then the 14 at M = 16
# tuned with skinny and cuBLASLt (the best variant each, for the model's pick to be judged).
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin TGEMM_CONFIG_DIR=$PWD/configs
export TGEMM_COMMIT="$(cat scratch/COMMIT)+s10_exp_default_max_m.patch"
S=/tmp/s10x; mkdir -p $S /tmp/bin
gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; chmod +x /tmp/bin/tgemm
for v in 8 16; do
  TGEMM_EXP_DEFAULT_MAX_M=$v timeout 120 tgemm bench --suite bench/shapes/skinny_untuned_m16.csv --m 1,4,8,12,16 \
    --json $S/untuned_max$v.json > $S/untuned_max$v.log 2>&1
  grep -i geomean $S/untuned_max$v.log
done
tgemm shapes --suite bench/shapes/skinny_untuned_m16.csv --nsets 16 -o $S/u16.csv > /dev/null
timeout 150 tgemm tune --libtype skinny,cublaslt -i $S/u16.csv -o $S/u16_tuned.csv --profile_file $S/prof_u16.csv \
  > $S/u16.log 2>&1; tail -2 $S/u16.log
gzip -f $S/prof_u16.csv
tar czf $OUT/s10x.tgz -C /tmp s10x
echo "call ends at $SECONDS s"
