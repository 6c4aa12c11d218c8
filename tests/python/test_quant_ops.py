"""The quantization ops (torch.ops.tgemm.quant_*, the tgemm.quant_* wrappers) against a torch
reference of the same arithmetic on the CPU, code for code: amax per group, scale = amax / 448
(int8: / 127) floored at 2**-126 (1 for an all-zero group), q = x * (1 / scale) rounded to nearest
even and saturated. Odd shapes (M = 1, K = 1, 129, 4095), rank-3 inputs, both 1x128 scale
layouts, zero inputs; opcheck and torch.compile on every op; bad input raising TgemmError. The
kernels' own tests, against a host reference with poisoned outputs, are tests/gpu/test_quant.cpp.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import randn, requires_cuda

FP8 = torch.float8_e4m3fn
FP8_MAX, INT8_MAX = 448.0, 127.0
FLT_MIN = 2.0**-126

QUANT_OPS = [
    "quant_fp8_per_tensor",
    "quant_fp8_per_tensor_static",
    "quant_per_token",
    "quant_fp8_per_block_1x128",
    "quant_fp8_per_block_128x128",
]

# (leading dims, K): M = 1, K = 1, K = 129 and 4095 (partial vectors and blocks), rank 3, more
# than 128 rows (two 128x128 block rows).
SHAPES = [((1,), 1), ((1,), 129), ((3,), 4095), ((16,), 7168), ((2, 9), 200), ((130,), 1000), ((257,), 384)]
SHAPE_IDS = [f"{'x'.join(map(str, m))}x{k}" for m, k in SHAPES]


def _input(m_shape, k, dtype, seed):
    # A different magnitude per row (2**-8 .. 2**6), so rows and blocks get different scales.
    x = randn(*m_shape, k, dtype=torch.float32, seed=seed)
    rows = x.reshape(-1, k)
    rows *= torch.pow(2.0, (torch.arange(rows.shape[0], device=x.device) % 15 - 8).float())[:, None]
    return x.to(dtype)


def _scale_of(amax, qmax):
    return torch.where(amax == 0, torch.ones_like(amax), torch.clamp(amax / qmax, min=FLT_MIN))


def _codes(x32, scale, qtype):
    """x32 * (1 / scale), rounded and saturated as the kernels do, as raw bytes (CPU, fp32)."""
    v = x32 * (1.0 / scale)
    if qtype == torch.int8:
        return torch.round(v).clamp(-INT8_MAX, INT8_MAX).to(torch.int8).view(torch.uint8)
    # torch's fp32 -> e4m3fn conversion rounds to nearest even but does not saturate: clamp first.
    return v.clamp(-FP8_MAX, FP8_MAX).to(FP8).view(torch.uint8)


def _block_amax(x2, rows, cols):
    """amax over [rows x cols] blocks of a 2-D fp32 tensor (edge blocks partial)."""
    m, k = x2.shape
    mb, kb = -(-m // rows), -(-k // cols)
    padded = torch.zeros(mb * rows, kb * cols)
    padded[:m, :k] = x2.abs()
    return padded.reshape(mb, rows, kb, cols).amax(dim=(1, 3))


def _expand(scale_blocks, rows, cols, m, k):
    return scale_blocks.repeat_interleave(rows, 0).repeat_interleave(cols, 1)[:m, :k]


def _assert_codes_equal(q, want):
    got = q.cpu().view(torch.uint8)
    bad = (got != want).nonzero()
    assert bad.numel() == 0, (
        f"{bad.shape[0]} codes differ, first at {bad[0].tolist()}: {got[tuple(bad[0])]} vs {want[tuple(bad[0])]}"
    )


@requires_cuda
@pytest.mark.parametrize("m_shape,k", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_per_tensor(m_shape, k, dtype):
    x = _input(m_shape, k, dtype, seed=1)
    q, scale = tgemm.quant_fp8_per_tensor(x)
    assert q.dtype == FP8 and q.shape == x.shape and scale.shape == (1,) and scale.dtype == torch.float32
    x32 = x.float().cpu()
    want_scale = _scale_of(x32.abs().amax().reshape(1), FP8_MAX)
    assert torch.equal(scale.cpu(), want_scale)
    _assert_codes_equal(q, _codes(x32, want_scale, FP8))
    # The given-scale form, with the scale just computed: the same codes.
    q2 = tgemm.quant_fp8_per_tensor(x, scale)
    assert torch.equal(q2.view(torch.uint8), q.view(torch.uint8))


@requires_cuda
def test_per_tensor_static_saturates():
    x = _input((64,), 512, torch.bfloat16, seed=2)
    scale = torch.tensor([2.0**-7], device="cuda")  # x * 128 exceeds 448 on the larger rows
    q = torch.ops.tgemm.quant_fp8_per_tensor_static(x, scale)
    want = _codes(x.float().cpu(), scale.cpu(), FP8)
    _assert_codes_equal(q, want)
    assert (q.float().abs() == FP8_MAX).any()


@requires_cuda
@pytest.mark.parametrize("m_shape,k", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("qtype", [FP8, torch.int8])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_per_token(m_shape, k, qtype, dtype):
    x = _input(m_shape, k, dtype, seed=3)
    q, scale = tgemm.quant_per_token(x, qtype)
    assert q.dtype == qtype and q.shape == x.shape and scale.shape == (*m_shape, 1)
    x32 = x.float().cpu()
    want_scale = _scale_of(x32.abs().amax(dim=-1, keepdim=True), INT8_MAX if qtype == torch.int8 else FP8_MAX)
    assert torch.equal(scale.cpu(), want_scale)
    _assert_codes_equal(q, _codes(x32, want_scale, qtype))


@requires_cuda
@pytest.mark.parametrize("m_shape,k", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("mn_major", [False, True])
def test_per_block_1x128(m_shape, k, mn_major):
    x = _input(m_shape, k, torch.bfloat16, seed=4)
    q, scale = tgemm.quant_fp8_per_block_1x128(x, mn_major)
    m, kb = x.numel() // k, -(-k // 128)
    assert q.shape == x.shape and scale.shape == (m, kb)
    if mn_major:
        assert scale.stride() == (1, -(-m // 4) * 4)
    else:
        assert scale.is_contiguous()
    x32 = x.float().cpu().reshape(m, k)
    want_scale = _scale_of(_block_amax(x32, 1, 128), FP8_MAX)
    assert torch.equal(scale.cpu(), want_scale)
    _assert_codes_equal(q.reshape(m, k), _codes(x32, _expand(want_scale, 1, 128, m, k), FP8))


@requires_cuda
@pytest.mark.parametrize("n,k", [(1, 1), (128, 128), (129, 4095), (257, 384), (300, 1000)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_per_block_128x128(n, k, dtype):
    w = _input((n,), k, dtype, seed=5)
    q, scale = tgemm.quant_fp8_per_block_128x128(w)
    assert q.shape == w.shape and scale.shape == (-(-n // 128), -(-k // 128))
    w32 = w.float().cpu()
    want_scale = _scale_of(_block_amax(w32, 128, 128), FP8_MAX)
    assert torch.equal(scale.cpu(), want_scale)
    _assert_codes_equal(q, _codes(w32, _expand(want_scale, 128, 128, n, k), FP8))


@requires_cuda
def test_zero_input_gives_scale_one():
    x = torch.zeros(130, 300, dtype=torch.bfloat16, device="cuda")
    for q, scale in (
        tgemm.quant_fp8_per_tensor(x),
        tgemm.quant_per_token(x),
        tgemm.quant_per_token(x, torch.int8),
        tgemm.quant_fp8_per_block_1x128(x),
        tgemm.quant_fp8_per_block_128x128(x),
    ):
        assert (scale == 1).all()
        assert (q.view(torch.uint8) == 0).all()


@requires_cuda
def test_dequantized_values_are_close():
    # e4m3fn keeps 3 mantissa bits: |q * scale - x| <= 2**-4 |x| for values in the normal range.
    x = randn(64, 1024, dtype=torch.bfloat16, seed=6)
    q, scale = tgemm.quant_per_token(x)
    deq = q.float() * scale
    assert torch.allclose(deq, x.float(), rtol=2.0**-4, atol=scale.max().item() * 2.0**-9)


@requires_cuda
def test_runs_on_current_stream():
    x = _input((33,), 520, torch.bfloat16, seed=7)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        q, scale = tgemm.quant_per_token(x)
    s.synchronize()
    q_ref, scale_ref = tgemm.quant_per_token(x)
    assert torch.equal(scale, scale_ref)
    assert torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8))


# ---------------------------------------------------------------------------------------------
# Bad input


@requires_cuda
def test_bad_input_raises_tgemm_error():
    x = randn(4, 256, dtype=torch.float32, seed=8)
    with pytest.raises(tgemm.TgemmError, match=r"quant_per_token: x.dtype must be torch.bfloat16 or torch.float16"):
        tgemm.quant_per_token(x)
    xb = x.to(torch.bfloat16)
    with pytest.raises(tgemm.TgemmError, match=r"q.dtype torch.float8_e5m2 is not supported"):
        tgemm.quant_per_token(xb, torch.float8_e5m2)
    with pytest.raises(tgemm.TgemmError, match=r"quant_fp8_per_block_128x128: w must be 2-D \[N, K\], got rank 3"):
        tgemm.quant_fp8_per_block_128x128(xb.reshape(2, 2, 256))
    with pytest.raises(tgemm.TgemmError, match=r"quant_fp8_per_tensor_static: scale must hold one element"):
        tgemm.quant_fp8_per_tensor(xb, torch.ones(2, device="cuda"))
    with pytest.raises(tgemm.TgemmError, match=r"quant_fp8_per_tensor: x must be a CUDA tensor"):
        tgemm.quant_fp8_per_tensor(xb.cpu())
    # Through torch.ops: a RuntimeError with the same text.
    with pytest.raises(RuntimeError, match=r"quant_fp8_per_block_1x128: x must be of rank 2 or more"):
        torch.ops.tgemm.quant_fp8_per_block_1x128(xb[0])


# ---------------------------------------------------------------------------------------------
# opcheck (schema, fake kernel, autograd registration, AOT dispatch) and torch.compile


def _opcheck_args(op):
    x = _input((2, 7), 300, torch.bfloat16, seed=9)
    return {
        "quant_fp8_per_tensor": (x,),
        "quant_fp8_per_tensor_static": (x, torch.tensor([0.01], device="cuda")),
        "quant_per_token": (x, torch.int8),
        "quant_fp8_per_block_1x128": (x, True),
        "quant_fp8_per_block_128x128": (x.reshape(14, 300),),
    }[op]


def test_quant_ops_are_registered():
    registered = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("tgemm::")}
    assert set(QUANT_OPS) <= registered


@requires_cuda
@pytest.mark.parametrize("op", QUANT_OPS)
def test_opcheck(op):
    torch.library.opcheck(getattr(torch.ops.tgemm, op).default, _opcheck_args(op))


@requires_cuda
def test_compile_fullgraph():
    x = _input((16,), 1024, torch.bfloat16, seed=10)

    def f(x):
        q, s = tgemm.quant_fp8_per_block_1x128(x, mn_major=True)
        qt, st = tgemm.quant_per_token(x)
        return q, s, qt, st

    eager = f(x)
    compiled = torch.compile(f, fullgraph=True)(x)
    for a, b in zip(eager, compiled):
        assert a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype
        assert torch.equal(a.view(torch.uint8) if a.dtype == FP8 else a, b.view(torch.uint8) if b.dtype == FP8 else b)
