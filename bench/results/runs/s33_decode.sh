#!/usr/bin/env bash
# Written in session 32 for session 33 (runbook, session 33 item 2), not run yet. Issue 4: the
# H200 overlay's 1x5120x25600 row (cuBLASLt tile10 cluster 3) reads 62-63 us in some processes and
# 69-70 in others (gpu-checks of sessions 26-32; the default 66-70), which alone moves the decode
# geomean by ~0.4%. This benches the M = 1 rows with the shipped tables and with that one row set
# to the GEMV `skinny:sm90_m1_gemv_w4_c4_v16` (the overlay tune's 63.98 us), alternated, three
# processes each (~5-8 s a process). Prints the row's times and the geomean per process. Carry
# scratch/tgemm.gz, scratch/COMMIT (the CI build holds the M <= 16 skinny kernels).
#   END=120 bash bench/results/runs/s33_decode.sh
S=/tmp/s33d
END=${END:-120}
. bench/results/runs/chain_lib.sh
mkdir -p $S/new/h200
cp configs/bf16_tuned_gemm.csv $S/new/
python3 - configs/h200/bf16_tuned_gemm.csv $S/new/h200/bf16_tuned_gemm.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
n = 0
for r in rows:
    if (r['M'], r['N'], r['K'], r['bias'], r['epilogue']) == ('1', '5120', '25600', 'False', 'none'):
        r.update(libtype='skinny', solidx='0', splitK='1', us='63.98', kernelName='skinny:sm90_m1_gemv_w4_c4_v16',
                 err_ratio='0', tflops='4.09728', bw='4098.24')
        n += 1
assert n == 1, n
with open(sys.argv[2], 'w', newline='') as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator='\n')
    w.writeheader(); w.writerows(rows)
PY
for i in 1 2 3; do
  for t in old new; do
    [ $(left) -gt 15 ] || break 2
    dir=$PWD/configs; [ $t = new ] && dir=$S/new
    TGEMM_CONFIG_DIR=$dir timeout $(( $(left) - 5 )) tgemm bench --m 1 --json $S/${t}_$i.json > $S/${t}_$i.log 2>&1
    echo "$t $i rc=$?: $(grep -E '^qwen3-32b +down' $S/${t}_$i.log | head -1 | cut -c1-120)"
    grep geomean $S/${t}_$i.log
  done
done
tar czf $OUT/decode.tgz -C $S $(cd $S && ls old_* new_* 2>/dev/null)
