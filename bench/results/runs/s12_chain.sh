#!/usr/bin/env bash
# Session 12's resumable chain, written in session 11 (no device time was left to run it). Same
# pattern as s11_chain.sh: nvidia-h200, carry ["scratch"] after bench/results/runs/pack_ci_binaries.sh
# here, no device build; each call runs the steps still undone while their time is left before
# $END seconds, then the caller packs one tar:
#   END=570 bash bench/results/runs/s12_chain.sh; tar czf $OUT/s12cN.tgz --exclude='prof_*.csv' -C /tmp s12
# Steps, in the order of what the open targets need (docs/gpu-runbook.md, "Order ... session 12"):
# (t)   test_gpu_skinny (session 10's refactor, 9ce99f7, never GPU-run) and test_gpu_tune (session
#       11's finals fix and --min_accurate assertion).
# (full) FULL=1 (carry ["scratch", ".deps/wheels"]): build every kernel on the device first
#       (gpu-check's pybuild, ~150 s) and use that CLI from then on. The CI build has 2 of the 40
#       CUTLASS instances, not the 128x128x64 c2x1 ping-pong of the shipped table's 4 plain
#       M >= 512 CUTLASS rows: without FULL those rows fall back to the default in the shipped
#       bench below, and LIB=all races no CUTLASS instance worth having.
# (big) issue 5: retune the 48 plain M >= 512 suite problems with the finals fix (LIB: all with
#       FULL=1, else cublaslt), then bench M = 512, 2048, 8192 with those rows alone and with the
#       shipped table, one after the other in the same call. Prediction (perf-notes, CUTLASS, "Session 11"): more rows off the
#       default than session 8's 17 of 48, M >= 512 at 1.035-1.05x (shipped: 1.027-1.033x).
# (fix2, acc) issue 3: two pairs of 64-problem tunes (M <= 128) with the fix, the second with
#       --min_accurate 48 --graph_screen 50, three compares each, and session 11's control tables
#       compared again the same day (cmp_ctl).
# (dec) issue 4: the 32 decode problems (M = 1, 16) retuned with skinny and cuBLASLt, benched in
#       place of the shipped M = 1, 16 rows.
END=${END:-570}
S=/tmp/s12
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
TABLE=configs/bf16_tuned_gemm.csv
full_build() {
  GPU_CHECK_DIR=$S/gc GPU_CHECK_STEPS="pybuild" timeout 260 scripts/gpu-check 2>&1 | tail -2
  local D=$(ls -d build/pip/*/ | head -1)
  cp ${D}tools/cli/tgemm /tmp/bin/tgemm && touch $S/full_cli
}
[ -n "${FULL:-}" ] && step full_build 280 full_build
if [ -f $S/full_cli ]; then LIB=${LIB:-all}; else LIB=${LIB:-cublaslt}; fi
echo "tgemm: $([ -f $S/full_cli ] && echo 'full device build' || echo 'CI build (2 CUTLASS instances)'), big tune --libtype $LIB"
OPTS="--final_placements 4 --confirm_best --libtype cublaslt"

gpu_tests() {  # the full device build's GPU tests when there is one, else the CI binaries'
  if [ -f $S/full_cli ]; then
    GPU_CHECK_DIR=$S/gt GPU_CHECK_REUSE=1 GPU_CHECK_STEPS="tests" timeout 170 scripts/gpu-check 2>&1 | tail -3
    grep -E "tests passed|tests failed|\(Failed\)|\*\*\*" $S/gt/gpu_tests.log | head -20
    return
  fi
  for t in test_gpu_skinny test_gpu_tune; do
    gunzip -c scratch/ci/$t.gz > $S/$t && chmod +x $S/$t
    timeout 150 $S/$t > $S/$t.log 2>&1; echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $S/$t.log | head -10
    rm -f $S/$t
  done
}
step gpu_tests 175 gpu_tests

inputs() {
  [ -f $S/big_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 -o $S/big_in.csv > /dev/null
  [ -f $S/sub_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16,64,128 -o $S/sub_in.csv > /dev/null
  [ -f $S/dec_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/dec_in.csv > /dev/null
}
inputs
big_bench() {  # the new rows alone, then the shipped table: same problems, same call
  TGEMM_CONFIG_GEMM_BF16=$S/big.csv timeout 100 tgemm bench --m 512,2048,8192 --json $S/bench_big_fix.json \
    > $S/bench_big_fix.log 2>&1
  timeout 100 tgemm bench --m 512,2048,8192 --json $S/bench_big_shipped.json > $S/bench_big_shipped.log 2>&1
  grep -i geomean $S/bench_big_fix.log $S/bench_big_shipped.log
}
tune_until big 48 --batch 2 --libtype $LIB -i $S/big_in.csv && step big_bench 120 big_bench

dec_bench() {  # the shipped table with its M = 1, 16 rows replaced by the retune's
  awk -F, 'NR == 1 || ($3 != 1 && $3 != 16)' $TABLE > $S/with_dec.csv && tail -n +2 $S/dec.csv >> $S/with_dec.csv
  TGEMM_CONFIG_GEMM_BF16=$S/with_dec.csv timeout 60 tgemm bench --m 1,16 --json $S/bench_dec_fix.json \
    > $S/bench_dec_fix.log 2>&1
  timeout 60 tgemm bench --m 1,16 --json $S/bench_dec_shipped.json > $S/bench_dec_shipped.log 2>&1
  grep -i geomean $S/bench_dec_fix.log $S/bench_dec_shipped.log
}
tune_until dec 32 --batch 4 --libtype skinny,cublaslt -i $S/dec_in.csv && step dec_bench 130 dec_bench
merged_bench() {  # the shipped table with the big (plain M >= 512) and dec (M = 1, 16) rows in place of its own: whole suite
  python3 - $TABLE $S/big.csv $S/dec.csv > $S/merged.csv <<'PY'
import csv, sys
def key(r): return (r["M"], r["N"], r["K"], r["bias"], r["dtype"], r["outdtype"], r["scaleAB"], r["bpreshuffle"], r.get("epilogue", "none"))
with open(sys.argv[1]) as f: rd = csv.DictReader(f); fields = rd.fieldnames; ship = list(rd)
new = {}
for p in sys.argv[2:]:
    with open(p) as f:
        for r in csv.DictReader(f): r.setdefault("epilogue", "none"); new[key(r)] = r
out = csv.DictWriter(sys.stdout, fields, extrasaction="ignore", lineterminator="\n"); out.writeheader()
for r in ship: out.writerow(new.pop(key(r), r))
for r in new.values(): out.writerow(r)
PY
  TGEMM_CONFIG_GEMM_BF16=$S/merged.csv timeout 150 tgemm bench --json $S/bench_merged.json > $S/bench_merged.log 2>&1
  grep -i geomean $S/bench_merged.log
}
step merged_bench 150 merged_bench
cmp3() {  # tag [A B]: three compares of two tables (default: this chain's $tag_A and $tag_B)
  local t=$1 A=${2:-$S/$1_A.csv} B=${3:-$S/$1_B.csv}
  for i in 1 2 3; do
    timeout 80 tgemm compare --measure --placements 4 $A $B --json $S/cmp_${t}_$i.json > /dev/null 2>&1
  done
  python3 bench/compare_runs.py $S/cmp_${t}_{1,2,3}.json > $S/cmp_${t}_runs.txt 2>&1; tail -2 $S/cmp_${t}_runs.txt
}
step cmp_ctl 60 cmp3 ctl bench/results/studies/s11/ctl_A.csv bench/results/studies/s11/ctl_B.csv
tune_until fix2_A 64 --batch 4 $OPTS -i $S/sub_in.csv && tune_until fix2_B 64 --batch 4 $OPTS -i $S/sub_in.csv && \
  step cmp3_fix2 60 cmp3 fix2
ACC="--min_accurate 48 --graph_screen 50"
tune_until acc_A 64 --batch 4 $OPTS $ACC -i $S/sub_in.csv && tune_until acc_B 64 --batch 4 $OPTS $ACC -i $S/sub_in.csv && \
  step cmp3_acc 60 cmp3 acc

for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
echo "chain ends at $SECONDS s"
