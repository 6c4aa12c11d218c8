#!/usr/bin/env bash
# Session 2 run C: carried CLI (commit 18f23b7 build) for tune M=64,128 + bench of the combined
# table + gelu bench; pip build of the package in the background, then the Python tests,
# torch gelu bench and the Llama example.
set -o pipefail
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
L=/tmp/logs; mkdir -p $L
scripts/setup > $L/setup.log 2>&1
gunzip -c scratch/tgemm.gz > /tmp/tgemm && chmod +x /tmp/tgemm
B=/tmp/tgemm
(PIP_BREAK_SYSTEM_PACKAGES=1 nice -n 19 python3 -m pip install --no-build-isolation --no-deps . > $L/pip.log 2>&1; echo "pip rc=$?" >> $L/pip.log) &
PIP=$!
$B shapes --suite bench/shapes/llm_shapes.csv --nsets 64,128 -o /tmp/mid.csv > /dev/null
t0=$SECONDS
timeout 150 $B tune -i /tmp/mid.csv -o $OUT/tune_mid.csv --profile_file $L/prof_mid.csv > $L/tune_mid.log 2>&1; echo "tune mid rc=$? $((SECONDS-t0)) s"; tail -3 $L/tune_mid.log
{ head -1 scratch/tune_dec.csv; for f in scratch/tune_dec.csv $OUT/tune_mid.csv scratch/tune_big.csv; do tail -n +2 $f; done; } > /tmp/combined.csv
wc -l /tmp/combined.csv
t0=$SECONDS
TGEMM_CONFIG_GEMM_BF16=/tmp/combined.csv timeout 150 $B bench --json $OUT/bench_all.json > $L/bench_all.log 2>&1; echo "bench all rc=$? $((SECONDS-t0)) s"; grep -E "geomean|below" $L/bench_all.log | tail -4
t0=$SECONDS
TGEMM_CONFIG_GEMM_BF16=/tmp/combined.csv timeout 80 $B bench --m 512,2048,8192 --bias --epilogue gelu --json $OUT/bench_gelu.json > $L/bench_gelu.log 2>&1; echo "bench gelu rc=$? $((SECONDS-t0)) s"; grep -E "geomean|below" $L/bench_gelu.log | tail -4
echo "waiting for pip at $SECONDS s"; wait $PIP; tail -2 $L/pip.log; echo "pip done at $SECONDS s"
timeout 150 python3 -m pytest -q -rs -x tests/python > $L/pytest.log 2>&1; echo "pytest rc=$? at $SECONDS s"; tail -8 $L/pytest.log
timeout 40 python3 bench/torch_bench.py --overhead-only --json $OUT/torch_overhead.json > $L/torch_overhead.log 2>&1; echo "torch overhead rc=$?"; grep -i overhead $L/torch_overhead.log | tail -3
left=$((585 - SECONDS)); echo "llama budget $left s"
[ $left -gt 60 ] && TGEMM_CONFIG_GEMM_BF16=/tmp/combined.csv timeout $left python3 examples/llama_e2e.py --skip-tune --table /tmp/combined.csv --json $OUT/llama.json > $L/llama.log 2>&1; echo "llama rc=$?"; tail -15 $L/llama.log
tar czf $OUT/logs.tgz -C /tmp logs
