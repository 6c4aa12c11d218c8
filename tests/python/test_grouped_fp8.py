"""tgemm.m_grouped_gemm_fp8_contiguous and tgemm.m_grouped_gemm_fp8_masked (and their torch ops):
results against a torch reference of the dequantized operands with the documented device-side
rules (padding indices give zero rows; rows past masked_m stay untouched), both x_scale layouts,
opcheck, torch.compile(fullgraph=True), CUDA-graph replay with indices and masks changed between
replays, errors (the same text from the real and the fake kernel).

Operands are quantized by tgemm's own block quantizers (quant_fp8_per_block_1x128 for x,
quant_fp8_per_block_128x128 for each group's w). Tolerance as test_a8w8_blockscale.py's.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_bad_input, assert_close_quantized, opcheck_float8, requires_cuda

pytestmark = requires_cuda


def dequantized_x(xq, xs):
    k = xq.shape[-1]
    return xq.float() * xs.float().repeat_interleave(128, dim=-1)[..., :k]


def dequantized_w(wq, ws):
    n, k = wq.shape[-2], wq.shape[-1]
    return wq.float() * ws.float().repeat_interleave(128, dim=-2).repeat_interleave(128, dim=-1)[..., :n, :k]


def quant_weights(g, n, k, gen):
    w = torch.randn(g, n, k, device="cuda", generator=gen).to(torch.bfloat16)
    pairs = [tgemm.quant_fp8_per_block_128x128(w[i]) for i in range(g)]
    return torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])


def make_contiguous(m, g, n, k, mn_major=False, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    xq, xs = tgemm.quant_fp8_per_block_1x128(x, mn_major)
    wq, ws = quant_weights(g, n, k, gen)
    return xq, xs, wq, ws


def contiguous_reference(xq, xs, wq, ws, idx):
    """out [M, N] fp32 and the accumulation bound; rows with an index outside [0, G) are 0."""
    x, w = dequantized_x(xq, xs), dequantized_w(wq, ws)
    ref = torch.zeros(xq.shape[0], wq.shape[1], device="cuda")
    bound = torch.zeros_like(ref)
    for r, gi in enumerate(idx.tolist()):
        if 0 <= gi < wq.shape[0]:
            ref[r] = x[r] @ w[gi].T
            bound[r] = 2.0**-11 * (x[r].abs() @ w[gi].abs().T)
    return ref, bound


def check_contiguous(xq, xs, wq, ws, idx):
    out = torch.full((xq.shape[0], wq.shape[1]), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert tgemm.m_grouped_gemm_fp8_contiguous(xq, xs, wq, ws, out, idx) is out
    ref, bound = contiguous_reference(xq, xs, wq, ws, idx)
    assert_close_quantized(out, ref, torch.bfloat16, xq.shape[1], bound)
    pad = (idx < 0) | (idx >= wq.shape[0])
    assert (out[pad] == 0).all()


def padded_indices(sizes, align=128):
    """DeepGEMM's contiguous layout: group g's rows, then -1 up to the next multiple of align."""
    idx = []
    for g, s in enumerate(sizes):
        idx += [g] * s + [-1] * (-s % align)
    return torch.tensor(idx, dtype=torch.int32, device="cuda")


def grouped_indices(sizes):
    return torch.tensor(sum(([g] * s for g, s in enumerate(sizes)), []), dtype=torch.int32, device="cuda")


@pytest.mark.parametrize("mn_major", [False, True])
@pytest.mark.parametrize(
    "sizes",
    [[40, 0, 77, 3, 0, 8], [333], [0, 200, 0], [1, 1, 1, 1]],
    ids=["zeros", "one", "all", "tiny"],
)
def test_contiguous_matches_reference(mn_major, sizes):
    idx = grouped_indices(sizes)
    xq, xs, wq, ws = make_contiguous(idx.numel(), len(sizes), 200, 272, mn_major)
    check_contiguous(xq, xs, wq, ws, idx)


def test_contiguous_deepgemm_padding_and_interleaved_indices():
    idx = padded_indices([50, 0, 130, 7])
    xq, xs, wq, ws = make_contiguous(idx.numel(), 4, 256, 384, seed=1)
    check_contiguous(xq, xs, wq, ws, idx)
    gen = torch.Generator(device="cuda").manual_seed(2)
    idx = torch.randint(-1, 5, (150,), device="cuda", generator=gen, dtype=torch.int32)  # 4 >= G
    xq, xs, wq, ws = make_contiguous(150, 4, 96, 144, seed=3)
    check_contiguous(xq, xs, wq, ws, idx)


def make_masked(g, max_m, n, k, mn_major=False, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(g * max_m, k, device="cuda", generator=gen).to(torch.bfloat16)
    xq, xs = tgemm.quant_fp8_per_block_1x128(x, mn_major)
    if mn_major:  # [G, max_m, L] with each plane MN-major: quantize per group
        pairs = [tgemm.quant_fp8_per_block_1x128(x[i * max_m : (i + 1) * max_m], True) for i in range(g)]
        xq = torch.stack([p[0] for p in pairs])
        ld = pairs[0][1].stride(1)
        xs = torch.empty_strided((g, max_m, xs.shape[1]), (xs.shape[1] * ld, 1, ld), device="cuda")
        for i, p in enumerate(pairs):
            xs[i].copy_(p[1])
    else:
        xq, xs = xq.view(g, max_m, k), xs.view(g, max_m, -1)
    wq, ws = quant_weights(g, n, k, gen)
    return xq, xs, wq, ws


def check_masked(xq, xs, wq, ws, masked_m, out):
    x, w = dequantized_x(xq, xs), dequantized_w(wq, ws)
    max_m = xq.shape[1]
    for i, m in enumerate(masked_m.tolist()):
        m = min(max(m, 0), max_m)
        ref = x[i, :m] @ w[i].T
        bound = 2.0**-11 * (x[i, :m].abs() @ w[i].abs().T)
        if m:
            assert_close_quantized(out[i, :m], ref, torch.bfloat16, xq.shape[2], bound)
        assert torch.isnan(out[i, m:]).all()


@pytest.mark.parametrize("mn_major", [False, True])
def test_masked_writes_only_the_masked_rows(mn_major):
    xq, xs, wq, ws = make_masked(5, 96, 200, 272, mn_major, seed=4)
    masked_m = torch.tensor([0, 96, 33, 500, -3], dtype=torch.int32, device="cuda")
    out = torch.full((5, 96, 200), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert tgemm.m_grouped_gemm_fp8_masked(xq, xs, wq, ws, out, masked_m, 48) is out
    check_masked(xq, xs, wq, ws, masked_m, out)


# ---------------------------------------------------------------------------------------------
# opcheck, compile, graphs


def _opcheck_cases():
    idx = padded_indices([20, 0, 44], align=32)
    xq, xs, wq, ws = make_contiguous(idx.numel(), 3, 48, 160)
    yield (
        torch.ops.tgemm.m_grouped_gemm_fp8_contiguous.default,
        (xq, xs, wq, ws, torch.zeros(96, 48, device="cuda", dtype=torch.bfloat16), idx),
    )
    xm, xsm, wm, wsm = make_masked(2, 16, 24, 128)
    om = torch.zeros(2, 16, 24, device="cuda", dtype=torch.bfloat16)
    yield (
        torch.ops.tgemm.m_grouped_gemm_fp8_masked.default,
        (xm, xsm, wm, wsm, om, torch.tensor([16, 5], dtype=torch.int32, device="cuda"), 16),
    )


@pytest.mark.parametrize("case", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(case):
    op, args = case
    opcheck_float8(op, args)


def test_compile_fullgraph():
    idx = grouped_indices([30, 0, 66])
    xq, xs, wq, ws = make_contiguous(96, 3, 64, 256, seed=5)

    def f(xq, xs, wq, ws, idx):
        out = torch.empty(xq.shape[0], wq.shape[1], device=xq.device, dtype=torch.bfloat16)
        return torch.relu(tgemm.m_grouped_gemm_fp8_contiguous(xq, xs, wq, ws, out, idx)) * 2

    y = torch.compile(f, fullgraph=True)(xq, xs, wq, ws, idx)
    ref, bound = contiguous_reference(xq, xs, wq, ws, idx)
    assert_close_quantized(y, torch.relu(ref) * 2, torch.bfloat16, 256, 2 * bound)


def test_cuda_graphs_read_device_data_at_replay():
    idx = grouped_indices([64, 64, 64])
    xq, xs, wq, ws = make_contiguous(192, 3, 80, 256, seed=6)
    xm, xsm, wm, wsm = make_masked(3, 32, 40, 128, seed=7)
    masked_m = torch.tensor([32, 32, 32], dtype=torch.int32, device="cuda")
    out = torch.empty(192, 80, device="cuda", dtype=torch.bfloat16)
    om = torch.empty(3, 32, 40, device="cuda", dtype=torch.bfloat16)
    tgemm.m_grouped_gemm_fp8_contiguous(xq, xs, wq, ws, out, idx)  # first calls outside the capture
    tgemm.m_grouped_gemm_fp8_masked(xm, xsm, wm, wsm, om, masked_m, 16)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        tgemm.m_grouped_gemm_fp8_contiguous(xq, xs, wq, ws, out, idx)
        tgemm.m_grouped_gemm_fp8_masked(xm, xsm, wm, wsm, om, masked_m, 16)
    for step, sizes in enumerate(([0, 192, 0], [1, 2, 189], [100, 0, 92])):
        idx.copy_(grouped_indices(sizes))
        if step == 2:
            idx[150:] = -1  # padding rows
        masked_m.copy_(torch.tensor([step * 10, 32, 5 - step * 4], dtype=torch.int32))
        out.fill_(float("nan"))
        om.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref, bound = contiguous_reference(xq, xs, wq, ws, idx)
        assert_close_quantized(out, ref, torch.bfloat16, 256, bound)
        check_masked(xm, xsm, wm, wsm, masked_m, om)


# (call, message, whether the fake kernel raises it too: it checks no strides)
def _bad_cases():
    idx = grouped_indices([16, 16])
    xq, xs, wq, ws = make_contiguous(32, 2, 64, 256)
    out = torch.zeros(32, 64, device="cuda", dtype=torch.bfloat16)
    xm, xsm, wm, wsm = make_masked(2, 16, 64, 256)
    om = torch.zeros(2, 16, 64, device="cuda", dtype=torch.bfloat16)
    mm = torch.zeros(2, dtype=torch.int32, device="cuda")
    contiguous = torch.ops.tgemm.m_grouped_gemm_fp8_contiguous
    masked = torch.ops.tgemm.m_grouped_gemm_fp8_masked
    return [
        (contiguous, (xq.view(torch.int8), xs, wq, ws, out, idx), "x.dtype must be torch.float8_e4m3fn", True),
        (
            contiguous,
            (xq, xs, wq, ws[:, :, :1], out, idx),
            "w_scale must be [ceil(N / 128), ceil(K / 128)] per group = [1, 2], got [1, 1]",
            True,
        ),
        (contiguous, (xq, xs, wq, ws, out[:, :32], idx), "out must have shape [M, N] = [32, 64], got [32, 32]", True),
        (contiguous, (xq, xs, wq, ws, out, idx[:31]), "m_indices.size(0) must equal x.size(0) (M), got 31 vs 32", True),
        (
            contiguous,
            (xq, xs[:, :1], wq, ws, out, idx),
            "x_scale must be [M, ceil(K / 128)] = [32, 2], got [32, 1]",
            True,
        ),
        (contiguous, (xq, xs, wq, ws, out.float(), idx), "out.dtype must be torch.bfloat16, got torch.float32", True),
        (masked, (xm, xsm, wm, wsm, om, mm, -1), "m_grouped_gemm_fp8_masked: expected_m must be >= 0, got -1", True),
        (masked, (xm, xsm, wm[:1], wsm, om, mm, 1), "w must have shape [G, N, K] with G = 2 and K = 256", True),
        (
            masked,
            (xm, xsm[:, :8], wm, wsm, om, mm, 1),
            "x_scale must be [max_m, ceil(K / 128)] per group = [16, 2], got [8, 2]",
            True,
        ),
    ]


@pytest.mark.parametrize("index", range(9))
def test_bad_input_names_the_argument(index):
    assert_bad_input(*_bad_cases()[index])
