#!/usr/bin/env bash
# Session 25, issue 4 (nvidia-h100-x1; carry scratch/tgemm.gz, scratch/COMMIT): the decode rows
# (M = 1, 16) retuned on an H100 with every backend and the session-24 defaults (short slots in
# the finals, confirmation and reconfirmation; the shared table's M = 16 rows were tuned in long
# slots), then `tgemm bench --m 1,16` with the shared table and with a copy whose decode rows are
# the retune's (`tgemm merge --later-wins`), alternated twice. The shared table's rows change only
# if the copy wins on the H100 (the H200 has its own overlay for all 32 decode rows).
S=/tmp/s25h
END=${END:-560}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $S/in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/in.csv > /dev/null
tune_until h100_decode 32 --libtype all --batch 8 -i $S/in.csv || { tar czf $OUT/s25h.tgz -C $S .; exit 0; }
mkdir -p $S/cfg && tgemm merge --later-wins configs/bf16_tuned_gemm.csv $S/h100_decode.csv -o $S/cfg/bf16_tuned_gemm.csv
for rep in 1 2; do
  for t in shared retuned; do
    [ $(left) -lt 60 ] && continue
    d=$PWD/configs; [ $t = retuned ] && d=$S/cfg
    TGEMM_CONFIG_DIR=$d timeout 120 tgemm bench --m 1,16 --json $S/dec_${t}_$rep.json > $S/dec_${t}_$rep.log 2>&1
    echo "$t $rep rc=$?: $(grep -i geomean $S/dec_${t}_$rep.log)"
  done
done
tar czf $OUT/s25h.tgz -C $S . ; ls -la $OUT
