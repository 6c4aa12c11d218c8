"""tgemm.fused_moe against the best MoE layer stock PyTorch builds (bf16), run through
bench/torch_bench.py --fmoe:

  baseline  argsort of the slots by expert, a gather of the token rows, torch._grouped_mm with w1,
            silu(gate) * up, torch._grouped_mm with w2, the routing weight, and an index_add_ back
            to the tokens; expert counts by a device scatter-add (no host sync: the layer is a
            CUDA graph, as tgemm's is). Slots on other ranks (expert_map -1) sort last and are
            zeroed before the scatter.
  tgemm     tgemm.fused_moe(hidden, w1, w2, topk_weights, topk_ids, expert_map=...).

Models: Mixtral-8x7B (8 experts, top-2, H 4096, I 14336), Qwen3-30B-A3B (128 experts, top-8, H 2048,
I 768) and a DeepSeek-V3 EP8 slice (32 of 256 experts on this rank through expert_map, top-8,
H 7168, I 2048), each at T in {1, 8, 32, 512, 4096} tokens routed uniformly at random (a seeded
top-k of random scores). Every side is timed as a CUDA graph in interleaved rounds (torch_bench's
harness). Rows carry floor_us, the streaming read of the touched experts' weights plus the
activations at the measured streaming rate (floor_tbps), and floor_ratio = tgemm_us / floor_us (the decode bound);
the check compares tgemm's output with the baseline's (bf16 both: max error within 3% of the
output's largest magnitude). Results: bench/results/torch_fmoe-<card>.json.
"""

from __future__ import annotations

import os
import statistics

import torch
import torch_bench as tb

# (name, experts on this rank, experts in the model, top-k, H, I)
MODELS = (
    ("mixtral-8x7b", 8, 8, 2, 4096, 14336),
    ("qwen3-30b-a3b", 128, 128, 8, 2048, 768),
    ("dsv3-ep8", 32, 256, 8, 7168, 2048),
)
TOKENS = (1, 8, 32, 512, 4096)


def stock_moe(hidden, w1, w2, topk_weights, topk_ids, expert_map=None):
    """The MoE layer from stock PyTorch ops, graph-capturable (no host sync)."""
    t, k = topk_ids.shape
    e, inter = w1.shape[0], w1.shape[1] // 2
    flat = topk_ids.flatten().long()
    if expert_map is not None:
        flat = expert_map.long()[flat]
    local = torch.where(flat >= 0, flat, e)  # slots of other ranks sort after every expert
    order = torch.argsort(local, stable=True)
    counts = torch.zeros(e + 1, dtype=torch.int32, device=hidden.device)
    counts.scatter_add_(0, local, torch.ones_like(local, dtype=torch.int32))
    offs = torch.cumsum(counts[:e], 0, dtype=torch.int32)
    tokens = order // k
    gate_up = torch._grouped_mm(hidden[tokens], w1.transpose(-2, -1), offs=offs)
    act = torch.nn.functional.silu(gate_up[:, :inter]) * gate_up[:, inter:]
    y = torch._grouped_mm(act, w2.transpose(-2, -1), offs=offs)
    weight = topk_weights.flatten()[order].to(y.dtype)
    y = torch.where((local[order] < e)[:, None], y * weight[:, None], torch.zeros((), dtype=y.dtype, device=y.device))
    return torch.zeros_like(hidden).index_add_(0, tokens, y)


def _routing(t, k, global_experts, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    scores = torch.rand(t, global_experts, device="cuda", generator=gen)
    weights, ids = scores.softmax(-1).topk(k, dim=-1)
    return (weights / weights.sum(-1, keepdim=True)).float(), ids.int()


def _row(name, t, k, e, h, inter, reading, first, status, bytes_moved, flops, tbps, touched) -> dict:
    t_us = reading["tgemm_us"]
    floor_us = bytes_moved / (tbps * 1e12) * 1e6
    return {
        "family": "fmoe",
        "model": name,
        "M": t,
        "N": h,
        "K": inter,
        "topk": k,
        "experts": e,
        "touched_experts": touched,
        "baseline": "torch sort+_grouped_mm+silu+_grouped_mm+index_add",
        **reading,
        "remeasured": first is not None,
        # TGEMM_GROUPED_BACKEND: the grouped backend the run forced (auto: fused_moe's own rule by T).
        "solution": "fused_moe:" + (os.environ.get("TGEMM_GROUPED_BACKEND") or "auto"),
        "check": status,
        "tbps": bytes_moved / (t_us * 1e-6) / 1e12,
        "tflops": flops / (t_us * 1e-6) / 1e12,
        "floor_us": floor_us,
        "floor_ratio": t_us / floor_us,
    }


def run(args, device_props) -> tuple[list[dict], dict, str]:
    """Every model at every T: rows, the JSON's extra fields, the results file's stem."""
    import grouped_bench

    import tgemm

    if not hasattr(torch, "_grouped_mm"):
        raise SystemExit(f"torch_bench --fmoe: torch {torch.__version__} has no torch._grouped_mm, the baseline")
    tbps = tb.floor_tbps()
    print(f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}")
    header = f"{'model':<16} {'T':>5} | {'torch us':>9} {'tgemm us':>9} {'speedup':>8} | {'floor us':>8} {'ratio':>6}"
    print(f"{header} | check")
    rows = []
    seed = 0
    for name, e, global_e, k, h, inter in MODELS:
        if args.filter and args.filter not in name:
            continue
        gen = torch.Generator(device="cuda").manual_seed(len(rows))
        w1 = (torch.randn(e, 2 * inter, h, device="cuda", generator=gen) * h**-0.5).to(torch.bfloat16)
        w2 = (torch.randn(e, h, inter, device="cuda", generator=gen) * inter**-0.5).to(torch.bfloat16)
        expert_map = None
        if global_e != e:  # this rank holds global experts 0 .. e-1
            expert_map = torch.full((global_e,), -1, dtype=torch.int32, device="cuda")
            expert_map[:e] = torch.arange(e, dtype=torch.int32, device="cuda")
        for t in TOKENS:
            seed += 1
            hidden = torch.randn(t, h, device="cuda", generator=gen).to(torch.bfloat16)
            tw, ids = _routing(t, k, global_e, seed)
            steps = [
                lambda i, a=(hidden, w1, w2, tw, ids, expert_map): stock_moe(*a),
                lambda i, a=(hidden, w1, w2, tw, ids), m=expert_map: tgemm.fused_moe(*a, expert_map=m),
            ]
            status = "-"
            if not args.no_check:
                got = tgemm.fused_moe(hidden, w1, w2, tw, ids, expert_map=expert_map).float()
                ref = stock_moe(hidden, w1, w2, tw, ids, expert_map).float()
                err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-6)
                status = "ok" if err <= 3e-2 and torch.isfinite(got).all() else f"max error {err:.3g}"
            local = ids.flatten().long() if expert_map is None else expert_map.long()[ids.flatten().long()]
            touched = int(torch.unique(local[local >= 0]).numel())
            slots = int((local >= 0).sum().item())
            bytes_moved = 2 * (touched * 3 * inter * h + 2 * t * h)
            flops = 2.0 * slots * 3 * inter * h
            est_us = max(flops / 6.5e8, bytes_moved / 3.0e6, 5.0)
            reading, first = grouped_bench._timed(steps, est_us, args)
            row = _row(name, t, k, e, h, inter, reading, first, status, bytes_moved, flops, tbps, touched)
            rows.append(row)
            print(
                f"{name:<16} {t:>5} | {row['baseline_us']:>9.2f} {row['tgemm_us']:>9.2f} {row['speedup']:>7.3f}x | "
                f"{row['floor_us']:>8.2f} {row['floor_ratio']:>6.2f} | {status}",
                flush=True,
            )
            del hidden, tw, ids
        del w1, w2, expert_map
        torch.cuda.empty_cache()
    summary = tb.speedup_summary(rows)
    decode = [r["floor_ratio"] for r in rows if r["M"] <= 32]
    prefill = [r["speedup"] for r in rows if r["M"] >= 512]
    summary["decode_max_floor_ratio"] = max(decode) if decode else 0.0
    summary["decode_median_floor_ratio"] = statistics.median(decode) if decode else 0.0
    summary["prefill_min_speedup"] = min(prefill) if prefill else 0.0
    summary["prefill_geomean_speedup"] = tb.geomean(prefill) if prefill else 0.0
    return rows, {"summary": summary, "floor_tbps": tbps, "tokens": list(TOKENS)}, "torch_fmoe"
