#!/usr/bin/env bash
# Session 15, second pair (after s15_chain.sh's r20 pair: 87.5%, tunes 647/597 s). The r20 pair's
# misses (bench/tune_agreement.py): 9 of 14 beyond the band are "default" rows, where one tune's
# confirmation measured the other tune's pick 1.5-2% faster than the default, under the 2%
# sustained margin, and kept the default. With the confirmation's margin equal to the compare's
# tie band (1%), such near-threshold rows land inside the band. Fewer confirmation rounds and
# placements pay for it in time. Options: --sustained_round_ms 20 --sustained_margin 0.01
# --confirm_rounds 4 --confirm_placements 3. Then three measured compares (no suite bench).
# nvidia-h200, carry ["scratch"]:  END=590 bash bench/results/runs/s15b_chain.sh
END=${END:-590}
S=/tmp/s15b
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
chain_inputs
OPTS="--batch 8 --libtype cublaslt -i $S/all_in.csv --sustained_round_ms 20 --sustained_margin 0.01 --confirm_rounds 4 --confirm_placements 3"
tune_until m1c_A 112 $OPTS && tune_until m1c_B 112 $OPTS && step cmp3_m1c 200 cmp3 m1c
for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
