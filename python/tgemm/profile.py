"""Where the GPU time of a step goes: GEMM / attention / elementwise / other.

Runs a callable under ``torch.profiler`` and classifies every GPU activity (kernels, memcpy,
memset) by its name, so the split says which category to optimise first (``top 10 kernels`` hides
that). The rules are name patterns, checked in order (attention first: attention kernels embed
GEMMs; then GEMM; then elementwise, which includes reductions, norms and Inductor's pointwise/
reduction Triton kernels); anything else, copies included, is ``other``.

    report = tgemm.profile.profile(step, iters=10)     # dict; prints a table
    python -m tgemm.profile --tokens 512                # a random-weight Llama layer stack
    python -m tgemm.profile --entry mypkg.bench:make_step --json split.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import statistics
import sys
import time
from typing import Any, Callable, Optional

import torch

CATEGORIES = ("gemm", "attention", "elementwise", "other")

# Attention before GEMM: flash/fmha kernels contain gemm-like names.
_RULES: list[tuple[str, re.Pattern]] = [
    (
        "attention",
        re.compile(r"flash|fmha|attention|attn|_mha|mha_|sdpa|paged_|decode_kernel|xformers", re.I),
    ),
    (
        "gemm",
        re.compile(
            r"gemm|gemv|matmul|_mm_|bmm|cublas|cutlass|xmma|nvjet|wgmma|hgmma|splitk|"
            r"triton_tem_|tgemm|skinny|reference_gemm|^kernel2|s16816|s1688|dot_kernel",
            re.I,
        ),
    ),
    (
        "elementwise",
        re.compile(
            r"elementwise|vectorized|unrolled|reduce|norm|rms|softmax|silu|gelu|relu|swiglu|"
            r"act_and_mul|rotary|rope|embedding|index|gather|scatter|copy_kernel|cat_|"
            r"fill|where|triton_poi_|triton_red_|triton_per_|cast|convert|mul_|add_|"
            r"bias|dropout|topk|sort|argmax|cumsum|broadcast",
            re.I,
        ),
    ),
]


def classify_kernel(name: str) -> str:
    """The category (one of CATEGORIES) of a GPU activity named ``name``."""
    for category, pattern in _RULES:
        if pattern.search(name):
            return category
    return "other"


def _gpu_activities(prof) -> list[tuple[str, float]]:
    """(name, microseconds) of every device-side activity the profiler recorded."""
    out = []
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            out.append((event.name, float(event.device_time_total)))
    return out


def profile(
    fn: Callable[..., Any],
    *args: Any,
    iters: int = 10,
    warmup: int = 3,
    trace: Optional[str] = None,
    top: int = 5,
    print_table: bool = True,
    **kwargs: Any,
) -> dict:
    """Profile ``fn(*args, **kwargs)``: ``warmup`` untimed runs, ``iters`` timed runs (wall clock,
    synchronised, no profiler), then ``iters`` runs under torch.profiler for the GPU split.

    Returns ``{"iters", "wall_us_per_iter", "gpu_us_per_iter", "categories": {cat: {"us", "pct",
    "calls"}}, "top": {cat: [{"name", "us", "calls"}]}}`` with times per iteration. ``gpu_us``
    is the sum of activity durations (overlapping streams count twice); ``wall_us - gpu_us`` is a
    lower bound of launch/host gaps. ``trace``: also write a Chrome trace there.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("tgemm.profile needs a CUDA device")
    for _ in range(warmup):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    walls = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t0) * 1e6)

    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(iters):
            fn(*args, **kwargs)
        torch.cuda.synchronize()
    if trace:
        prof.export_chrome_trace(trace)

    per_cat = {c: {"us": 0.0, "calls": 0} for c in CATEGORIES}
    per_kernel: dict[str, dict] = {}
    for name, us in _gpu_activities(prof):
        category = classify_kernel(name)
        per_cat[category]["us"] += us
        per_cat[category]["calls"] += 1
        k = per_kernel.setdefault(name, {"category": category, "us": 0.0, "calls": 0})
        k["us"] += us
        k["calls"] += 1
    total = sum(v["us"] for v in per_cat.values())
    categories = {
        c: {
            "us": v["us"] / iters,
            "pct": 100.0 * v["us"] / total if total > 0 else 0.0,
            "calls": v["calls"] / iters,
        }
        for c, v in per_cat.items()
    }
    tops: dict[str, list] = {c: [] for c in CATEGORIES}
    for name, k in sorted(per_kernel.items(), key=lambda kv: -kv[1]["us"]):
        if len(tops[k["category"]]) < top:
            tops[k["category"]].append({"name": name, "us": k["us"] / iters, "calls": k["calls"] / iters})
    report = {
        "iters": iters,
        "wall_us_per_iter": statistics.median(walls),
        "gpu_us_per_iter": total / iters,
        "categories": categories,
        "top": tops,
    }
    if print_table:
        print(format_report(report))
    return report


def format_report(report: dict, title: str = "") -> str:
    """The report as a table: category, µs per iteration, share, calls; then the top kernels."""
    lines = []
    if title:
        lines.append(title)
    lines.append(
        f"wall {report['wall_us_per_iter']:.1f} us/iter, GPU busy {report['gpu_us_per_iter']:.1f} us/iter "
        f"({report['iters']} iters)"
    )
    lines.append(f"{'category':<12} {'us/iter':>10} {'share':>7} {'calls/iter':>11}")
    for c in CATEGORIES:
        v = report["categories"][c]
        lines.append(f"{c:<12} {v['us']:>10.1f} {v['pct']:>6.1f}% {v['calls']:>11.1f}")
    for c in CATEGORIES:
        for k in report["top"][c]:
            name = k["name"] if len(k["name"]) <= 90 else k["name"][:87] + "..."
            lines.append(f"  {c:<11} {k['us']:>9.1f} us {k['calls']:>5.1f}x  {name}")
    return "\n".join(lines)


def _llama_step(args) -> tuple[Callable[[], Any], torch.nn.Module]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        vocab_size=args.vocab,
        max_position_embeddings=max(4096, args.tokens),
    )
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    ids = torch.randint(0, args.vocab, (args.batch, args.tokens), device="cuda")

    def step():
        with torch.inference_mode():
            return model(input_ids=ids, use_cache=False, logits_to_keep=1).logits

    return step, model


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tgemm.profile",
        description="GPU time split (GEMM / attention / elementwise / other) of a step, stock vs tgemm.",
    )
    parser.add_argument("--entry", help="module:function returning a zero-argument step callable (else: a Llama stack)")
    parser.add_argument(
        "--mode",
        choices=("compare", "stock", "tgemm"),
        default="compare",
        help="Llama stack: stock nn.Linear, tgemm-patched, or both (default)",
    )
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=512, help="tokens per sequence in the forward pass")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--trace", help="write a Chrome trace (per mode: <trace>.<mode>.json)")
    parser.add_argument("--json", help="write the report(s) here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("tgemm.profile: no CUDA device", file=sys.stderr)
        return 2

    import tgemm

    reports = {}
    if args.entry:
        module_name, _, func_name = args.entry.partition(":")
        step = getattr(importlib.import_module(module_name), func_name or "make_step")()
        reports["entry"] = profile(step, iters=args.iters, warmup=args.warmup, trace=args.trace, print_table=False)
        print(format_report(reports["entry"], title=f"== {args.entry}"))
    else:
        step, model = _llama_step(args)
        modes = ("stock", "tgemm") if args.mode == "compare" else (args.mode,)
        for mode in modes:
            patch = tgemm.patch_linear(model) if mode == "tgemm" else None
            trace = f"{args.trace}.{mode}.json" if args.trace else None
            try:
                reports[mode] = profile(step, iters=args.iters, warmup=args.warmup, trace=trace, print_table=False)
            finally:
                if patch is not None:
                    patch.remove()
            title = (
                f"== {mode}: Llama {args.layers} layers, hidden {args.hidden}, batch {args.batch} x "
                f"{args.tokens} tokens, bf16"
            )
            print(format_report(reports[mode], title=title))
            print()
        if len(modes) == 2:
            s, t = reports["stock"], reports["tgemm"]
            s_gemm, t_gemm = s["categories"]["gemm"]["us"], t["categories"]["gemm"]["us"]
            print(
                f"GEMM time stock {s_gemm:.1f} us -> tgemm {t_gemm:.1f} us; "
                f"wall {s['wall_us_per_iter']:.1f} -> {t['wall_us_per_iter']:.1f} us/iter"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "args": vars(args), "reports": reports}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
