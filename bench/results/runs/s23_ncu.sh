#!/usr/bin/env bash
# Written in session 22 for session 23 (not run): why bt's weight stream on the big weights runs
# 1.03-1.10x of the floor where the M = 1 GEMV streams the same weights at 1.01-1.04x
# (docs/perf-notes.md, skinny, "Session 22"). Nsight Compute on one weight (7168x8192) for the
# GEMV (decode_lab's rows_kernel<8, 4, 0>, the shipped w8 c4) and bt's stream (decode16_lab's
# bop_kernel r8 c2 w8 u2: full, and nox), sections: speed of light, occupancy, launch stats,
# warp states, memory workload. Session 23: the regexes match ncu's demangled names ((int)8 ...). ~1-2 min on the device (each kernel profiled 3 times).
#   Build both labs here first (the line in each lab's header) into scratch/lab/.
#   Call: bash bench/results/runs/s23_ncu.sh   (carry ["scratch/lab"], nvidia-h100-x1)
set -u
S=/tmp/s23n; mkdir -p $S
SEC="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
prof() {  # name lab regex [env...]
  local name=$1 lab=$2 re=$3; shift 3
  env "$@" timeout 240 ${NCU:-ncu} --clock-control none --kernel-name-base demangled -k "regex:$re" --launch-count 3 $SEC \
    scratch/lab/$lab 7168 8192 > $S/$name.txt 2>&1
  echo "$name rc=$?"; grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Warp Cycles Per Issued" $S/$name.txt | head -24
}
prof gemv_w8c4 decode_lab 'rows_kernel<\(int\)8, \(int\)4, \(int\)0, \(int\)0>'
prof bt_r8c2w8u2 decode16_lab 'bop_kernel<\(int\)1, \(int\)2, \(int\)8, \(int\)2, \(bool\)0, \(bool\)0' LAB16_S18=1 LAB16_S21=1
prof bt_r8c2w8u2_nox decode16_lab 'bop_kernel<\(int\)1, \(int\)2, \(int\)8, \(int\)2, \(bool\)0, \(bool\)1' LAB16_S18=1 LAB16_S21=1
tar czf $OUT/ncu.tgz -C $S .
