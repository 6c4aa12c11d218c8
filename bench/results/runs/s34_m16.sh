#!/usr/bin/env bash
# Session 34, issue 4: version 7's last batch as one round trip (predicated loads; see
# docs/perf-notes.md, skinny, "Session 34"). Run after gpu-check's pybuild step in the same call
# (the package with every kernel, its tests and the CLI in build/pip/...): the skinny GPU tests,
# a retune of the suite's 16 M = 16 problems with skinny and cuBLASLt on this card, then
# `tgemm bench --m 1,16` with the shipped tables and with those rows merged into the H200 overlay
# (`tgemm merge --later-wins`), alternated twice.
# CARD=h100 merges the rows into the shared table instead (an H100 loads no overlay).
#   GPU_CHECK_STEPS=pybuild scripts/gpu-check; END=... bash bench/results/runs/s34_m16.sh
S=/tmp/s34m
END=${END:-400}
BIN=build/pip/cp312-cp312-linux_x86_64
export PATH=$PWD/$BIN/tools/cli:$PATH TGEMM_COMMIT=${TGEMM_COMMIT:-unknown}
mkdir -p $S/cfg/h200
left() { echo $((END - SECONDS)); }
$BIN/tests/gpu/test_gpu_skinny > $S/test_skinny.log 2>&1
echo "test_gpu_skinny rc=$? $(grep -E 'PASSED|FAILED' $S/test_skinny.log | tr '\n' ' ')"
tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 16 -o $S/in.csv > /dev/null
TGEMM_CONFIG_DIR=$PWD/configs timeout $(( $(left) - 60 )) tgemm tune --libtype skinny,cublaslt --batch 8 -i $S/in.csv \
  -o $S/m16.csv --profile_file $S/prof_m16.csv > $S/tune.log 2>&1
echo "tune rc=$? rows $(( $(wc -l < $S/m16.csv) - 1 )) in $SECONDS s"; tail -4 $S/tune.log
if [ "${CARD:-h200}" = h100 ]; then
  tgemm merge --later-wins configs/bf16_tuned_gemm.csv $S/m16.csv -o $S/cfg/bf16_tuned_gemm.csv
  cp configs/h200/bf16_tuned_gemm.csv $S/cfg/h200/
else
  cp configs/bf16_tuned_gemm.csv $S/cfg/
  tgemm merge --later-wins configs/h200/bf16_tuned_gemm.csv $S/m16.csv -o $S/cfg/h200/bf16_tuned_gemm.csv
fi
for rep in 1 2; do
  for t in shipped retuned; do
    [ $(left) -lt 15 ] && continue
    d=$PWD/configs; [ $t = retuned ] && d=$S/cfg
    TGEMM_CONFIG_DIR=$d timeout 40 tgemm bench --m 1,16 --json $S/dec_${t}_$rep.json > $S/dec_${t}_$rep.log 2>&1
    echo "$t $rep rc=$?: $(grep -i geomean $S/dec_${t}_$rep.log)"
  done
done
gzip -f $S/prof_m16.csv
tar czf $OUT/s34m.tgz -C $S .
