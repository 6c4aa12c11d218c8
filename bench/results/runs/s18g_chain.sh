#!/usr/bin/env bash
# Session 18, seventh chain (for the next session): Nsight Compute on version 7 where it is
# furthest from the floor, beside cuBLASLt's default on the same problem: DRAM throughput, the
# memory workload, warp stall reasons, occupancy. Single eager launches (`tgemm run`, caches
# flushed by ncu before each profiled launch).
# nvidia-h200, carry ["scratch"]:
#   END=200 timeout 215 bash bench/results/runs/s18g_chain.sh; tar czf $OUT/s18g.tgz -C /tmp s18g
END=${END:-200}
S=/tmp/s18g
. bench/results/runs/chain_lib.sh
prof() {  # tag m n k solution
  timeout 60 ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --launch-skip 4 --launch-count 1 tgemm run -m $2 -n $3 -k $4 --solution $5 --no-check > $S/ncu_$1.txt 2>&1
  echo "$1 rc=$? $(grep -E 'Duration|DRAM Throughput' $S/ncu_$1.txt | tr -s ' ' | head -2 | tr '\n' ' ')"
}
profiles() {
  prof v7_1280 16 1280 8192 skinny:sm90_m16_n8_wn1_wk4_u4_b1_sk4_v16
  prof lt_1280 16 1280 8192 cublaslt:heuristic
  prof v7_576 16 576 7168 skinny:sm90_m16_n8_wn1_wk8_u2_b2_sk4_v16
  prof v7_4096 16 4096 4096 skinny:sm90_m16_n16_wn1_wk4_u4_b1_sk2_v16
  prof lt_4096 16 4096 4096 cublaslt:heuristic
  prof v7_8192x1024 16 8192 1024 skinny:sm90_m16_n16_wn1_wk4_u4_b1_sk1_v16
  prof lt_8192x1024 16 8192 1024 cublaslt:heuristic
  prof gemv_1280 1 1280 8192 skinny:sm90_m1_gemv_w4_c4_v16
}
step profiles 150 profiles
echo "chain ends at $SECONDS s"
