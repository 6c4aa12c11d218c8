"""The tgemm ops with AITER's Python API (``aiter.tuned_gemm``: ``gemm_a16w16``, ``tgemm.mm``).

Each function is a thin wrapper over ``torch.ops.tgemm.<op>`` (the custom op: schema, CUDA and
autograd kernels in C++, fake kernel in ``tgemm._fake``), so it works under torch.compile
(no graph break) and inside CUDA-graph capture once the shape has been run once.

Which entry a call takes:
  * under torch.compile / torch.export: ``torch.ops.tgemm.<op>`` (traced into the graph);
  * eager, when no ``__torch_function__`` override applies (plain tensors, ``nn.Parameter``,
    FakeTensor; no TorchFunctionMode): ``tgemm._C.<op>``, the same dispatcher entry without the
    boxed ``torch.ops`` call (host overhead), raising :class:`tgemm.TgemmError` for bad input;
  * eager otherwise: ``torch.ops.tgemm.<op>``, so the mode or subclass sees the op; its
    RuntimeError for bad input is re-raised as :class:`tgemm.TgemmError` (same text).
"""

from __future__ import annotations

from typing import Optional

import torch

from . import _C
from ._errors import as_tgemm_error

# The op overloads themselves: calling .default skips the overload resolution of the packet.
gemm_a16w16_op = torch.ops.tgemm.gemm_a16w16.default
gemm_a16w16_out_op = torch.ops.tgemm.gemm_a16w16_out.default

_is_compiling = torch.compiler.is_compiling
# True when a TorchFunctionMode is active or an argument's type overrides __torch_function__ (the
# check torch.nn.functional runs); None arguments are fine.
_has_torch_function = torch._C._has_torch_function_variadic
_fast_a16w16 = _C.gemm_a16w16
_fast_a16w16_out = _C.gemm_a16w16_out


def _call_op(op, *args):
    """An eager call through torch.ops (a TorchFunctionMode or a tensor subclass must see the op),
    with the op's RuntimeError for bad input re-raised as TgemmError."""
    try:
        return op(*args)
    except RuntimeError as e:
        err = as_tgemm_error(e)
        if err is e:
            raise
        raise err from None


def gemm_a16w16(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    otype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = x @ w.T (+ bias)``, exactly the shapes of ``F.linear(x, w, bias)``, tuned per shape.

    x: ``[..., K]`` bf16 or fp16 on a CUDA device, elements of a row contiguous (leading dims
    must flatten like a view). w: ``[N, K]`` of x's dtype, rows contiguous. bias: ``[N]`` of x's
    dtype or of the output dtype, added once in fp32 before the output cast. otype: output dtype
    (bf16, fp16 or fp32; default x.dtype). Returns a new ``[..., N]`` tensor, computed on the
    current CUDA stream. Bad input raises :class:`tgemm.TgemmError` naming the argument.
    Differentiable (backward by ATen matmuls, as F.linear's).
    """
    if _is_compiling():
        return gemm_a16w16_op(x, w, bias, otype)
    if not _has_torch_function(x, w, bias):
        return _fast_a16w16(x, w, bias, otype)
    return _call_op(gemm_a16w16_op, x, w, bias, otype)


mm = gemm_a16w16
"""Alias of :func:`gemm_a16w16` (AITER's ``tgemm.mm``)."""


def gemm_a16w16_out(
    x: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """:func:`gemm_a16w16` into an existing ``out`` (``[..., N]``, rows contiguous, dtype bf16,
    fp16 or fp32, not overlapping the inputs). Returns ``out``. Not differentiable."""
    if _is_compiling():
        gemm_a16w16_out_op(x, w, out, bias)
    elif not _has_torch_function(x, w, out, bias):
        _fast_a16w16_out(x, w, out, bias)
    else:
        _call_op(gemm_a16w16_out_op, x, w, out, bias)
    return out


def describe(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    otype: Optional[torch.dtype] = None,
) -> dict:
    """Where ``gemm_a16w16(x, w, bias, otype)`` is routed, without running it.

    Returns ``{"level", "matched_m", "file", "line", "where", "libtype", "kernelName"}``:
    the lookup-walk level that matched (``exact``, ``padded_m``, ``pow2_m``, ``nearest_m``,
    ``default``; ``empty`` for M, N or K = 0), the M of the table row used, its ``file:line``
    (``where``; empty for the default), the backend and the solution's full name. The first
    description of a shape resolves and caches it exactly as its first call would (and records
    it under ``TGEMM_TUNE_GEMM=1``). Bad input raises :class:`tgemm.TgemmError`.
    """
    info = dict(_C.describe_gemm_a16w16(x, w, bias, otype))
    info["where"] = f"{info['file']}:{info['line']}" if info["file"] else ""
    return info
