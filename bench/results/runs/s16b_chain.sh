#!/usr/bin/env bash
# Session 16, after s16_chain.sh (written in session 15, not yet run): only if the pair agrees on
# >= 90% within 10 minutes a tune. Retunes the shipped table's 112 plain problems with every
# backend under the pair's options, then benches the whole suite with the merged table (the
# shipped gelu rows kept) and with the shipped table, one after the other.
# Needs the full CLI (every CUTLASS instance): build it here first,
#   cmake --preset release -DTGEMM_BUILD_TESTS=OFF && cmake --build build/release --target tgemm_cli
#   strip -o /tmp/tgemm_full build/release/tools/cli/tgemm && gzip -1 -c /tmp/tgemm_full > scratch/tgemm_full.gz
# (session 15 built it here: 14 min on 2 cores from scratch, `scratch/tgemm_full.gz`, commit in
# scratch/COMMIT_FULL; rebuild incrementally after a change), then on nvidia-h200, carry ["scratch"]:
#   OPTS="<the pair's options>" END=560 timeout 575 bash bench/results/runs/s16b_chain.sh; tar czf $OUT/s16bN.tgz --exclude='prof_*.csv' -C /tmp s16b
END=${END:-560}
S=/tmp/s16b
export TGEMM_CONFIG_DIR=$PWD/configs
mkdir -p /tmp/bin
# The full CLI replaces the CI one a warm machine may hold from s16_chain.sh.
if [ -f scratch/tgemm_full.gz ] && [ ! -f /tmp/bin/.full ]; then
  gunzip -c scratch/tgemm_full.gz > /tmp/bin/tgemm && chmod +x /tmp/bin/tgemm && touch /tmp/bin/.full
fi
[ -f /tmp/bin/.full ] || { echo "s16b: no full CLI (scratch/tgemm_full.gz); CUTLASS would not be raced"; exit 1; }
. bench/results/runs/chain_lib.sh
chain_inputs
TABLE=configs/bf16_tuned_gemm.csv
tune_until ship 112 --batch 8 --libtype all -i $S/all_in.csv ${OPTS:-}
merged_bench() {  # the shipped table with its plain rows replaced by the retune's: whole suite, then the shipped table
  python3 - $TABLE $S/ship.csv > $S/merged.csv <<'PY'
import csv, sys
def key(r): return (r["M"], r["N"], r["K"], r["bias"], r["dtype"], r["outdtype"], r["scaleAB"], r["bpreshuffle"], r.get("epilogue", "none"))
with open(sys.argv[1]) as f: rd = csv.DictReader(f); fields = rd.fieldnames; ship = list(rd)
new = {}
with open(sys.argv[2]) as f:
    for r in csv.DictReader(f): r.setdefault("epilogue", "none"); new[key(r)] = r
out = csv.DictWriter(sys.stdout, fields, extrasaction="ignore", lineterminator="\n"); out.writeheader()
for r in ship: out.writerow(new.pop(key(r), r))
for r in new.values(): out.writerow(r)
PY
  TGEMM_CONFIG_GEMM_BF16=$S/merged.csv timeout 150 tgemm bench --json $S/bench_merged.json > $S/bench_merged.log 2>&1
  timeout 150 tgemm bench --json $S/bench_shipped.json > $S/bench_shipped.log 2>&1
  grep -i geomean $S/bench_merged.log $S/bench_shipped.log
}
[ "$(rows $S/ship.csv)" -ge 112 ] && step merged_bench 200 merged_bench
pack_profiles
echo "chain ends at $SECONDS s"
