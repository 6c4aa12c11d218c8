"""torch.ops.tgemm.gemm_a8w8_blockscale (and tgemm.gemm_a8w8_blockscale): results against a torch
reference of the dequantized operands, both x_scale layouts, opcheck, torch.compile(fullgraph=True),
CUDA graphs, errors and the fake kernel's first error.

Operands are quantized by tgemm's own block quantizers (quant_fp8_per_block_1x128 for x, row-major
or MN-major scales; quant_fp8_per_block_128x128 for w); the reference is
``x_deq @ w_deq.T + bias`` in fp32 with each block of x (w) times its scale. Tolerance as in
test_a8w8.py: output rounding, fp32 summation over K, and for Hopper's FP8 tensor-core
accumulation 2^-11 of ``|x_deq| @ |w_deq|.T`` per element.
"""

from __future__ import annotations

import re

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_close_quantized, opcheck_float8, requires_cuda

pytestmark = requires_cuda


def expand_x_scale(xs, k):
    """[M, L] block scales -> [M, K], each scale over its 128 columns."""
    return xs.float().repeat_interleave(128, dim=1)[:, :k]


def expand_w_scale(ws, n, k):
    """[ceil(N/128), L] block scales -> [N, K]."""
    return ws.float().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:n, :k]


def dequantized(xq, wq, xs, ws):
    k = xq.shape[-1]
    x = xq.float().reshape(-1, k) * expand_x_scale(xs, k)
    w = wq.float() * expand_w_scale(ws, wq.shape[0], k)
    return x, w


def reference(xq, wq, xs, ws, bias):
    x, w = dequantized(xq, wq, xs, ws)
    y = x @ w.T
    if bias is not None:
        y = y + bias.float()
    return y.reshape(*xq.shape[:-1], wq.shape[0])


def accumulation_bound(xq, wq, xs, ws):
    x, w = dequantized(xq, wq, xs, ws)
    return (2.0**-11 * (x.abs() @ w.abs().T)).reshape(*xq.shape[:-1], wq.shape[0])


def make(m, n, k, mn_major=False, bias_dtype=None, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    w = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16)
    xq, xs = tgemm.quant_fp8_per_block_1x128(x, mn_major)
    wq, ws = tgemm.quant_fp8_per_block_128x128(w)
    bias = None if bias_dtype is None else torch.randn(n, device="cuda", generator=g).to(bias_dtype)
    return xq, wq, xs, ws, bias


def check(xq, wq, xs, ws, b, out_dtype):
    y = tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws, b, out_dtype)
    assert y.shape == (*xq.shape[:-1], wq.shape[0])
    assert_close_quantized(y, reference(xq, wq, xs, ws, b), out_dtype, xq.shape[-1], accumulation_bound(xq, wq, xs, ws))
    return y


@pytest.mark.parametrize("mn_major", [False, True])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("bias", [None, "out", "fp32"])
@pytest.mark.parametrize("shape", [(64, 512, 1024), (37, 200, 528), (1, 256, 7168)])
def test_matches_dequantized_reference(mn_major, out_dtype, bias, shape):
    m, n, k = shape
    bias_dtype = None if bias is None else (out_dtype if bias == "out" else torch.float32)
    xq, wq, xs, ws, b = make(m, n, k, mn_major, bias_dtype)
    if mn_major and m > 1:
        assert xs.stride() == (1, (m + 3) // 4 * 4)
    y = check(xq, wq, xs, ws, b, out_dtype)
    y_op = torch.ops.tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws, b, out_dtype)
    torch.testing.assert_close(y_op, y, rtol=0, atol=0)


def test_scale_layouts_agree():
    xq, wq, xs, ws, _ = make(96, 1024, 2048, mn_major=False, seed=4)
    xs_mn = torch.empty_strided(xs.shape, (1, 96), device="cuda", dtype=torch.float32)
    xs_mn.copy_(xs)
    y_row = tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws)
    y_mn = tgemm.gemm_a8w8_blockscale(xq, wq, xs_mn, ws)
    torch.testing.assert_close(y_mn, y_row, rtol=0, atol=0)


def test_approximates_the_bf16_linear():
    # Block quantization keeps 3 mantissa bits per element: ~2.5% rms each, ~3.5% relative L2 for
    # the product of two rounded operands (as the per-tensor FP8 check in test_a8w8.py).
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(64, 1024, device="cuda", generator=g).to(torch.bfloat16)
    w = (torch.randn(512, 1024, device="cuda", generator=g) / 32).to(torch.bfloat16)
    xq, xs = tgemm.quant_fp8_per_block_1x128(x)
    wq, ws = tgemm.quant_fp8_per_block_128x128(w)
    y = tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws)
    ref = torch.nn.functional.linear(x.float(), w.float())
    rel_l2 = ((y.float() - ref).norm() / ref.norm()).item()
    assert rel_l2 < 0.06, rel_l2


def test_leading_dims_flatten_into_m():
    xq, wq, xs, ws, _ = make(12, 256, 256)
    y = tgemm.gemm_a8w8_blockscale(xq.reshape(3, 4, 256), wq, xs, ws)
    assert y.shape == (3, 4, 256)
    torch.testing.assert_close(y.reshape(12, 256), tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws), rtol=0, atol=0)


def test_describe_names_the_solution():
    xq, wq, xs, ws, _ = make(64, 512, 1024)
    info = tgemm.describe_a8w8_blockscale(xq, wq, xs, ws)
    assert info["level"] in ("exact", "range", "default")
    assert info["kernelName"]


def _opcheck_cases():
    for mn_major, bias_dtype, out_dtype in [
        (False, None, None),
        (True, torch.bfloat16, torch.bfloat16),
        (False, torch.float32, torch.float16),
        (True, None, torch.float32),
    ]:
        xq, wq, xs, ws, b = make(17, 256, 384, mn_major, bias_dtype)
        yield pytest.param((xq, wq, xs, ws, b, out_dtype), id=f"{mn_major}-{bias_dtype}-{out_dtype}")


@pytest.mark.parametrize("args", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(args):
    opcheck_float8(torch.ops.tgemm.gemm_a8w8_blockscale.default, args)


def test_compile_fullgraph():
    def f(xq, wq, xs, ws, b):
        return torch.nn.functional.silu(tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws, b)) * 2.0

    compiled = torch.compile(f, fullgraph=True)
    for m in (8, 40):
        xq, wq, xs, ws, b = make(m, 256, 512, True, torch.bfloat16, seed=m)
        torch.testing.assert_close(compiled(xq, wq, xs, ws, b), f(xq, wq, xs, ws, b), rtol=0, atol=0)


@pytest.mark.parametrize("m", [16, 5])
def test_cuda_graph_reads_scales_at_replay(m):
    xq, wq, xs, ws, _ = make(m, 256, 512, mn_major=m % 4 == 0)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws)  # warm the shape (first resolution) before capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws)
    xs.mul_(2.0)
    ws.mul_(0.5)
    graph.replay()
    torch.cuda.synchronize()
    assert_close_quantized(y, reference(xq, wq, xs, ws, None), torch.bfloat16, 512, accumulation_bound(xq, wq, xs, ws))


def test_zero_and_nan_scales():
    # Documented: a zero scale zeroes its block's contribution, a NaN scale makes every output its
    # block touches NaN.
    xq, wq, xs, ws, _ = make(8, 256, 256)
    xs[0].zero_()
    xs[1, 1] = float("nan")
    y = tgemm.gemm_a8w8_blockscale(xq, wq, xs, ws, None, torch.float32)
    assert (y[0] == 0).all()
    assert torch.isnan(y[1]).all()
    assert torch.isfinite(y[2:]).all()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a: a.update(w=a["w"].view(torch.int8)), "w.dtype must equal x.dtype"),
        (lambda a: a.update(x=a["x"].view(torch.int8), w=a["w"].view(torch.int8)), "block scales are an FP8 recipe"),
        (lambda a: a.update(x=a["x"].to(torch.float8_e5m2), w=a["w"].to(torch.float8_e5m2)), "float8_e5m2"),
        (lambda a: a.update(x_scale=a["x_scale"][:, :2]), "x_scale must be [M, ceil(K / 128)] = [17, 3]"),
        (lambda a: a.update(x_scale=a["x_scale"][:, :1].contiguous()), "x_scale must be [M, ceil(K / 128)]"),
        (lambda a: a.update(w_scale=a["w_scale"].t()), "w_scale must be [ceil(N / 128), ceil(K / 128)] = [2, 3]"),
        (lambda a: a.update(w_scale=a["w_scale"].half()), "w_scale.dtype must be torch.float32"),
        (lambda a: a.update(x_scale=a["x_scale"].cpu()), "x_scale"),
        (lambda a: a.update(w=a["w"][:, :368]), "w.size(1) must equal x.size(-1) (K)"),
        (lambda a: a.update(x=a["x"][:, :376], w=a["w"][:, :376]), "must be a multiple of 16"),
    ],
)
def test_bad_input_names_the_argument(mutate, message):
    xq, wq, xs, ws, _ = make(17, 256, 384)
    args = {"x": xq, "w": wq, "x_scale": xs, "w_scale": ws}
    mutate(args)
    with pytest.raises(tgemm.TgemmError, match=re.escape(message)):
        tgemm.gemm_a8w8_blockscale(args["x"], args["w"], args["x_scale"], args["w_scale"])
    torch.cuda.synchronize()


@pytest.mark.parametrize(
    "case",
    [
        "mixed",
        "int8",
        "e5m2",
        "out_int8",
        "scale_dtype",
        "k_mismatch",
        "x_scale_shape",
        "x_scale_layout",
        "w_scale_shape",
    ],
)
def test_fake_first_error_is_the_real_kernels(case):
    from torch._subclasses.fake_tensor import FakeTensorMode

    xq, wq, xs, ws, _ = make(17, 256, 384)
    args = [xq, wq, xs, ws, None, None]
    if case == "mixed":
        args[1] = wq.view(torch.int8)
    elif case == "int8":
        args[0], args[1] = xq.view(torch.int8), wq.view(torch.int8)
    elif case == "e5m2":
        args[0], args[1] = xq.to(torch.float8_e5m2), wq.to(torch.float8_e5m2)
    elif case == "out_int8":
        args[5] = torch.int8
    elif case == "scale_dtype":
        args[3] = ws.double()
    elif case == "k_mismatch":
        args[1] = wq[:, :256]
    elif case == "x_scale_shape":
        args[2] = xs[:5]
    elif case == "x_scale_layout":
        args[2] = torch.empty_strided((17, 3), (1, 16), device="cuda")  # MN-major with ld < M: columns overlap
    elif case == "w_scale_shape":
        args[3] = ws[:1]
    with pytest.raises(RuntimeError) as real:
        torch.ops.tgemm.gemm_a8w8_blockscale(*args)
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with pytest.raises(tgemm.TgemmError) as traced:
            torch.ops.tgemm.gemm_a8w8_blockscale(*fake)
    assert str(traced.value) == str(real.value)
