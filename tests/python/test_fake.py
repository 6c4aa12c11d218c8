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
    [((5, 64), 32, None, torch.bfloat16), ((2, 3, 64), 48, torch.float32, torch.float32), ((64,), 16, torch.float16, torch.float16)],
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
        (lambda: (torch.empty(4, 64), torch.empty(32, 64)), "x.dtype must be torch.bfloat16 or torch.float16, got torch.float32"),
        (lambda: (torch.empty(4, 64, dtype=torch.bfloat16), torch.empty(32, 63, dtype=torch.bfloat16)),
         "w.size(1) must equal x.size(-1) (K), got 63 vs 64"),
        (lambda: (torch.empty(4, 64, dtype=torch.bfloat16), torch.empty(2, 32, 64, dtype=torch.bfloat16)),
         "w must be 2-D [N, K], got rank 3"),
    ],
)
def test_fake_rejects_bad_input_with_library_text(make, message):
    with FakeTensorMode():
        x, w = make()
        with pytest.raises(tgemm.TgemmError, match=re.escape(message)):
            torch.ops.tgemm.gemm_a16w16(x, w)


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
