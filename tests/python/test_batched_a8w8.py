"""torch.ops.tgemm.batched_gemm_a8w8 (and tgemm.batched_gemm_a8w8): results against a reference of
the dequantized operands for FP8 and INT8, every scale shape (one scale for every product, [B],
[B, 1, 1], per-token [B, M, 1], per-channel [B, N, 1]), broadcast (expand) and padded batch
strides, bias and output dtypes; opcheck (float8 through opcheck_float8); torch.compile(fullgraph=
True); a CUDA graph that reads the scales at replay; errors naming the argument, from the real and
the fake kernel alike.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_close_quantized as assert_close
from tgemm_test_utils import opcheck_float8, requires_cuda

pytestmark = requires_cuda

FP8_MAX = 448.0


def quantize(t: torch.Tensor, dtype: torch.dtype, per_row: bool):
    """t [B, R, K] -> (q of dtype, scale [B, R, 1] or [B] fp32) with t[i] ~= q[i] * scale[i]."""
    qmax = FP8_MAX if dtype == torch.float8_e4m3fn else 127.0
    amax = t.abs().amax(dim=2, keepdim=True) if per_row else t.abs().amax(dim=(1, 2))
    scale = (amax.float() / qmax).clamp(min=1e-12)
    q = (t.float() / (scale if per_row else scale.reshape(-1, 1, 1))).clamp(-qmax, qmax)
    q = q.round().to(dtype) if dtype == torch.int8 else q.to(dtype)
    return q, scale


def as_batch_rows(s: torch.Tensor, batch: int, rows: int) -> torch.Tensor:
    """A scale of any accepted shape as [B, rows, 1] fp64: every product's value for every row."""
    return s.double().reshape(-1, s.shape[1] if s.dim() == 3 else 1, 1).expand(batch, rows, 1)


def reference(aq, bq, a_s, b_s, bias):
    """Each product of the dequantized operands in float64, then fp32."""
    batch, m, n = aq.shape[0], aq.shape[1], bq.shape[1]
    acc = torch.bmm(aq.double(), bq.double().transpose(1, 2))
    y = acc * as_batch_rows(a_s, batch, m) * as_batch_rows(b_s, batch, n).transpose(1, 2)
    if bias is not None:
        y = y + bias.double()
    return y.float()


def accumulation_bound(aq, bq, a_s, b_s):
    """FP8: 2^-11 * (|a| @ |b|^T) of the dequantized operands per element; int8 is exact: 0."""
    if aq.dtype != torch.float8_e4m3fn:
        return 0.0
    batch, m, n = aq.shape[0], aq.shape[1], bq.shape[1]
    a = aq.double().abs() * as_batch_rows(a_s, batch, m)
    b = bq.double().abs() * as_batch_rows(b_s, batch, n)
    return (2.0**-11 * torch.bmm(a, b.transpose(1, 2))).float()


def make(batch, m, n, k, dtype, a_rows, b_rows, bias_dtype=None, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(batch, m, k, device="cuda", generator=g)
    b = torch.randn(batch, n, k, device="cuda", generator=g)
    aq, a_s = quantize(a, dtype, a_rows)
    bq, b_s = quantize(b, dtype, b_rows)
    bias = None if bias_dtype is None else torch.randn(n, device="cuda", generator=g).to(bias_dtype)
    return aq, bq, a_s, b_s, bias


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.int8])
@pytest.mark.parametrize("recipe", ["tensor", "token", "channel", "token_channel"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("bias", [None, "out", "fp32"])
def test_matches_dequantized_reference(dtype, recipe, out_dtype, bias):
    batch, m, n, k = 5, 37, 144, 256
    bias_dtype = None if bias is None else (out_dtype if bias == "out" else torch.float32)
    aq, bq, a_s, b_s, bb = make(batch, m, n, k, dtype, "token" in recipe, "channel" in recipe, bias_dtype)
    y = tgemm.batched_gemm_a8w8(aq, bq, a_s, b_s, bb, out_dtype)
    assert y.shape == (batch, m, n)
    assert_close(y, reference(aq, bq, a_s, b_s, bb), out_dtype, k, accumulation_bound(aq, bq, a_s, b_s))
    y_op = torch.ops.tgemm.batched_gemm_a8w8(aq, bq, a_s, b_s, bb, out_dtype)
    torch.testing.assert_close(y_op, y, rtol=0, atol=0)


def test_scale_shapes_agree():
    # [B] and [B, 1, 1] are one recipe; one scalar serves every product.
    aq, bq, a_s, b_s, _ = make(4, 16, 64, 128, torch.float8_e4m3fn, False, False)
    y = tgemm.batched_gemm_a8w8(aq, bq, a_s, b_s)
    torch.testing.assert_close(tgemm.batched_gemm_a8w8(aq, bq, a_s.reshape(4, 1, 1), b_s.reshape(4, 1, 1)), y)
    one = a_s[:1].clone()
    y1 = tgemm.batched_gemm_a8w8(aq, bq, one, b_s)
    assert_close(y1, reference(aq, bq, one, b_s, None), torch.bfloat16, 128, accumulation_bound(aq, bq, one, b_s))


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.int8])
def test_broadcast_and_padded_batch_strides(dtype):
    # a: one [M, K] matrix expanded over the batch (stride 0) with its per-token scale expanded too;
    # b: every other matrix of a larger stack (a padded batch stride).
    aq, bq, a_s, b_s, _ = make(6, 24, 48, 64, dtype, True, True, seed=3)
    a1, s1 = aq[:1].expand(6, -1, -1), a_s[:1].expand(6, -1, -1)
    big_b, big_s = torch.cat([bq, bq]), torch.cat([b_s, b_s])
    b2, bs2 = big_b[::2], big_s[::2]
    y = tgemm.batched_gemm_a8w8(a1, b2, s1, bs2)
    assert_close(y, reference(a1, b2, s1, bs2, None), torch.bfloat16, 64, accumulation_bound(a1, b2, s1, bs2))


def test_large_batch_and_one_row():
    aq, bq, a_s, b_s, _ = make(512, 1, 128, 64, torch.int8, True, True, seed=4)
    y = tgemm.batched_gemm_a8w8(aq, bq, a_s, b_s, None, torch.float32)
    assert_close(y, reference(aq, bq, a_s, b_s, None), torch.float32, 64)


def _opcheck_cases():
    for dtype in (torch.float8_e4m3fn, torch.int8):
        for a_rows, b_rows, bias_dtype, out_dtype in [
            (False, False, None, None),
            (True, True, torch.bfloat16, torch.bfloat16),
            (True, False, torch.float32, torch.float16),
        ]:
            aq, bq, a_s, b_s, bb = make(3, 17, 64, 128, dtype, a_rows, b_rows, bias_dtype)
            yield pytest.param((aq, bq, a_s, b_s, bb, out_dtype), id=f"{dtype}-{a_rows}-{b_rows}-{bias_dtype}")


@pytest.mark.parametrize("args", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(args):
    opcheck_float8(torch.ops.tgemm.batched_gemm_a8w8.default, args)


def test_compile_fullgraph():
    def f(aq, bq, a_s, b_s, bb):
        return torch.nn.functional.silu(tgemm.batched_gemm_a8w8(aq, bq, a_s, b_s, bb)) * 2.0

    compiled = torch.compile(f, fullgraph=True)
    for m in (8, 40):
        aq, bq, a_s, b_s, bb = make(4, m, 128, 256, torch.float8_e4m3fn, True, True, torch.bfloat16, seed=m)
        torch.testing.assert_close(compiled(aq, bq, a_s, b_s, bb), f(aq, bq, a_s, b_s, bb), rtol=0, atol=0)


def test_cuda_graph_reads_scales_at_replay():
    aq, bq, a_s, b_s, _ = make(8, 16, 128, 256, torch.float8_e4m3fn, True, False)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tgemm.batched_gemm_a8w8(aq, bq, a_s, b_s)  # warm the shape (first resolution) before capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = tgemm.batched_gemm_a8w8(aq, bq, a_s, b_s)
    a_s.mul_(2.0)
    b_s[3] = 0.0
    graph.replay()
    torch.cuda.synchronize()
    assert_close(y, reference(aq, bq, a_s, b_s, None), torch.bfloat16, 256, accumulation_bound(aq, bq, a_s, b_s))
    assert not y[3].any()


# (mutation, message, whether the fake kernel raises it too: it checks no strides or aliasing).
BAD_CASES = [
    (lambda x: x.update(b=x["b"].view(torch.int8)), "b.dtype must equal a.dtype (torch.float8_e4m3fn)", True),
    (lambda x: x.update(a=x["a"].float()), "a.dtype must be torch.float8_e4m3fn or torch.int8", True),
    (lambda x: x.update(b=x["b"][:3]), "b.size(0) must equal a.size(0) (B), got 3 vs 4", True),
    (lambda x: x.update(a=x["a"][0]), "a must have rank 3, got 2", True),
    (lambda x: x.update(a=x["a"][:, :, :112].contiguous()), "K of b [B, N, K] (transpose_b=true) must equal K", True),
    (
        lambda x: x.update(a=x["a"][:, :, :120].contiguous(), b=x["b"][:, :, :120].contiguous()),
        "K (a.size(2)) must be a multiple of 16",
        True,
    ),
    (lambda x: x.update(a_scale=x["a_scale"][:3]), "a_scale must have 1 element (one scale for every product)", True),
    (lambda x: x.update(b_scale=x["b_scale"][:, :7]), "b_scale must have 1 element", True),
    (lambda x: x.update(b_scale=x["b_scale"].half()), "b_scale.dtype must be torch.float32", True),
    (lambda x: x.update(b=x["b"].transpose(1, 2).contiguous().transpose(1, 2)), "b.stride(2) must be 1", False),
]


@pytest.mark.parametrize("mutate, message, fake_raises", BAD_CASES)
def test_bad_input_names_the_argument(mutate, message, fake_raises):
    aq, bq, a_s, b_s, _ = make(4, 16, 24, 128, torch.float8_e4m3fn, True, True)
    x = {"a": aq, "b": bq, "a_scale": a_s, "b_scale": b_s}
    mutate(x)
    args = (x["a"], x["b"], x["a_scale"], x["b_scale"])
    with pytest.raises(tgemm.TgemmError) as info:
        tgemm.batched_gemm_a8w8(*args)
    assert "batched_gemm_a8w8: " + message in str(info.value)
    if fake_raises:
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            fakes = [mode.from_tensor(t) for t in args]
            with pytest.raises(tgemm.TgemmError) as fake_info:
                torch.ops.tgemm.batched_gemm_a8w8(*fakes)
        assert str(fake_info.value) == str(info.value)


def test_describe_names_the_staged_cublaslt_route():
    # Without a table row a dense FP8 problem runs cuBLASLt's strided batch, staged.
    aq, bq, a_s, b_s, _ = make(16, 64, 512, 128, torch.float8_e4m3fn, True, True)
    info = tgemm.describe_batched_a8w8(aq, bq, a_s, b_s)
    assert info["libtype"] == "cublaslt" and info["kernelName"] == "cublaslt:heuristic_staged"
