#!/usr/bin/env bash
# Session 5 run 1 (one H200), carried CLI + package (built at e724f29): placement study of
# tuned-vs-default ratios (issue 3's rows below 0.98x), pytest tests/python (issue 6), torch_bench --gelu.
set -o pipefail
export PATH=/tmp/bin:$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export TGEMM_COMMIT=$(cat scratch/COMMIT)
L=/tmp/logs; mkdir -p $L /tmp/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.limit --format=csv,noheader
gunzip -c scratch/tgemm.gz > /tmp/bin/tgemm && chmod +x /tmp/bin/tgemm
SP=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['purelib'])")
tar xzf scratch/tgemm_pkg.tgz -C $SP && python3 -c "import tgemm; print('tgemm from', tgemm.__file__)"
P=1x4096x14336,64x24576x1536,1x28672x4096,16x24576x1536,128x24576x1536,128x8192x3584,1x576x7168,16x7168x16384,64x5120x8192
for s in 1 2; do
  timeout 150 python3 bench/placement_study.py scratch/tuned_A.csv $P 5 $s $L/placement_$s.json > $L/placement_$s.log 2>&1; echo "placement $s rc=$? at $SECONDS s"
done
cat $L/placement_1.log $L/placement_2.log | grep -v Warn | tail -95
timeout 200 python3 -m pytest -q -rs tests/python > $L/pytest.log 2>&1; echo "pytest rc=$? at $SECONDS s"; tail -5 $L/pytest.log
timeout 120 python3 bench/torch_bench.py --gelu --bias --m 512,2048,8192 --no-overhead --json $L/torch_gelu.json > $L/torch_gelu.log 2>&1; echo "torch_bench gelu rc=$? at $SECONDS s"; tail -6 $L/torch_gelu.log
tar czf $OUT/logs.tgz -C /tmp logs
echo "done at $SECONDS s"
