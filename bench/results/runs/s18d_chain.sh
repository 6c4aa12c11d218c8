#!/usr/bin/env bash
# Session 18, fourth chain (issue 3): is the 16x28672x4096 default configuration's bimodal time
# (57 or 61.5 us, one mode per process) a matter of where its operands land in physical memory?
#  1. Four processes, nothing else on the GPU: `tgemm bench` of that one problem with a table that
#     names tile229 (baseline: the cuBLASLt heuristic = tile394 cluster3), absolute times of both.
#  2. The same while another process holds 8, 24, 48, 96 GB of device memory (so this process's
#     operands land elsewhere in physical memory).
# nvidia-h200, carry ["scratch"]:
#   END=200 timeout 215 bash bench/results/runs/s18d_chain.sh; tar czf $OUT/s18d.tgz -C /tmp s18d
END=${END:-200}
S=/tmp/s18d
. bench/results/runs/chain_lib.sh
T=$S/t229
mkdir -p $T
{ head -1 configs/bf16_tuned_gemm.csv; grep '^sm_90a,132,16,28672,4096,' bench/results/studies/s17/m16.csv; } > $T/bf16_tuned_gemm.csv
one() {  # tag
  TGEMM_CONFIG_DIR=$T timeout 60 tgemm bench --m 16 --filter llama3-8b/gate_up --json $S/b_$1.json > $S/b_$1.log 2>&1
  python3 -c "
import json; r=json.load(open('$S/b_$1.json'))['rows'][0]
print('$1', 'heuristic %.2f us  tile229 %.2f us  ratio %.3f' % (r['baseline_us'], r['tgemm_us'], r['speedup']), r['solution'][-30:])"
}
alone() { local i; for i in 1 2 3 4; do one alone$i; done; }
step alone 40 alone
held() {
  local gb
  for gb in 8 24 48 96; do
    rm -f $S/ready
    python3 -c "
import torch, time
a = torch.empty($gb << 30, dtype=torch.uint8, device='cuda'); a.fill_(1); torch.cuda.synchronize()
open('$S/ready', 'w').close(); time.sleep(40)" > $S/hold_$gb.log 2>&1 &
    local pid=$! w=0
    while [ ! -f $S/ready ] && [ $w -lt 30 ]; do sleep 0.5; w=$((w + 1)); done
    [ -f $S/ready ] || { echo "hold $gb GB failed: $(tail -1 $S/hold_$gb.log)"; kill $pid 2>/dev/null; continue; }
    one held${gb}a; one held${gb}b
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
  done
}
step held 120 held
alone2() { local i; for i in 5 6; do one alone$i; done; }
step alone2 20 alone2
echo "chain ends at $SECONDS s"
