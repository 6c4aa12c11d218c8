"""torch.ops.tgemm.gemm_a8w8 (and tgemm.gemm_a8w8 / tgemm.int8_gemm): results against a torch
reference of the dequantized operands, opcheck, torch.compile(fullgraph=True), CUDA graphs, errors.

Operands are quantized here in test code (per-tensor or per-token/per-channel absmax), so the
dequantized values are within 1.5 of the bf16 inputs' range; the reference is
``(x.float() * x_scale) @ (w.float() * w_scale).T + bias`` in fp32 (float64 for int8, whose
products accumulate exactly). Tolerance: the output dtype's rounding plus fp32 summation over K;
for FP8 also Hopper's FP8 tensor-core accumulation, which keeps about 14 significant bits of the
running sum between promotions to fp32 (an H100 read up to ~2^-14.5 of sum |x w|): 2^-11 of
``|x| @ |w|.T`` (dequantized) per element, 8x that.
"""

from __future__ import annotations

import re

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_close_quantized as assert_close
from tgemm_test_utils import opcheck_float8, requires_cuda

pytestmark = requires_cuda

FP8_MAX = 448.0


def quantize(t: torch.Tensor, dtype: torch.dtype, per_row: bool):
    """t [R, K] -> (q [R, K] of dtype, scale [R, 1] or [1] fp32) with t ~= q * scale."""
    qmax = FP8_MAX if dtype == torch.float8_e4m3fn else 127.0
    amax = t.abs().amax(dim=1, keepdim=True) if per_row else t.abs().amax().reshape(1)
    scale = (amax.float() / qmax).clamp(min=1e-12)
    q = (t.float() / scale).clamp(-qmax, qmax)
    q = q.round().to(dtype) if dtype == torch.int8 else q.to(dtype)
    return q, scale


def reference(xq, wq, xs, ws, bias, out_dtype):
    acc_type = torch.float64 if xq.dtype == torch.int8 else torch.float32
    x = xq.to(acc_type).reshape(-1, xq.shape[-1])
    w = wq.to(acc_type)
    acc = x @ w.T
    y = acc * xs.reshape(-1, 1).to(acc_type) * ws.reshape(1, -1).to(acc_type)
    if bias is not None:
        y = y + bias.to(acc_type)
    return y.float().reshape(*xq.shape[:-1], wq.shape[0])


def make(m, n, k, dtype, x_rows, w_rows, bias_dtype=None, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, k, device="cuda", generator=g)
    w = torch.randn(n, k, device="cuda", generator=g)
    xq, xs = quantize(x, dtype, x_rows)
    wq, ws = quantize(w, dtype, w_rows)
    bias = None if bias_dtype is None else torch.randn(n, device="cuda", generator=g).to(bias_dtype)
    return xq, wq, xs, ws, bias


def accumulation_bound(xq, wq, xs, ws):
    """FP8: 2^-11 * (|x| @ |w|.T) of the dequantized operands, per element (see the module's
    docstring); int8 accumulates exactly: 0."""
    if xq.dtype != torch.float8_e4m3fn:
        return 0.0
    x = xq.float().abs().reshape(-1, xq.shape[-1]) * xs.reshape(-1, 1).float()
    w = wq.float().abs() * ws.reshape(-1, 1).float()
    return (2.0**-11 * (x @ w.T)).reshape(*xq.shape[:-1], wq.shape[0])


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.int8])
@pytest.mark.parametrize("recipe", ["tensor", "token", "channel", "token_channel"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("bias", [None, "out", "fp32"])
def test_matches_dequantized_reference(dtype, recipe, out_dtype, bias):
    m, n, k = 37, 272, 512
    bias_dtype = None if bias is None else (out_dtype if bias == "out" else torch.float32)
    xq, wq, xs, ws, b = make(m, n, k, dtype, "token" in recipe, "channel" in recipe, bias_dtype)
    y = tgemm.gemm_a8w8(xq, wq, xs, ws, b, out_dtype)
    assert_close(y, reference(xq, wq, xs, ws, b, out_dtype), out_dtype, k, accumulation_bound(xq, wq, xs, ws))
    y_op = torch.ops.tgemm.gemm_a8w8(xq, wq, xs, ws, b, out_dtype)
    torch.testing.assert_close(y_op, y, rtol=0, atol=0)


def test_leading_dims_and_int8_gemm_alias():
    xq, wq, xs, ws, _ = make(12, 256, 128, torch.int8, True, True)
    x3, xs3 = xq.reshape(3, 4, 128), xs.reshape(3, 4, 1)
    y = tgemm.gemm_a8w8(x3, wq, xs3, ws)
    assert y.shape == (3, 4, 256) and y.dtype == torch.bfloat16
    assert_close(y, reference(x3, wq, xs3, ws, None, torch.bfloat16), torch.bfloat16, 128)
    y2 = tgemm.int8_gemm(xq, wq, xs, ws.reshape(1, -1), torch.float16)
    assert_close(y2, reference(xq, wq, xs, ws, None, torch.float16), torch.float16, 128)


def _opcheck_cases():
    for dtype in (torch.float8_e4m3fn, torch.int8):
        for x_rows, w_rows, bias_dtype, out_dtype in [
            (False, False, None, None),
            (True, True, torch.bfloat16, torch.bfloat16),
            (True, False, torch.float32, torch.float16),
            (False, True, None, torch.float32),
        ]:
            xq, wq, xs, ws, b = make(17, 256, 128, dtype, x_rows, w_rows, bias_dtype)
            yield pytest.param((xq, wq, xs, ws, b, out_dtype), id=f"{dtype}-{x_rows}-{w_rows}-{bias_dtype}-{out_dtype}")


@pytest.mark.parametrize("args", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(args):
    opcheck_float8(torch.ops.tgemm.gemm_a8w8.default, args)


def test_compile_fullgraph():
    def f(xq, wq, xs, ws, b):
        return torch.nn.functional.silu(tgemm.gemm_a8w8(xq, wq, xs, ws, b)) * 2.0

    compiled = torch.compile(f, fullgraph=True)
    for m in (8, 40):
        xq, wq, xs, ws, b = make(m, 256, 512, torch.float8_e4m3fn, True, True, torch.bfloat16, seed=m)
        torch.testing.assert_close(compiled(xq, wq, xs, ws, b), f(xq, wq, xs, ws, b), rtol=0, atol=0)


def test_cuda_graph_reads_scales_at_replay():
    xq, wq, xs, ws, _ = make(16, 256, 256, torch.float8_e4m3fn, True, True)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tgemm.gemm_a8w8(xq, wq, xs, ws)  # warm the shape (first resolution) before capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = tgemm.gemm_a8w8(xq, wq, xs, ws)
    xs.mul_(2.0)
    graph.replay()
    torch.cuda.synchronize()
    assert_close(
        y, reference(xq, wq, xs, ws, None, torch.bfloat16), torch.bfloat16, 256, accumulation_bound(xq, wq, xs, ws)
    )


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a: a.update(w=a["w"].view(torch.int8)), "w.dtype must equal x.dtype"),
        (lambda a: a.update(x=a["x"].to(torch.float8_e5m2), w=a["w"].to(torch.float8_e5m2)), "float8_e5m2"),
        (lambda a: a.update(x_scale=a["x_scale"][:5]), "x_scale must have 1 element (per-tensor) or M = 17"),
        (lambda a: a.update(w_scale=a["w_scale"].half()), "w_scale.dtype must be torch.float32"),
        (lambda a: a.update(x_scale=a["x_scale"].cpu()), "x_scale"),
        (lambda a: a.update(x=a["x"][:, :120], w=a["w"][:, :120]), "must be a multiple of 16"),
    ],
)
def test_bad_input_names_the_argument(mutate, message):
    xq, wq, xs, ws, _ = make(17, 256, 128, torch.float8_e4m3fn, True, True)
    args = {"x": xq, "w": wq, "x_scale": xs, "w_scale": ws}
    mutate(args)
    with pytest.raises(tgemm.TgemmError, match=re.escape(message)):
        tgemm.gemm_a8w8(args["x"], args["w"], args["x_scale"], args["w_scale"])
    torch.cuda.synchronize()


@pytest.mark.parametrize(
    "case",
    ["mixed", "e5m2", "out_int8", "scale_dtype", "k_mismatch", "k_not_16", "x_scale_shape", "w_scale_shape"],
)
def test_fake_first_error_is_the_real_kernels(case):
    from torch._subclasses.fake_tensor import FakeTensorMode

    xq, wq, xs, ws, _ = make(17, 256, 128, torch.float8_e4m3fn, True, True)
    args = [xq, wq, xs, ws, None, None]
    if case == "mixed":
        args[1] = wq.view(torch.int8)
    elif case == "e5m2":
        args[0], args[1] = xq.to(torch.float8_e5m2), wq.to(torch.float8_e5m2)
    elif case == "out_int8":
        args[5] = torch.int8
    elif case == "scale_dtype":
        args[3] = ws.double()
    elif case == "k_mismatch":
        args[1] = wq[:, :112]
    elif case == "k_not_16":
        args[0], args[1] = xq[:, :120].contiguous(), wq[:, :120].contiguous()
    elif case == "x_scale_shape":
        args[2] = xs[:5]
    elif case == "w_scale_shape":
        args[3] = ws[:7]
    with pytest.raises(RuntimeError) as real:
        torch.ops.tgemm.gemm_a8w8(*args)
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with pytest.raises(tgemm.TgemmError) as traced:
            torch.ops.tgemm.gemm_a8w8(*fake)
    assert str(traced.value) == str(real.value)


@pytest.mark.parametrize("recipe", ["fp8_tensor", "fp8_rowwise", "int8_rowwise"])
def test_with_the_quantization_ops_approximates_the_bf16_linear(recipe):
    # tgemm's own quantization ops feeding gemm_a8w8: the result approximates F.linear of the bf16
    # operands within the quantization error. FP8 e4m3 keeps 3 mantissa bits: ~2.5% rms per element,
    # ~3.5% relative L2 for a product of two rounded operands. INT8 rowwise on Gaussian rows: a step
    # of amax / 127 ~ 0.03 sigma, ~0.8% rms per element, ~1.1% on the product.
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(64, 1024, device="cuda", generator=g).to(torch.bfloat16)
    w = (torch.randn(512, 1024, device="cuda", generator=g) / 32).to(torch.bfloat16)
    if recipe == "fp8_tensor":
        (xq, xs), (wq, ws) = tgemm.quant_fp8_per_tensor(x), tgemm.quant_fp8_per_tensor(w)
    else:
        qtype = torch.int8 if recipe.startswith("int8") else torch.float8_e4m3fn
        (xq, xs), (wq, ws) = tgemm.quant_per_token(x, qtype), tgemm.quant_per_token(w, qtype)
    y = tgemm.gemm_a8w8(xq, wq, xs, ws)
    ref = torch.nn.functional.linear(x.float(), w.float())
    rel_l2 = ((y.float() - ref).norm() / ref.norm()).item()
    assert rel_l2 < (0.02 if recipe.startswith("int8") else 0.06), rel_l2
