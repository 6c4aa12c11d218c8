#!/usr/bin/env bash
# Written in session 27 for session 28 (runbook, session 28, item 1), not run yet. Issue 5's
# Python discrepancy: session 27's torch_bench --gelu read the fused path 5-7% slower at M >= 64
# than session 26's `tgemm bench --epilogue gelu` (another H200). Here both benches run back to
# back on one card, with the lookup's log on, so the solutions each path dispatches can be
# compared. Carry .deps/wheels; one call after a gpu-check pybuild on the same warm machine
# (GPU_CHECK_REUSE=1 finds its build tree), or alone (it builds with pip first, ~155 s).
S=/tmp/s28g
END=${END:-575}
mkdir -p $S
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
left() { echo $((END - SECONDS)); }
if ! ls build/pip/*/tools/cli/tgemm > /dev/null 2>&1; then
  GPU_CHECK_DIR=$S/gc GPU_CHECK_STEPS="pybuild" timeout 300 scripts/gpu-check > $S/gc.log 2>&1; tail -3 $S/gc.log
fi
for d in build/pip/*/; do [ -x "$d/tools/cli/tgemm" ] && export PATH=$PWD/${d%/}/tools/cli:$PATH; done
M=${M:-64,512,2048,8192}
# Session 28 ran it as written (the bench's default data); session 29 (runbook, item 2) adds
# DATA="unit fan_in": the bench also with torch_bench's data scale (tgemm bench --data fan_in),
# each compared with the Python run below.
DATA=${DATA:-unit}
sfx_of() { [ $1 = unit ] || echo _$1; }  # file suffix of a data scale (none for the default)
n_data=$(echo $DATA | wc -w)
for d in $DATA; do
  sfx=$(sfx_of $d)
  TGEMM_LOG_TUNED_CONFIG=1 timeout $(( $(left) / (n_data + 1) )) tgemm bench --epilogue gelu --bias --m $M --data $d \
    --json $S/cli_gelu$sfx.json > $S/cli_gelu$sfx.log 2> $S/cli_gelu$sfx.lookup; echo "data $d: $(grep -i geomean $S/cli_gelu$sfx.log)"
  n_data=$((n_data - 1))
done
TGEMM_LOG_TUNED_CONFIG=1 timeout $(( $(left) - 15 )) python3 bench/torch_bench.py --gelu --bias --m $M --no-overhead \
  --json $S/py_gelu.json --png $S/py_gelu.png > $S/py_gelu.log 2> $S/py_gelu.lookup; tail -2 $S/py_gelu.log
for d in $DATA; do
sfx=$(sfx_of $d); echo "tgemm bench --data $d against the Python bench:"
python3 - $S $sfx <<'PY'
import json, math, sys
s, sfx = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
c = {(r["M"], r["N"], r["K"]): r for r in json.load(open(f"{s}/cli_gelu{sfx}.json"))["rows"]}
p = {(r["M"], r["N"], r["K"]): r for r in json.load(open(f"{s}/py_gelu.json"))["rows"]}
keys = sorted(set(c) & set(p))
g = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print("fused us, cli / python: %.3f; baseline us, cli / python: %.3f (%d problems)" % (
    g([c[k]["tgemm_us"] / p[k]["tgemm_us"] for k in keys]), g([c[k]["baseline_us"] / p[k]["baseline_us"] for k in keys]), len(keys)))
for k in keys:
    r = c[k]["tgemm_us"] / p[k]["tgemm_us"]
    if abs(r - 1) > 0.03: print(k, "cli %.1f us (%s), python %.1f us" % (c[k]["tgemm_us"], c[k]["solution"], p[k]["tgemm_us"]))
PY
done
tar czf $OUT/s28g.tgz -C $S --exclude='gc/build.log' . ; ls -la $OUT
