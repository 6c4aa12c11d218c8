#!/usr/bin/env bash
# Session 28, issue 3: the same-card agreement pair with the tune's default options (runbook,
# session 28 item 3), the first after the tuner's session-27 changes (a ~5 ms warm-up before each
# problem's screen; refine() expanding the heuristic's first 8 bases whatever their screen time;
# `--reconfirm` passing the tune's margins on). cuBLASLt only, --batch 8, tunes A then B on one GPU,
# detached (chain_lib.sh's pair_run); STEP=cmp: three short-slot judges and the agreement, as
# s27_pair.sh's cmp step (chain_lib.sh's pair_cmp). Carry scratch/tgemm.gz, scratch/COMMIT (pack_ci_binaries.sh first).
#   STEP=run bash bench/results/runs/s28_pair.sh   (repeat until both tunes end)
#   STEP=cmp bash bench/results/runs/s28_pair.sh   (or STEP=run then cmp in one call: END applies to both)
S=/tmp/s28p
END=${END:-585}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
OPTS=${OPTS:-"--batch 8 --libtype cublaslt -i $S/all_in.csv"}
case ${STEP:?STEP=run or cmp} in
  run)
    nvidia-smi --query-gpu=name --format=csv,noheader
    pair_run
    pair_pack_run ;;
  cmp)
    pair_cmp ;;
esac
