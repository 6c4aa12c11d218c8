#!/usr/bin/env python3
"""End to end on a sparse-MoE model: prefill and decode latency of stock transformers against the
same model through tgemm (patch_moe for the expert layers, patch_linear for the other linears),
checking the logits agree.

The model is built from a config with random weights (nothing is downloaded), bf16, on the current
CUDA device: Qwen3-30B-A3B sizes (--arch qwen3_moe: hidden 2048, 128 experts of 768, top 8, 32
heads, 4 KV heads, vocab 151936) or Mixtral-8x7B sizes (--arch mixtral: hidden 4096, 8 experts of
14336, top 2, 32 heads, 8 KV heads, vocab 32000), few layers (--layers, default 4). Each step is
timed as CUDA graph replays where the capture works and eagerly otherwise, and the row says which
(with transformers 5.17 both capture). The prefill, decode and timing steps are examples/llama_e2e.py's.

    python3 examples/moe_e2e.py                                   # Qwen3-30B-A3B sizes, 4 layers
    python3 examples/moe_e2e.py --arch mixtral --layers 2 --decode-batches 1,8
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_e2e  # noqa: E402  (its Step, prefill/decode steps, timing and comparison)

ARCHS = {
    "qwen3_moe": dict(hidden=2048, inter=768, experts=128, top_k=8, heads=32, kv_heads=4, head_dim=128, vocab=151936),
    "mixtral": dict(hidden=4096, inter=14336, experts=8, top_k=2, heads=32, kv_heads=8, head_dim=128, vocab=32000),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="MoE prefill/decode latency: stock transformers vs tgemm")
    p.add_argument("--arch", choices=sorted(ARCHS), default="qwen3_moe")
    p.add_argument("--layers", type=int, default=4)
    for key in ("hidden", "inter", "experts", "top_k", "heads", "kv_heads", "head_dim", "vocab"):
        p.add_argument("--" + key.replace("_", "-"), type=int, help=f"override the architecture's {key}")
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens (prefill length, decode context)")
    p.add_argument("--prefill-batch", type=int, default=1)
    p.add_argument("--decode-batches", default="1,8", help="comma list of decode batch sizes")
    p.add_argument("--iters", type=int, default=20, help="timed replays (or eager runs) per measurement")
    p.add_argument("--no-graph", action="store_true", help="time eagerly, without CUDA graphs")
    p.add_argument("--rtol", type=float, default=0.05, help="max relative L2 difference of logits, tgemm vs stock")
    p.add_argument("--json", default="moe_e2e.json", help="results JSON")
    args = p.parse_args(argv)
    for key, value in ARCHS[args.arch].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.decode_batch_list = [int(b) for b in args.decode_batches.split(",") if b]
    return args


def build_model(args):
    import transformers

    common = dict(
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.head_dim,
        vocab_size=args.vocab,
        num_experts_per_tok=args.top_k,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
    )
    if args.arch == "mixtral":
        config = transformers.MixtralConfig(intermediate_size=args.inter, num_local_experts=args.experts, **common)
        cls = transformers.MixtralForCausalLM
    else:
        config = transformers.Qwen3MoeConfig(
            moe_intermediate_size=args.inter, intermediate_size=args.inter, num_experts=args.experts, **common
        )
        cls = transformers.Qwen3MoeForCausalLM
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = cls(config)
    finally:
        torch.set_default_dtype(previous)
    with torch.no_grad():  # random weights of unit-variance products, so routing is not degenerate
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn_like(p) * p.shape[-1] ** -0.5)
    return model.to(torch.bfloat16).eval(), config


def main(argv=None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("moe_e2e: no CUDA device", file=sys.stderr)
        return 2
    import transformers

    import tgemm

    model, config = build_model(args)
    rows = []
    with torch.inference_mode():
        for make in llama_e2e.steps_for(model, config, args):
            step = make()
            stock = llama_e2e.time_step(step, args.iters, not args.no_graph)
            with tgemm.patch_moe(model) as moe, tgemm.patch_linear(model):
                patched = len(moe)  # remove() on exit empties the patch
                tg = llama_e2e.time_step(step, args.iters, not args.no_graph)
            cmp = llama_e2e.compare(tg["logits"], stock["logits"])
            rows.append(
                {
                    "step": step.name,
                    "batch": step.batch,
                    "tokens": step.tokens,
                    "stock_ms": stock["ms"],
                    "tgemm_ms": tg["ms"],
                    "speedup": stock["ms"] / tg["ms"],
                    "stock_graph": stock["graph"],
                    "stock_graph_error": stock["graph_error"],
                    "tgemm_graph": tg["graph"],
                    "tgemm_graph_error": tg["graph_error"],
                    "moe_blocks_patched": patched,
                    **cmp,
                    "ok": cmp["rel_l2"] <= args.rtol and patched == args.layers,
                }
            )
            del step, stock, tg
            torch.cuda.empty_cache()

    name = torch.cuda.get_device_name()
    print(f"\n{args.arch} ({args.layers} layers, {args.experts} experts of {args.inter}, top {args.top_k}) on {name}")
    head = f"{'step':<8} {'batch':>5} {'tokens':>6} | {'stock ms':>9} {'tgemm ms':>9} {'speedup':>8}"
    print(head + " | graphs (stock, tgemm)")
    for r in rows:
        graphs = f"{'yes' if r['stock_graph'] else 'no'}, {'yes' if r['tgemm_graph'] else 'no'}"
        print(
            f"{r['step']:<8} {r['batch']:>5} {r['tokens']:>6} | {r['stock_ms']:>9.3f} {r['tgemm_ms']:>9.3f} "
            f"{r['speedup']:>7.3f}x | {graphs:<9} rel L2 {r['rel_l2']:.2e} top1 {r['top1_match']:.2f} "
            f"{'ok' if r['ok'] else 'FAIL'}"
        )
        for who in ("stock", "tgemm"):
            if r[f"{who}_graph_error"]:
                print(f"         {who} timed eagerly: {r[f'{who}_graph_error']}")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    doc = {
        "device": props.name,
        "commit": llama_e2e._commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tgemm": tgemm.__version__,
        "model": {k: getattr(args, k) for k in ("arch", "layers", *ARCHS[args.arch], "prompt")},
        "timing": "CUDA graph replays where the capture works, else eager; median",
        "iters": args.iters,
        "rtol": args.rtol,
        "rows": rows,
    }
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"wrote {args.json}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
