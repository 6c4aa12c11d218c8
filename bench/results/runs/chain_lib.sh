#!/usr/bin/env bash
# Helpers of the resumable device chains (s8_chain.sh, s9_chain.sh), sourced after S (the
# chain's directory under /tmp) and END (the seconds this call may use, counted by $SECONDS from
# the chain's start) are set. Sets PATH and TGEMM_COMMIT, and unpacks scratch/tgemm.gz to
# /tmp/bin/tgemm when no CLI is there yet.
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=${TGEMM_COMMIT:-$(cat scratch/COMMIT 2>/dev/null)}
mkdir -p "$S" /tmp/bin
[ -x /tmp/bin/tgemm ] || { gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm; chmod +x /tmp/bin/tgemm; }
left() { echo $((END - SECONDS)); }
rows() { [ -f $1 ] && echo $(($(wc -l < $1) - 1)) || echo 0; }
step() {  # name, seconds needed, command... (runs once: a finished step leaves $S/<name>.done)
  local name=$1 need=$2; shift 2
  [ -f $S/$name.done ] && return 0
  [ $(left) -lt $need ] && { echo "skip $name: $(left) s left, needs $need"; return 1; }
  local t0=$SECONDS
  "$@"; local rc=$?
  echo "$name rc=$rc in $((SECONDS - t0)) s" | tee -a $S/steps.txt
  touch $S/$name.done
}
tune_until() {  # name, expected rows, tune arguments... (resumable: returns 0 once complete)
  local name=$1 want=$2; shift 2
  [ "$(rows $S/$name.csv)" -ge $want ] && return 0
  local t=$(( $(left) - 8 ))
  [ $t -lt 45 ] && return 1
  local t0=$SECONDS
  timeout -s TERM $t tgemm tune "$@" -o $S/$name.csv --profile_file $S/prof_$name.csv >> $S/$name.log 2>&1
  echo "tune $name rc=$? rows $(rows $S/$name.csv) of $want in $((SECONDS - t0)) s" | tee -a $S/steps.txt
  tail -3 $S/$name.log
  [ "$(rows $S/$name.csv)" -ge $want ]
}
# A fresh machine resumes from scratch/<chain>/ (tables and .done marks copied back by hand; for a
# pair, a run.tgz of pair_pack_run unpacked there: an ended tune's table, log, markers and
# profile, so the pair goes on with the other tune), and every chain tunes the whole suite's
# untuned CSV ($S/all_in.csv).
chain_inputs() {
  local saved=scratch/$(basename $S) f
  if [ -d $saved ]; then
    for f in $saved/*.csv $saved/*.done $saved/p_*.log $saved/p_*.started $saved/p_*.ended $saved/p_*.rc; do
      [ -f "$f" ] && [ ! -f $S/$(basename $f) ] && cp $f $S/
    done
    for f in $saved/prof_*.csv.gz; do
      [ -f "$f" ] && [ ! -f $S/$(basename $f .gz) ] && gunzip -c $f > $S/$(basename $f .gz)
    done
  fi
  [ -f $S/all_in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16,64,128,512,2048,8192 -o $S/all_in.csv > /dev/null
}
cmp3() {  # tag [suffix compare-args...]: three measured compares of $S/<tag>_A.csv and $S/<tag>_B.csv, judged by the median
  local tag=$1 sfx=${2:-} i; shift; [ $# -gt 0 ] && shift
  for i in 1 2 3; do
    timeout 170 tgemm compare --measure --placements 4 "$@" $S/${tag}_A.csv $S/${tag}_B.csv --json $S/cmp${sfx}_${tag}_$i.json > /dev/null 2>&1
  done
  python3 bench/compare_runs.py $S/cmp${sfx}_${tag}_{1,2,3}.json > $S/cmp${sfx}_${tag}_runs.txt 2>&1; tail -2 $S/cmp${sfx}_${tag}_runs.txt
}
suite_bench() {  # the whole-suite bench of the shipped table
  timeout 200 tgemm bench --json $S/bench_suite.json > $S/bench_suite.log 2>&1; echo "bench rc=$?"
  grep -i geomean $S/bench_suite.log
}
run_gpu_test() {  # name: a GPU test binary packed by pack_ci_binaries.sh (scratch/ci/<name>.gz), its log in $S
  gunzip -c scratch/ci/$1.gz > /tmp/bin/$1 && chmod +x /tmp/bin/$1
  timeout 300 /tmp/bin/$1 > $S/$1.log 2>&1; echo "$1 rc=$?"; tail -4 $S/$1.log
}
sanitize_skinny() {  # tool...: compute-sanitizer over test_gpu_skinny's sanitizer subset (run_gpu_test unpacked the binary), logs $S/san_<tool>.log
  local t
  for t in "$@"; do
    timeout 120 compute-sanitizer --tool $t --error-exitcode 17 /tmp/bin/test_gpu_skinny --gtest_filter='*Sanitizer*' > $S/san_$t.log 2>&1
    echo "sanitizer $t rc=$?"; tail -2 $S/san_$t.log
  done
}
run_lab() {  # name pattern [lab arguments...]: a lab built here into scratch/lab/<name>; its output in $S/<name>.txt, the lines matching pattern shown
  local name=$1 pattern=$2; shift 2
  timeout 120 scratch/lab/$name "$@" > $S/$name.txt 2>&1; echo "$name rc=$?"; grep -E "$pattern" $S/$name.txt | head -80
}
pack_profiles() {  # gzip every tune profile of the chain (the tar leaves the raw CSVs out)
  local f
  for f in $S/prof_*.csv; do [ -f "$f" ] && gzip -kf "$f"; done
}
# Same-card agreement pairs (s24_pair.sh, s27_pair.sh): tunes A and B of $OPTS, one after the
# other on one GPU, detached (setsid) so a call's limit does not cut them.
pair_start_tune() {  # X
  [ -f $S/p_$1.started ] && return 0
  date +%s > $S/p_$1.started
  setsid nohup bash -c "tgemm tune $OPTS -o $S/p_$1.csv --profile_file $S/prof_p_$1.csv \
    > $S/p_$1.log 2>&1; echo \$? > $S/p_$1.rc; date +%s > $S/p_$1.ended" < /dev/null > /dev/null 2>&1 &
  echo "tune $1 started"
}
pair_report() {
  local x
  for x in A B; do
    [ -f $S/p_$x.started ] || continue
    echo "tune $x: rows $(rows $S/p_$x.csv), rc $(cat $S/p_$x.rc 2>/dev/null || echo running)," \
      "wall $(( $(cat $S/p_$x.ended 2>/dev/null || date +%s) - $(cat $S/p_$x.started) )) s with the reconfirmation"
    grep -E "tune summary|GPU work by stage|of which|candidates per problem|reconfirm summary" $S/p_$x.log | tail -6
  done
}
pair_run() {  # starts A, then B once A ended; returns when B ended or the call's time is up
  while [ $(left) -gt 15 ]; do
    if [ ! -f $S/p_A.started ]; then pair_start_tune A
    elif [ -f $S/p_A.ended ] && [ ! -f $S/p_B.started ]; then pair_start_tune B
    elif [ -f $S/p_B.ended ]; then echo "both tunes ended"; break
    fi
    sleep 5
  done
  pair_report
}
pair_pack_run() {  # [extra files of $S]: run.tgz with the tables, logs, markers and profiles of the tunes that have ended
  # Only those: a running tune's table is rewritten by its reconfirmation until it ends (session
  # 24's call 9 used such a copy by mistake). Unpacked into scratch/s28p/ (carried), it lets a
  # fresh machine go on with the other tune (chain_inputs; session 31 lost an ended A that way).
  local x
  for x in A B; do [ -f $S/p_$x.ended ] && [ -f $S/prof_p_$x.csv ] && gzip -kf $S/prof_p_$x.csv; done
  tar czf $OUT/run.tgz -C $S "$@" $(cd $S && for x in A B; do [ -f p_$x.ended ] &&
    ls p_$x.log p_$x.csv p_$x.started p_$x.ended p_$x.rc prof_p_$x.csv.gz; done 2>/dev/null)
}
pair_cmp() {  # [extra files of $S for cmp.tgz]: the pair's tables, three short-slot judges (~3.3 s a differing row) while the call has time, the agreement; JUDGE_OPTS: more compare options (e.g. --min_rotation_sets 2, as the tunes ran)
  pair_report
  [ -f $S/p_A.ended ] && [ -f $S/p_B.ended ] || { echo "tunes not finished"; return 1; }
  pack_profiles
  tar czf $OUT/tables.tgz -C $S p_A.csv p_B.csv p_A.log p_B.log prof_p_A.csv.gz prof_p_B.csv.gz
  local i=1
  while [ $i -le 3 ] && [ $(left) -gt ${JUDGE_S:-150} ]; do  # JUDGE_S: a judge's seconds (44 differing rows: 147 s)
    timeout $(( $(left) - 10 )) tgemm compare --measure --placements 4 --short_slots ${JUDGE_OPTS:-} $S/p_A.csv $S/p_B.csv \
      --json $S/cmp_short_p_$i.json > /dev/null 2>&1; echo "judge $i rc=$? at $SECONDS s"; i=$((i + 1))
  done
  python3 bench/tune_agreement.py $S/p_A.csv $S/p_B.csv --profiles $S/prof_p_A.csv $S/prof_p_B.csv \
    --compare $(ls $S/cmp_short_p_*.json) --logs $S/p_A.log $S/p_B.log > $S/agreement_p.txt 2>&1
  tail -15 $S/agreement_p.txt
  tar czf $OUT/cmp.tgz -C $S p_A.csv p_B.csv p_A.log p_B.log prof_p_A.csv.gz prof_p_B.csv.gz \
    $(cd $S && ls cmp_short_p_* 2>/dev/null) $1 agreement_p.txt
}
