#!/usr/bin/env python3
"""tgemm vs torch.nn.functional.linear from PyTorch, on a shape suite, in one run.

For every (model, layer, N, K) of the suite and every M: y = x @ w^T through F.linear (what an
nn.Linear runs) and through torch.ops.tgemm.gemm_a16w16, each timed as a CUDA graph of launches
whose inputs rotate over more than 3x the L2 size (so weights come from HBM, as in a model),
the two graphs replayed in interleaved rounds (order reversed on odd rounds; launches and rounds
from the problem's expected time, as `tgemm bench` plans them); the speedup is
the median over rounds of the two back-to-back medians' ratio, as `tgemm bench` computes it
(timing one path after the other favoured whichever ran first at the GPU's higher clocks);
tgemm's output is checked against an fp32 reference. A problem whose speedup reads below
--remeasure-below (0.98) is timed again and the second reading counts (the first is kept in the
row's "first_reading"), as `tgemm bench` does. --m-grid times the M grid of `tgemm bench --m-grid`
(src/core/m_grid.h; m_grid() below computes the same values). Writes
bench/results/torch-<card>.json (`tgemm bench`'s JSON fields) and a PNG heat map of
the speedups next to it. A host-overhead measurement (time per call of F.linear vs the tgemm entry
points on a tiny warm shape, host clock) runs too; --overhead-only runs just that.

--gelu times the fused epilogue instead: tgemm.gemm_gelu(x, w, b) against tgemm.gemm_a16w16
followed by a separate F.gelu, and against F.gelu(F.linear(x, w, b)), the same way (CUDA graphs,
rotated inputs, medians), with both ratios per problem and their geomeans in the JSON
(bench/results/torch_gelu-<card>.json).

    python3 bench/torch_bench.py                         # llm_shapes.csv, M = 1 ... 8192
    python3 bench/torch_bench.py --m 1,16 --filter llama3-8b
    python3 bench/torch_bench.py --m-grid --no-overhead  # the M grid: 56 M values from 1 to 16384
    python3 bench/torch_bench.py --overhead-only
    python3 bench/torch_bench.py --gelu [--approximate tanh] [--bias]
    python3 bench/torch_bench.py --a8w8 fp8_rowwise [--bias]
    python3 bench/torch_bench.py --a16w4 --m 1,16 --no-overhead   # also --a8w4, --a4w4
    python3 bench/torch_bench.py --blockscale mn_major [--bias]
    python3 bench/torch_bench.py --quant --no-overhead
    python3 bench/torch_bench.py --gmm --no-overhead
    python3 bench/torch_bench.py --ptgmm --no-overhead    # also --grouped-gemm, --masked
    python3 bench/torch_bench.py --fp8-contiguous --no-overhead    # also --fp8-masked
    python3 bench/torch_bench.py --fmoe --no-overhead
    python3 bench/torch_bench.py --batched --no-overhead
    python3 bench/torch_bench.py --batched-a8w8 fp8_rowwise --no-overhead

--gmm times tgemm.gmm (bf16, rhs [G, N, K]) against torch._grouped_mm (a loop of torch.mm per group
where this torch lacks it) on bench/shapes/moe_shapes.csv, each problem with a uniform and a seeded
skewed routing, both as CUDA graphs in interleaved rounds; the output is checked per group against
fp32 (bench/results/torch_gmm-<card>.json). --ptgmm, --grouped-gemm and --masked time the other
grouped ops the same way (bench/grouped_bench.py says against what). --fmoe times the whole MoE
expert layer, tgemm.fused_moe against stock PyTorch's best, for Mixtral-8x7B, Qwen3-30B-A3B and a
DeepSeek-V3 EP8 slice at 1 to 4096 tokens, with the decode floor (bench/moe_bench.py).
--fp8-contiguous and --fp8-masked time the FP8 block-scaled grouped GEMMs against tgemm's dense
gemm_a8w8_blockscale over the same total rows, TFLOP/s beside DeepGEMM's (bench/fp8_grouped_bench.py).

--batched times tgemm.batched_gemm against torch.bmm with the same stored layouts (a transposed
operand is the stored tensor's .transpose(1, 2) view for torch.bmm) on bench/shapes/batched_shapes.csv
(name,B,M,N,K,transpose_a,transpose_b), operands rotated past L2, both as CUDA graphs in interleaved
rounds; the output is checked against fp32 (bench/results/torch_batched-<card>.json).

--batched-a8w8 RECIPE times tgemm.batched_gemm_a8w8 (FP8 a [B, M, K], b [B, N, K], bf16 output;
fp8_tensor: a scale per product, fp8_rowwise: per-token [B, M, 1] x per-channel [B, N, 1]) against
two baselines on the batched suite: bf16 torch.bmm of the same products (the "speedup" column; FP8
has no torch.bmm) and a Python loop of torch._scaled_mm over the batch with the same operands and
scales ("vs_scaled_mm_loop"), all three as CUDA graphs in interleaved rounds over operands rotated
past L2; suite rows' transpose flags are ignored (8-bit operands are K-major), rows with K not a
multiple of 16 skipped (bench/results/torch_batched_a8w8_<recipe>-<card>.json).

--a8w8 RECIPE times tgemm.gemm_a8w8 (bf16 output) against PyTorch's own 8-bit GEMM with the same
operands and scales, the same way: fp8_tensor and fp8_rowwise against torch._scaled_mm
(per-tensor scales; per-token [M, 1] x per-channel [1, N] scales), int8_rowwise against
torch._int_mm followed by the scaling pass in PyTorch (torch._int_mm needs M > 16: smaller M are
skipped) (bench/results/torch_a8w8_<recipe>-<card>.json).

--blockscale LAYOUT times tgemm.gemm_a8w8_blockscale (bf16 output; operands and 1x128 / 128x128
scales from tgemm's block quantizers, x_scale row_major or mn_major) against --blockscale-peer:
per_tensor (default), tgemm.gemm_a8w8 with per-tensor scales on the same FP8 operands (what block
scales cost), or scaled_mm, torch._scaled_mm with the same block scales (cuBLASLt's block-scaled
default; torch takes x_scale MN-major and w_scale as the transpose of [ceil(N/128), ceil(K/128)],
copies made outside the timing), on the suite and on DeepGEMM's M = 4096 / 128 / 64, N = 7168,
K = 16384, whose TFLOP/s the summary lists beside DeepGEMM's published H800 figures
(bench/results/torch_a8w8_blockscale_<layout>[_scaled_mm]-<card>.json).

--quant times the quantization ops (tgemm.quant_*: per tensor, per token FP8 and INT8, 1x128 in
both scale layouts, 128x128) on [M, K] inputs of K = 4096 and 7168, M = 1 ... 16384: microseconds
per call and bytes moved (x read once, q and the scales written) per second as a fraction of the
device copy rate (bench/results/torch_quant-<card>.json).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the host tests import this file for its M grid and re-measure rule
    torch = None
    F = None

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPE_NAMES = ("bf16", "fp16", "fp32")
DEFAULT_SUITE = os.path.join(REPO, "bench", "shapes", "llm_shapes.csv")

# The M grid of src/core/m_grid.h: every M up to 16, then four steps an octave up to the largest M.
M_GRID_MAX = 16384
M_GRID_DENSE_TO = 16
M_GRID_LIMIT = 2**31 - 1
# 2^(j/4), the same doubles as m_grid.cpp's, scaled exactly by ldexp.
_M_GRID_STEPS = (1.0, 1.189207115002721, 1.4142135623730951, 1.681792830507429)


def torch_dtype(name: str):
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def m_grid(max_m: int = M_GRID_MAX) -> list[int]:
    """The M values from 1 to max_m of `tgemm bench --m-grid` (src/core/m_grid.h): 1..16 one by
    one, then round(2^(p + j/4)) below max_m, then max_m."""
    if not 1 <= max_m <= M_GRID_LIMIT:
        raise ValueError(f"the largest M of the grid must be in [1, {M_GRID_LIMIT}], got {max_m}")
    grid = list(range(1, min(max_m, M_GRID_DENSE_TO) + 1))
    p = 4  # 2^4 = M_GRID_DENSE_TO
    below = max_m > M_GRID_DENSE_TO
    while below:
        for step in _M_GRID_STEPS:
            m = math.floor(math.ldexp(step, p) + 0.5)
            if m >= max_m:
                below = False
                break
            if m > grid[-1]:
                grid.append(m)
        p += 1
    if grid[-1] != max_m:
        grid.append(max_m)
    return grid


def m_values(args) -> list[int]:
    """The M values of a run: --m's list, or the M grid up to --m-grid-max."""
    if args.m_grid:
        return m_grid(args.m_grid_max)
    return [int(v) for v in args.m.split(",") if v]


def counted_reading(measure, below: float) -> tuple[dict, dict | None]:
    """measure() returns one reading (a dict with "speedup"). A reading below `below` is taken
    again and the second counts, whatever it reads: (counted reading, first reading or None).
    One reading can land on a clock or power transient; `tgemm bench` applies the same rule."""
    first = measure()
    if first["speedup"] >= below:
        return first, None
    return measure(), first


def device_slug(name: str) -> str:
    """The card as the C++ bench and the tables name it (card_slug in src/core/settings.cpp): the
    first word after 'NVIDIA', alphanumerics only: 'NVIDIA H100 80GB HBM3' -> 'h100'."""
    words = name.lower().split()
    if words and words[0] == "nvidia":
        words = words[1:]
    return re.sub(r"[^a-z0-9]", "", words[0]) if words else ""


def current_commit() -> str:
    if os.environ.get("TGEMM_COMMIT"):
        return os.environ["TGEMM_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 and len(out.stdout.strip()) == 40 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def read_suite(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return [
            {"model": r["model"], "layer": r["layer"], "N": int(r["N"]), "K": int(r["K"])} for r in csv.DictReader(f)
        ]


class _Graph:
    """step(0..launches-1) captured in one CUDA graph on a private stream, after an eager warm-up
    on that stream (first-call resolution, workspaces, cuBLAS handles)."""

    def __init__(self, step, launches: int):
        self.launches = launches
        self.stream = torch.cuda.Stream()
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            for i in range(min(launches, 3)):
                step(i)
        self.stream.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, stream=self.stream):
            for i in range(launches):
                step(i)

    def replay(self, replays: int, warmup: int) -> list[float]:
        """Microseconds per launch for each of `replays` timed replays, after `warmup` untimed ones."""
        for _ in range(warmup):
            self.graph.replay()
        start = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        for r in range(replays):
            start[r].record()
            self.graph.replay()
            end[r].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1000.0 / self.launches for s, e in zip(start, end)]


def time_graph(step, launches: int, replays: int, warmup: int = 3) -> list[float]:
    """Microseconds per launch of step(i), captured `launches` times in one CUDA graph, for each of
    `replays` timed replays."""
    return _Graph(step, launches).replay(replays, warmup)


def time_interleaved(steps: list, launches: int, replays: int, rounds: int = 10) -> tuple[list, list]:
    """The steps' graphs timed in interleaved rounds, as `tgemm bench` times baseline and tgemm:
    each round replays every graph (2 warm-up + ~replays / 5 timed replays), the order reversed
    on odd rounds, so the GPU's clock drift under sustained load hits all of them alike. Returns
    (all samples per step, each step's median per round) for paired_ratio."""
    graphs = [_Graph(step, launches) for step in steps]
    per_round = max(3, replays // 5)
    samples: list[list[float]] = [[] for _ in steps]
    medians: list[list[float]] = [[] for _ in steps]
    for r in range(rounds):
        order = range(len(graphs)) if r % 2 == 0 else reversed(range(len(graphs)))
        for j in order:
            t = graphs[j].replay(per_round, 2)
            samples[j] += t
            medians[j].append(statistics.median(t))
    return samples, medians


def plan_slots(est_us: float, base_rounds: int = 10) -> tuple[int, int]:
    """(launches a graph, rounds) for a call of ~est_us, as `tgemm bench` plans them (plan_slots in
    tuner/select.h): a graph holds ~6 ms of work, 2-20 launches, and the rounds grow as the
    launches shrink (base_rounds * 20 / launches, up to 60). Why: ~270 ms slots biased two graphs
    of the same kernel by 2-5% on ~2.7 ms problems; ~27 ms slots did not."""
    launches = int(min(max(math.floor(6000.0 / max(est_us, 1e-3) + 0.5), 2), 20))  # C++ std::round
    rounds = min(max(-(-base_rounds * 20 // launches), base_rounds), 60)
    return launches, rounds


def estimate_us(m: int, n: int, k: int, elem_bytes: int) -> float:
    """A call's expected time for plan_slots: its FLOPs at ~650 TFLOP/s or its bytes at ~3 TB/s."""
    return max(2.0 * m * n * k / 6.5e8, (m * k + n * k + m * n) * elem_bytes / 3.0e6, 1.0)


def paired_ratio(a: list[float], b: list[float]) -> float:
    """Median over rounds of a[r] / b[r] (the two medians of round r, timed back to back): drift
    between rounds cancels in each ratio (the C++ bench's estimate, tuner/select.h)."""
    return statistics.median(x / y for x, y in zip(a, b) if x > 0 and y > 0)


def _stream_rates() -> tuple[float, float]:
    """(copy, read) TB/s of the device: a 1 GiB copy (read + write bytes over time) and a 1 GiB
    read (a sum over it)."""
    n = 1 << 29  # bf16 elements: 1 GiB
    src = torch.empty(n, dtype=torch.bfloat16, device="cuda").normal_()
    dst = torch.empty_like(src)
    acc = torch.empty((), dtype=torch.float32, device="cuda")
    words = src.view(torch.float32)
    copy_us = statistics.median(time_graph(lambda i: dst.copy_(src), launches=2, replays=10))
    read_us = statistics.median(time_graph(lambda i: torch.sum(words, dim=0, out=acc), launches=2, replays=10))
    return 2 * 2 * n / (copy_us * 1e-6) / 1e12, 2 * n / (read_us * 1e-6) / 1e12


def copy_tbps() -> float:
    """Device copy bandwidth (read + write bytes over time) of a 1 GiB copy: the quantization ops'
    yardstick (they read and write)."""
    return _stream_rates()[0]


def floor_tbps() -> float:
    """The streaming rate for the read floors (TB/s): the faster of the copy and the read rate. A
    copy alone undershoots what a kernel that only reads reaches (on an H200 2.7 TB/s where the
    grouped decode kernels read their weights at ~4 TB/s), and a floor from it reads as a kernel
    beating its bound."""
    return max(_stream_rates())


class Problem:
    """Rotating input sets for one (M, N, K): together more than 3x L2, within a memory budget."""

    def __init__(self, m, n, k, dtype, out_dtype, bias, l2_bytes, budget, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        esize = torch.finfo(dtype).bits // 8
        set_bytes = (m * k + n * k + (n if bias else 0)) * esize
        want = max(2, math.ceil(3 * l2_bytes / max(set_bytes, 1)))
        count = max(1, min(want, budget // max(set_bytes, 1), 256))
        self.sets = []
        for _ in range(count):
            # Inputs ~ N(0, 1), weights scaled by 1/sqrt(K): outputs ~ N(0, 1), never zeros.
            x = torch.randn(m, k, device="cuda", dtype=torch.float32, generator=g).to(dtype)
            w = (torch.randn(n, k, device="cuda", dtype=torch.float32, generator=g) / math.sqrt(k)).to(dtype)
            b = torch.randn(n, device="cuda", dtype=torch.float32, generator=g).to(dtype) if bias else None
            self.sets.append((x, w, b))
        self.input_bytes = set_bytes
        self.out_dtype = out_dtype


def check(y: torch.Tensor, x, w, b, out_dtype) -> int:
    """Elements of y outside tolerance of the fp32 reference (rtol + atol from the output dtype)."""
    ref = x.float() @ w.float().t()
    if b is not None:
        ref = ref + b.float()
    tol = {torch.bfloat16: 2e-2, torch.float16: 1e-2, torch.float32: 1e-3}[out_dtype]
    bad = (y.float() - ref).abs() > tol + tol * ref.abs()
    bad |= ~torch.isfinite(y.float())
    return int(bad.sum().item())


def rotated(sets: list, fn):
    """step(i) for time_interleaved: fn on the i-th operand set, cycling through them."""
    return lambda i: fn(*sets[i % len(sets)])


def time_linear_pair(steps: list, launches: int, replays: int, rounds: int) -> dict:
    """One reading of F.linear (steps[0]) against tgemm (steps[1]): the row's timing fields."""
    (tb, tt), (rb, rt) = time_interleaved(steps, launches, replays, rounds)
    b_us, t_us = statistics.median(tb), statistics.median(tt)
    return {
        "baseline_us": b_us,
        "baseline_spread": spread(tb),
        "tgemm_us": t_us,
        "tgemm_spread": spread(tt),
        "speedup": paired_ratio(rb, rt),
        "speedup_of_medians": b_us / t_us,
    }


def time_gelu_trio(steps: list, launches: int, replays: int, rounds: int) -> dict:
    """One reading of the stock, split and fused GELU paths (steps in that order)."""
    (ts, tp, tf), (rs, rp, rf) = time_interleaved(steps, launches, replays, rounds)
    s_us, p_us, f_us = statistics.median(ts), statistics.median(tp), statistics.median(tf)
    return {
        "baseline_us": s_us,
        "baseline_spread": spread(ts),
        "split_us": p_us,
        "split_spread": spread(tp),
        "tgemm_us": f_us,
        "tgemm_spread": spread(tf),
        "speedup": paired_ratio(rs, rf),
        "vs_split": paired_ratio(rp, rf),
    }


def run_suite(args, device_props) -> tuple[list[dict], dict]:
    import tgemm

    dtype = torch_dtype(args.dtype)
    out_dtype = torch_dtype(args.out_dtype) if args.out_dtype else dtype
    otype = None if out_dtype == dtype else out_dtype
    suite = read_suite(args.suite)
    if args.filter:
        suite = [s for s in suite if args.filter in f"{s['model']}/{s['layer']}"]
    ms = m_values(args)
    l2 = device_props.L2_cache_size
    free, _ = torch.cuda.mem_get_info()
    budget = min(free // 4, 24 << 30)
    tbps = floor_tbps()
    print(
        f"device {device_props.name} ({device_props.multi_processor_count} SMs, L2 {l2 >> 20} MB), "
        f"stream {tbps:.2f} TB/s, "
        f"torch {torch.__version__}, tables: {':'.join(tgemm.table_files()) or '(none)'}"
    )
    header = (
        f"{'model':<15} {'layer':<8} {'M':>5} {'N':>6} {'K':>6} | {'F.linear':>9} {'tgemm':>9} {'speedup':>8} | "
        f"{'floor':>8} {'TFLOP/s':>8} | solution (level) check"
    )
    print(header)
    rows = []
    seed = 1
    for m in ms:
        for s in suite:
            n, k = s["N"], s["K"]
            p = Problem(m, n, k, dtype, out_dtype, args.bias, l2, budget, seed)
            seed += 1
            nsets = len(p.sets)
            plan_launches, rounds = plan_slots(estimate_us(m, n, k, 2), args.rounds or 10)
            launches = max(args.launches or plan_launches, nsets)
            rounds = args.rounds or rounds
            x0, w0, b0 = p.sets[0]
            if otype is None:
                base = rotated(p.sets, F.linear)
            else:  # F.linear has no output dtype: the stock path is linear + cast
                base = rotated(p.sets, lambda x, w, b: F.linear(x, w, b).to(otype))
            tg = rotated(p.sets, lambda x, w, b: tgemm.gemm_a16w16(x, w, b, otype))
            info = tgemm.describe(x0, w0, b0, otype)
            status = "-"
            if not args.no_check:
                y = tgemm.gemm_a16w16(x0, w0, b0, otype)
                bad = check(y, x0, w0, b0, out_dtype)
                status = "ok" if bad == 0 else f"{bad} bad"
                del y

            measure = functools.partial(time_linear_pair, [base, tg], launches, args.replays, rounds)
            reading, first = counted_reading(measure, args.remeasure_below)
            b_us, t_us = reading["baseline_us"], reading["tgemm_us"]
            out_bytes = m * n * (torch.finfo(out_dtype).bits // 8)
            bytes_moved = p.input_bytes + out_bytes
            floor_us = bytes_moved / (tbps * 1e12) * 1e6
            row = {
                "family": "a16w16",
                "model": s["model"],
                "layer": s["layer"],
                "M": m,
                "N": n,
                "K": k,
                "dtype": str(dtype),
                "outdtype": str(out_dtype),
                "bias": bool(args.bias),
                "baseline": "F.linear",
                **reading,
                "remeasured": first is not None,
                "solution": info["kernelName"],
                "level": info["level"],
                "where": info["where"],
                "rotations": nsets,
                "check": status,
                "tbps": bytes_moved / (t_us * 1e-6) / 1e12,
                "tflops": 2.0 * m * n * k / (t_us * 1e-6) / 1e12,
                "floor_us": floor_us,
            }
            if first is not None:
                row["first_reading"] = first
            rows.append(row)
            again = f" (re-measured, first {first['speedup']:.3f}x)" if first is not None else ""
            print(
                f"{s['model']:<15} {s['layer']:<8} {m:>5} {n:>6} {k:>6} | "
                f"{b_us:>9.2f} {t_us:>9.2f} {row['speedup']:>7.3f}x | "
                f"{floor_us:>8.2f} {row['tflops']:>8.1f} | {info['kernelName']} ({info['level']}) {status}{again}",
                flush=True,
            )
    torch.cuda.empty_cache()
    summary = speedup_summary(rows)
    extra = {"floor_tbps": tbps, "tables": tgemm.table_files(), "suite": os.path.relpath(args.suite, REPO)}
    return rows, {"summary": summary, **extra}


def check_gelu(y: torch.Tensor, x, w, b, approximate: str) -> int:
    """Elements of y outside tolerance of F.gelu of the fp32 reference (the output dtype's)."""
    ref = x.float() @ w.float().t()
    if b is not None:
        ref = ref + b.float()
    ref = F.gelu(ref, approximate=approximate)
    tol = {torch.bfloat16: 2e-2, torch.float16: 1e-2}[y.dtype]
    bad = (y.float() - ref).abs() > tol + tol * ref.abs()
    bad |= ~torch.isfinite(y.float())
    return int(bad.sum().item())


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def speedup_summary(rows: list[dict]) -> dict:
    """The summary of a suite's rows: count, geomean/min/max speedup, how many below 0.98x, failed
    the check, or were re-measured."""
    speedups = [r["speedup"] for r in rows]
    return {
        "problems": len(rows),
        "geomean_speedup": geomean(speedups) if speedups else 0.0,
        "min_speedup": min(speedups) if speedups else 0.0,
        "max_speedup": max(speedups) if speedups else 0.0,
        "below_0_98": sum(v < 0.98 for v in speedups),
        "check_failures": sum(r["check"] not in ("ok", "-") for r in rows),
        "remeasured": sum(r["remeasured"] for r in rows),
    }


def print_speedup_summary(summary: dict, what: str, baseline: str) -> None:
    """The one line a suite mode prints after its table (speedup_summary's fields)."""
    print(
        f"\n{summary['problems']} problems: {what} geomean {summary['geomean_speedup']:.3f}x over {baseline} "
        f"(min {summary['min_speedup']:.3f}x, max {summary['max_speedup']:.3f}x), {summary['below_0_98']} below "
        f"0.98x, {summary['check_failures']} failed the correctness check"
    )


A8W8_RECIPES = ("fp8_tensor", "fp8_rowwise", "int8_rowwise")


def quantize_rows(t, dtype, per_row: bool):
    """t [R, K] fp32 -> (q [R, K] of dtype, fp32 scale [R, 1] or 0-d) with t ~= q * scale."""
    qmax = 448.0 if dtype == torch.float8_e4m3fn else 127.0
    amax = t.abs().amax(dim=1, keepdim=True) if per_row else t.abs().amax()
    scale = (amax / qmax).clamp(min=1e-12)
    q = (t / scale).clamp(-qmax, qmax)
    return (q.round().to(dtype) if dtype == torch.int8 else q.to(dtype)), scale


def a8w8_baseline(recipe: str):
    """PyTorch's path for one a8w8 recipe: fn(x, w, xs, ws, b) -> bf16 [M, N]."""
    if recipe == "int8_rowwise":

        def int_mm(x, w, xs, ws, b):
            y = torch._int_mm(x, w.t()).float() * xs * ws.t()
            return (y + b.float() if b is not None else y).to(torch.bfloat16)

        return int_mm
    rowwise = recipe == "fp8_rowwise"
    return lambda x, w, xs, ws, b: torch._scaled_mm(
        x, w.t(), scale_a=xs, scale_b=ws.t() if rowwise else ws, bias=b, out_dtype=torch.bfloat16
    )


# FP8 tensor cores accumulate with fewer bits than fp32: per element, up to 2^-11 of the sum of the
# products' magnitudes (the bound tests/python/test_a8w8.py holds every FP8 path to); int8 is exact.
FP8_ACCUMULATION = 2.0**-11


def count_bad(y, ref, xd=None, wd=None) -> int:
    """Elements of y outside 2e-2 (absolute and relative) of ref plus, for FP8 (dequantized
    operands xd [M, K] and wd [N, K] given), the accumulation bound; non-finite ones count as bad."""
    allowed = 2e-2 + 2e-2 * ref.abs()
    if xd is not None:
        allowed = allowed + FP8_ACCUMULATION * (xd.abs() @ wd.abs().t())
    bad = ((y.float() - ref).abs() > allowed) | ~torch.isfinite(y.float())
    return int(bad.sum().item())


def check_a8w8(y, x, w, xs, ws, b) -> int:
    """Elements of y outside tolerance of the dequantized fp32 reference."""
    xd, wd = x.float() * xs, w.float() * ws.reshape(-1, 1)
    ref = xd @ wd.t()
    if b is not None:
        ref = ref + b.float()
    return count_bad(y, ref, xd, wd) if x.dtype == torch.float8_e4m3fn else count_bad(y, ref)


# DeepGEMM's published H800 FP8 block-scaled figures (README, N = 7168, K = 16384): M -> TFLOP/s.
DEEPGEMM_H800_TFLOPS = {4096: 1426.0, 128: 645.0, 64: 336.0}
DEEPGEMM_SHAPE = {"model": "deepgemm", "layer": "n7168_k16384", "N": 7168, "K": 16384}


def a8w8_spec(args):
    """--a8w8: tgemm.gemm_a8w8 against PyTorch's path (a8w8_baseline); sets (x, w, xs, ws, b)."""
    import tgemm

    recipe = args.a8w8
    dtype = torch.int8 if recipe.startswith("int8") else torch.float8_e4m3fn
    per_row = recipe.endswith("rowwise")

    def make_set(g, m, n, k):
        x, xs = quantize_rows(torch.randn(m, k, device="cuda", generator=g), dtype, per_row)
        w, ws = quantize_rows(torch.randn(n, k, device="cuda", generator=g), dtype, per_row)
        b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16) if args.bias else None
        return x, w, xs, ws, b

    return {
        "family": "a8w8",
        "scales": recipe,
        "dtype": dtype,
        "baseline_name": "torch._int_mm+scale" if dtype == torch.int8 else "torch._scaled_mm",
        "baseline": a8w8_baseline(recipe),
        "tgemm": lambda x, w, xs, ws, b: tgemm.gemm_a8w8(x, w, xs, ws, b),
        "describe": lambda x, w, xs, ws, b: tgemm.describe_a8w8(x, w, xs, ws, b),
        "check": lambda y, x, w, xs, ws, b: check_a8w8(y, x, w, xs, ws, b),
        "make_set": make_set,
        "skip": (lambda m: "torch._int_mm needs M > 16" if m <= 16 else None) if dtype == torch.int8 else None,
        "problems": [(m, s) for m in m_values(args) for s in suite_of(args)],
    }


W4_FORMS = ("a16w4", "a8w4", "a4w4")


def w4_spec(args, form: str):
    """--a16w4, --a8w4, --a4w4: tgemm.gemm_a16w4 (bf16 activations), gemm_a8w4 (per-token FP8
    activations from tgemm.quant_per_token) or gemm_a4w4 (MXFP4 activations from
    tgemm.quant_mxfp4), MXFP4 weights from tgemm.quant_mxfp4, against F.linear on the bf16 weight
    the 4-bit one came from; sets (x, w, q, s, b, xq, xs). The floor is the streaming read of the
    4-bit problem's bytes (codes, scales, the activations in the op's format, the output)."""
    import tgemm

    def make_set(g, m, n, k):
        x = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
        w = (torch.randn(n, k, device="cuda", generator=g) / math.sqrt(k)).to(torch.bfloat16)
        q, s = tgemm.quant_mxfp4(w)
        b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16) if args.bias else None
        xq, xs = (
            (None, None) if form == "a16w4" else tgemm.quant_per_token(x) if form == "a8w4" else tgemm.quant_mxfp4(x)
        )
        return x, w, q, s, b, xq, xs

    def dequant_x(x, xq, xs):
        return x.float() if form == "a16w4" else xq.float() * xs if form == "a8w4" else tgemm.dequant_mxfp4(xq, xs)

    def check(y, x, w, q, s, b, xq, xs):
        ref = dequant_x(x, xq, xs) @ tgemm.dequant_mxfp4(q, s).t()
        return count_bad(y, ref if b is None else ref + b.float())

    def describe(x, w, q, s, b, *_):
        # The path rule of src/fp4/fp4_route.h for the aligned rows this bench makes, and the
        # TGEMM_FP4_PATH that forces one where it can run.
        m, force = x.shape[0], os.environ.get("TGEMM_FP4_PATH", "auto")
        gemv, mma = m <= 4, m <= 32 and form != "a4w4"
        if force == "dequant" or not (gemv or mma):
            name = "mxfp4_dequant+" + tgemm.describe(x, w, b)["kernelName"]
        elif (force == "mma" and mma) or not gemv:
            name = f"mxfp4_mma<{form}>"
        elif force == "gemv_rows":
            name = f"mxfp4_gemv_rows<{form}>"
        else:
            name = f"mxfp4_gemv<{form}>"
        return {"kernelName": name, "level": "-"}

    gemm = {
        "a16w4": lambda x, w, q, s, b, xq, xs: tgemm.gemm_a16w4(x, q, s, b),
        "a8w4": lambda x, w, q, s, b, xq, xs: tgemm.gemm_a8w4(xq, q, xs, s, b),
        "a4w4": lambda x, w, q, s, b, xq, xs: tgemm.gemm_a4w4(xq, q, xs, s, b),
    }[form]
    # Bytes a row of activations the tgemm side reads: bf16; e4m3 and a per-token fp32 scale;
    # e2m1 codes and one E8M0 scale per 32.
    x_row = {"a16w4": lambda k: 2 * k, "a8w4": lambda k: k + 4, "a4w4": lambda k: k // 2 + k // 32}[form]
    return {
        "family": form,
        "scales": "mxfp4" if form == "a16w4" else "mxfp4, per-token fp8 x" if form == "a8w4" else "mxfp4 x and w",
        "dtype": torch.bfloat16,
        "baseline_name": "F.linear",
        "baseline": lambda x, w, q, s, b, *_: torch.nn.functional.linear(x, w, b),
        "tgemm": gemm,
        "describe": describe,
        "check": check,
        "make_set": make_set,
        "skip": None,
        "problems": [(m, s) for m in m_values(args) for s in suite_of(args) if s["K"] % 32 == 0],  # MXFP4's K rule
        # The tgemm side reads the 4-bit weight (K / 2 bytes a row) and its scales (K / 32).
        "bytes": lambda m, n, k: n * k // 2 + n * k // 32 + m * x_row(k) + 2 * m * n,
        "set_bytes": lambda m, n, k: (
            2 * m * k + 2 * n * k + n * k // 2 + n * k // 32 + m * x_row(k) + (2 * n if args.bias else 0)
        ),
    }


def check_blockscale(y, x, w, xs, ws, b) -> int:
    """Elements of y outside tolerance of the block-dequantized fp32 reference."""
    k, n = x.shape[1], w.shape[0]
    xd = x.float() * xs.float().repeat_interleave(128, dim=1)[:, :k]
    wd = w.float() * ws.float().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:n, :k]
    ref = xd @ wd.t()
    if b is not None:
        ref = ref + b.float()
    return count_bad(y, ref, xd, wd)


def scaled_mm_block_scales(xs, ws):
    """x_scale and w_scale as torch._scaled_mm's block-scaled path takes them: x_scale [M, L]
    MN-major (stride (1, M)), w_scale [L, ceil(N/128)] the transpose of a contiguous
    [ceil(N/128), L]."""
    return xs.t().contiguous().t(), ws.contiguous().t()


def blockscale_spec(args):
    """--blockscale LAYOUT: tgemm.gemm_a8w8_blockscale against --blockscale-peer: tgemm's own
    per-tensor FP8 GEMM (tgemm.gemm_a8w8 with scalar scales) on the same FP8 operands, or
    torch._scaled_mm with the same block scales (cuBLASLt's block-scaled default); sets (x, w, xs,
    ws, b, x_tensor_scale, w_tensor_scale, xs_torch, ws_torch). The suite at --m, then DeepGEMM's
    three problems (M = 4096, 128, 64; N = 7168, K = 16384)."""
    import tgemm

    mn_major = args.blockscale == "mn_major"

    def make_set(g, m, n, k):
        x, xs = tgemm.quant_fp8_per_block_1x128(torch.randn(m, k, device="cuda", generator=g).bfloat16(), mn_major)
        w, ws = tgemm.quant_fp8_per_block_128x128(torch.randn(n, k, device="cuda", generator=g).bfloat16())
        b = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16) if args.bias else None
        one = torch.ones(1, device="cuda")
        return (x, w, xs, ws, b, xs.amax().reshape(1) * one, ws.amax().reshape(1) * one) + scaled_mm_block_scales(
            xs, ws
        )

    if args.blockscale_peer == "scaled_mm":
        baseline_name = "torch._scaled_mm block scales"

        def baseline(x, w, xs, ws, b, xt, wt, xs_t, ws_t):
            return torch._scaled_mm(x, w.t(), scale_a=xs_t, scale_b=ws_t, bias=b, out_dtype=torch.bfloat16)

    else:
        baseline_name = "tgemm.gemm_a8w8 per-tensor"

        def baseline(x, w, xs, ws, b, xt, wt, xs_t, ws_t):
            return tgemm.gemm_a8w8(x, w, xt, wt, b)

    problems = [(m, s) for m in m_values(args) for s in suite_of(args)]
    problems += [(m, DEEPGEMM_SHAPE) for m in DEEPGEMM_H800_TFLOPS]
    return {
        "family": "a8w8_blockscale",
        "scales": f"block ({args.blockscale} x_scale)",
        "dtype": torch.float8_e4m3fn,
        "baseline_name": baseline_name,
        "baseline": baseline,
        "tgemm": lambda x, w, xs, ws, b, *_: tgemm.gemm_a8w8_blockscale(x, w, xs, ws, b),
        "describe": lambda x, w, xs, ws, b, *_: tgemm.describe_a8w8_blockscale(x, w, xs, ws, b),
        "check": lambda y, x, w, xs, ws, b, *_: check_blockscale(y, x, w, xs, ws, b),
        "make_set": make_set,
        "skip": None,
        "problems": problems,
    }


def suite_of(args) -> list[dict]:
    suite = read_suite(args.suite)
    return [s for s in suite if args.filter in f"{s['model']}/{s['layer']}"] if args.filter else suite


def run_8bit_suite(args, device_props, spec) -> tuple[list[dict], dict]:
    """spec's tgemm op against spec's baseline on each of spec's problems, bf16 out: operand sets
    rotated past L2, CUDA graphs in interleaved rounds, the paired median ratio."""
    l2 = device_props.L2_cache_size
    free, _ = torch.cuda.mem_get_info()
    budget = min(free // 4, 24 << 30)
    tbps = floor_tbps()
    print(
        f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}, {spec['family']} "
        f"{spec['scales']}, baseline {spec['baseline_name']}"
    )
    rows = []
    seed = 1
    for m, s in spec["problems"]:
        why = spec["skip"](m) if spec["skip"] else None
        if why:
            print(f"M={m} {s['model']}/{s['layer']}: skipped, {why}")
            continue
        n, k = s["N"], s["K"]
        g = torch.Generator(device="cuda").manual_seed(seed)
        seed += 1
        set_bytes = m * k + n * k + 4 * (m + n) + (2 * n if args.bias else 0)
        if "set_bytes" in spec:
            set_bytes = spec["set_bytes"](m, n, k)
        count = max(1, min(max(2, math.ceil(3 * l2 / set_bytes)), budget // set_bytes, 256))
        sets = [spec["make_set"](g, m, n, k) for _ in range(count)]
        try:
            spec["baseline"](*sets[0])
        except RuntimeError as e:
            print(f"{s['model']:<15} {s['layer']:<8} {m:>5} {n:>6} {k:>6} | {spec['baseline_name']} refused it: {e}")
            continue
        launches, rounds = plan_slots(estimate_us(m, n, k, 1), args.rounds or 10)
        launches = max(args.launches or launches, len(sets))
        rounds = args.rounds or rounds
        base = rotated(sets, spec["baseline"])
        tg = rotated(sets, spec["tgemm"])
        info = spec["describe"](*sets[0])
        status = "-"
        if not args.no_check:
            bad = spec["check"](spec["tgemm"](*sets[0]), *sets[0])
            status = "ok" if bad == 0 else f"{bad} bad"
        measure = functools.partial(time_linear_pair, [base, tg], launches, args.replays, rounds)
        reading, first = counted_reading(measure, args.remeasure_below)
        t_us = reading["tgemm_us"]
        bytes_moved = spec["bytes"](m, n, k) if "bytes" in spec else m * k + n * k + 2 * m * n
        row = {
            "family": spec["family"],
            "model": s["model"],
            "layer": s["layer"],
            "M": m,
            "N": n,
            "K": k,
            "dtype": str(spec["dtype"]),
            "scales": spec["scales"],
            "bias": bool(args.bias),
            "baseline": spec["baseline_name"],
            **reading,
            "remeasured": first is not None,
            "solution": info["kernelName"],
            "level": info["level"],
            "check": status,
            "tbps": bytes_moved / (t_us * 1e-6) / 1e12,
            "tflops": 2.0 * m * n * k / (t_us * 1e-6) / 1e12,
            "baseline_tflops": 2.0 * m * n * k / (reading["baseline_us"] * 1e-6) / 1e12,
            "floor_us": bytes_moved / (tbps * 1e12) * 1e6,
        }
        rows.append(row)
        print(
            f"{s['model']:<15} {s['layer']:<8} {m:>5} {n:>6} {k:>6} | {reading['baseline_us']:>9.2f} "
            f"{t_us:>9.2f} {row['speedup']:>7.3f}x | {row['floor_us']:>8.2f} {row['tflops']:>8.1f} | "
            f"{info['kernelName']} ({info['level']}) {status}",
            flush=True,
        )
        del sets, base, tg
    torch.cuda.empty_cache()
    summary = speedup_summary(rows)
    if spec["family"] == "a8w8_blockscale":
        large = [r["speedup"] for r in rows if r["M"] >= 2048]
        summary["min_speedup_m_ge_2048"] = min(large) if large else 0.0
        summary["deepgemm"] = [
            {
                "M": r["M"],
                "N": r["N"],
                "K": r["K"],
                "tflops": r["tflops"],
                "baseline_tflops": r["baseline_tflops"],
                "deepgemm_h800_tflops": DEEPGEMM_H800_TFLOPS[r["M"]],
            }
            for r in rows
            if r["model"] == DEEPGEMM_SHAPE["model"]
        ]
    return rows, {"summary": summary, "floor_tbps": tbps, "suite": os.path.relpath(args.suite, REPO)}


def moe_routing(g: int, tokens_per_expert: int, skewed: bool, seed: int) -> list[int]:
    """Group sizes summing to g * tokens_per_expert: all equal (uniform), or Zipf-like (skewed:
    expert i of a seeded permutation gets a share proportional to (i + 1)^-1.2, so the busiest
    expert holds several times the mean and some get none)."""
    total = g * tokens_per_expert
    if not skewed:
        return [tokens_per_expert] * g
    gen = torch.Generator().manual_seed(seed)
    weights = (torch.arange(g, dtype=torch.float64) + 1.0) ** -1.2
    weights = weights[torch.randperm(g, generator=gen)]
    sizes = torch.floor(weights / weights.sum() * total).to(torch.int64)
    sizes[int(torch.argmax(weights))] += total - int(sizes.sum())
    return sizes.tolist()


def read_moe_suite(args) -> list[dict]:
    """The MoE suite's problems (name, G, tokens per expert, N, K), those --filter names only."""
    with open(args.suite, newline="") as f:
        suite = [
            {
                "name": r["name"],
                "G": int(r["G"]),
                "tpe": int(r["tokens_per_expert"]),
                "N": int(r["N"]),
                "K": int(r["K"]),
            }
            for r in csv.DictReader(f)
        ]
    return [s for s in suite if not args.filter or args.filter in s["name"]]


def gmm_baseline():
    """PyTorch's grouped GEMM: (name, fn(lhs, w, sizes_host, offs) -> [M, N]) with w [G, N, K];
    torch._grouped_mm where this torch has it, else a loop of torch.mm per group (host sizes)."""
    if hasattr(torch, "_grouped_mm"):
        return "torch._grouped_mm", lambda lhs, w, sizes, offs: torch._grouped_mm(lhs, w.transpose(-2, -1), offs=offs)

    def loop(lhs, w, sizes, offs):
        out = torch.empty(lhs.shape[0], w.shape[1], dtype=lhs.dtype, device=lhs.device)
        begin = 0
        for i, size in enumerate(sizes):
            torch.mm(lhs[begin : begin + size], w[i].t(), out=out[begin : begin + size])
            begin += size
        return out

    return "torch.mm per group", loop


def gmm_steps(baseline, gmm, lhs, w, sizes, gs, offs) -> list:
    """The baseline's and tgemm's step(i) on one problem, for time_linear_pair."""
    return [lambda i: baseline(lhs, w, sizes, offs), lambda i: gmm(lhs, w, gs, None, True)]


def check_gmm(y, lhs, w, sizes) -> int:
    """Elements of y outside bf16 tolerance of a per-group fp32 reference."""
    bad, begin = 0, 0
    for i, size in enumerate(sizes):
        ref = lhs[begin : begin + size].float() @ w[i].float().t()
        got = y[begin : begin + size].float()
        bad += int((((got - ref).abs() > 2e-2 + 2e-2 * ref.abs()) | ~torch.isfinite(got)).sum().item())
        begin += size
    return bad


def run_gmm_suite(args, device_props) -> tuple[list[dict], dict]:
    """tgemm.gmm (rhs [G, N, K], bf16) against PyTorch's grouped GEMM on the MoE suite, with uniform
    and skewed routings, both timed as CUDA graphs in interleaved rounds."""
    import tgemm

    base_name, baseline = gmm_baseline()
    suite = read_moe_suite(args)
    tbps = floor_tbps()
    print(f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}, baseline {base_name}")
    rows = []
    for seed, (s, skewed) in enumerate((s, sk) for s in suite for sk in (False, True)):
        g, n, k = s["G"], s["N"], s["K"]
        m = g * s["tpe"]
        sizes = moe_routing(g, s["tpe"], skewed, seed)
        gen = torch.Generator(device="cuda").manual_seed(seed)
        lhs = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        w = (torch.randn(g, n, k, device="cuda", generator=gen) / k**0.5).to(torch.bfloat16)
        gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        offs = torch.cumsum(gs, 0, dtype=torch.int32)
        routing = "skewed" if skewed else "uniform"
        try:
            baseline(lhs, w, sizes, offs)
        except RuntimeError as e:
            print(f"{s['name']:<30} {routing:<8} | {base_name} refused it: {e}")
            continue
        status = "-"
        if not args.no_check:
            bad = check_gmm(tgemm.gmm(lhs, w, gs, None, True), lhs, w, sizes)
            status = "ok" if bad == 0 else f"{bad} bad"
        touched = sum(1 for v in sizes if v > 0)
        bytes_moved = 2 * (m * k + touched * n * k + m * n)
        launches, rounds = plan_slots(max(estimate_us(m, n, k, 2), bytes_moved / 3.0e6), args.rounds or 10)
        launches = args.launches or launches
        rounds = args.rounds or rounds
        steps = gmm_steps(baseline, tgemm.gmm, lhs, w, sizes, gs, offs)
        measure = functools.partial(time_linear_pair, steps, launches, args.replays, rounds)
        reading, first = counted_reading(measure, args.remeasure_below)
        t_us = reading["tgemm_us"]
        row = {
            "family": "gmm",
            "model": s["name"],
            "layer": routing,
            "G": g,
            "M": m,
            "N": n,
            "K": k,
            "routing": routing,
            "max_group": max(sizes),
            "baseline": base_name,
            **reading,
            "remeasured": first is not None,
            # TGEMM_GROUPED_BACKEND: the grouped backend the run forced (auto: gmm's own rule).
            "solution": "gmm:" + (os.environ.get("TGEMM_GROUPED_BACKEND") or "auto"),
            "check": status,
            "tbps": bytes_moved / (t_us * 1e-6) / 1e12,
            "tflops": 2.0 * m * n * k / (t_us * 1e-6) / 1e12,
            "floor_us": bytes_moved / (tbps * 1e12) * 1e6,
        }
        rows.append(row)
        print(
            f"{s['name']:<30} {routing:<8} {m:>6} {n:>6} {k:>6} | {reading['baseline_us']:>9.2f} {t_us:>9.2f} "
            f"{row['speedup']:>7.3f}x | {row['floor_us']:>8.2f} {row['tflops']:>8.1f} | {status}",
            flush=True,
        )
        del lhs, w, gs, offs
    torch.cuda.empty_cache()
    summary = speedup_summary(rows)
    return rows, {"summary": summary, "floor_tbps": tbps, "suite": os.path.relpath(args.suite, REPO)}


def read_batched_suite(path: str) -> list[dict]:
    """name,B,M,N,K,transpose_a,transpose_b rows."""
    with open(path, newline="") as f:
        return [
            {
                "name": r["name"],
                "B": int(r["B"]),
                "M": int(r["M"]),
                "N": int(r["N"]),
                "K": int(r["K"]),
                "ta": r["transpose_a"] == "True",
                "tb": r["transpose_b"] == "True",
            }
            for r in csv.DictReader(f)
        ]


def batched_sets(s: dict, dtype, l2_bytes: int, budget: int, seed: int) -> list:
    """Rotating (a, b) pairs in their stored layouts, together more than 3x L2 within the budget;
    values ~ N(0, 1), b scaled by 1/sqrt(K) (outputs ~ N(0, 1))."""
    bsz, m, n, k = s["B"], s["M"], s["N"], s["K"]
    esize = torch.finfo(dtype).bits // 8
    set_bytes = bsz * (m * k + n * k) * esize
    count = max(1, min(max(2, math.ceil(3 * l2_bytes / set_bytes)), budget // set_bytes, 64))
    g = torch.Generator(device="cuda").manual_seed(seed)
    sets = []
    for _ in range(count):
        a_shape = (bsz, k, m) if s["ta"] else (bsz, m, k)
        b_shape = (bsz, n, k) if s["tb"] else (bsz, k, n)
        a = torch.randn(a_shape, device="cuda", generator=g).to(dtype)
        b = (torch.randn(b_shape, device="cuda", generator=g) / math.sqrt(k)).to(dtype)
        sets.append((a, b))
    return sets


def bmm_operands(a, b, ta: bool, tb: bool):
    """torch.bmm's [B, M, K] and [B, K, N] views of the stored operands."""
    return (a.transpose(1, 2) if ta else a), (b.transpose(1, 2) if tb else b)


def check_batched(y: torch.Tensor, x, w, out_dtype) -> int:
    """Elements of y [B, M, N] outside tolerance of torch.bmm in fp32 (check()'s tolerances)."""
    ref = torch.bmm(x.float(), w.float())
    tol = {torch.bfloat16: 2e-2, torch.float16: 1e-2, torch.float32: 1e-3}[out_dtype]
    bad = ((y.float() - ref).abs() > tol + tol * ref.abs()) | ~torch.isfinite(y.float())
    return int(bad.sum().item())


def run_batched_suite(args, device_props) -> tuple[list[dict], dict]:
    """tgemm.batched_gemm against torch.bmm (same stored layouts) on the batched suite."""
    import tgemm

    dtype, out_dtype = torch_dtype(args.dtype), torch_dtype(args.out_dtype or args.dtype)
    suite = read_batched_suite(args.suite)
    if args.filter:
        suite = [s for s in suite if args.filter in s["name"]]
    tbps = floor_tbps()
    l2 = getattr(device_props, "L2_cache_size", 50 << 20)
    budget = torch.cuda.mem_get_info()[0] // 3
    print(f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}, baseline torch.bmm")
    rows = []
    for seed, s in enumerate(suite):
        ta, tb, bsz, m, n, k = s["ta"], s["tb"], s["B"], s["M"], s["N"], s["K"]
        sets = batched_sets(s, dtype, l2, budget, seed)
        outs = [torch.empty(bsz, m, n, device="cuda", dtype=out_dtype) for _ in range(2)]

        def bmm_step(a, b, out=outs[0], ta=ta, tb=tb):
            x, y = bmm_operands(a, b, ta, tb)
            return torch.bmm(x, y, out=out) if out_dtype == dtype else out.copy_(torch.bmm(x, y))

        def tgemm_step(a, b, out=outs[1], ta=ta, tb=tb):
            return tgemm.batched_gemm_out(a, b, out, ta, tb)

        status = "-"
        if not args.no_check:
            bad = check_batched(tgemm_step(*sets[0]), *bmm_operands(*sets[0], ta, tb), out_dtype)
            status = "ok" if bad == 0 else f"{bad} bad"
        bytes_moved = bsz * (m * k + n * k) * dtype.itemsize + bsz * m * n * out_dtype.itemsize
        launches, rounds = plan_slots(max(estimate_us(bsz * m, n, k, 2), bytes_moved / 3.0e6), args.rounds or 10)
        launches = max(args.launches or launches, len(sets))
        rounds = args.rounds or rounds
        steps = [rotated(sets, bmm_step), rotated(sets, tgemm_step)]
        measure = functools.partial(time_linear_pair, steps, launches, args.replays, rounds)
        reading, first = counted_reading(measure, args.remeasure_below)
        t_us = reading["tgemm_us"]
        info = tgemm.describe_batched(sets[0][0], sets[0][1], ta, tb, None, out_dtype)
        row = {
            "family": "batched",
            "model": s["name"],
            "layer": f"B{bsz}{'T' if ta else 'N'}{'T' if tb else 'N'}",
            "B": bsz,
            "M": m,
            "N": n,
            "K": k,
            "transpose_a": ta,
            "transpose_b": tb,
            "baseline": "torch.bmm",
            **reading,
            "remeasured": first is not None,
            "solution": info["kernelName"],
            "level": info["level"],
            "check": status,
            "rotations": len(sets),
            "tbps": bytes_moved / (t_us * 1e-6) / 1e12,
            "tflops": 2.0 * bsz * m * n * k / (t_us * 1e-6) / 1e12,
            "floor_us": bytes_moved / (tbps * 1e12) * 1e6,
        }
        if first is not None:
            row["first_reading"] = first
        rows.append(row)
        print(
            f"{s['name']:<24} {bsz:>4} {m:>5} {n:>5} {k:>5} {'T' if ta else 'N'}{'T' if tb else 'N'} | "
            f"{reading['baseline_us']:>9.2f} {t_us:>9.2f} {row['speedup']:>7.3f}x | {row['floor_us']:>8.2f} "
            f"{row['tflops']:>8.1f} | {info['kernelName']} ({info['level']}) {status}",
            flush=True,
        )
        del sets, outs
    torch.cuda.empty_cache()
    summary = speedup_summary(rows)
    return rows, {"summary": summary, "floor_tbps": tbps, "suite": os.path.relpath(args.suite, REPO)}


def batched_a8w8_sets(s: dict, per_row: bool, l2_bytes: int, budget: int, seed: int) -> list:
    """Rotating (aq, bq, a_scale, b_scale, a_bf16, b_bf16): FP8 operands quantized per product (or
    per row) from N(0, 1) data, and bf16 copies of that data for torch.bmm; together more than 3x
    L2 within the budget."""
    bsz, m, n, k = s["B"], s["M"], s["N"], s["K"]
    set_bytes = bsz * (m * k + n * k) * 3
    count = max(1, min(max(2, math.ceil(3 * l2_bytes / set_bytes)), budget // set_bytes, 64))
    g = torch.Generator(device="cuda").manual_seed(seed)
    sets = []
    for _ in range(count):
        a = torch.randn(bsz, m, k, device="cuda", generator=g)
        b = torch.randn(bsz, n, k, device="cuda", generator=g) / math.sqrt(k)
        qa, sa = zip(*(quantize_rows(a[i], torch.float8_e4m3fn, per_row) for i in range(bsz)))
        qb, sb = zip(*(quantize_rows(b[i], torch.float8_e4m3fn, per_row) for i in range(bsz)))
        a_scale = torch.stack(sa) if per_row else torch.stack(sa).reshape(bsz)
        b_scale = torch.stack(sb) if per_row else torch.stack(sb).reshape(bsz)
        sets.append((torch.stack(qa), torch.stack(qb), a_scale, b_scale, a.to(torch.bfloat16), b.to(torch.bfloat16)))
    return sets


def check_batched_a8w8(y, aq, bq, a_scale, b_scale) -> int:
    """Elements of y [B, M, N] outside tolerance of the dequantized fp32 products."""
    bsz = aq.shape[0]
    a = aq.float() * a_scale.reshape(bsz, -1, 1)
    b = bq.float() * b_scale.reshape(bsz, -1, 1)
    ref = torch.bmm(a, b.transpose(1, 2))
    bad = ((y.float() - ref).abs() > 2e-2 + 2e-2 * ref.abs()) | ~torch.isfinite(y.float())
    return int(bad.sum().item())


def run_batched_a8w8_suite(args, device_props) -> tuple[list[dict], dict]:
    """tgemm.batched_gemm_a8w8 against bf16 torch.bmm and a loop of torch._scaled_mm (FP8)."""
    import tgemm

    per_row = args.batched_a8w8 == "fp8_rowwise"
    suite = read_batched_suite(args.suite)
    if args.filter:
        suite = [s for s in suite if args.filter in s["name"]]
    tbps = floor_tbps()
    l2 = getattr(device_props, "L2_cache_size", 50 << 20)
    budget = torch.cuda.mem_get_info()[0] // 3
    print(
        f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}, baselines bf16 torch.bmm and "
        f"a loop of torch._scaled_mm ({args.batched_a8w8})"
    )
    rows = []
    for seed, s in enumerate(suite):
        bsz, m, n, k = s["B"], s["M"], s["N"], s["K"]
        if k % 16:
            print(f"{s['name']:<24} {bsz:>4} {m:>5} {n:>5} {k:>5} | skipped: K not a multiple of 16")
            continue
        sets = batched_a8w8_sets(s, per_row, l2, budget, seed)
        bmm_out = torch.empty(bsz, m, n, device="cuda", dtype=torch.bfloat16)

        def bmm_step(aq, bq, a_scale, b_scale, a, b, out=bmm_out):
            return torch.bmm(a, b.transpose(1, 2), out=out)

        def loop_step(aq, bq, a_scale, b_scale, a, b, bsz=bsz):
            return [
                torch._scaled_mm(
                    aq[i],
                    bq[i].t(),
                    scale_a=a_scale[i],
                    scale_b=b_scale[i].reshape(1, -1) if per_row else b_scale[i],
                    out_dtype=torch.bfloat16,
                )
                for i in range(bsz)
            ]

        def tgemm_step(aq, bq, a_scale, b_scale, a, b):
            return tgemm.batched_gemm_a8w8(aq, bq, a_scale, b_scale)

        status = "-"
        if not args.no_check:
            bad = check_batched_a8w8(tgemm_step(*sets[0]), *sets[0][:4])
            status = "ok" if bad == 0 else f"{bad} bad"
        bytes_moved = bsz * (m * k + n * k) + bsz * m * n * 2
        launches, rounds = plan_slots(max(estimate_us(bsz * m, n, k, 1) / 2, bytes_moved / 3.0e6), args.rounds or 10)
        launches = max(args.launches or launches, len(sets))
        rounds = args.rounds or rounds
        # torch._scaled_mm refuses some shapes (cuBLASLt has no FP8 kernel for them, e.g. a
        # rowwise product with one row): such a problem is timed against torch.bmm alone.
        try:
            loop_step(*sets[0])
            has_loop = True
        except RuntimeError as e:
            has_loop = False
            print(f"{s['name']:<24} {bsz:>4} {m:>5} {n:>5} {k:>5} | no torch._scaled_mm peer: {str(e).splitlines()[0]}")
        steps = [rotated(sets, bmm_step), rotated(sets, tgemm_step)]
        if has_loop:
            steps.insert(1, rotated(sets, loop_step))

        def measure(steps=steps, launches=launches, rounds=rounds, has_loop=has_loop):
            samples, medians = time_interleaved(steps, launches, args.replays, rounds)
            (tb, tt), (rb, rt) = (samples[0], samples[-1]), (medians[0], medians[-1])
            return {
                "baseline_us": statistics.median(tb),
                "baseline_spread": spread(tb),
                "scaled_mm_loop_us": statistics.median(samples[1]) if has_loop else None,
                "tgemm_us": statistics.median(tt),
                "tgemm_spread": spread(tt),
                "speedup": paired_ratio(rb, rt),
                "vs_scaled_mm_loop": paired_ratio(medians[1], rt) if has_loop else None,
            }

        reading, first = counted_reading(measure, args.remeasure_below)
        t_us = reading["tgemm_us"]
        info = tgemm.describe_batched_a8w8(*sets[0][:4])
        row = {
            "family": "batched_a8w8",
            "model": s["name"],
            "layer": f"B{bsz}",
            "B": bsz,
            "M": m,
            "N": n,
            "K": k,
            "scales": args.batched_a8w8,
            "baseline": "torch.bmm (bf16)",
            **reading,
            "remeasured": first is not None,
            "solution": info["kernelName"],
            "level": info["level"],
            "check": status,
            "rotations": len(sets),
            "tflops": 2.0 * bsz * m * n * k / (t_us * 1e-6) / 1e12,
            "floor_us": bytes_moved / (tbps * 1e12) * 1e6,
        }
        if first is not None:
            row["first_reading"] = first
        rows.append(row)
        loop_us = f"{reading['scaled_mm_loop_us']:>9.2f}" if has_loop else f"{'-':>9}"
        vs_loop = f"{row['vs_scaled_mm_loop']:>7.3f}x" if has_loop else f"{'-':>8}"
        print(
            f"{s['name']:<24} {bsz:>4} {m:>5} {n:>5} {k:>5} | bmm {reading['baseline_us']:>9.2f} loop {loop_us} "
            f"tgemm {t_us:>9.2f} | {row['speedup']:>6.3f}x bmm {vs_loop} loop | {row['tflops']:>7.1f} | "
            f"{info['kernelName']} ({info['level']}) {status}",
            flush=True,
        )
        del sets
    torch.cuda.empty_cache()
    summary = speedup_summary(rows)
    loop = [r["vs_scaled_mm_loop"] for r in rows if r["vs_scaled_mm_loop"] is not None]
    summary["geomean_vs_scaled_mm_loop"] = geomean(loop) if loop else 0.0
    summary["min_vs_scaled_mm_loop_b_ge_16"] = min(
        (r["vs_scaled_mm_loop"] for r in rows if r["B"] >= 16 and r["vs_scaled_mm_loop"] is not None), default=0.0
    )
    summary["without_scaled_mm_peer"] = len(rows) - len(loop)
    return rows, {"summary": summary, "floor_tbps": tbps, "suite": os.path.relpath(args.suite, REPO)}


def run_gelu_suite(args, device_props) -> tuple[list[dict], dict]:
    """y = gelu(x @ w^T (+ b)) three ways on every suite problem: tgemm.gemm_gelu (fused),
    tgemm.gemm_a16w16 then F.gelu (split), F.gelu(F.linear(...)) (stock). Each row's "speedup" is
    stock / fused (the heat map's), "vs_split" split / fused."""
    import tgemm

    dtype = torch_dtype(args.dtype)
    approximate = args.approximate
    suite = read_suite(args.suite)
    if args.filter:
        suite = [s for s in suite if args.filter in f"{s['model']}/{s['layer']}"]
    ms = m_values(args)
    l2 = device_props.L2_cache_size
    free, _ = torch.cuda.mem_get_info()
    budget = min(free // 4, 24 << 30)
    tbps = floor_tbps()
    print(
        f"device {device_props.name} ({device_props.multi_processor_count} SMs, L2 {l2 >> 20} MB), "
        f"stream {tbps:.2f} TB/s, "
        f"torch {torch.__version__}, gelu approximate={approximate!r}, bias={bool(args.bias)}, "
        f"tables: {':'.join(tgemm.table_files()) or '(none)'}"
    )
    print(
        f"{'model':<15} {'layer':<8} {'M':>5} {'N':>6} {'K':>6} | {'stock':>9} {'split':>9} {'fused':>9} | "
        f"{'vs stock':>8} {'vs split':>8} | check"
    )
    rows = []
    seed = 1
    for m in ms:
        for s in suite:
            n, k = s["N"], s["K"]
            p = Problem(m, n, k, dtype, dtype, args.bias, l2, budget, seed)
            seed += 1
            nsets = len(p.sets)
            plan_launches, rounds = plan_slots(estimate_us(m, n, k, 2), args.rounds or 10)
            launches = max(args.launches or plan_launches, nsets)
            rounds = args.rounds or rounds
            x0, w0, b0 = p.sets[0]
            stock = rotated(p.sets, lambda x, w, b: F.gelu(F.linear(x, w, b), approximate=approximate))
            split = rotated(p.sets, lambda x, w, b: F.gelu(tgemm.gemm_a16w16(x, w, b), approximate=approximate))
            fused = rotated(p.sets, lambda x, w, b: tgemm.gemm_gelu(x, w, b, approximate))
            status = "-"
            if not args.no_check:
                y = tgemm.gemm_gelu(x0, w0, b0, approximate)
                bad = check_gelu(y, x0, w0, b0, approximate)
                status = "ok" if bad == 0 else f"{bad} bad"
                del y

            measure = functools.partial(time_gelu_trio, [stock, split, fused], launches, args.replays, rounds)
            reading, first = counted_reading(measure, args.remeasure_below)
            s_us, p_us, f_us = reading["baseline_us"], reading["split_us"], reading["tgemm_us"]
            esize = torch.finfo(dtype).bits // 8
            bytes_moved = p.input_bytes + m * n * esize
            row = {
                "family": "a16w16",
                "epilogue": f"gelu_{approximate}" + ("_bias" if args.bias else ""),
                "model": s["model"],
                "layer": s["layer"],
                "M": m,
                "N": n,
                "K": k,
                "dtype": str(dtype),
                "outdtype": str(dtype),
                "bias": bool(args.bias),
                "approximate": approximate,
                "baseline": "F.gelu(F.linear)",
                "split": "F.gelu(tgemm.gemm_a16w16)",
                **reading,
                "remeasured": first is not None,
                "rotations": nsets,
                "check": status,
                "tbps": bytes_moved / (f_us * 1e-6) / 1e12,
                "tflops": 2.0 * m * n * k / (f_us * 1e-6) / 1e12,
                "floor_us": bytes_moved / (tbps * 1e12) * 1e6,
            }
            if first is not None:
                row["first_reading"] = first
            rows.append(row)
            again = f" (re-measured, first {first['speedup']:.3f}x)" if first is not None else ""
            print(
                f"{s['model']:<15} {s['layer']:<8} {m:>5} {n:>6} {k:>6} | {s_us:>9.2f} {p_us:>9.2f} {f_us:>9.2f} | "
                f"{row['speedup']:>7.3f}x {row['vs_split']:>7.3f}x | {status}{again}",
                flush=True,
            )
    torch.cuda.empty_cache()
    vs_stock = [r["speedup"] for r in rows]
    vs_split = [r["vs_split"] for r in rows]
    summary = {
        "problems": len(rows),
        "geomean_speedup": geomean(vs_stock),
        "min_speedup": min(vs_stock) if rows else 0.0,
        "max_speedup": max(vs_stock) if rows else 0.0,
        "below_0_98": sum(v < 0.98 for v in vs_stock),
        "geomean_vs_split": geomean(vs_split),
        "min_vs_split": min(vs_split) if rows else 0.0,
        "max_vs_split": max(vs_split) if rows else 0.0,
        "check_failures": sum(r["check"] not in ("ok", "-") for r in rows),
        "remeasured": sum(r["remeasured"] for r in rows),
    }
    extra = {
        "mode": "gelu",
        "floor_tbps": tbps,
        "tables": tgemm.table_files(),
        "suite": os.path.relpath(args.suite, REPO),
    }
    return rows, {"summary": summary, **extra}


# The quantization ops and the bytes each moves once: x read (2 bytes an element), q written (1),
# the fp32 scales written; the per-tensor op reads x twice (amax, then quantize), counted once here
# as for the others, so its fraction of the copy rate shows what the second pass costs.
QUANT_OPS = {
    "fp8_per_tensor": lambda tgemm, x: tgemm.quant_fp8_per_tensor(x),
    "fp8_per_token": lambda tgemm, x: tgemm.quant_per_token(x),
    "int8_per_token": lambda tgemm, x: tgemm.quant_per_token(x, torch.int8),
    "fp8_1x128": lambda tgemm, x: tgemm.quant_fp8_per_block_1x128(x),
    "fp8_1x128_mn_major": lambda tgemm, x: tgemm.quant_fp8_per_block_1x128(x, True),
    "fp8_128x128": lambda tgemm, x: tgemm.quant_fp8_per_block_128x128(x),
}
QUANT_SHAPES = [(m, k) for k in (4096, 7168) for m in (1, 16, 128, 1024, 4096, 16384)]


def quant_scale_elements(op: str, m: int, k: int) -> int:
    blocks = -(-k // 128)
    if op == "fp8_per_tensor":
        return 1
    if op.endswith("per_token"):
        return m
    if op == "fp8_128x128":
        return -(-m // 128) * blocks
    return m * blocks


def run_quant_suite(args, device_props) -> tuple[list[dict], dict]:
    """Every quantization op on bf16 [M, K] activations (--dtype): microseconds per call as a CUDA
    graph of launches over inputs rotating past 3x L2, and bytes moved per second against the
    device copy rate (copy_tbps: a 1 GiB copy's read + write bytes over time)."""
    import tgemm

    dtype = torch_dtype(args.dtype)
    l2 = device_props.L2_cache_size
    free, _ = torch.cuda.mem_get_info()
    budget = min(free // 4, 24 << 30)
    tbps = copy_tbps()
    print(
        f"device {device_props.name} ({device_props.multi_processor_count} SMs, L2 {l2 >> 20} MB), "
        f"copy {tbps:.2f} TB/s, torch {torch.__version__}, input {args.dtype}"
    )
    print(f"{'op':<20} {'M':>6} {'K':>6} {'MB in':>8} {'us':>9} {'TB/s':>6} {'of copy':>8}")
    rows = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for m, k in QUANT_SHAPES:
        in_bytes = m * k * (torch.finfo(dtype).bits // 8)
        count = max(1, min(max(2, math.ceil(3 * l2 / in_bytes)), budget // in_bytes, 256))
        sets = [torch.randn(m, k, device="cuda", dtype=torch.float32, generator=g).to(dtype) for _ in range(count)]
        for op, fn in QUANT_OPS.items():
            moved = in_bytes + m * k + 4 * quant_scale_elements(op, m, k)
            est = max(moved / 2.5e6, 2.0)  # microseconds at ~2.5 TB/s, for the graph's size
            launches, _ = plan_slots(est)
            fn(tgemm, sets[0])  # first call outside the graph
            times = time_graph(
                lambda i, fn=fn, sets=sets: fn(tgemm, sets[i % len(sets)]), launches=launches, replays=args.replays
            )
            us = statistics.median(times)
            rate = moved / (us * 1e-6) / 1e12
            row = {
                "op": op,
                "M": m,
                "K": k,
                "dtype": args.dtype,
                "bytes_moved": moved,
                "us": round(us, 3),
                "spread": round(spread(times), 4),
                "tbps": round(rate, 4),
                "of_copy": round(rate / tbps, 4),
                "input_mb": round(in_bytes / 1e6, 3),
            }
            rows.append(row)
            print(f"{op:<20} {m:>6} {k:>6} {in_bytes / 1e6:>8.2f} {us:>9.2f} {rate:>6.2f} {rate / tbps:>7.1%}")
    large = [r for r in rows if r["input_mb"] >= 32]
    summary = {
        "problems": len(rows),
        "copy_tbps": round(tbps, 4),
        "min_of_copy_at_32mb": {
            op: min(r["of_copy"] for r in large if r["op"] == op)
            for op in QUANT_OPS
            if any(r["op"] == op for r in large)
        },
    }
    return rows, {"summary": summary}


def spread(times: list[float]) -> float:
    """(p90 - p10) / median of the replays: the run's noise."""
    q = statistics.quantiles(times, n=10)
    return (q[-1] - q[0]) / statistics.median(times)


def host_overhead(calls: int, rounds: int) -> dict:
    """Host time per call (µs, median over rounds) of F.linear and the tgemm entry points on a
    warm [1, 256] x [256, 256] bf16 problem. Each round enqueues `calls` calls (fewer than the
    launch queue holds, so the host never waits for the GPU) and is timed from the first call to
    the return of the last; the synchronisation after it is not timed."""
    import tgemm

    x = torch.randn(1, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    stock_module = torch.nn.Linear(256, 256, bias=False, device="cuda", dtype=torch.bfloat16)
    patched_module = torch.nn.Linear(256, 256, bias=False, device="cuda", dtype=torch.bfloat16)
    patch = tgemm.patch_linear(patched_module)
    op = torch.ops.tgemm.gemm_a16w16.default
    packet = torch.ops.tgemm.gemm_a16w16
    fast = tgemm._C.gemm_a16w16
    linear = tgemm.linear
    paths = {
        "F.linear": lambda: F.linear(x, w),
        "torch.ops.tgemm.gemm_a16w16.default": lambda: op(x, w, None, None),
        "torch.ops.tgemm.gemm_a16w16": lambda: packet(x, w),
        "tgemm._C.gemm_a16w16": lambda: fast(x, w),
        "tgemm.gemm_a16w16": lambda: tgemm.gemm_a16w16(x, w),
        "tgemm.linear": lambda: linear(x, w),
        "nn.Linear": lambda: stock_module(x),
        "nn.Linear patched": lambda: patched_module(x),
    }
    results: dict[str, list[float]] = {name: [] for name in paths}
    with torch.inference_mode():
        for fn in paths.values():
            for _ in range(20):
                fn()
        torch.cuda.synchronize()
        for _ in range(rounds):
            for name, fn in paths.items():
                t0 = time.perf_counter_ns()
                for _ in range(calls):
                    fn()
                t1 = time.perf_counter_ns()
                torch.cuda.synchronize()
                results[name].append((t1 - t0) / calls / 1000.0)
    patch.remove()
    per_call = {name: statistics.median(v) for name, v in results.items()}
    base = per_call["F.linear"]
    print(f"\nhost time per call, {rounds} rounds x {calls} calls (median), [1,256]x[256,256] bf16, inference_mode:")
    for name, us in per_call.items():
        print(f"  {name:<38} {us:7.2f} us   {us - base:+6.2f} vs F.linear")
    print(
        f"  overhead tgemm.linear - F.linear: {per_call['tgemm.linear'] - base:+.2f} us/call (target <= 2 us); "
        f"patched - stock nn.Linear: {per_call['nn.Linear patched'] - per_call['nn.Linear']:+.2f} us/call"
    )
    return {
        "per_call_us": per_call,
        "linear_minus_F_linear_us": per_call["tgemm.linear"] - base,
        "op_minus_F_linear_us": per_call["torch.ops.tgemm.gemm_a16w16.default"] - base,
        "patched_minus_stock_module_us": per_call["nn.Linear patched"] - per_call["nn.Linear"],
        "calls": calls,
        "rounds": rounds,
    }


def plot(rows: list[dict], summary: dict, device: str, path: str, baseline: str = "F.linear") -> None:
    """Heat map of speedups: one row per suite shape, one column per M."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    shapes = list(dict.fromkeys(f"{r['model']}/{r['layer']} {r['N']}x{r['K']}" for r in rows))
    ms = sorted({r["M"] for r in rows})
    grid = [[float("nan")] * len(ms) for _ in shapes]
    for r in rows:
        grid[shapes.index(f"{r['model']}/{r['layer']} {r['N']}x{r['K']}")][ms.index(r["M"])] = r["speedup"]
    values = [v for line in grid for v in line if not math.isnan(v)]
    lo, hi = min(values + [0.9]), max(values + [1.1])
    column = 1.2 if len(ms) <= 12 else 0.6  # the M grid's 56 columns narrower
    fig, ax = plt.subplots(figsize=(column * len(ms) + 4, 0.38 * len(shapes) + 1.8))
    image = ax.imshow(
        grid, cmap="RdYlGn", norm=TwoSlopeNorm(vmin=min(lo, 0.99), vcenter=1.0, vmax=max(hi, 1.01)), aspect="auto"
    )
    ax.set_xticks(range(len(ms)), [str(m) for m in ms], rotation=0 if column > 1 else 90)
    ax.set_yticks(range(len(shapes)), shapes, fontsize=8)
    ax.set_xlabel("M (rows of x)")
    for i, line in enumerate(grid):
        for j, v in enumerate(line):
            if not math.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7 if column > 1 else 5)
    fig.colorbar(image, ax=ax, label=f"speedup over {baseline}")
    ax.set_title(
        f"tgemm vs {baseline}, {device}: geomean {summary['geomean_speedup']:.3f}x, min {summary['min_speedup']:.3f}x",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


DEFAULT_MS = "1,16,64,128,512,2048,8192"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--suite",
        default=DEFAULT_SUITE,
        help="shape suite CSV (model,layer,N,K)",
    )
    parser.add_argument("--m", help=f"comma-separated M values (default {DEFAULT_MS})")
    parser.add_argument(
        "--m-grid",
        action="store_true",
        help="instead of --m: the M grid of `tgemm bench --m-grid`, 1..16 one by one, then four steps "
        "an octave up to --m-grid-max",
    )
    parser.add_argument("--m-grid-max", type=int, help=f"the largest M of --m-grid (default {M_GRID_MAX})")
    parser.add_argument(
        "--remeasure-below",
        type=float,
        default=0.98,
        help="a problem whose speedup reads below this is timed again and the second reading counts "
        "(both recorded); 0: never",
    )
    parser.add_argument("--dtype", choices=DTYPE_NAMES[:2], default="bf16")
    parser.add_argument("--out-dtype", choices=DTYPE_NAMES, help="output dtype (default: --dtype)")
    parser.add_argument("--bias", action="store_true", help="with a bias [N]")
    parser.add_argument("--filter", help="only problems whose model/layer contains this")
    parser.add_argument(
        "--launches",
        type=int,
        default=0,
        help="launches per CUDA graph (at least the rotation count); 0: ~6 ms of work, 2-20 (plan_slots)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="interleaved rounds; 0: 10, more (up to 60) where a graph holds fewer launches",
    )
    parser.add_argument("--replays", type=int, default=20, help="timed graph replays per measurement")
    parser.add_argument("--no-check", action="store_true", help="skip the fp32-reference check of tgemm's output")
    parser.add_argument("--overhead-calls", type=int, default=200)
    parser.add_argument("--overhead-rounds", type=int, default=50)
    parser.add_argument("--no-overhead", action="store_true", help="skip the host-overhead measurement")
    parser.add_argument("--overhead-only", action="store_true", help="only the host-overhead measurement")
    parser.add_argument(
        "--gelu",
        action="store_true",
        help="time tgemm.gemm_gelu vs gemm_a16w16 + F.gelu and vs F.gelu(F.linear) instead",
    )
    parser.add_argument("--approximate", choices=("none", "tanh"), default="none", help="GELU of --gelu (F.gelu's)")
    parser.add_argument(
        "--a8w8",
        choices=A8W8_RECIPES,
        help="time tgemm.gemm_a8w8 against torch._scaled_mm / torch._int_mm + scaling with this recipe instead",
    )
    parser.add_argument(
        "--a16w4",
        action="store_true",
        help="time tgemm.gemm_a16w4 (MXFP4 weights, bf16 activations) against F.linear on the bf16 weight instead",
    )
    parser.add_argument(
        "--a8w4",
        action="store_true",
        help="time tgemm.gemm_a8w4 (MXFP4 weights, per-token FP8 activations) against F.linear on the bf16 weight "
        "instead",
    )
    parser.add_argument(
        "--a4w4",
        action="store_true",
        help="time tgemm.gemm_a4w4 (MXFP4 weights and activations) against F.linear on the bf16 weight instead",
    )
    parser.add_argument(
        "--blockscale",
        choices=("row_major", "mn_major"),
        help="time tgemm.gemm_a8w8_blockscale (x_scale in this layout) against --blockscale-peer instead",
    )
    parser.add_argument(
        "--blockscale-peer",
        choices=("per_tensor", "scaled_mm"),
        default="per_tensor",
        help="--blockscale's baseline: tgemm's per-tensor FP8 GEMM on the same operands (default), or "
        "torch._scaled_mm with the same block scales (cuBLASLt's block-scaled default)",
    )
    parser.add_argument(
        "--gmm",
        action="store_true",
        help="time tgemm.gmm against torch._grouped_mm (or a torch.mm loop) on --suite (default moe_shapes.csv)",
    )
    for flag, what in (
        ("--ptgmm", "tgemm.ptgmm/nptgmm against a torch.mm loop per group (and torch._grouped_mm)"),
        ("--grouped-gemm", "tgemm.grouped_gemm against torch's sort + gather + grouped GEMM + scatter"),
        ("--masked", "tgemm.m_grouped_gemm_masked against torch.bmm"),
        ("--fp8-contiguous", "tgemm.m_grouped_gemm_fp8_contiguous against tgemm's dense FP8 blockscale GEMM"),
        ("--fp8-masked", "tgemm.m_grouped_gemm_fp8_masked against tgemm's dense FP8 blockscale GEMM"),
        ("--fmoe", "tgemm.fused_moe against sort + torch._grouped_mm + silu + torch._grouped_mm + index_add"),
    ):
        parser.add_argument(flag, action="store_true", help=f"time {what} on --suite (default moe_shapes.csv)")
    parser.add_argument(
        "--batched",
        action="store_true",
        help="time tgemm.batched_gemm against torch.bmm (same layouts) on --suite (default batched_shapes.csv)",
    )
    parser.add_argument(
        "--batched-a8w8",
        choices=("fp8_tensor", "fp8_rowwise"),
        help="time tgemm.batched_gemm_a8w8 against bf16 torch.bmm and a loop of torch._scaled_mm on --suite "
        "(default batched_shapes.csv)",
    )
    parser.add_argument(
        "--quant",
        action="store_true",
        help="time the quantization ops instead (bytes moved per second against the device copy rate)",
    )
    parser.add_argument(
        "--json", help="results JSON ('-': none; default bench/results/torch-<card>.json, overwritten by the next run)"
    )
    parser.add_argument(
        "--sparse",
        choices=("2:4", "csr"),
        help="tgemm.sparse_gemm and torch's sparse path against tgemm's dense GEMM on the suite (sparse_bench.py)",
    )
    parser.add_argument("--sparse-density", default="0.05,0.01", help="comma-separated densities of --sparse csr")
    parser.add_argument("--png", help="speed-up plot (default: the JSON path with .png)")
    args = parser.parse_args(argv)
    if args.gelu and args.out_dtype and args.out_dtype != args.dtype:
        parser.error("--gelu times outputs in --dtype (F.gelu(F.linear) has no output dtype); drop --out-dtype")
    if args.gelu and args.overhead_only:
        parser.error("--gelu and --overhead-only exclude each other")
    if args.quant and (args.gelu or args.overhead_only):
        parser.error("--quant excludes --gelu and --overhead-only")
    w4_forms = [f for f in W4_FORMS if getattr(args, f)]
    args.w4 = w4_forms[0] if w4_forms else None
    others = args.gelu or args.overhead_only or args.out_dtype or args.quant or args.a8w8 or args.blockscale
    if w4_forms and (len(w4_forms) > 1 or others):
        parser.error(f"--{args.w4} times bf16 out on its own: drop the other modes and --out-dtype")
    if args.a8w8 and (args.gelu or args.overhead_only or args.out_dtype or args.quant):
        parser.error("--a8w8 times bf16 outputs on its own: drop --gelu, --quant, --overhead-only and --out-dtype")
    if args.blockscale and (args.gelu or args.overhead_only or args.out_dtype or args.quant or args.a8w8):
        parser.error(
            "--blockscale times bf16 outputs on its own: drop --gelu, --quant, --a8w8, --overhead-only, --out-dtype"
        )
    if args.gmm and (args.gelu or args.overhead_only or args.out_dtype or args.quant or args.a8w8):
        parser.error(
            "--gmm times bf16 grouped GEMMs on its own: drop --gelu, --quant, --a8w8, --overhead-only, --out-dtype"
        )
    if args.batched and (args.gelu or args.overhead_only or args.quant or args.a8w8 or args.gmm):
        parser.error("--batched times batched GEMMs on its own: drop --gelu, --quant, --a8w8, --gmm, --overhead-only")
    if args.batched_a8w8 and (
        args.batched or args.gelu or args.overhead_only or args.quant or args.a8w8 or args.gmm or args.out_dtype
    ):
        parser.error("--batched-a8w8 times bf16 outputs on its own: drop the other modes and --out-dtype")
    if (args.batched or args.batched_a8w8) and args.suite == DEFAULT_SUITE:
        args.suite = os.path.join(REPO, "bench", "shapes", "batched_shapes.csv")
    grouped = [
        name
        for name in ("ptgmm", "grouped_gemm", "masked", "fmoe", "fp8_contiguous", "fp8_masked")
        if getattr(args, name)
    ]
    if grouped and (
        len(grouped) > 1 or args.gmm or args.gelu or args.overhead_only or args.out_dtype or args.quant or args.a8w8
    ):
        parser.error(
            "--ptgmm, --grouped-gemm, --masked, --fmoe, --fp8-contiguous and --fp8-masked time one grouped op each, on "
            "their own: drop the other modes"
        )
    args.grouped = grouped[0] if grouped else None
    if (args.gmm or args.grouped) and args.suite == DEFAULT_SUITE:
        args.suite = os.path.join(REPO, "bench", "shapes", "moe_shapes.csv")
    if args.sparse and (args.gelu or args.overhead_only or args.out_dtype or args.quant or args.a8w8 or args.gmm):
        parser.error("--sparse times bf16 sparse GEMMs on its own: drop the other modes")
    if args.m_grid and args.m is not None:
        parser.error("--m and --m-grid exclude each other")
    if args.m_grid_max is not None and not args.m_grid:
        parser.error("--m-grid-max needs --m-grid")
    if args.m is None:
        args.m = DEFAULT_MS
    if args.m_grid_max is None:
        args.m_grid_max = M_GRID_MAX
    if not 1 <= args.m_grid_max <= M_GRID_LIMIT:
        parser.error(f"--m-grid-max must be in [1, {M_GRID_LIMIT}], got {args.m_grid_max}")
    if not 0 <= args.remeasure_below <= 10:
        parser.error(f"--remeasure-below must be in [0, 10], got {args.remeasure_below}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if torch is None:
        print("torch_bench: PyTorch is not installed; this benchmark needs it and a GPU", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_bench: no CUDA device; this benchmark needs a GPU", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    now = datetime.datetime.now(datetime.timezone.utc)
    doc = {
        "device": props.name,
        "sm_count": props.multi_processor_count,
        "commit": current_commit(),
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch": torch.__version__,
        "m_grid_max": args.m_grid_max if args.m_grid else None,
        "remeasure_below": args.remeasure_below,
    }
    rows: list[dict] = []
    summary: dict = {}
    if args.quant:
        rows, extra = run_quant_suite(args, props)
        summary = extra.pop("summary")
        print(
            f"\n{summary['problems']} problems; the lowest fraction of the copy rate ({summary['copy_tbps']:.2f} TB/s) "
            f"on inputs of 32 MB and more: "
            + ", ".join(f"{op} {v:.1%}" for op, v in summary["min_of_copy_at_32mb"].items())
        )
    elif args.gelu:
        rows, extra = run_gelu_suite(args, props)
        summary = extra.pop("summary")
        doc.update(extra)
        print(
            f"\n{summary['problems']} problems: fused gemm_gelu geomean {summary['geomean_speedup']:.3f}x over "
            f"F.gelu(F.linear) (min {summary['min_speedup']:.3f}x, max {summary['max_speedup']:.3f}x), "
            f"{summary['geomean_vs_split']:.3f}x over gemm_a16w16 + F.gelu (min {summary['min_vs_split']:.3f}x, "
            f"max {summary['max_vs_split']:.3f}x), {summary['check_failures']} failed the correctness check"
        )
    elif args.grouped:
        import grouped_bench
        import moe_bench

        if args.grouped == "fmoe":
            rows, extra, grouped_stem = moe_bench.run(args, props)
        elif args.grouped.startswith("fp8_"):
            import fp8_grouped_bench

            rows, extra, grouped_stem = fp8_grouped_bench.run(args.grouped, args, props)
        else:
            rows, extra, grouped_stem = grouped_bench.run(args.grouped, args, props)
        summary = extra.pop("summary")
        doc.update(extra)
        print_speedup_summary(summary, args.grouped, rows[0]["baseline"] if rows else "the baseline")
    elif args.sparse:
        import sparse_bench

        rows, extra, sparse_stem = sparse_bench.run(args, props)
        summary = extra.pop("summary")
        doc.update(extra)
        print_speedup_summary(summary, f"sparse_gemm ({args.sparse})", "tgemm.gemm_a16w16")
        print(f"  {rows[0]['peer'] if rows else 'peer'} geomean {summary['peer_geomean_speedup']:.3f}x")
    elif args.gmm:
        rows, extra = run_gmm_suite(args, props)
        summary = extra.pop("summary")
        doc.update(extra)
        print_speedup_summary(summary, "gmm", rows[0]["baseline"] if rows else "the baseline")
    elif args.blockscale:
        rows, extra = run_8bit_suite(args, props, blockscale_spec(args))
        summary = extra.pop("summary")
        doc.update(extra)
        print(
            f"\n{summary['problems']} problems: gemm_a8w8_blockscale ({args.blockscale} x_scale) geomean "
            f"{summary['geomean_speedup']:.3f}x of {rows[0]['baseline'] if rows else 'the baseline'} "
            f"(min {summary['min_speedup']:.3f}x, "
            f"at M >= 2048 min {summary['min_speedup_m_ge_2048']:.3f}x), {summary['check_failures']} failed the "
            "correctness check"
        )
        for d in summary["deepgemm"]:
            print(
                f"  M={d['M']} N={d['N']} K={d['K']}: {d['tflops']:.0f} TFLOP/s "
                f"(baseline {d['baseline_tflops']:.0f}; DeepGEMM H800 {d['deepgemm_h800_tflops']:.0f})"
            )
    elif args.batched:
        rows, extra = run_batched_suite(args, props)
        summary = extra.pop("summary")
        doc.update(extra)
        print_speedup_summary(summary, "batched_gemm", "torch.bmm")
    elif args.batched_a8w8:
        rows, extra = run_batched_a8w8_suite(args, props)
        summary = extra.pop("summary")
        doc.update(extra)
        print_speedup_summary(summary, f"batched_gemm_a8w8 ({args.batched_a8w8})", "bf16 torch.bmm")
        print(
            f"  over a loop of torch._scaled_mm: geomean {summary['geomean_vs_scaled_mm_loop']:.3f}x, "
            f"min at B >= 16 {summary['min_vs_scaled_mm_loop_b_ge_16']:.3f}x"
        )
    elif args.w4:
        rows, extra = run_8bit_suite(args, props, w4_spec(args, args.w4))
        summary = extra.pop("summary")
        doc.update(extra)
        big = [r["tgemm_us"] / r["floor_us"] for r in rows if 2 * r["N"] * r["K"] >= 32 << 20]
        summary["max_floor_ratio_weights_ge_32mb"] = max(big) if big else 0.0
        summary["floor_ratios"] = {f"{r['M']}x{r['N']}x{r['K']}": r["tgemm_us"] / r["floor_us"] for r in rows}
        print_speedup_summary(summary, f"gemm_{args.w4} (mxfp4)", "F.linear")
        worst = summary["max_floor_ratio_weights_ge_32mb"]
        print(f"  worst time / 4-bit streaming floor at bf16 weights >= 32 MB: {worst:.2f}x")
    elif args.a8w8:
        rows, extra = run_8bit_suite(args, props, a8w8_spec(args))
        summary = extra.pop("summary")
        doc.update(extra)
        baseline = "torch._int_mm + scaling" if args.a8w8.startswith("int8") else "torch._scaled_mm"
        print_speedup_summary(summary, f"gemm_a8w8 ({args.a8w8})", baseline)
    elif not args.overhead_only:
        rows, extra = run_suite(args, props)
        summary = extra.pop("summary")
        doc.update(extra)
        print(
            f"\n{summary['problems']} problems: geomean speedup {summary['geomean_speedup']:.3f}x over F.linear, "
            f"min {summary['min_speedup']:.3f}x, max {summary['max_speedup']:.3f}x, "
            f"{summary['below_0_98']} below 0.98x, "
            f"{summary['check_failures']} failed the correctness check; {summary['remeasured']} re-measured after a "
            f"first reading below {args.remeasure_below:.2f}x"
        )
    if not args.no_overhead:
        overhead = host_overhead(args.overhead_calls, args.overhead_rounds)
        summary["host_overhead"] = overhead
        summary["dispatch_overhead_us"] = overhead["linear_minus_F_linear_us"]
    doc["rows"] = rows
    doc["summary"] = summary
    if args.json != "-":
        stem = (
            "torch_overhead"
            if args.overhead_only
            else "torch_gelu"
            if args.gelu
            else "torch_quant"
            if args.quant
            else "torch"
        )
        if args.a8w8:
            stem = f"torch_a8w8_{args.a8w8}"
        if args.w4:
            stem = f"torch_{args.w4}"
        if args.blockscale:
            stem = f"torch_a8w8_blockscale_{args.blockscale}"
            if args.blockscale_peer == "scaled_mm":
                stem += "_scaled_mm"
        if args.gmm:
            stem = "torch_gmm"
        if args.grouped:
            stem = grouped_stem
        if args.batched:
            stem = "torch_batched"
        if args.batched_a8w8:
            stem = f"torch_batched_a8w8_{args.batched_a8w8}"
        if args.sparse:
            stem = sparse_stem
        if args.m_grid and not args.overhead_only:
            stem += "-m-grid"  # its own file: the grid must not overwrite the figures at the usual M values
        path = args.json or os.path.join(REPO, "bench", "results", f"{stem}-{device_slug(props.name) or 'gpu'}.json")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"wrote {path}")
        # A heat map of speedups over (layer, M): the grouped and batched rows have no M axis.
        plotted = not (args.quant or args.gmm or args.grouped or args.batched or args.batched_a8w8 or args.sparse)
        if rows and plotted:
            png = args.png or os.path.splitext(path)[0] + ".png"
            plot(rows, summary, props.name, png, baseline=rows[0]["baseline"])
            print(f"wrote {png}")
    return 1 if summary.get("check_failures") else 0


if __name__ == "__main__":
    sys.exit(main())
