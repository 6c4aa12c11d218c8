#!/usr/bin/env bash
# Session 3 run 2 (2 x H200): carried CLI (session 3 run 1 build). Two independent cuBLASLt-only
# tunes of the 112-problem suite, each with --mp 2 (both GPUs); tune B is killed at 80 s and
# resumed (no finished batch lost); tgemm compare A B; then, with the carried package, GPU 0:
# bench of table A, torch_bench (JSON + PNG) and torch_bench --gelu; GPU 1: examples/llama_e2e.py
# (capture, tune, measure).
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin
export TGEMM_COMMIT=$(cat scratch/COMMIT)
L=/tmp/logs; mkdir -p $L
nvidia-smi -L
gunzip -c scratch/tgemm.gz > /tmp/tgemm && chmod +x /tmp/tgemm
B=/tmp/tgemm
$B shapes --suite bench/shapes/llm_shapes.csv -o /tmp/all.csv > /dev/null
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 512,2048,8192 --bias -o /tmp/gelu0.csv > /dev/null
sed '2,$ s/,none$/,gelu/' /tmp/gelu0.csv > /tmp/gelu.csv; head -2 /tmp/gelu.csv; wc -l /tmp/all.csv /tmp/gelu.csv
t0=$SECONDS
timeout 280 $B tune --mp 2 --libtype cublaslt -i /tmp/all.csv -o $L/tuned_A.csv --profile_file $L/prof_A.csv > $L/tune_A.log 2>&1
echo "tune A rc=$? $((SECONDS-t0)) s"; tail -4 $L/tune_A.log
t0=$SECONDS
timeout -s KILL 80 $B tune --mp 2 --libtype cublaslt -i /tmp/all.csv -o $L/tuned_B.csv > $L/tune_B1.log 2>&1
echo "tune B killed: rc=$? at $((SECONDS-t0)) s; rows kept: $(($(wc -l < $L/tuned_B.csv) - 1))"; cp $L/tuned_B.csv $L/tuned_B_at_kill.csv
pkill -9 -f "tgemm tune" ; sleep 1
timeout 260 $B tune --mp 2 --libtype cublaslt -i /tmp/all.csv -o $L/tuned_B.csv > $L/tune_B2.log 2>&1
echo "tune B resumed rc=$? total $((SECONDS-t0)) s; rows $(($(wc -l < $L/tuned_B.csv) - 1))"; tail -4 $L/tune_B2.log
grep -iE "skip|resum" $L/tune_B2.log | head -3
# Every row present at the kill is still there, unchanged.
echo "rows at kill missing after resume: $(grep -vxFf $L/tuned_B.csv $L/tuned_B_at_kill.csv | wc -l)"
$B compare $L/tuned_A.csv $L/tuned_B.csv > $L/compare.log 2>&1; echo "compare rc=$?"; tail -12 $L/compare.log
SP=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
tar xzf scratch/tgemm_pkg.tgz -C $SP && python3 -c "import tgemm; print('tgemm package', tgemm.__file__)"
left=$((585 - SECONDS)); echo "left $left s"
( export CUDA_VISIBLE_DEVICES=1 PYTHONUNBUFFERED=1
  timeout $((left - 5)) python3 examples/llama_e2e.py --tgemm /tmp/tgemm --workdir $L/llama --json $L/llama_e2e.json > $L/llama.log 2>&1
  echo "llama rc=$?" >> $L/llama.log ) &
E=$!
export CUDA_VISIBLE_DEVICES=0
TGEMM_CONFIG_GEMM_BF16=$L/tuned_A.csv timeout 120 $B bench --json $L/bench_lt_A.json > $L/bench_lt_A.log 2>&1; echo "bench A rc=$? at $SECONDS s"; grep -E "geomean|below" $L/bench_lt_A.log | tail -3
left=$((580 - SECONDS))
timeout $left python3 bench/torch_bench.py --json $L/torch_bench.json > $L/torch_bench.log 2>&1; echo "torch_bench rc=$? at $SECONDS s"; grep -iE "geomean|wrote|overhead" $L/torch_bench.log | tail -4
left=$((580 - SECONDS))
[ $left -gt 30 ] && { timeout $left python3 bench/torch_bench.py --gelu --m 512,2048,8192 --bias --json $L/torch_gelu.json > $L/torch_gelu.log 2>&1; echo "torch gelu rc=$? at $SECONDS s"; grep -iE "geomean|wrote" $L/torch_gelu.log | tail -4; }
wait $E; tail -25 $L/llama.log
tar czf $OUT/logs.tgz -C /tmp logs
echo "done at $SECONDS s"
