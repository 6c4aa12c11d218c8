#!/usr/bin/env bash
# Session 26, issues 4 and 5 (the machine that just ran gpu-check's pybuild: its build/pip tree is
# reused; carry scratch/lab25). 1. The decode lab's tb kernel beside bt (issue 4, perf-notes
# skinny "Session 25"). 2. The fused-activation skinny kernels (branch s25-skinny-act): the
# M = 1, 16 gelu+bias rows tuned with every backend, then `tgemm bench --epilogue gelu --bias
# --m 1,16` (fused dispatch against cuBLASLt's default GEMM + the separate GELU pass) with the
# shipped tables (no gelu rows: the default rule) and with the tuned rows merged in.
S=/tmp/s26a
END=${END:-570}
mkdir -p $S/cfg /tmp/bin
for d in build/pip/*/; do [ -x "$d/tools/cli/tgemm" ] && export PATH=$PWD/${d%/}/tools/cli:$PATH; done
export PATH=$PATH:/usr/local/cuda/bin TGEMM_COMMIT=${TGEMM_COMMIT:-unknown} PYTHONUNBUFFERED=1
left() { echo $((END - SECONDS)); }
which tgemm; nvidia-smi --query-gpu=name --format=csv,noheader
if [ "${SKIP_LAB:-0}" != 1 ]; then
  gunzip -c scratch/lab25/decode16_lab.gz > /tmp/bin/decode16_lab && chmod +x /tmp/bin/decode16_lab
  LAB16_S18=1 LAB16_TB=1 timeout 150 /tmp/bin/decode16_lab 576 7168 1280 8192 1536 7168 8192 1024 4096 4096 > $S/lab.log 2>&1
  echo "lab rc=$? at $SECONDS s"; tail -40 $S/lab.log
fi
tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/dec.csv > /dev/null
sed -e '1!s/,False,\(torch[^,]*\),\(torch[^,]*\),False,False,none$/,True,\1,\2,False,False,gelu/' $S/dec.csv > $S/gelu_in.csv
head -2 $S/gelu_in.csv
t=$(( $(left) - 260 )); [ $t -gt 240 ] && t=240
timeout -s TERM $t tgemm tune --libtype all --batch 8 -i $S/gelu_in.csv -o $S/gelu.csv --profile_file $S/prof_gelu.csv > $S/tune.log 2>&1
echo "tune rc=$? rows $(($(wc -l < $S/gelu.csv) - 1)) at $SECONDS s"; tail -4 $S/tune.log
tgemm merge --later-wins configs/bf16_tuned_gemm.csv $S/gelu.csv -o $S/cfg/bf16_tuned_gemm.csv
[ -d configs/h200 ] && cp -r configs/h200 $S/cfg/
for t in tuned shipped; do
  [ $(left) -lt 100 ] && continue
  d=$PWD/configs; [ $t = tuned ] && d=$S/cfg
  TGEMM_CONFIG_DIR=$d timeout 120 tgemm bench --epilogue gelu --bias --m 1,16 --json $S/gelu_$t.json > $S/gelu_$t.log 2>&1
  echo "$t rc=$? at $SECONDS s: $(grep -i geomean $S/gelu_$t.log)"
done
tar czf $OUT/s26a.tgz -C $S . ; ls -la $OUT
