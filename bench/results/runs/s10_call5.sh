#!/usr/bin/env bash
# Session 10, call 5 (nvidia-h200, carry ["scratch"], no device build; pack_ci_binaries.sh
# first): after the libtype_list refactor of tools/cli/tune.cpp, `tgemm reconfirm --libtype
# cublaslt` of session 9's sub_A once more (expect its summary as in call 1: 15 already the default,
# ~46 kept, ~3 reverted) and the skinny GPU tests.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin TGEMM_COMMIT=$(cat scratch/COMMIT) TGEMM_CONFIG_DIR=$PWD/configs
S=/tmp/s10v; mkdir -p $S /tmp/bin
gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; gunzip -c scratch/ci/test_gpu_skinny.gz > $S/test_gpu_skinny
chmod +x /tmp/bin/tgemm $S/test_gpu_skinny
timeout 100 $S/test_gpu_skinny > $S/test_skinny.log 2>&1; echo "test_gpu_skinny rc=$?"; tail -1 $S/test_skinny.log
rm -f $S/test_gpu_skinny
timeout 60 tgemm reconfirm bench/results/tables/tune_sub_A_s9-h200-20261123.csv --libtype cublaslt -o $S/sub_A_r.csv \
  > $S/recon_A.log 2>&1; echo "reconfirm rc=$?"; tail -1 $S/recon_A.log; grep reverted $S/recon_A.log | cut -c1-60,200-
tar czf $OUT/s10v.tgz -C /tmp s10v
