#!/usr/bin/env bash
# Session 24, last call (nvidia-h200; carry scratch/tgemm.gz, scratch/COMMIT, scratch/s24r):
#  1. issue 3: the pair's reconfirmation in long slots reverted rows that the tunes' own
#     short-slot confirmations kept at 1.04-1.06x (B: 5 rows, A: 8). Reconfirm just those rows
#     again with the new default (short slots, `tgemm reconfirm` without flags), put the results
#     into the final tables (p2_A/p2_B) and judge the pair again with three short-slot compares
#     (agreement is computed afterwards, here, by bench/tune_agreement.py);
#  2. issue 4: whole-suite bench with the H200 overlay (configs/h200/, shipped since this
#     commit) against the shared table alone, alternated.
S=/tmp/s24r
END=${END:-560}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for x in A B; do
  timeout 120 tgemm reconfirm scratch/s24r/rev_$x.csv --libtype cublaslt -o $S/rec_$x.csv > $S/rec_$x.log 2>&1
  echo "reconfirm $x rc=$?"; grep -E "kept|reverted" $S/rec_$x.log | sed -E 's/arch=.*epilogue=none //' | cut -c1-150
  python3 - scratch/s24r/fin_$x.csv $S/rec_$x.csv $S/p2_$x.csv <<'PY'
import csv, sys
fin, rec, out = sys.argv[1:]
key = lambda r: (r["M"], r["N"], r["K"])
new = {key(r): r for r in csv.DictReader(open(rec))}
rows = list(csv.DictReader(open(fin)))
rows = [new.get(key(r), r) for r in rows]
w = csv.DictWriter(open(out, "w", newline=""), fieldnames=list(rows[0].keys()), lineterminator="\n")
w.writeheader(); w.writerows(rows)
PY
done
cmp3 p2 _short
mkdir -p $S/cfg_shared && cp configs/bf16_tuned_gemm.csv $S/cfg_shared/
for t in overlay1 shared overlay2; do
  [ $(left) -lt 90 ] && { echo "skip $t: $(left) s left"; continue; }
  d=$PWD/configs; [ $t = shared ] && d=$S/cfg_shared
  TGEMM_CONFIG_DIR=$d timeout 85 tgemm bench --json $S/suite_$t.json > $S/suite_$t.log 2>&1
  echo "$t rc=$?: $(grep -i geomean $S/suite_$t.log)"; grep -E "tables" $S/suite_$t.log | head -1 | cut -c1-200
  grep -E " 0\.9[0-7][0-9]x| 0\.[0-8][0-9][0-9]x" $S/suite_$t.log | cut -c1-75
done
tar czf $OUT/s24r.tgz -C $S . ; ls -la $OUT
