#!/usr/bin/env bash
# Session 13's last device call (nvidia-h200, carry ["scratch"], no device build): the CI binaries of
# the final kernel commit (scratch/v7b, built here) and decode_lab built with the library's GEMV
# (then with -DTGEMM_LAB_LIBRARY; the lab now always includes it). Runs decode_lab (the library's GEMV in the lab's harness next to the lab's
# own rows kernel) and the whole-suite bench of the shipped table (configs/) as committed.
#   bash bench/results/runs/s13_final.sh; tar czf $OUT/s13f.tgz -C /tmp s13f
S=/tmp/s13f
mkdir -p $S /tmp/bin
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1 TGEMM_CONFIG_DIR=$PWD/configs
export TGEMM_COMMIT=${TGEMM_COMMIT:-$(cat scratch/COMMIT_FINAL 2>/dev/null)}
gunzip -c scratch/v7b/tgemm.gz > /tmp/bin/tgemm && chmod +x /tmp/bin/tgemm
timeout 60 scratch/lab/decode_lab > $S/lab2.txt 2>&1; echo "decode_lab rc=$?"
grep -E "floor |rows c4|lib |failures" $S/lab2.txt
timeout 150 tgemm bench --json $S/llm_shapes_s13.json > $S/bench_suite.log 2>&1; echo "bench rc=$?"
grep -iE "geomean" $S/bench_suite.log
python3 - $S/llm_shapes_s13.json <<'PY'
import json, math, sys
rows = json.load(open(sys.argv[1]))["rows"]
for ms in ((1,), (16,), (1, 16), (64, 128), (512, 2048, 8192)):
    rs = [r for r in rows if r["M"] in ms]
    g = math.exp(sum(math.log(r["speedup"]) for r in rs) / len(rs))
    fl = math.exp(sum(math.log(r["floor_ratio"]) for r in rs) / len(rs))
    print(f"M in {ms}: {len(rs)} problems, geomean {g:.3f}x, min {min(r['speedup'] for r in rs):.3f}x, tgemm/floor {fl:.3f}")
PY
