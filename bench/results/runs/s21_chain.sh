#!/usr/bin/env bash
# Session 21 device chain (docs/gpu-runbook.md, "Order for the open issues (session 21)").
#   STEP=lab  : issue 4, decode16_lab's LAB16_S21 sweep (bt with small/large CTAs, U = 8, C = 4,
#               the grid cap lifted; nox rows) and decode_lab (the M = 1 GEMV against the floor)
#               on the same card; test_gpu_tune with the stage split (009c153 re-applied).
#   STEP=tune : issue 3, one whole tune (cuBLASLt, --batch 8 --reconfirm --no-confirm_best, as
#               session 20's pair) uninterrupted in one call, for the summary's stage split.
# carry ["scratch"] (scratch/tgemm.gz, scratch/ci/*.gz from pack_ci_binaries.sh, scratch/lab/*).
#   STEP=lab  END=280 timeout 290 bash bench/results/runs/s21_chain.sh; tar czf $OUT/s21_lab.tgz -C /tmp s21
#   STEP=tune END=593 bash bench/results/runs/s21_chain.sh
S=/tmp/s21
END=${END:-280}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
case ${STEP:?STEP=lab or tune} in
  lab)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee $S/device.txt
    # line-buffered, so that a lab cut by its timeout still leaves its rows
    LAB16_S18=1 LAB16_S21=1 timeout 200 stdbuf -oL scratch/lab/decode16_lab 576 7168 1280 8192 1536 7168 4096 4096 8192 1024 6144 4096 > $S/decode16_lab.txt 2>&1
    echo "decode16_lab rc=$? at $SECONDS s"; grep -E "floor|FAIL|match" $S/decode16_lab.txt
    timeout 100 stdbuf -oL scratch/lab/decode_lab 576 7168 1280 8192 1536 7168 4096 4096 8192 1024 6144 4096 > $S/decode_lab.txt 2>&1
    echo "decode_lab rc=$? at $SECONDS s"; grep -E "floor |lib|FAIL|match" $S/decode_lab.txt
    run_gpu_test test_gpu_tune ;;
  tune)
    chain_inputs
    tune_until t_A 112 --batch 8 --libtype cublaslt -i $S/all_in.csv --reconfirm --no-confirm_best
    grep -E "summary|GPU work by stage|graph|checks|candidates per problem" $S/t_A.log | tail -6
    pack_profiles; cp $S/t_A.csv $S/t_A.log $S/prof_t_A.csv.gz "$OUT"/ ;;
esac
echo "chain ends at $SECONDS s"
