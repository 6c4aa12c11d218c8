"""The fake (meta) kernels: output metadata and trace-time errors, without a GPU (FakeTensorMode
on CPU tensors never runs a kernel)."""

from __future__ import annotations

import re

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import tgemm


@pytest.mark.parametrize(
    "x_shape,n,otype,want_dtype",
    [
        ((5, 64), 32, None, torch.bfloat16),
        ((2, 3, 64), 48, torch.float32, torch.float32),
        ((64,), 16, torch.float16, torch.float16),
    ],
)
def test_fake_output_metadata(x_shape, n, otype, want_dtype):
    with FakeTensorMode():
        x = torch.empty(*x_shape, dtype=torch.bfloat16)
        w = torch.empty(n, 64, dtype=torch.bfloat16)
        b = torch.empty(n, dtype=torch.bfloat16)
        y = torch.ops.tgemm.gemm_a16w16(x, w, b, otype)
        assert y.shape == (*x_shape[:-1], n)
        assert y.dtype == want_dtype
        assert y.is_contiguous()


@pytest.mark.parametrize(
    "make,message",
    [
        (
            lambda: (torch.empty(4, 64), torch.empty(32, 64)),
            "x.dtype must be torch.bfloat16 or torch.float16, got torch.float32",
        ),
        (
            lambda: (torch.empty(4, 64, dtype=torch.bfloat16), torch.empty(32, 63, dtype=torch.bfloat16)),
            "w.size(1) must equal x.size(-1) (K), got 63 vs 64",
        ),
        (
            lambda: (torch.empty(4, 64, dtype=torch.bfloat16), torch.empty(2, 32, 64, dtype=torch.bfloat16)),
            "w must be 2-D [N, K], got rank 3 [2, 32, 64]",
        ),
    ],
)
def test_fake_rejects_bad_input_with_library_text(make, message):
    with FakeTensorMode():
        x, w = make()
        with pytest.raises(tgemm.TgemmError, match=re.escape(message)):
            torch.ops.tgemm.gemm_a16w16(x, w)


_BF16 = torch.bfloat16


# The first error of the real kernel (torch_view.cpp's conversions, then the core's
# validate_a16w16), exactly; tests/python/test_errors.py compares the two on a GPU.
@pytest.mark.parametrize(
    "args,message",
    [
        (
            (torch.empty(4, 64, dtype=torch.float64), torch.empty(32, 64, dtype=torch.float64), None, None),
            "gemm_a16w16: x.dtype torch.float64 is not a tgemm type (bfloat16, float16, float32, float8_e4m3fn, "
            "float8_e5m2, int8, int32) nor torch.uint8 (MXFP4 codes and scales)",
        ),
        (
            (torch.empty(4, 64, dtype=_BF16), torch.empty(32, 64, dtype=_BF16), None, torch.float64),
            "gemm_a16w16: otype torch.float64 is not a tgemm type (bfloat16, float16, float32, float8_e4m3fn, "
            "float8_e5m2, int8, int32) nor torch.uint8 (MXFP4 codes and scales)",
        ),
        (
            (torch.empty(4, 64, dtype=_BF16), torch.empty(32, 64, dtype=_BF16), None, torch.int8),
            "gemm_a16w16: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got torch.int8",
        ),
        (
            (torch.empty(1, 1, 1, 1, 1, 4, 64, dtype=_BF16), torch.empty(32, 64, dtype=_BF16), None, None),
            "gemm_a16w16: x.rank must be in [1, 6], got 7",
        ),
        (
            (torch.empty((), dtype=_BF16), torch.empty(32, 64, dtype=_BF16), None, None),
            "gemm_a16w16: x.rank must be in [1, 6], got 0",
        ),
        # The binding's view checks of w come before the core's rank check of x.
        (
            (torch.empty((), dtype=_BF16), torch.empty(32, 64, dtype=torch.float64), None, None),
            "gemm_a16w16: w.dtype torch.float64 is not a tgemm type (bfloat16, float16, float32, float8_e4m3fn, "
            "float8_e5m2, int8, int32) nor torch.uint8 (MXFP4 codes and scales)",
        ),
        (
            (
                torch.empty(4, 64, dtype=_BF16),
                torch.empty(32, 64, dtype=_BF16),
                torch.empty(32, dtype=torch.float16),
                None,
            ),
            "gemm_a16w16: bias.dtype must equal x.dtype (torch.bfloat16) or out.dtype (torch.bfloat16), got "
            "torch.float16",
        ),
        (
            (torch.empty(4, 64, dtype=_BF16), torch.empty(32, 64, dtype=_BF16), torch.empty(1, 32, dtype=_BF16), None),
            "gemm_a16w16: bias must be 1-D [N], got rank 2 [1, 32]",
        ),
        # Dtypes before shapes, as the core checks them.
        (
            (torch.empty(4, 64, dtype=_BF16), torch.empty(32, 63, dtype=torch.float16), None, None),
            "gemm_a16w16: w.dtype must equal x.dtype (torch.bfloat16), got torch.float16",
        ),
    ],
)
def test_fake_first_error_is_the_real_kernels(args, message):
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with pytest.raises(tgemm.TgemmError) as info:
            torch.ops.tgemm.gemm_a16w16(*fake)
        assert str(info.value) == message


@pytest.mark.parametrize(
    "out_shape,message",
    [
        ((4, 31), "gemm_a16w16: out.size(-1) must equal w.size(0) (N), got 31 vs 32"),
        ((4, 1, 32), "gemm_a16w16: out.rank must equal x.rank (2), got 3"),
        ((5, 32), "gemm_a16w16: out.size(0) must equal x.size(0), got 5 vs 4"),
    ],
)
def test_fake_out_variant_first_error(out_shape, message):
    with FakeTensorMode():
        x, w = torch.empty(4, 64, dtype=_BF16), torch.empty(32, 64, dtype=_BF16)
        with pytest.raises(tgemm.TgemmError) as info:
            torch.ops.tgemm.gemm_a16w16_out(x, w, torch.empty(*out_shape, dtype=_BF16))
        assert str(info.value) == message


def test_symbolic_trace_rejects_k_mismatch():
    from torch.fx.experimental.proxy_tensor import make_fx

    x, w = torch.randn(3, 64, dtype=_BF16), torch.randn(32, 63, dtype=_BF16)
    with pytest.raises(tgemm.TgemmError, match=re.escape("w.size(1) must equal x.size(-1) (K), got 63 vs 64")):
        make_fx(lambda x, w: torch.ops.tgemm.gemm_a16w16(x, w), tracing_mode="symbolic")(x, w)


def test_fake_out_variant_and_autograd_trace():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w, b):
        y = torch.ops.tgemm.gemm_a16w16(x, w, b, torch.float32)
        return torch.autograd.grad(y.square().sum(), (x, w, b))

    x = torch.randn(3, 4, 64, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(32, 64, dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(32, dtype=torch.bfloat16, requires_grad=True)
    graph = make_fx(f, tracing_mode="symbolic")(x, w, b)
    code = graph.code
    assert "tgemm.gemm_a16w16.default" in code
    assert code.count("aten.mm.default") == 2  # dx and dw by ATen matmuls
    with FakeTensorMode():
        xf, wf = torch.empty(3, 64, dtype=torch.bfloat16), torch.empty(32, 64, dtype=torch.bfloat16)
        out = torch.empty(3, 32, dtype=torch.bfloat16)
        torch.ops.tgemm.gemm_a16w16_out(xf, wf, out)
        with pytest.raises(tgemm.TgemmError, match=re.escape("out.size(-1) must equal w.size(0) (N), got 31 vs 32")):
            torch.ops.tgemm.gemm_a16w16_out(xf, wf, torch.empty(3, 31, dtype=torch.bfloat16))
