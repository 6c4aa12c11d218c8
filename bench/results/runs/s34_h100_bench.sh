#!/usr/bin/env bash
# Session 34: `tgemm bench --m 1,16` twice with the committed tables, CI binary (carry scratch/tgemm.gz, scratch/COMMIT); the files are named h100_final_* whatever the card (call 12 ran it on an H200).
S=/tmp/hb; END=150; . bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for i in 1 2; do TGEMM_CONFIG_DIR=$PWD/configs timeout 50 tgemm bench --m 1,16 --json $OUT/h100_final_$i.json > $OUT/h100_final_$i.log 2>&1; echo "run $i rc=$?: $(grep -i geomean $OUT/h100_final_$i.log)"; done
