"""The MXFP4 ops (torch.ops.tgemm.quant_mxfp4 / gemm_a16w4 / gemm_a8w4 / gemm_a4w4 and their
tgemm.* wrappers):
quant_mxfp4 against a torch reference of the OCP Microscaling v1.0 rules written here (scale
floor(log2(amax)) - 2, nearest-even e2m1 codes saturated at 6, element 2i in the low nibble),
code for code, with zero, tie, saturating and non-finite values; gemm_a16w4 on each path (M <= 4
the decode GEMV, M <= 32 the tensor-core kernel, larger M dequantize + a16w16) against
x @ dequant(w).T in fp32; gemm_a8w4 (FP8 x with per-token or per-tensor scales) and gemm_a4w4
(MXFP4 x: GEMV or dequantize) on each path against the fp32 product of their dequantized
operands; opcheck,
torch.compile(fullgraph=True), CUDA graphs and bad input. The kernels' own tests, with poisoned
outputs and 300+ random problems, are tests/gpu/test_fp4.cpp.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_bad_input, opcheck_float8, randn, requires_cuda

pytestmark = requires_cuda

GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def reference_quant(x: torch.Tensor):
    """(q, scale) of x [..., K] by the OCP rules, on the CPU in float64."""
    x64 = x.detach().cpu().double()
    blocks = x64.reshape(*x64.shape[:-1], -1, 32)
    finite = torch.isfinite(blocks).all(-1)
    amax = torch.where(torch.isfinite(blocks), blocks.abs(), torch.zeros_like(blocks)).amax(-1)
    _, e = torch.frexp(amax)  # amax = f * 2**e, f in [0.5, 1): floor(log2(amax)) = e - 1
    s = torch.clamp(e - 1 - 2, -127, 127) + 127
    s = torch.where(amax == 0, torch.zeros_like(s), s)
    s = torch.where(finite, s, torch.full_like(s, 255))
    u = blocks / torch.exp2((s.double() - 127.0).clamp(max=127))[..., None]
    grid = torch.tensor(GRID, dtype=torch.float64)
    dist = (u.abs()[..., None] - grid).abs()
    # Equal distances go to the even code. 1e-9 is far below the gap between unequal distances
    # (u has at most 11 significant bits near a midpoint) and far above float64's rounding of a
    # distance under 8, so it breaks exact ties only.
    dist = dist + (torch.arange(8) % 2) * 1e-9
    codes = dist.argmin(-1) | torch.where(torch.signbit(u), 8, 0)
    codes = torch.where(finite[..., None], codes, torch.zeros_like(codes)).reshape(x64.shape)
    q = (codes[..., 0::2] | (codes[..., 1::2] << 4)).to(torch.uint8)
    return q, s.to(torch.uint8)


def _input(shape, dtype, seed, specials=False):
    x = randn(*shape, dtype=torch.float32, seed=seed)
    rows = x.reshape(-1, shape[-1])
    rows *= torch.pow(2.0, (torch.arange(rows.shape[0], device=x.device) % 19 - 9).float())[:, None]
    if specials:
        rows[0] = 0.0
        rows[1, :13] = torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -5.0, -2.5, 7.5, -7.75])
        rows[1, 13:32] = 0.0
        rows[2, 3] = float("nan")
        rows[2, 40] = float("inf")
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 32), (6, 64), (2, 3, 96), (16, 2880), (130, 512)])
def test_quant_matches_the_ocp_reference(dtype, shape):
    x = _input(shape, dtype, seed=shape[-1], specials=shape[0] >= 6 and shape[-1] >= 64)
    q, s = tgemm.quant_mxfp4(x)
    assert q.dtype == torch.uint8 and q.shape == (*shape[:-1], shape[-1] // 2)
    assert s.dtype == torch.uint8 and s.shape == (*shape[:-1], shape[-1] // 32)
    q_ref, s_ref = reference_quant(x)
    assert torch.equal(s.cpu(), s_ref)
    assert torch.equal(q.cpu(), q_ref)


def _weight(n, k, seed):
    w = randn(n, k, dtype=torch.float32, seed=seed) / k**0.5
    return tgemm.quant_mxfp4(w.to(torch.bfloat16))


@pytest.mark.parametrize("m", [1, 3, 5, 9, 16, 17, 100])
@pytest.mark.parametrize(
    "dtype,out_dtype", [(torch.bfloat16, None), (torch.float16, None), (torch.bfloat16, torch.float32)]
)
@pytest.mark.parametrize("bias", [False, True])
def test_gemm_matches_the_dequantized_reference(m, dtype, out_dtype, bias):
    n, k = 300, 1024  # N not a multiple of 128
    q, s = _weight(n, k, seed=m)
    x = randn(m, k, dtype=dtype, seed=m + 1)
    b = randn(n, dtype=dtype, seed=m + 2) if bias else None
    y = tgemm.gemm_a16w4(x, q, s, b, out_dtype)
    assert y.dtype == (out_dtype or dtype) and y.shape == (m, n)
    ref = x.float() @ tgemm.dequant_mxfp4(q, s).t()
    if bias:
        ref = ref + b.float()
    tol = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-4}[y.dtype]
    torch.testing.assert_close(y.float(), ref, rtol=tol, atol=tol * max(1.0, ref.abs().max().item()))


def test_rank3_input_and_dequant_matches_the_values():
    q, s = _weight(64, 256, seed=9)
    x = randn(2, 5, 256, seed=10)
    y = tgemm.gemm_a16w4(x, q, s)
    assert y.shape == (2, 5, 64)
    torch.testing.assert_close(y, tgemm.gemm_a16w4(x.reshape(10, 256), q, s).reshape(2, 5, 64), rtol=0, atol=0)
    # dequant_mxfp4 decodes the stored codes: requantizing its output gives them back.
    w = tgemm.dequant_mxfp4(q, s)
    q2, s2 = tgemm.quant_mxfp4(w.to(torch.bfloat16))
    assert torch.equal(q2, q) and torch.equal(s2, s)


@pytest.mark.parametrize("m", [1, 8, 24])
def test_opcheck(m):
    q, s = _weight(96, 256, seed=m)
    x = randn(m, 256, seed=3)
    torch.library.opcheck(torch.ops.tgemm.gemm_a16w4.default, (x, q, s, randn(96, seed=4), None))
    torch.library.opcheck(torch.ops.tgemm.quant_mxfp4.default, (x,))


def test_compile_fullgraph():
    def f(x, q, s):
        qx, sx = tgemm.quant_mxfp4(x)
        return torch.nn.functional.silu(tgemm.gemm_a16w4(x, q, s)) * 2.0, qx, sx

    compiled = torch.compile(f, fullgraph=True)
    q, s = _weight(128, 512, seed=5)
    for m in (2, 40):
        x = randn(m, 512, seed=m)
        for got, want in zip(compiled(x, q, s), f(x, q, s)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("m", [1, 8, 40])
def test_cuda_graph_replays_new_activations(m):
    q, s = _weight(200, 512, seed=6)
    x = randn(m, 512, seed=7)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tgemm.gemm_a16w4(x, q, s)
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = tgemm.gemm_a16w4(x, q, s)
    for seed in (8, 9):
        x.copy_(randn(m, 512, seed=seed))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y, tgemm.gemm_a16w4(x, q, s), rtol=0, atol=0)


def test_bad_input_raises():
    x = randn(4, 48, seed=1)
    assert_bad_input(torch.ops.tgemm.quant_mxfp4.default, (x,), "x.size(-1) (K) must be a multiple of 32", True)
    q, s = _weight(8, 64, seed=2)
    x = randn(4, 64, seed=3)
    assert_bad_input(
        torch.ops.tgemm.gemm_a16w4.default, (x, q[:, :16], s, None, None), "w.size(1) must be K / 2 = 32", True
    )
    assert_bad_input(
        torch.ops.tgemm.gemm_a16w4.default, (x, q, s[:, :1], None, None), "w_scale must be [N, K / 32] = [8, 2]", True
    )
    assert_bad_input(
        torch.ops.tgemm.gemm_a16w4.default, (x, q.view(torch.int8), s, None, None), "w.dtype must be torch.uint8", True
    )


# ---- gemm_a8w4 and gemm_a4w4 -------------------------------------------------------------------


def _activations(kind, m, k, seed):
    """(x, x_scale, fp32 dequantized x) of gemm_a8w4 (per-token or per-tensor FP8) or gemm_a4w4."""
    x = randn(m, k, seed=seed)
    if kind == "fp4":
        xq, xs = tgemm.quant_mxfp4(x)
        return xq, xs, tgemm.dequant_mxfp4(xq, xs)
    xq, xs = tgemm.quant_per_token(x) if kind == "per_token" else tgemm.quant_fp8_per_tensor(x)
    return xq, xs, xq.float() * xs.reshape(-1, 1)


def _scaled_w4(kind):
    return tgemm.gemm_a4w4 if kind == "fp4" else tgemm.gemm_a8w4


@pytest.mark.parametrize("kind", ["per_token", "per_tensor", "fp4"])
@pytest.mark.parametrize("m", [1, 3, 5, 9, 16, 17, 100])
@pytest.mark.parametrize("out_dtype,bias_dtype", [(None, None), (torch.float16, torch.float32), (torch.float32, None)])
def test_scaled_gemms_match_the_dequantized_reference(kind, m, out_dtype, bias_dtype):
    n, k = 300, 1024  # N not a multiple of 128
    q, s = _weight(n, k, seed=m)
    xq, xs, xd = _activations(kind, m, k, seed=m + 1)
    b = randn(n, dtype=bias_dtype, seed=m + 2) if bias_dtype else None
    y = _scaled_w4(kind)(xq, q, xs, s, b, out_dtype)
    assert y.dtype == (out_dtype or torch.bfloat16) and y.shape == (m, n)
    ref = xd @ tgemm.dequant_mxfp4(q, s).t()
    if b is not None:
        ref = ref + b.float()
    tol = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-4}[y.dtype]
    torch.testing.assert_close(y.float(), ref, rtol=tol, atol=tol * max(1.0, ref.abs().max().item()))


@pytest.mark.parametrize("kind", ["per_token", "fp4"])
def test_scaled_gemms_take_rank3_input(kind):
    q, s = _weight(64, 256, seed=9)
    xq, xs, _ = _activations(kind, 10, 256, seed=10)
    y = _scaled_w4(kind)(xq.reshape(2, 5, -1), q, xs.reshape(2, 5, -1), s)
    assert y.shape == (2, 5, 64)
    torch.testing.assert_close(y, _scaled_w4(kind)(xq, q, xs, s).reshape(2, 5, 64), rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["per_token", "fp4"])
@pytest.mark.parametrize("m", [1, 8, 24])
def test_scaled_gemms_opcheck(kind, m):
    q, s = _weight(96, 256, seed=m)
    xq, xs, _ = _activations(kind, m, 256, seed=3)
    op = torch.ops.tgemm.gemm_a4w4.default if kind == "fp4" else torch.ops.tgemm.gemm_a8w4.default
    opcheck_float8(op, (xq, q, xs, s, randn(96, dtype=torch.float32, seed=4), None))


def test_scaled_gemms_compile_fullgraph():
    def f(x, q, s):
        x4, s4 = tgemm.quant_mxfp4(x)
        x8, s8 = tgemm.quant_per_token(x)
        return tgemm.gemm_a4w4(x4, q, s4, s) * 2.0, tgemm.gemm_a8w4(x8, q, s8, s, None, torch.float32)

    compiled = torch.compile(f, fullgraph=True)
    q, s = _weight(128, 512, seed=5)
    for m in (2, 40):
        x = randn(m, 512, seed=m)
        for got, want in zip(compiled(x, q, s), f(x, q, s)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["per_token", "fp4"])
@pytest.mark.parametrize("m", [1, 8, 40])
def test_scaled_gemms_cuda_graph_replays_new_activations(kind, m):
    q, s = _weight(200, 512, seed=6)
    xq, xs, _ = _activations(kind, m, 512, seed=7)
    gemm = _scaled_w4(kind)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        gemm(xq, q, xs, s)
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = gemm(xq, q, xs, s)
    for seed in (8, 9):
        xq2, xs2, _ = _activations(kind, m, 512, seed=seed)
        xq.copy_(xq2)
        xs.copy_(xs2)
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y, gemm(xq, q, xs, s), rtol=0, atol=0)


def test_scaled_gemms_nan_scales_poison_their_rows_and_columns():
    # A NaN activation scale poisons that token's row, a NaN (255) weight scale that column: on
    # the GEMV (M = 3) and the dequantize path (M = 20).
    q, s = _weight(5, 64, seed=11)
    s[2, 1] = 255
    for m in (3, 20):
        for kind in ("per_token", "fp4"):
            xq, xs, _ = _activations(kind, m, 64, seed=12)
            if kind == "fp4":
                xs[1, 0] = 255
            else:
                xs[1, 0] = float("nan")
            nan = torch.isnan(_scaled_w4(kind)(xq, q, xs, s, None, torch.float32))
            want = torch.zeros(m, 5, dtype=torch.bool, device=nan.device)
            want[1, :] = True
            want[:, 2] = True
            assert torch.equal(nan, want), (kind, m)


def test_scaled_gemms_bad_input_raises():
    q, s = _weight(8, 64, seed=2)
    x8, s8, _ = _activations("per_token", 4, 64, seed=3)
    x4, s4, _ = _activations("fp4", 4, 64, seed=3)
    a8w4, a4w4 = torch.ops.tgemm.gemm_a8w4.default, torch.ops.tgemm.gemm_a4w4.default
    # Mixed formats: MXFP4 activations to the FP8 op and the other way round.
    assert_bad_input(a8w4, (x4, q, s4, s, None, None), "x.dtype must be torch.float8_e4m3fn, got torch.uint8", True)
    assert_bad_input(a8w4, (x8, q, s4, s, None, None), "x_scale.dtype must be torch.float32", True)
    assert_bad_input(a4w4, (x8, q, s8, s, None, None), "x.dtype must be torch.uint8", True)
    assert_bad_input(a4w4, (x4, q, s8, s, None, None), "x_scale.dtype must be torch.uint8", True)
    assert_bad_input(a8w4, (x8, q, s8[:3], s, None, None), "x_scale must have 1 element (per-tensor) or M = 4", True)
    assert_bad_input(a4w4, (x4[:, :24], q, s4, s, None, None), "must be a multiple of 16", True)
    assert_bad_input(
        a4w4, (x4, q, s4[:, :1], s, None, None), "x_scale must have x's leading sizes and K / 32 = 2", True
    )
    assert_bad_input(a8w4, (x8, q[:, :16], s8, s, None, None), "w.size(1) must be K / 2 = 32", True)
    assert_bad_input(a4w4, (x4, q, s4, s[:, :1], None, None), "w_scale must be [N, K / 32] = [8, 2]", True)
    bias16 = randn(8, dtype=torch.float16, seed=4)
    assert_bad_input(
        a4w4, (x4, q, s4, s, bias16, None), "bias.dtype must be out's (torch.bfloat16) or torch.float32", True
    )
