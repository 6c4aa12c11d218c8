"""Fake (meta) kernels of the torch.ops.tgemm ops: output metadata without running anything, for
torch.compile, torch.library.opcheck and FakeTensorMode. The C++ library names this module
(``set_python_module``), so torch imports it when it needs a fake kernel.

Each fake checks what it can see without data (ranks, K agreement, dtypes) with the C++ core's
wording, so a bad call fails at trace time as it would at run time.
"""

from __future__ import annotations

import torch

from . import _C

_A16W16_IN = (torch.bfloat16, torch.float16)
_A16W16_OUT = (torch.bfloat16, torch.float16, torch.float32)


def _check(cond, message: str) -> None:
    # A plain bool fails now, with the library's exception; a symbolic one becomes a guard.
    if isinstance(cond, bool):
        if not cond:
            raise _C.TgemmError(message)
    else:
        torch._check(cond, lambda: message)


def _check_a16w16(op: str, x: torch.Tensor, w: torch.Tensor, bias, out_dtype: torch.dtype) -> None:
    _check(1 <= x.dim() <= 6, f"{op}: x.rank must be in [1, 6], got {x.dim()}")
    _check(1 <= w.dim() <= 6, f"{op}: w.rank must be in [1, 6], got {w.dim()}")
    _check(x.dtype in _A16W16_IN, f"{op}: x.dtype must be torch.bfloat16 or torch.float16, got {x.dtype}")
    _check(w.dtype == x.dtype, f"{op}: w.dtype must equal x.dtype ({x.dtype}), got {w.dtype}")
    _check(
        out_dtype in _A16W16_OUT,
        f"{op}: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got {out_dtype}",
    )
    if bias is not None:
        _check(
            bias.dtype == x.dtype or bias.dtype == out_dtype,
            f"{op}: bias.dtype must equal x.dtype ({x.dtype}) or out.dtype ({out_dtype}), got {bias.dtype}",
        )
    _check(w.dim() == 2, f"{op}: w must be 2-D [N, K], got rank {w.dim()} {tuple(w.shape)}")
    _check(w.shape[1] == x.shape[-1], f"{op}: w.size(1) must equal x.size(-1) (K), got {w.shape[1]} vs {x.shape[-1]}")
    if bias is not None:
        _check(bias.dim() == 1, f"{op}: bias must be 1-D [N], got rank {bias.dim()} {tuple(bias.shape)}")
        _check(bias.shape[0] == w.shape[0], f"{op}: bias.size(0) must equal N ({w.shape[0]}), got {bias.shape[0]}")


@torch.library.register_fake("tgemm::gemm_a16w16")
def gemm_a16w16_fake(x, w, bias=None, otype=None):
    out_dtype = x.dtype if otype is None else otype
    _check_a16w16("gemm_a16w16", x, w, bias, out_dtype)
    return x.new_empty((*x.shape[:-1], w.shape[0]), dtype=out_dtype)


@torch.library.register_fake("tgemm::gemm_a16w16_out")
def gemm_a16w16_out_fake(x, w, out, bias=None):
    _check_a16w16("gemm_a16w16", x, w, bias, out.dtype)
    _check(out.dim() == x.dim(), f"gemm_a16w16: out.rank must equal x.rank ({x.dim()}), got {out.dim()}")
    _check(
        out.shape[-1] == w.shape[0],
        f"gemm_a16w16: out.size(-1) must equal w.size(0) (N), got {out.shape[-1]} vs {w.shape[0]}",
    )
    return None
