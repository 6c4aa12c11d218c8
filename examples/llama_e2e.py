#!/usr/bin/env python3
"""End to end on a Llama-architecture model: capture its GEMM shapes, tune them, and measure
prefill and decode latency with stock nn.Linear vs tgemm, checking the logits agree.

The model is built from a LlamaConfig with random weights (nothing is downloaded): Llama-3-8B
sizes (hidden 4096, MLP 14336, 32 heads, 8 KV heads, vocab 128256) with few layers (default 4),
bf16, on the current CUDA device. Steps:

  1. capture: this script re-runs itself in a subprocess with TGEMM_TUNE_GEMM=1 (the library reads
     it at import), runs each measured step once through tgemm, and so writes every untuned GEMM
     problem to <workdir>/bf16_untuned_gemm.csv (the C++ core's capture; nothing in Python);
  2. tune: `tgemm tune -i <untuned> -o <workdir>/bf16_tuned_gemm.csv` (--tgemm, else the command
     pip installed with the package, else PATH; --skip-tune with --table uses an existing table);
  3. measure, with that table: prefill of --prefill-batch x --prompt tokens (no KV cache), and one
     decode step per --decode-batches on a StaticCache holding --prompt tokens (filled by a stock
     prefill), each stock and through tgemm.patch_linear, timed as CUDA graph replays (manual
     torch.cuda.CUDAGraph capture: static shapes, static KV cache, no torch.compile, so it works
     with eager transformers 5.x and takes seconds; if a capture fails the step is timed eagerly
     and the row says graph=false with the reason); logits of stock and tgemm compared.

Prints a table and writes a JSON (--json). Needs torch with CUDA, transformers >= 5, tgemm.

    python3 examples/llama_e2e.py                          # capture, tune, measure
    python3 examples/llama_e2e.py --skip-tune --table my_tuned.csv
    python3 examples/llama_e2e.py --layers 2 --decode-batches 1 --json out.json
    python3 examples/llama_e2e.py --quant fp8_rowwise     # 8-bit linears (tgemm.nn) vs stock bf16
    python3 examples/llama_e2e.py --quant mxfp4           # MXFP4 weights (tgemm.nn), bf16 activations

--quant SCHEME measures the model's linears (all but lm_head) as tgemm.nn.QuantLinear layers of
that scheme (activations quantized at every call) against stock bf16, and for fp8_rowwise also
against the same 8-bit weights and scales through PyTorch alone (per-token quantization in torch
ops, torch._scaled_mm); logits are compared with stock bf16 (--quant-rtol; with fp8_rowwise tgemm's
must also be within 5% of torch._scaled_mm's distance from bf16). It skips capture and
tune: the 8-bit GEMMs run on their shipped tables and defaults.

--quant mxfp4 (weight-only: gemm_a16w4) and mxfp4_a8 (per-token FP8 activations: gemm_a8w4) are
compared with the same MXFP4 weights through PyTorch alone, F.linear on the dequantized weight
(every e2m1 code times its E8M0 scale is a bf16 value, so that weight is exact): MXFP4 moves a
random-weight model's logits far more than FP8 does, and that distance from bf16 is the format's,
not tgemm's. The check: tgemm's distance from bf16 within 5% (+ 0.01) of the PyTorch one and, for
mxfp4, tgemm's logits within --rtol of the PyTorch ones (the same weights and activations, only
the summation order differs); --quant-rtol does not apply. Both distances and the top-1
agreement with bf16 are reported.

--sparse 2:4 magnitude-prunes the same linears to 2:4 (tgemm.prune_2_4) and measures them as
tgemm.nn.SparseLinear layers (cuSPARSELt) against the same pruned weights run dense, stock
(nn.Linear) and through tgemm's dense GEMM (tgemm.patch_linear): the speedup column is over dense
tgemm, and the logits check (--rtol) is against the pruned model run stock. The pruned model's
logits differ from the unpruned model's by design; that distance is reported (rel_l2_vs_unpruned)
but not checked. It skips capture and tune (the dense GEMMs run on the shipped tables, or --table).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _commit() -> str:
    """The repository's commit for the results JSON: $TGEMM_COMMIT (a copied tree's .git may be
    stale), else git, else "unknown"."""
    if os.environ.get("TGEMM_COMMIT"):
        return os.environ["TGEMM_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Llama prefill/decode latency: stock vs tgemm (capture -> tune -> measure)")
    p.add_argument("--layers", type=int, default=4, help="decoder layers (Llama-3-8B has 32)")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens (prefill length, decode context)")
    p.add_argument("--prefill-batch", type=int, default=1)
    p.add_argument("--decode-batches", default="1,8", help="comma list of decode batch sizes")
    p.add_argument("--iters", type=int, default=30, help="timed replays (or eager runs) per measurement")
    p.add_argument("--no-graph", action="store_true", help="time eagerly, without CUDA graphs")
    p.add_argument("--rtol", type=float, default=0.03, help="max relative L2 difference of logits, tgemm vs stock")
    p.add_argument("--workdir", help="where the untuned/tuned CSVs go (default: a new temp dir)")
    p.add_argument("--tgemm", help="the tgemm command (default: the one installed with the package, else PATH)")
    p.add_argument("--skip-capture", action="store_true", help="do not capture (needs --table or --skip-tune)")
    p.add_argument("--skip-tune", action="store_true", help="do not tune; use --table (or only the shipped tables)")
    p.add_argument("--table", help="tuned table to use (default: the one tuned here)")
    p.add_argument("--tune-timeout", type=float, default=120, help="tgemm tune --timeout (seconds per problem)")
    p.add_argument("--tune-args", default="", help="extra arguments for tgemm tune")
    p.add_argument(
        "--tune-cublaslt",
        choices=("torch", "toolkit"),
        default="torch",
        help="cuBLASLt the tuner loads: the one torch loaded (default; the library this process runs) "
        "or the CUDA toolkit's",
    )
    p.add_argument(
        "--quant",
        choices=("fp8_tensor", "fp8_rowwise", "int8_rowwise", "fp8_block", "mxfp4", "mxfp4_a8"),
        help="measure quantized linears (tgemm.nn.QuantLinear) against stock bf16 instead; skips capture and tune",
    )
    p.add_argument(
        "--quant-rtol",
        type=float,
        default=0.5,
        help="max relative L2 of 8-bit --quant logits vs bf16 (the random-weight model's logits move 0.2-0.3 "
        "under FP8, through torch._scaled_mm alike); the MXFP4 schemes are checked against PyTorch instead",
    )
    p.add_argument(
        "--sparse",
        choices=("2:4",),
        help="measure 2:4-pruned linears (tgemm.nn.SparseLinear) against the same pruned weights run dense; "
        "skips capture and tune",
    )
    p.add_argument("--json", default="llama_e2e.json", help="results JSON")
    p.add_argument("--phase", choices=("all", "capture"), default="all", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.decode_batch_list = [int(b) for b in args.decode_batches.split(",") if b]
    if args.quant and args.sparse:
        p.error("--quant and --sparse measure different things: pass one")
    if args.quant or args.sparse:
        args.skip_capture = args.skip_tune = True
    return args


# ----------------------------------------------------------------------------- model and steps


def build_model(args):
    from transformers import LlamaConfig, LlamaForCausalLM

    kwargs = dict(
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        vocab_size=args.vocab,
        max_position_embeddings=8192,
        rope_theta=500000.0,
        tie_word_embeddings=False,
    )
    config = LlamaConfig(**kwargs)  # attention: transformers' default (sdpa)
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # parameters created in bf16 directly, on the GPU
    try:
        with torch.device("cuda"):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return model.to(torch.bfloat16).eval(), config


class Step:
    """One measured forward: `run()` returns logits; `prepare()` runs before each call (outside
    any graph) to put the KV cache back to the same state, so every replay is the same step."""

    def __init__(self, name, batch, tokens, run, prepare=lambda: None):
        self.name, self.batch, self.tokens, self.run, self.prepare = name, batch, tokens, run, prepare


def prefill_step(model, args) -> Step:
    g = torch.Generator(device="cuda").manual_seed(1)
    ids = torch.randint(0, args.vocab, (args.prefill_batch, args.prompt), device="cuda", generator=g)
    # No cache: the stateless prefill (its mask needs no device->host read, so it can be captured).
    return Step(
        "prefill",
        args.prefill_batch,
        args.prompt,
        lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1).logits,
    )


def decode_step(model, config, args, batch) -> Step:
    """A decode step at position `prompt` on a StaticCache filled by a stock prefill."""
    from transformers import StaticCache

    g = torch.Generator(device="cuda").manual_seed(2 + batch)
    prompt = torch.randint(0, args.vocab, (batch, args.prompt), device="cuda", generator=g)
    cache = StaticCache(config=config, max_cache_len=args.prompt + 16)
    model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
    # transformers >= 5.x keeps the write position on the device (StaticLayer.cumulative_length,
    # advanced by every forward, so also by every graph replay); older versions take it from
    # cache_position. Reset the former before each call; pass the latter when the model takes it.
    counters = [
        layer.cumulative_length
        for layer in getattr(cache, "layers", [])
        if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)
    ]
    start = [int(c.item()) for c in counters]
    ids = torch.randint(0, args.vocab, (batch, 1), device="cuda", generator=g)
    position = torch.full((batch, 1), args.prompt, device="cuda", dtype=torch.long)
    extra = {}
    if "cache_position" in inspect.signature(model.forward).parameters:
        extra["cache_position"] = torch.tensor([args.prompt], device="cuda", dtype=torch.long)

    def prepare():
        for c, v in zip(counters, start):
            c.fill_(v)

    def run():
        return model(
            input_ids=ids, position_ids=position, past_key_values=cache, use_cache=True, logits_to_keep=1, **extra
        ).logits

    return Step("decode", batch, 1, run, prepare)


# ----------------------------------------------------------------------------- timing


def time_step(step: Step, iters: int, use_graph: bool) -> dict:
    """Median milliseconds of step.run(), as CUDA graph replays when the capture works, else
    eagerly; returns the logits of one run too."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm-up: first-call resolutions, workspaces, cuBLAS handles
            step.prepare()
            step.run()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph, out, reason = None, None, ""
    if use_graph:
        try:
            graph = torch.cuda.CUDAGraph()
            step.prepare()
            with torch.cuda.graph(graph, stream=stream):
                out = step.run()
        except Exception as e:  # a capture failure is reported, and the step is timed eagerly
            graph, reason = None, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            torch.cuda.synchronize()
    else:
        reason = "--no-graph"
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters + 3):
        step.prepare()
        if i >= 3:
            starts[i - 3].record()
        if graph is not None:
            graph.replay()
        else:
            out = step.run()
        if i >= 3:
            ends[i - 3].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    logits = out.float().clone()
    del graph
    return {"ms": statistics.median(times), "graph": reason == "", "graph_error": reason, "logits": logits}


def compare(a: torch.Tensor, b: torch.Tensor) -> dict:
    """tgemm logits a vs stock logits b."""
    diff = (a - b).flatten()
    ref = b.flatten()
    return {
        "rel_l2": float(diff.norm() / ref.norm().clamp_min(1e-30)),
        "max_abs": float(diff.abs().max()),
        "ref_max_abs": float(ref.abs().max()),
        "top1_match": float((a.argmax(-1) == b.argmax(-1)).float().mean()),
    }


# ----------------------------------------------------------------------------- 8-bit linears


class ScaledMMLinear(torch.nn.Module):
    """A QuantLinear's fp8_rowwise weight and scales through PyTorch alone: per-token FP8
    quantization in torch ops, then torch._scaled_mm."""

    def __init__(self, q):
        super().__init__()
        self.q = q

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        scale = (x2.abs().amax(-1, keepdim=True).float() / 448.0).clamp_min(1e-12)
        xq = (x2.float() / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
        w_scale = self.q.weight_scale.reshape(1, -1)
        y = torch._scaled_mm(
            xq, self.q.qweight.t(), scale_a=scale, scale_b=w_scale, bias=self.q.bias, out_dtype=x.dtype
        )
        return y.reshape(*x.shape[:-1], -1)


class DequantLinear(torch.nn.Module):
    """A QuantLinear's MXFP4 weight through PyTorch alone: F.linear on the dequantized weight (bf16,
    exact), and for mxfp4_a8 the activations' per-token FP8 round trip in torch ops first (then the
    product in fp32: the dequantized activations are not bf16 values)."""

    def __init__(self, q):
        super().__init__()
        self.fp8 = q.scheme == "mxfp4_a8"
        w = q.dequantized_weight()
        self.weight = w.float() if self.fp8 else w.to(torch.bfloat16)
        self.bias = q.bias

    def forward(self, x):
        if not self.fp8:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        x2 = x.reshape(-1, x.shape[-1]).float()
        scale = (x2.abs().amax(-1, keepdim=True) / 448.0).clamp_min(1e-12)
        xd = (x2 / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).float() * scale
        bias = None if self.bias is None else self.bias.float()
        y = torch.nn.functional.linear(xd, self.weight, bias)
        return y.to(x.dtype).reshape(*x.shape[:-1], -1)


MXFP4_SCHEMES = ("mxfp4", "mxfp4_a8")


def quantized_linears(model, scheme) -> dict:
    """name -> tgemm.nn.QuantLinear of every linear eligible under scheme but lm_head (the model
    keeps its own)."""
    import tgemm.nn

    return {
        name: tgemm.nn.QuantLinear.from_linear(m, scheme)
        for name, m in model.named_modules()
        if name and tgemm.nn.eligible(m, scheme) and not name.endswith("lm_head")
    }


def quant_peer(quant: dict, scheme: str):
    """(name, modules) of the same quantized weights through PyTorch alone, or (None, None)."""
    if scheme == "fp8_rowwise":
        return "scaled_mm", {name: ScaledMMLinear(q) for name, q in quant.items()}
    if scheme in MXFP4_SCHEMES:
        return "torch_dequant", {name: DequantLinear(q) for name, q in quant.items()}
    return None, None


@contextlib.contextmanager
def swapped(model, modules: dict):
    """model with the named submodules replaced by these, restored on exit."""
    old = {}
    for name, new in modules.items():
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        old[name] = (parent, attr, getattr(parent, attr))
        setattr(parent, attr, new)
    try:
        yield
    finally:
        for parent, attr, mod in old.values():
            setattr(parent, attr, mod)


def measure_quant(model, config, args) -> list[dict]:
    """Each step stock bf16, with QuantLinear layers, and (fp8_rowwise, MXFP4) with the same weights
    through PyTorch alone (ScaledMMLinear, DequantLinear)."""
    quant = quantized_linears(model, args.quant)
    peer_name, peer = quant_peer(quant, args.quant)
    rows = []
    with torch.inference_mode():
        for make in steps_for(model, config, args):
            step = make()
            stock = time_step(step, args.iters, not args.no_graph)
            with swapped(model, quant):
                tg = time_step(step, args.iters, not args.no_graph)
            row = {
                "step": step.name,
                "batch": step.batch,
                "tokens": step.tokens,
                "quant": args.quant,
                "layers_quantized": len(quant),
                "stock_ms": stock["ms"],
                "tgemm_ms": tg["ms"],
                "speedup": stock["ms"] / tg["ms"],
                "graph": stock["graph"] and tg["graph"],
                "graph_error": stock["graph_error"] or tg["graph_error"],
            }
            if peer is not None:
                with swapped(model, peer):
                    sm = time_step(step, args.iters, not args.no_graph)
                row[f"{peer_name}_ms"] = sm["ms"]
                row[f"speedup_vs_{peer_name}"] = sm["ms"] / tg["ms"]
                row["graph"] = row["graph"] and sm["graph"]
                row["graph_error"] = row["graph_error"] or sm["graph_error"]
                peer_cmp = compare(sm["logits"], stock["logits"])
                row[f"{peer_name}_rel_l2"] = peer_cmp["rel_l2"]
                row[f"{peer_name}_top1_match"] = peer_cmp["top1_match"]
                if args.quant == "mxfp4":  # the same weights and activations: only the summation order differs
                    row["rel_l2_vs_torch_dequant"] = compare(tg["logits"], sm["logits"])["rel_l2"]
            cmp = compare(tg["logits"], stock["logits"])
            row.update(cmp)
            row["ok"] = args.quant in MXFP4_SCHEMES or cmp["rel_l2"] <= args.quant_rtol
            if peer is not None:  # the same weights and scales through PyTorch: no further from bf16
                row["ok"] = row["ok"] and cmp["rel_l2"] <= 1.05 * row[f"{peer_name}_rel_l2"] + 0.01
            if "rel_l2_vs_torch_dequant" in row:
                row["ok"] = row["ok"] and row["rel_l2_vs_torch_dequant"] <= args.rtol
            rows.append(row)
            del step, stock, tg
            torch.cuda.empty_cache()
    return rows


# ----------------------------------------------------------------------------- 2:4 sparse linears


def pruned_linears(model) -> dict:
    """name -> a copy of every 2:4-eligible linear but lm_head, its weight magnitude-pruned to 2:4."""
    import tgemm.nn

    pruned = {}
    for name, m in model.named_modules():
        if name and tgemm.nn.sparse_eligible(m) and not name.endswith("lm_head"):
            copy = torch.nn.Linear(
                m.in_features, m.out_features, bias=m.bias is not None, device="cuda", dtype=m.weight.dtype
            )
            copy.weight.data = tgemm.prune_2_4(m.weight.detach())
            if m.bias is not None:
                copy.bias.data = m.bias.detach().clone()
            pruned[name] = copy
    return pruned


def measure_sparse(model, config, args) -> list[dict]:
    """Each step on the pruned model: stock nn.Linear, tgemm's dense GEMM (patch_linear) and
    SparseLinear (2:4 through cuSPARSELt); and the unpruned model stock, for its distance."""
    import tgemm
    import tgemm.nn

    pruned = pruned_linears(model)
    sparse = {name: tgemm.nn.SparseLinear.from_linear(m, args.sparse, prune=False) for name, m in pruned.items()}
    rows = []
    with torch.inference_mode():
        for make in steps_for(model, config, args):
            with swapped(model, pruned):
                step = make()  # a decode step's cache is filled by the pruned model
                stock = time_step(step, args.iters, not args.no_graph)
                with tgemm.patch_linear(model):
                    dense = time_step(step, args.iters, not args.no_graph)
            with swapped(model, sparse):
                sp = time_step(step, args.iters, not args.no_graph)
            unpruned = time_step(step, 1, False)["logits"]
            cmp = compare(sp["logits"], stock["logits"])
            row = {
                "step": step.name,
                "batch": step.batch,
                "tokens": step.tokens,
                "sparse": args.sparse,
                "layers_sparse": len(sparse),
                "stock_ms": stock["ms"],
                "dense_tgemm_ms": dense["ms"],
                "tgemm_ms": sp["ms"],
                "speedup": dense["ms"] / sp["ms"],
                "speedup_vs_stock": stock["ms"] / sp["ms"],
                "graph": stock["graph"] and dense["graph"] and sp["graph"],
                "graph_error": stock["graph_error"] or dense["graph_error"] or sp["graph_error"],
                "dense_tgemm_rel_l2": compare(dense["logits"], stock["logits"])["rel_l2"],
                "rel_l2_vs_unpruned": compare(stock["logits"], unpruned)["rel_l2"],
                **cmp,
                "ok": cmp["rel_l2"] <= args.rtol,
            }
            rows.append(row)
            del step, stock, dense, sp
            torch.cuda.empty_cache()
    return rows


# ----------------------------------------------------------------------------- phases


def steps_for(model, config, args):
    yield lambda: prefill_step(model, args)
    for batch in args.decode_batch_list:
        yield lambda batch=batch: decode_step(model, config, args, batch)


def run_capture(args) -> int:
    """Subprocess body: every measured step once through tgemm, with TGEMM_TUNE_GEMM=1 set by the
    parent before tgemm was imported (the library reads it at import)."""
    import tgemm

    model, config = build_model(args)
    with torch.inference_mode():
        for make in steps_for(model, config, args):
            step = make()  # the state prefill runs stock: its shapes are not the measured ones
            with tgemm.patch_linear(model):
                step.prepare()
                step.run()
    torch.cuda.synchronize()
    return 0


def find_tgemm(args) -> str:
    import tgemm

    exe = args.tgemm or tgemm.cli_path()
    if not exe:
        sys.exit(
            "llama_e2e: no `tgemm` command (pip install puts it in the scripts directory next to python; "
            "a CMake build has it at build/release/tools/cli/tgemm): pass --tgemm PATH, or --skip-tune"
        )
    return exe


def torch_cublaslt_dir() -> str:
    """Directory of the libcublasLt this process loaded (torch's), from /proc/self/maps."""
    torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "libcublasLt.so" in path:
                    return os.path.dirname(path)
    except OSError:
        pass
    return ""


def main(argv=None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("llama_e2e: no CUDA device", file=sys.stderr)
        return 2
    if args.phase == "capture":
        return run_capture(args)

    t_start = time.time()
    workdir = args.workdir or tempfile.mkdtemp(prefix="tgemm-llama-")
    os.makedirs(workdir, exist_ok=True)
    untuned = os.path.join(workdir, "bf16_untuned_gemm.csv")
    tuned = args.table or os.path.join(workdir, "bf16_tuned_gemm.csv")
    info: dict = {"workdir": workdir}

    # 1. capture (a subprocess: the environment must be set before tgemm is imported)
    if not args.skip_capture:
        if os.path.exists(untuned):
            os.remove(untuned)
        env = dict(os.environ, TGEMM_TUNE_GEMM="1", TGEMM_UNTUNED_GEMM_BF16=untuned)
        cmd = [sys.executable, os.path.abspath(__file__), "--phase", "capture"] + (
            argv if argv is not None else sys.argv[1:]
        )
        t0 = time.time()
        print(f"[capture] {' '.join(cmd[1:])}", flush=True)
        subprocess.run(cmd, env=env, check=True)
        with open(untuned) as f:
            info["captured_problems"] = max(0, sum(1 for line in f if line.strip()) - 1)
        info["capture_s"] = time.time() - t0
        print(f"[capture] {info['captured_problems']} problems -> {untuned} ({info['capture_s']:.0f} s)", flush=True)

    # 2. tune
    if not args.skip_tune:
        exe = find_tgemm(args)
        cmd = [exe, "tune", "-i", untuned, "-o", tuned, "--timeout", str(args.tune_timeout)] + args.tune_args.split()
        env = dict(os.environ)
        if args.tune_cublaslt == "torch":
            lt_dir = torch_cublaslt_dir()
            if lt_dir:
                env["LD_LIBRARY_PATH"] = lt_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
                info["tune_cublaslt_dir"] = lt_dir
        t0 = time.time()
        print(
            f"[tune] {' '.join(cmd)}"
            + (f" (cuBLASLt from {info.get('tune_cublaslt_dir')})" if info.get("tune_cublaslt_dir") else ""),
            flush=True,
        )
        rc = subprocess.run(cmd, env=env).returncode
        info["tune_s"] = time.time() - t0
        info["tune_rc"] = rc
        if rc != 0:
            print(f"[tune] tgemm tune exited {rc} (failed problems keep the default solution); continuing", flush=True)
        if not os.path.exists(tuned):
            sys.exit(f"llama_e2e: tgemm tune wrote no table at {tuned}")

    # 3. measure with the table(s)
    import transformers

    import tgemm

    shipped = os.path.join(tgemm.shipped_config_dir(), "bf16_tuned_gemm.csv")
    tables = [t for t in (shipped, tuned) if t and os.path.exists(t)]
    os.environ["TGEMM_CONFIG_GEMM_BF16"] = ":".join(tables)
    os.environ.pop("TGEMM_TUNE_GEMM", None)
    tgemm.reload_config()
    info["tables"] = tgemm.table_files()
    print(f"[measure] tables: {':'.join(info['tables']) or '(none)'}", flush=True)

    model, config = build_model(args)
    rows = []
    if args.quant:
        rows = measure_quant(model, config, args)
    elif args.sparse:
        rows = measure_sparse(model, config, args)
    with torch.inference_mode():
        for make in steps_for(model, config, args) if not (args.quant or args.sparse) else ():
            step = make()
            stock = time_step(step, args.iters, not args.no_graph)
            with tgemm.patch_linear(model):
                tg = time_step(step, args.iters, not args.no_graph)
            cmp = compare(tg["logits"], stock["logits"])
            row = {
                "step": step.name,
                "batch": step.batch,
                "tokens": step.tokens,
                "stock_ms": stock["ms"],
                "tgemm_ms": tg["ms"],
                "speedup": stock["ms"] / tg["ms"],
                "graph": stock["graph"] and tg["graph"],
                "graph_error": stock["graph_error"] or tg["graph_error"],
                **cmp,
                "ok": cmp["rel_l2"] <= args.rtol,
            }
            rows.append(row)
            del step, stock, tg
            torch.cuda.empty_cache()

    print()
    print(
        f"Llama ({args.layers} layers, hidden {args.hidden}, MLP {args.intermediate}, vocab {args.vocab}, bf16) on "
        f"{torch.cuda.get_device_name()}"
    )
    print(
        f"{'step':<8} {'batch':>5} {'tokens':>6} | {'stock ms':>9} {'tgemm ms':>9} {'speedup':>8} | {'graph':>5} | "
        f"{'rel L2':>8} {'top1':>6} {'check':>6}"
    )
    if args.quant:
        print(
            f"quantized linears: {args.quant} (tgemm.nn.QuantLinear) in the tgemm column, stock bf16 in the stock "
            "column"
        )
    if args.sparse:
        print(
            f"{args.sparse} linears (tgemm.nn.SparseLinear) in the tgemm column, the same pruned weights stock in the "
            "stock column; speedup over them run through tgemm's dense GEMM"
        )
    for r in rows:
        print(
            f"{r['step']:<8} {r['batch']:>5} {r['tokens']:>6} | {r['stock_ms']:>9.3f} {r['tgemm_ms']:>9.3f} "
            f"{r['speedup']:>7.3f}x | {'yes' if r['graph'] else 'no':>5} | {r['rel_l2']:>8.2e} {r['top1_match']:>6.2f} "
            f"{'ok' if r['ok'] else 'FAIL':>6}"
        )
        if "scaled_mm_ms" in r:
            print(
                f"         torch._scaled_mm with the same weights and scales: {r['scaled_mm_ms']:.3f} ms, tgemm "
                f"{r['speedup_vs_scaled_mm']:.3f}x over it (its rel L2 vs bf16 {r['scaled_mm_rel_l2']:.2e})"
            )
        if "torch_dequant_ms" in r:
            print(
                f"         F.linear on the dequantized weights: {r['torch_dequant_ms']:.3f} ms, tgemm "
                f"{r['speedup_vs_torch_dequant']:.3f}x over it (its rel L2 vs bf16 {r['torch_dequant_rel_l2']:.2e}, "
                f"top1 {r['torch_dequant_top1_match']:.2f}"
                + (
                    f"; tgemm's rel L2 vs it {r['rel_l2_vs_torch_dequant']:.2e})"
                    if "rel_l2_vs_torch_dequant" in r
                    else ")"
                )
            )
        if "dense_tgemm_ms" in r:
            print(
                f"         dense tgemm on the pruned weights: {r['dense_tgemm_ms']:.3f} ms ({r['speedup']:.3f}x for "
                f"sparse over it, {r['speedup_vs_stock']:.3f}x over stock); pruned vs unpruned logits rel L2 "
                f"{r['rel_l2_vs_unpruned']:.2e}"
            )
        if r["graph_error"]:
            print(f"         graph capture failed, timed eagerly: {r['graph_error']}")
    info["total_s"] = time.time() - t_start
    print(
        f"total {info['total_s']:.0f} s (capture {info.get('capture_s', 0):.0f} s, tune {info.get('tune_s', 0):.0f} s)"
    )

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    doc = {
        "device": props.name,
        "sm_count": props.multi_processor_count,
        "commit": _commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tgemm": tgemm.__version__,
        "model": {
            "arch": "LlamaForCausalLM (random weights)",
            "layers": args.layers,
            "hidden": args.hidden,
            "intermediate": args.intermediate,
            "heads": args.heads,
            "kv_heads": args.kv_heads,
            "vocab": args.vocab,
            "dtype": "bfloat16",
            "prompt": args.prompt,
        },
        "timing": "CUDA graph replays (torch.cuda.CUDAGraph), median" if not args.no_graph else "eager, median",
        "iters": args.iters,
        "rtol": args.quant_rtol if args.quant and args.quant not in MXFP4_SCHEMES else args.rtol,
        "quant": args.quant,
        "sparse": args.sparse,
        **info,
        "rows": rows,
    }
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"wrote {args.json}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
