"""The FP8 block-scaled grouped GEMMs against tgemm's own dense FP8 blockscale GEMM over the same
total rows (the issue's must-show), every side timed as a CUDA graph in interleaved rounds
(torch_bench's harness). Run through bench/torch_bench.py:

  --fp8-contiguous  tgemm.m_grouped_gemm_fp8_contiguous (G groups of M rows concatenated, m_indices
                    per row) against tgemm.gemm_a8w8_blockscale of all G * M rows with group 0's
                    weights (bench/results/torch_fp8_contiguous-<card>.json);
  --fp8-masked      tgemm.m_grouped_gemm_fp8_masked (masked_m = max_m for every group) against the
                    same dense GEMM of G * max_m rows (bench/results/torch_fp8_masked-<card>.json).
Operands come from tgemm's block quantizers (x_scale MN-major, DeepGEMM's layout). Rows report
TFLOP/s beside DeepGEMM's published H800 figures for its contiguous (1346) and masked (932)
kernels. The check compares each group's rows with the dense GEMM of that group's weights.
"""

from __future__ import annotations

import os

import grouped_bench as gb
import torch
import torch_bench as tb

# (G, rows per group, N, K): DeepSeek-V3's MoE projections, DeepGEMM's benchmark shapes.
CONTIGUOUS_SHAPES = [(4, 8192, 4096, 7168), (4, 8192, 7168, 2048), (8, 4096, 4096, 7168), (8, 4096, 7168, 2048)]
MASKED_SHAPES = [(1, 1024, 4096, 7168), (2, 512, 7168, 2048), (4, 256, 4096, 7168), (4, 256, 7168, 2048)]
DEEPGEMM_H800_TFLOPS = {"fp8_contiguous": 1346, "fp8_masked": 932}
# What runs the shapes above (K multiples of 128, aligned operands, contiguous indices sorted):
# the CUTLASS instance under TGEMM_GROUPED_BACKEND=cutlass, else the tile kernel (src/grouped/fp8_cutlass.h).
CUTLASS_SOLUTION = "sm90_grouped_fp8_blockwise_128x128x128_c1x2_coop"


def _operands(g, m, n, k, seed):
    import tgemm

    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(g * m, k, device="cuda", generator=gen).to(torch.bfloat16)
    w = (torch.randn(g, n, k, device="cuda", generator=gen) / k**0.5).to(torch.bfloat16)
    xq, xs = tgemm.quant_fp8_per_block_1x128(x, True)
    pairs = [tgemm.quant_fp8_per_block_128x128(w[i]) for i in range(g)]
    return xq, xs, torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])


def _bad(got, ref) -> int:
    """Elements outside bf16 rounding plus FP8 tensor-core accumulation (~2^-11 of sum |x w|, ~0.03
    for unit-variance outputs at K = 7168) of ref; non-finite ones too."""
    got, ref = got.float(), ref.float()
    return int((((got - ref).abs() > 5e-2 + 2e-2 * ref.abs()) | ~torch.isfinite(got)).sum().item())


def run(name: str, args, device_props) -> tuple[list[dict], dict, str]:
    import tgemm

    masked = name == "fp8_masked"
    tbps = tb.copy_tbps()
    print(
        f"device {device_props.name}, copy {tbps:.2f} TB/s, torch {torch.__version__}, baseline "
        "tgemm.gemm_a8w8_blockscale over the same rows"
    )
    rows = []
    for seed, (g, m, n, k) in enumerate(MASKED_SHAPES if masked else CONTIGUOUS_SHAPES):
        xq, xs, wq, ws = _operands(g, m, n, k, seed)
        if masked:
            xg = xq.view(g, m, k)
            # Each group's [max_m, L] plane MN-major, DeepGEMM's masked layout (m is a multiple of 4:
            # the TMA-aligned column stride is m itself).
            blocks = xs.shape[1]
            xsg = torch.empty_strided((g, m, blocks), (blocks * m, 1, m), device="cuda")
            for i in range(g):
                xsg[i].copy_(xs[i * m : (i + 1) * m])
            out = torch.empty(g, m, n, device="cuda", dtype=torch.bfloat16)
            masked_m = torch.full((g,), m, dtype=torch.int32, device="cuda")

            def grouped(i, xg=xg, xsg=xsg, wq=wq, ws=ws, out=out, masked_m=masked_m, m=m):
                tgemm.m_grouped_gemm_fp8_masked(xg, xsg, wq, ws, out, masked_m, m)

            result = out.view(g * m, n)
        else:
            idx = torch.arange(g, dtype=torch.int32, device="cuda").repeat_interleave(m)
            out = torch.empty(g * m, n, device="cuda", dtype=torch.bfloat16)

            def grouped(i, xq=xq, xs=xs, wq=wq, ws=ws, out=out, idx=idx):
                tgemm.m_grouped_gemm_fp8_contiguous(xq, xs, wq, ws, out, idx)

            result = out

        def dense(i, xq=xq, xs=xs, wq=wq, ws=ws):
            return tgemm.gemm_a8w8_blockscale(xq, wq[0], xs, ws[0])

        status = "-"
        if not args.no_check:
            grouped(0)
            bad = 0
            for i in range(g):
                ref = tgemm.gemm_a8w8_blockscale(xq[i * m : (i + 1) * m], wq[i], xs[i * m : (i + 1) * m], ws[i])
                bad += _bad(result[i * m : (i + 1) * m], ref)
            status = "ok" if bad == 0 else f"{bad} bad"
        flops = 2.0 * g * m * n * k
        bytes_moved = g * m * k + g * n * k + 2 * g * m * n
        reading, first = gb._timed([dense, grouped], tb.estimate_us(g * m, n, k, 1), args)
        s = {"name": f"G={g} x {m} rows", "G": g, "tpe": m, "N": n, "K": k}
        row = gb._row(
            name,
            s,
            "uniform",
            [m] * g,
            "tgemm.gemm_a8w8_blockscale",
            reading,
            first,
            status,
            CUTLASS_SOLUTION if os.environ.get("TGEMM_GROUPED_BACKEND") == "cutlass" else "fp8_grouped_tiled",
            bytes_moved,
            flops,
            tbps,
        )
        row["baseline_tflops"] = flops / (reading["baseline_us"] * 1e-6) / 1e12
        row["deepgemm_h800_tflops"] = DEEPGEMM_H800_TFLOPS[name]
        rows.append(row)
        gb._print(row)
        print(
            f"    {row['tflops']:.0f} TFLOP/s (dense blockscale {row['baseline_tflops']:.0f}; "
            f"DeepGEMM H800 {row['deepgemm_h800_tflops']})",
            flush=True,
        )
        del xq, xs, wq, ws, out
    torch.cuda.empty_cache()
    return rows, {"summary": tb.speedup_summary(rows), "copy_tbps": tbps}, f"torch_{name}"
