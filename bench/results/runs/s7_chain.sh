#!/usr/bin/env bash
# Session 7: issue 3's agreement work as one resumable chain, so that every device call spends its
# whole time. Each call runs the steps still undone, in priority order, while time is left before
# $END seconds (default 570, for a call of timeout_s 600); finished steps leave a marker and are
# skipped by the next call on the same warm machine. Steps: tune A and tune B of the suite
# (cuBLASLt, --dedupe_launches --final_placements 4 --confirm_best; a cut tune resumes from its
# last written batch), then the table compare and tune_agreement.py, the bench of table A, the
# measured compare of A and B over 4 placements, the gelu benches, the measured compare of
# session 5's tables. Needs /tmp/bin/tgemm (s7_call1.sh) or scratch/tgemm.gz. One tar in $OUT.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=${TGEMM_COMMIT:-$(cat scratch/COMMIT)}
END=${END:-570}
T0=${T0:-$SECONDS}
left() { echo $((END - (SECONDS - T0))); }
mkdir -p /tmp/bin /tmp/s7agree
[ -x /tmp/bin/tgemm ] || { gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; chmod +x /tmp/bin/tgemm; }
rows() { [ -f $1 ] && echo $(($(wc -l < $1) - 1)) || echo 0; }

tune() {  # A|B
  local X=$1 L=/tmp/s7$1
  mkdir -p $L
  [ -f $L/tuned.csv ] || { [ -f scratch/tuned_$X.csv ] && cp scratch/tuned_$X.csv $L/tuned.csv; }
  [ -f $L/all.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv -o $L/all.csv > /dev/null
  [ "$(rows $L/tuned.csv)" -ge 112 ] && return 0
  local t=$(( $(left) - 8 ))
  [ $t -lt 45 ] && return 1
  local t0=$SECONDS
  timeout -s TERM $t tgemm tune --libtype cublaslt --dedupe_launches --final_placements 4 --confirm_best \
    --batch 4 -i $L/all.csv -o $L/tuned.csv --profile_file $L/prof.csv >> $L/tune.log 2>&1
  local rc=$?
  echo "tune $X rc=$rc rows $(rows $L/tuned.csv) in $((SECONDS - t0)) s (call at $((SECONDS - T0)) s)" | tee -a $L/calls.txt
  tail -3 $L/tune.log
  [ "$(rows $L/tuned.csv)" -ge 112 ]
}

step() {  # name, seconds needed, command...
  local name=$1 need=$2; shift 2
  [ -f /tmp/s7agree/$name.done ] && return 0
  [ $(left) -lt $need ] && { echo "skip $name: $(left) s left, needs $need"; return 1; }
  local t0=$SECONDS
  "$@"; local rc=$?
  echo "$name rc=$rc in $((SECONDS - t0)) s" | tee -a /tmp/s7agree/steps.txt
  touch /tmp/s7agree/$name.done
}

A=/tmp/s7A/tuned.csv B=/tmp/s7B/tuned.csv S=/tmp/s7agree T=bench/results/tables
agree() {
  tgemm compare $A $B > $S/compare.txt 2>&1; tail -2 $S/compare.txt
  python3 bench/tune_agreement.py $A $B --profiles /tmp/s7A/prof.csv /tmp/s7B/prof.csv > $S/agreement.txt 2>&1
  tail -3 $S/agreement.txt
}
bench_a() { TGEMM_CONFIG_GEMM_BF16=$A timeout 170 tgemm bench --json $S/bench_A.json > $S/bench_A.log 2>&1; grep -i geomean $S/bench_A.log; }
measure_ab() { timeout 150 tgemm compare --measure --placements 4 $A $B > $S/compare_measured.txt 2>&1; tail -2 $S/compare_measured.txt; }
gelu_shipped() { timeout 110 tgemm bench --epilogue gelu --bias --m 512,2048,8192 --json $S/bench_gelu_shipped.json > $S/bench_gelu_shipped.log 2>&1; grep -i geomean $S/bench_gelu_shipped.log; }
gelu_rule() {
  mkdir -p /tmp/empty; head -1 configs/bf16_tuned_gemm.csv > /tmp/empty/e.csv
  TGEMM_CONFIG_DIR=/tmp/empty TGEMM_CONFIG_GEMM_BF16=/tmp/empty/e.csv timeout 80 tgemm bench --epilogue gelu --bias --m 512,2048 \
    --json $S/bench_gelu_rule.json > $S/bench_gelu_rule.log 2>&1; grep -i geomean $S/bench_gelu_rule.log
}
measure_s5() { timeout 120 tgemm compare --measure --placements 4 $T/tune_lt_A_s5-h200-20261123.csv $T/tune_lt_B_s5-h200-20261123.csv > $S/compare_s5_p4.txt 2>&1; tail -2 $S/compare_s5_p4.txt; }

if [ -z "${SKIP_TUNE:-}" ] && tune A && tune B; then
  step agree 5 agree
  step bench_A 175 bench_a
  step measure_AB 155 measure_ab
fi
step gelu_shipped 115 gelu_shipped
step measure_s5 125 measure_s5
step gelu_rule 85 gelu_rule
for X in A B; do [ -f /tmp/s7$X/prof.csv ] && gzip -kf /tmp/s7$X/prof.csv; done
echo "chain ends at $((SECONDS - T0)) s"
