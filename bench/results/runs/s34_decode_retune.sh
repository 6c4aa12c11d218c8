#!/usr/bin/env bash
# Session 34, issue 4: the 32 decode problems (M = 1, 16) of the suite retuned on an H200 with
# skinny and cuBLASLt and a 1% reconfirmation margin (the tune's default 6% reverts 1-5% decode
# wins, perf-notes "Tuner defaults"), then `tgemm bench --m 1,16` with the committed tables and
# with the retune merged into a copy of the H200 overlay, alternated twice. CI binary: carry
# scratch/tgemm.gz and scratch/COMMIT.
#   END=400 bash bench/results/runs/s34_decode_retune.sh
S=/tmp/s34d
END=${END:-400}
. bench/results/runs/chain_lib.sh
mkdir -p $S/cfg/h200
nvidia-smi --query-gpu=name --format=csv,noheader
tgemm shapes --suite bench/shapes/llm_shapes.csv --nsets 1,16 -o $S/in.csv > /dev/null
TGEMM_CONFIG_DIR=$PWD/configs timeout $(( $(left) - 70 )) tgemm tune --libtype skinny,cublaslt --batch 8 \
  --reconfirm_margin 0.01 -i $S/in.csv -o $S/dec.csv --profile_file $S/prof_dec.csv > $S/tune.log 2>&1
echo "tune rc=$? rows $(rows $S/dec.csv) in $SECONDS s"; grep "reconfirm summary" $S/tune.log
cp configs/bf16_tuned_gemm.csv $S/cfg/
tgemm merge --later-wins configs/h200/bf16_tuned_gemm.csv $S/dec.csv -o $S/cfg/h200/bf16_tuned_gemm.csv
for rep in 1 2; do
  for t in shipped retuned; do
    [ $(left) -lt 15 ] && continue
    d=$PWD/configs; [ $t = retuned ] && d=$S/cfg
    TGEMM_CONFIG_DIR=$d timeout 40 tgemm bench --m 1,16 --json $S/dec_${t}_$rep.json > $S/dec_${t}_$rep.log 2>&1
    echo "$t $rep rc=$?: $(grep -i geomean $S/dec_${t}_$rep.log)"
  done
done
gzip -f $S/prof_dec.csv
tar czf $OUT/s34d.tgz -C $S --exclude=cfg .
