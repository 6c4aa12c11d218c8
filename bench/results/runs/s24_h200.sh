#!/usr/bin/env bash
# Written in session 23 for session 24 (nvidia-h200; carry scratch/tgemm.gz, scratch/COMMIT): an H200
# overlay for the decode rows (configs/h200/bf16_tuned_gemm.csv, merged after the shared table on
# H200s since session 23). On an H200 five M = 16 skinny rows tuned on an H100 ran 0.85-0.96x of
# cuBLASLt's default (studies/s23/c5). Tune M = 1, 16 with every backend (resumable: rerun the
# call until the tune is complete), then bench the decode rows with and without the overlay,
# alternated twice. Afterwards, here: copy $S/h200_decode.csv to configs/h200/bf16_tuned_gemm.csv
# only if the overlay wins on the H200 (and it cannot touch an H100).
S=/tmp/s24h
END=${END:-560}
export TGEMM_CONFIG_DIR=$PWD/configs
. bench/results/runs/chain_lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $S/in.csv ] || tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/in.csv > /dev/null
tune_until h200_decode 32 --libtype all --batch 8 -i $S/in.csv || { tar czf $OUT/s24h.tgz -C $S .; exit 0; }
mkdir -p $S/cfg/h200 && cp configs/bf16_tuned_gemm.csv $S/cfg/ && cp $S/h200_decode.csv $S/cfg/h200/bf16_tuned_gemm.csv
for rep in 1 2; do
  for t in shared overlay; do
    [ $(left) -lt 60 ] && continue
    d=$PWD/configs; [ $t = overlay ] && d=$S/cfg
    TGEMM_CONFIG_DIR=$d timeout 120 tgemm bench --m 1,16 --json $S/dec_${t}_$rep.json > $S/dec_${t}_$rep.log 2>&1
    echo "$t $rep rc=$?: $(grep -i geomean $S/dec_${t}_$rep.log)"; grep -E "device|tables" $S/dec_${t}_$rep.log | head -1 | cut -c1-160
  done
done
tar czf $OUT/s24h.tgz -C $S . ; ls -la $OUT
