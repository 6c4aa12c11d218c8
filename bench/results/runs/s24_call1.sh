#!/usr/bin/env bash
# Written in session 23 for session 24's first call (one H100; carry scratch/tgemm.gz,
# scratch/COMMIT, scratch/ci/test_gpu_dispatch.gz, scratch/ci/test_gpu_tune.gz, scratch/lab):
#  1. test_gpu_dispatch (ShippedTableRowsAreAllValidOnThisDevice with the CI subset) and
#     test_gpu_tune;
#  2. the bench's automatic slot plan (plan_slots), A/A (`--aa baseline`, no --launches/--rounds)
#     on problems across the plan: 2 calls a graph (8192x28672x4096, 8192x7168x16384), ~14
#     (8192x4096x4096), ~8 (2048x28672x4096), 20 (512x5120x8192, 16x28672x4096); expect
#     0.99-1.01x each;
#  3. the whole suite with the shipped table (expect ~1.06x; M >= 512 ~1.044x, none below 0.98x
#     at M >= 512);
#  4. issue 4's lab: LAB16_S23 (launch bounds) on 7168x8192 and the whole-waves 6336x8192.
S=/tmp/s24a
END=${END:-560}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
run_gpu_test test_gpu_dispatch
run_gpu_test test_gpu_tune
aa() {  # m filter
  local tag=aa_$1_${2//\//_}
  timeout 60 tgemm bench --m $1 --filter $2 --aa baseline --json $S/$tag.json > $S/$tag.log 2>&1
  echo "$tag rc=$?: $(grep -E "^[a-z0-9-]+ +[a-z_]+ +$1 " $S/$tag.log | cut -c1-80)"
}
aa 8192 llama3-8b/gate_up
aa 8192 dsv3/o
aa 8192 llama3-8b/o
aa 2048 llama3-8b/gate_up
aa 512 qwen3-32b/o
aa 16 llama3-8b/gate_up
python3 - <<'PY'
import glob, json
for f in sorted(glob.glob("/tmp/s24a/aa_*.json")):
    r = json.load(open(f))["rows"][0]
    print(f.split("/")[-1], "launches", r.get("launches"), "rounds", r.get("rounds"), "est_us", round(r.get("est_us", 0)), "speedup", round(r["speedup"], 4))
PY
[ $(left) -gt 240 ] && { timeout 230 tgemm bench --json $S/suite.json > $S/suite.log 2>&1; echo "suite rc=$?"; tail -2 $S/suite.log | head -1; grep -E " 0\.9[0-7][0-9]x" $S/suite.log | cut -c1-75; }
[ $(left) -gt 60 ] && { LAB16_S18=1 LAB16_S23=1 timeout $(( $(left) - 15 )) scratch/lab/decode16_lab 7168 8192 6336 8192 4096 14336 28672 4096 > $S/lab_s23.txt 2>&1; echo "lab rc=$?"; grep -E "bt r8|bt r16|bt2 r8|sk r8|floor" $S/lab_s23.txt | head -120; }
tar czf $OUT/s24a.tgz -C $S . ; ls -la $OUT
