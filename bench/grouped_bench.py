"""The grouped ops beyond gmm against PyTorch on the MoE suite (bench/shapes/moe_shapes.csv), each
problem with a uniform and a seeded skewed routing (torch_bench.moe_routing), every side timed as a
CUDA graph in interleaved rounds (torch_bench's harness), the output checked against fp32. Run
through bench/torch_bench.py:

  --ptgmm         the weight gradient dW[g] = dy_g^T @ x_g ([G, N, K]) by tgemm.ptgmm and
                  tgemm.nptgmm (lhs = dy.t(), the column-major layout: no copy) against a loop of
                  torch.mm per group (host sizes), and torch._grouped_mm's 2-D x 2-D form where this
                  torch has it (bench/results/torch_ptgmm-<card>.json);
  --grouped-gemm  tgemm.grouped_gemm(x [T, H], w [E, N, H], expert_ids [T, topk]) against what a
                  torch MoE layer runs: argsort of the ids, a gather of x's rows, torch._grouped_mm
                  (a torch.mm loop where missing) and a scatter back (offsets precomputed);
                  topk 2 for 8 experts, else 8 (bench/results/torch_grouped_gemm-<card>.json);
  --masked        tgemm.m_grouped_gemm_masked (max_m = the largest group, masked_m = the routing)
                  against torch.bmm over every row (bench/results/torch_masked-<card>.json).
Rows carry floor_us, the streaming read of the touched experts' weights and the activations at
the measured streaming rate (floor_tbps), the decode bound.
"""

from __future__ import annotations

import itertools
import os
import statistics

import torch
import torch_bench as tb


def _timed(steps: list, est_us: float, args) -> tuple[dict, dict | None]:
    """Baseline (steps[0]) against tgemm (steps[1]) and any further steps (alternatives, timed in
    the same rounds): the row's timing fields, "alt_us"/"alt_speedup" for the others."""
    launches, rounds = tb.plan_slots(est_us, args.rounds or 10)
    launches = args.launches or launches
    rounds = args.rounds or rounds

    def measure() -> dict:
        samples, medians = tb.time_interleaved(steps, launches, args.replays, rounds)
        reading = {
            "baseline_us": statistics.median(samples[0]),
            "baseline_spread": tb.spread(samples[0]),
            "tgemm_us": statistics.median(samples[1]),
            "tgemm_spread": tb.spread(samples[1]),
            "speedup": tb.paired_ratio(medians[0], medians[1]),
            "launches": launches,
            "rounds": rounds,
        }
        reading["alt_us"] = [statistics.median(s) for s in samples[2:]]
        reading["alt_speedup"] = [tb.paired_ratio(medians[0], m) for m in medians[2:]]
        return reading

    return tb.counted_reading(measure, args.remeasure_below)


def _row(family, s, routing, sizes, baseline, reading, first, status, solution, bytes_moved, flops, tbps) -> dict:
    t_us = reading["tgemm_us"]
    return {
        "family": family,
        "model": s["name"],
        "layer": routing,
        "G": s["G"],
        "M": s["G"] * s["tpe"],
        "N": s["N"],
        "K": s["K"],
        "routing": routing,
        "max_group": max(sizes),
        "baseline": baseline,
        **reading,
        "remeasured": first is not None,
        "solution": solution,
        "check": status,
        "tbps": bytes_moved / (t_us * 1e-6) / 1e12,
        "tflops": flops / (t_us * 1e-6) / 1e12,
        "floor_us": bytes_moved / (tbps * 1e12) * 1e6,
    }


def _print(row: dict) -> None:
    alts = " ".join(f"{v:.3f}x" for v in row["alt_speedup"])
    print(
        f"{row['model']:<30} {row['routing']:<8} {row['M']:>6} {row['N']:>6} {row['K']:>6} | "
        f"{row['baseline_us']:>9.2f} {row['tgemm_us']:>9.2f} {row['speedup']:>7.3f}x {alts} | "
        f"{row['floor_us']:>8.2f} {row['tflops']:>8.1f} | {row['check']}",
        flush=True,
    )


def _bad(got, ref) -> int:
    """Elements of got outside bf16 tolerance of the fp32 ref (non-finite ones too)."""
    got = got.float()
    return int((((got - ref).abs() > 2e-2 + 2e-2 * ref.abs()) | ~torch.isfinite(got)).sum().item())


def _problems(args):
    """(seed, suite row, routing name, group sizes) for every problem and both routings."""
    for seed, (s, skewed) in enumerate((s, sk) for s in tb.read_moe_suite(args) for sk in (False, True)):
        yield seed, s, "skewed" if skewed else "uniform", tb.moe_routing(s["G"], s["tpe"], skewed, seed)


def _done(rows: list[dict], tbps: float, args) -> tuple[list[dict], dict]:
    torch.cuda.empty_cache()
    summary = tb.speedup_summary(rows)
    alts = [r["alt_speedup"] for r in rows if r["alt_speedup"]]
    if alts:
        summary["geomean_alt_speedup"] = [tb.geomean([a[i] for a in alts]) for i in range(len(alts[0]))]
    return rows, {"summary": summary, "floor_tbps": tbps, "suite": os.path.relpath(args.suite, tb.REPO)}


def run_ptgmm_suite(args, device_props) -> tuple[list[dict], dict]:
    """dW[g] = dy_g^T @ x_g, x [M, K], dy [M, N]: ptgmm (speedup) and nptgmm (alt_speedup[0]) against
    a torch.mm loop; torch._grouped_mm where it takes the problem (alt_speedup[1], its time over the
    loop's)."""
    import tgemm

    tbps = tb.floor_tbps()
    has_grouped_mm = hasattr(torch, "_grouped_mm")
    print(f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}, baseline torch.mm per group")
    rows = []
    for seed, s, routing, sizes in _problems(args):
        g, n, k, m = s["G"], s["N"], s["K"], s["G"] * s["tpe"]
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        dy = (torch.randn(m, n, device="cuda", generator=gen) / 8).to(torch.bfloat16)
        gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        offs = torch.cumsum(gs, 0, dtype=torch.int32)
        out_loop = torch.empty(g, n, k, device="cuda", dtype=torch.bfloat16)
        bounds = [(sum(sizes[:i]), sum(sizes[: i + 1])) for i in range(g)]

        def loop(i, out_loop=out_loop, bounds=bounds, dy=dy, x=x):
            for gi, (b, e) in enumerate(bounds):
                torch.mm(dy[b:e].t(), x[b:e], out=out_loop[gi])

        steps = [
            loop,
            lambda i, dy=dy, x=x, gs=gs: tgemm.ptgmm(dy.t(), x, gs),
            lambda i, dy=dy, x=x, gs=gs: tgemm.nptgmm(dy.t(), x, gs),
        ]
        if has_grouped_mm:
            try:
                torch._grouped_mm(dy.t(), x, offs=offs)
                steps.append(lambda i, dy=dy, x=x, offs=offs: torch._grouped_mm(dy.t(), x, offs=offs))
            except RuntimeError as e:
                print(f"{s['name']:<30} {routing:<8} | torch._grouped_mm refused it: {e}")
        status = "-"
        if not args.no_check:
            got = tgemm.ptgmm(dy.t(), x, gs)
            bad = sum(_bad(got[gi], dy[b:e].float().t() @ x[b:e].float()) for gi, (b, e) in enumerate(bounds))
            bad += int((tgemm.nptgmm(dy.t(), x, gs) != got).sum().item())  # the two grids agree bit for bit
            status = "ok" if bad == 0 else f"{bad} bad"
        bytes_moved = 2 * (m * k + m * n + g * n * k)
        flops = 2.0 * m * n * k
        reading, first = _timed(steps, max(tb.estimate_us(m, n, k, 2), bytes_moved / 3.0e6), args)
        row = _row(
            "ptgmm",
            s,
            routing,
            sizes,
            "torch.mm per group",
            reading,
            first,
            status,
            "tgmm_tiled",
            bytes_moved,
            flops,
            tbps,
        )
        rows.append(row)
        _print(row)
        del x, dy, gs, offs, out_loop
    return _done(rows, tbps, args)


def _topk(g: int, slots: int) -> int:
    """Mixtral's top-2 for 8 experts or fewer, DeepSeek-V3's and Qwen3's top-8 above; 1 where that
    does not divide the slots."""
    k = 2 if g <= 8 else 8
    return k if slots % k == 0 else 1


def _routed_ids(sizes: list[int], topk: int, seed: int):
    """expert_ids [T, topk] holding expert e sizes[e] times, in a seeded random order."""
    flat = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    flat = flat[torch.randperm(len(flat), generator=torch.Generator().manual_seed(seed))]
    return flat.view(-1, topk).to(torch.int32).cuda()


def run_grouped_gemm_suite(args, device_props) -> tuple[list[dict], dict]:
    """y[t, j] = x[t] @ w[ids[t, j]]^T (w [E, N, H]) against argsort + gather + grouped GEMM +
    scatter in torch."""
    import tgemm

    tbps = tb.floor_tbps()
    base_name = "torch sort+gather+" + ("_grouped_mm" if hasattr(torch, "_grouped_mm") else "mm loop") + "+scatter"
    print(f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}, baseline {base_name}")
    rows = []
    for seed, s, routing, sizes in _problems(args):
        g, n, k, slots = s["G"], s["N"], s["K"], s["G"] * s["tpe"]
        topk = _topk(g, slots)
        t = slots // topk
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(t, k, device="cuda", generator=gen).to(torch.bfloat16)
        w = (torch.randn(g, n, k, device="cuda", generator=gen) / k**0.5).to(torch.bfloat16)
        ids = _routed_ids(sizes, topk, seed)
        offs = torch.cumsum(torch.tensor(sizes, dtype=torch.int32, device="cuda"), 0, dtype=torch.int32)
        ends = list(itertools.accumulate(sizes))
        bounds = list(zip([0, *ends[:-1]], ends))

        def baseline(i, x=x, w=w, ids=ids, offs=offs, bounds=bounds, topk=topk):
            sort = torch.argsort(ids.flatten(), stable=True)
            rows_in = x[sort // topk]
            if hasattr(torch, "_grouped_mm"):
                y = torch._grouped_mm(rows_in, w.transpose(-2, -1), offs=offs)
            else:
                y = torch.cat([rows_in[b:e] @ w[ei].t() for ei, (b, e) in enumerate(bounds)])
            out = torch.empty_like(y)
            out[sort] = y
            return out.view(ids.shape[0], topk, -1)

        steps = [baseline, lambda i, x=x, w=w, ids=ids: tgemm.grouped_gemm(x, w, ids, transpose_weights=True)]
        status = "-"
        if not args.no_check:
            got = tgemm.grouped_gemm(x, w, ids, transpose_weights=True).view(-1, n)
            ref = torch.empty(t * topk, n, device="cuda")
            flat = ids.flatten()
            for e in range(g):
                sel = (flat == e).nonzero().flatten()
                ref[sel] = x[sel // topk].float() @ w[e].float().t()
            status = "ok" if _bad(got, ref) == 0 else f"{_bad(got, ref)} bad"
        touched = sum(1 for v in sizes if v > 0)
        bytes_moved = 2 * (t * k + touched * n * k + t * topk * n)
        flops = 2.0 * t * topk * n * k
        reading, first = _timed(steps, max(tb.estimate_us(t * topk, n, k, 2), bytes_moved / 3.0e6), args)
        row = _row(
            "grouped_gemm",
            s,
            routing,
            sizes,
            base_name,
            reading,
            first,
            status,
            "gather_tiled",
            bytes_moved,
            flops,
            tbps,
        )
        row["topk"] = topk
        rows.append(row)
        _print(row)
        del x, w, ids, offs
    return _done(rows, tbps, args)


def run_masked_suite(args, device_props) -> tuple[list[dict], dict]:
    """out[g, :m_g] = x[g, :m_g] @ w[g]^T with max_m the largest group against torch.bmm over every
    row of x [G, max_m, K]."""
    import tgemm

    tbps = tb.floor_tbps()
    print(f"device {device_props.name}, stream {tbps:.2f} TB/s, torch {torch.__version__}, baseline torch.bmm")
    rows = []
    for seed, s, routing, sizes in _problems(args):
        g, n, k = s["G"], s["N"], s["K"]
        max_m = max(sizes)
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(g, max_m, k, device="cuda", generator=gen).to(torch.bfloat16)
        w = (torch.randn(g, n, k, device="cuda", generator=gen) / k**0.5).to(torch.bfloat16)
        out = torch.empty(g, max_m, n, device="cuda", dtype=torch.bfloat16)
        masked_m = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        expected_m = s["tpe"]
        steps = [
            lambda i, x=x, w=w: torch.bmm(x, w.transpose(1, 2)),
            lambda i, x=x, w=w, out=out, m=masked_m, e=expected_m: tgemm.m_grouped_gemm_masked(x, w, out, m, e),
        ]
        status = "-"
        if not args.no_check:
            out.fill_(float("nan"))
            tgemm.m_grouped_gemm_masked(x, w, out, masked_m, expected_m)
            bad = sum(_bad(out[i, :m_i], x[i, :m_i].float() @ w[i].float().t()) for i, m_i in enumerate(sizes))
            status = "ok" if bad == 0 else f"{bad} bad"
        m = sum(sizes)
        touched = sum(1 for v in sizes if v > 0)
        bytes_moved = 2 * (m * k + touched * n * k + m * n)
        reading, first = _timed(steps, max(tb.estimate_us(g * max_m, n, k, 2), bytes_moved / 3.0e6), args)
        row = _row(
            "masked",
            s,
            routing,
            sizes,
            "torch.bmm",
            reading,
            first,
            status,
            "masked_tiled",
            bytes_moved,
            2.0 * m * n * k,
            tbps,
        )
        row["max_m"] = max_m
        rows.append(row)
        _print(row)
        del x, w, out, masked_m
    return _done(rows, tbps, args)


SUITES = {
    "ptgmm": (run_ptgmm_suite, "torch_ptgmm"),
    "grouped_gemm": (run_grouped_gemm_suite, "torch_grouped_gemm"),
    "masked": (run_masked_suite, "torch_masked"),
}


def run(name: str, args, device_props) -> tuple[list[dict], dict, str]:
    """The suite of one mode: its rows, the JSON's extra fields, and the results file's stem."""
    fn, stem = SUITES[name]
    rows, extra = fn(args, device_props)
    return rows, extra, stem
