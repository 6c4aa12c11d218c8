#!/usr/bin/env bash
# Session 34: Nsight Compute of version 7 (with the push) on three M = 16 rows, eager `tgemm run`
# with the CI binary (carry scratch/tgemm.gz, scratch/COMMIT): warp state (stall reasons), source
# counters, memory workload, occupancy. The first 3 launches are fills and the poison, then one
# warm call; the 5th launch is profiled.
S=/tmp/s34n; END=${END:-200}; . bench/results/runs/chain_lib.sh
for e in 16,8192,1024,skinny:sm90_m16_n16_wn1_wk4_u4_b1_sk1_v16 16,576,7168,skinny:sm90_m16_n16_wn1_wk4_u4_b1_sk8_v16 \
         16,1280,8192,skinny:sm90_m16_n8_wn1_wk4_u4_b1_sk4_v16 16,8192,1024,cublaslt:heuristic; do
  IFS=, read -r m n k sol <<<"$e"
  echo "=== M=$m N=$n K=$k $sol ==="
  timeout 60 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --section MemoryWorkloadAnalysis --section LaunchStats --launch-skip 4 --launch-count 1 \
    tgemm run -m $m -n $n -k $k --solution $sol --no-check 2>&1 | grep -vE "^==PROF==|^\s*$" | head -120
done > $OUT/ncu.txt 2>&1
grep -E "===|Duration|DRAM Throughput|Stall|Achieved Occupancy|Registers Per|Warp Cycles Per Issued" $OUT/ncu.txt | head -80
