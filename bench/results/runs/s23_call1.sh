#!/usr/bin/env bash
# Session 23, call 1 (one H100; carry scratch/tgemm.gz, scratch/COMMIT, scratch/ci/test_gpu_dispatch.gz,
# scratch/lab): CLI and test of branch s22-unverified.
#  1. test_gpu_dispatch (DispatchTables.TorchDefaultRowRunsTheBaselinesAlgorithm among them).
#  2. Issue 5/3, the M = 8192 A/A gap: ncu's kernel names, grids and durations of `tgemm run`
#     through cublaslt:heuristic and cublaslt:heuristic_torch_default on the two worst problems;
#     then `tgemm bench --m 8192` alternated twice: the shipped table / a copy whose M = 8192
#     cublaslt:heuristic rows name cublaslt:heuristic_torch_default (JSON: tgemm_algo_identical).
#  3. Issue 4: Nsight Compute of the GEMV vs bt's stream (s23_ncu.sh).
#  4. Issue 5: studies/s22/big/best_of_two.csv vs the shipped table, M >= 512, once each.
S=/tmp/s23a
END=${END:-570}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); export NCU; echo "ncu: $NCU"
run_gpu_test test_gpu_dispatch
grep -E "TorchDefault|FAILED" $S/test_gpu_dispatch.log | head
python3 - <<'PY'
import csv
src = "configs/bf16_tuned_gemm.csv"; dst = "/tmp/s23a/torchdef.csv"
rows = list(csv.DictReader(open(src))); n = 0
for r in rows:
    if r["M"] == "8192" and r["kernelName"] == "cublaslt:heuristic" and r.get("epilogue", "none") in ("", "none"):
        r["kernelName"] = "cublaslt:heuristic_torch_default"; n += 1
w = csv.DictWriter(open(dst, "w"), rows[0].keys(), lineterminator="\n"); w.writeheader(); w.writerows(rows)
print("torchdef rows:", n)
PY
for nk in "28672 4096" "7168 16384"; do
  set -- $nk
  for sol in heuristic heuristic_torch_default; do
    timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y \
      tgemm run -m 8192 -n $1 -k $2 --solution cublaslt:$sol --iters 3 --no-check > $S/ncu_${sol}_$1x$2.txt 2>&1
    echo "ncu $sol $1x$2 rc=$?"; grep -E "^  [a-zA-Z_].*\(|gpu__time_duration|grid_size|cluster_dim" $S/ncu_${sol}_$1x$2.txt | head -12 | cut -c1-160
  done
done
b() {  # tag table ms need
  [ $(left) -lt $4 ] && { echo "skip $1: $(left) s left"; return; }
  local t0=$SECONDS
  TGEMM_CONFIG_GEMM_BF16=$2 timeout 200 tgemm bench --m $3 --json $S/$1.json > $S/$1.log 2>&1
  echo "$1 rc=$? $((SECONDS - t0)) s: $(grep -i geomean $S/$1.log)"
  grep -E " 0\.9[0-7][0-9]x" $S/$1.log | cut -c1-70
}
for rep in 1 2; do
  b m8192_shipped_$rep configs/bf16_tuned_gemm.csv 8192 50
  b m8192_torchdef_$rep $S/torchdef.csv 8192 50
done
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob("/tmp/s23a/m8192_*.json")):
    d = json.load(open(f)); rs = d["rows"]
    for r in rs:
        if isinstance(r, dict) and r.get("N") in (28672, 7168, 10240):
            print(f.split("/")[-1], r.get("N"), r.get("K"), r.get("solution"), r.get("tgemm_algo_identical"), r.get("baseline_algo"), r.get("tgemm_algo"), round(r.get("speedup"), 3))
PY
[ $(left) -gt 250 ] && bash bench/results/runs/s23_ncu.sh
b big_best2 bench/results/studies/s22/big/best_of_two.csv 512,2048,8192 95
b big_shipped configs/bf16_tuned_gemm.csv 512,2048,8192 95
tar czf $OUT/s23a.tgz -C $S . ; [ -f $OUT/ncu.tgz ] || true; ls -la $OUT
