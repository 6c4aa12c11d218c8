#!/usr/bin/env bash
# Session 10's first device call, before any device build (nvidia-h200, carry ["scratch"],
# timeout_s 400; run bench/results/runs/pack_ci_binaries.sh here first). With the CI-preset
# binaries: every skinny GPU test (versions 5 and 6 run for the first time), compute-sanitizer
# memcheck, racecheck and synccheck of the sanitizer subset (versions 5-6 included), then the
# decode experiment: the 32 M = 1 and 16 suite rows tuned with skinny (v1-v6, bf16) and
# cuBLASLt, benched in place of the shipped rows. A failing or hanging test stops before the
# tune (each step has a timeout).
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin TGEMM_COMMIT=$(cat scratch/COMMIT) TGEMM_CONFIG_DIR=$PWD/configs
S=/tmp/s10z; mkdir -p $S /tmp/bin
gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; gunzip -c scratch/ci/test_gpu_skinny.gz > $S/test_gpu_skinny
chmod +x /tmp/bin/tgemm $S/test_gpu_skinny
timeout 150 $S/test_gpu_skinny > $S/test_skinny.log 2>&1; rc=$?
tail -4 $S/test_skinny.log; grep -E "^\[  FAILED" $S/test_skinny.log | head
if [ $rc = 0 ]; then
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 17 $S/test_gpu_skinny \
      --gtest_filter='*Sanitizer*' >> $S/san_bulk.log 2>&1
    echo "$tool rc=$?"
  done
  grep -E "ERROR SUMMARY" $S/san_bulk.log | sort | uniq -c
  tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/dec_in.csv > /dev/null
  timeout 120 tgemm tune --batch 4 --libtype skinny,cublaslt -i $S/dec_in.csv -o $S/dec6.csv \
    --profile_file $S/prof_dec6.csv > $S/dec6.log 2>&1; tail -3 $S/dec6.log
  awk -F, 'NR == 1 || ($3 != 1 && $3 != 16)' configs/bf16_tuned_gemm.csv > $S/with_dec6.csv
  tail -n +2 $S/dec6.csv >> $S/with_dec6.csv
  TGEMM_CONFIG_GEMM_BF16=$S/with_dec6.csv timeout 60 tgemm bench --m 1,16 --json $S/bench_decode_dec6.json \
    > $S/bench_decode_dec6.log 2>&1; grep -i geomean $S/bench_decode_dec6.log
  gzip -f $S/prof_dec6.csv
fi
rm -f $S/test_gpu_skinny
tar czf $OUT/s10c0.tgz -C /tmp s10z
echo "call ends at $SECONDS s"
