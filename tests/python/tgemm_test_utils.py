"""Shared helpers of the Python tests: CUDA skip, random data, the fp32 reference, tolerances.

Tests that need a GPU use ``requires_cuda`` and are skipped cleanly without one; the rest (kernel
classification, routing on CPU tensors) run anywhere tgemm imports.
"""

from __future__ import annotations

import math

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")


def randn(*shape, dtype=torch.bfloat16, scale=1.0, seed=0, device="cuda"):
    """N(0, scale^2) data in `dtype` (never zeros)."""
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(*shape, generator=g, device=device, dtype=torch.float32) * scale).to(dtype)


def make_linear_inputs(m_shape, n, k, dtype=torch.bfloat16, bias=False, bias_dtype=None, seed=0):
    """x [*m_shape, K] ~ N(0,1), w [N, K] ~ N(0, 1/K) so outputs are ~N(0,1), bias [N] ~ N(0,1)."""
    x = randn(*m_shape, k, dtype=dtype, seed=seed)
    w = randn(n, k, dtype=dtype, scale=1.0 / math.sqrt(max(k, 1)), seed=seed + 1)
    b = randn(n, dtype=bias_dtype or dtype, seed=seed + 2) if bias else None
    return x, w, b


def reference(x, w, bias=None):
    """F.linear in fp32 (inputs are exactly representable, so this is the exact product up to
    fp32 accumulation)."""
    y = x.float() @ w.float().t()
    if bias is not None:
        y = y + bias.float()
    return y


def tolerance(out_dtype):
    """(rtol, atol) for outputs ~N(0,1): one rounding of the output type plus fp32 accumulation."""
    return {torch.bfloat16: (1e-2, 1e-2), torch.float16: (2e-3, 2e-3), torch.float32: (1e-4, 1e-4)}[out_dtype]


def assert_matches_reference(y, ref, out_dtype):
    assert y.dtype == out_dtype
    assert y.shape == ref.shape
    assert torch.isfinite(y).all()
    rtol, atol = tolerance(out_dtype)
    torch.testing.assert_close(y.float(), ref, rtol=rtol, atol=atol)


def device_arch(device=0) -> str:
    """The `arch` column tgemm's tables use for this device."""
    major, minor = torch.cuda.get_device_capability(device)
    return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


def assert_close_quantized(y, ref, out_dtype, k, acc_bound=0.0):
    """An 8-bit GEMM's output against its fp32 reference of the dequantized operands (randn data
    quantized in the test): the output dtype's rounding, fp32 summation over K, and ``acc_bound``
    (FP8 tensor-core accumulation, per element); no NaN."""
    rtol = {torch.bfloat16: 2**-7, torch.float16: 2**-10, torch.float32: 1e-5}[out_dtype]
    # |x| <= 3-4 sigma of randn: sums of K products of such values stay within ~4 sqrt(K).
    atol = rtol * 4 * k**0.5 + 1e-4 * k**0.5
    assert y.dtype == out_dtype
    assert not torch.isnan(y).any()
    err = (y.float() - ref).abs()
    allowed = atol + rtol * ref.abs() + acc_bound
    bad = err > allowed
    assert not bad.any(), (
        f"{int(bad.sum())} of {err.numel()} elements outside the tolerance; worst excess "
        f"{float((err - allowed).max()):.3g} (error {float(err[bad].max()):.3g})"
    )


def assert_bad_input(op, args, message: str, fake_raises: bool) -> None:
    """op(*args) raises a RuntimeError holding `message`; with fake_raises, its fake kernel raises
    tgemm.TgemmError with the same text (fake kernels check no strides, so some cases skip it)."""
    import tgemm

    with pytest.raises(RuntimeError) as info:
        op(*args)
    assert message in str(info.value)
    if fake_raises:
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            with pytest.raises(tgemm.TgemmError) as fake_info:
                op(*fakes)
        assert message in str(fake_info.value)


def opcheck_float8(op, args) -> None:
    """torch.library.opcheck for an 8-bit op (args[0] its first 8-bit operand). With float8
    inputs torch's test_schema, which compares inputs before and after with allclose, has no
    float8 kernel ("mul_cuda" not implemented): every other check runs, and the schema's promise
    that no input is mutated is checked here bitwise."""
    if args[0].dtype != torch.float8_e4m3fn:
        torch.library.opcheck(op, args)
        return
    utils = ["test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"]
    torch.library.opcheck(op, args, test_utils=utils)
    # The arguments the schema lets the op write (an `out` Tensor(a!)) are left out.
    written = [a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments]
    inputs = [a for a, w in zip(args, written) if isinstance(a, torch.Tensor) and not w]
    before = [a.clone() for a in inputs]
    op(*args)
    for b, a in zip(before, inputs):
        same = torch.equal(b.contiguous().view(torch.uint8), a.contiguous().view(torch.uint8))
        assert same, "an input was mutated"
