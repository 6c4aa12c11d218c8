"""Fake (meta) kernels of the MXFP4 ops (python/csrc/ops_fp4.cpp): the checks of
src/fp4/fp4_validate.cpp that need no data and no device, in its order and with its text; strides,
alignment and overlap are left to the real kernel. Imported by tgemm._fake, which registers them
(torch requires it of the module the C++ library names).
"""

from __future__ import annotations

import math

import torch

from ._fake import (
    _A16W16_IN,
    _A16W16_OUT,
    _NOT_TGEMM,
    _TGEMM_DTYPES,
    _check,
    _check_a8w8_scale,
    _check_view,
    _n,
    _shape,
)
from ._fake import _deferred_fake as _fake

_BLOCK = 32  # tgemm::kMxfp4Block


def _with_last(x, last):
    return (*x.shape[:-1], last) if x.dim() > 0 else (last,)


def _check_k(op, k):
    _check(
        k % _BLOCK == 0,
        lambda: f"{op}: x.size(-1) (K) must be a multiple of 32 (one E8M0 scale per 32 values), got {_n(k)}",
    )


@_fake("tgemm::quant_mxfp4")
def quant_mxfp4_fake(x):
    op = "quant_mxfp4"
    _check_view(op, "x", x)
    _check(x.dim() >= 2, lambda: f"{op}: x must be of rank 2 or more ([..., K]), got rank {x.dim()}")
    _check(x.dtype in _A16W16_IN, lambda: f"{op}: x.dtype must be torch.bfloat16 or torch.float16, got {x.dtype}")
    k = x.shape[-1]
    _check_k(op, k)
    return (
        x.new_empty(_with_last(x, k // 2), dtype=torch.uint8),
        x.new_empty(_with_last(x, k // _BLOCK), dtype=torch.uint8),
    )


def _check_views(op, named):
    # to_view of each operand, in the op's order (python/csrc/ops_fp4.cpp).
    for name, t in named:
        if t is not None:
            _check_view(op, name, t)


def _check_weight_ranks(op, w, w_scale, bias):
    _check(w.dim() == 2, lambda: f"{op}: w must be 2-D [N, K / 2], got rank {w.dim()}")
    _check(w_scale.dim() == 2, lambda: f"{op}: w_scale must be 2-D [N, K / 32], got rank {w_scale.dim()}")
    if bias is not None:
        _check(bias.dim() == 1, lambda: f"{op}: bias must be 1-D [N], got rank {bias.dim()}")


def _check_weight_dtypes(op, w, w_scale, otype):
    _check(w.dtype == torch.uint8, lambda: f"{op}: w.dtype must be torch.uint8, got {w.dtype}")
    _check(w_scale.dtype == torch.uint8, lambda: f"{op}: w_scale.dtype must be torch.uint8, got {w_scale.dtype}")
    _check(
        otype in _A16W16_OUT,
        lambda: f"{op}: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got {otype}",
    )


def _check_bias_out_or_fp32(op, bias, otype):
    if bias is not None:
        _check(
            bias.dtype in (otype, torch.float32),
            lambda: f"{op}: bias.dtype must be out's ({otype}) or torch.float32, got {bias.dtype}",
        )


def _check_weight_shapes(op, k, x, w, w_scale, bias):
    n = w.shape[0]
    _check(
        w.shape[1] == k // 2,
        lambda: (
            f"{op}: w.size(1) must be K / 2 = {_n(k // 2)} (two e2m1 codes a byte; x is {_shape(x.shape)}), "
            f"got {_n(w.shape[1])}"
        ),
    )
    _check(
        w_scale.shape[0] == n and w_scale.shape[1] == k // _BLOCK,
        lambda: f"{op}: w_scale must be [N, K / 32] = [{_n(n)}, {_n(k // _BLOCK)}], got {_shape(w_scale.shape)}",
    )
    if bias is not None:
        _check(bias.shape[0] == n, lambda: f"{op}: bias must be [N] = [{_n(n)}], got {_shape(bias.shape)}")
    return n


def _out_dtype(op, out_dtype, default):
    otype = default if out_dtype is None else out_dtype
    _check(otype in _TGEMM_DTYPES, lambda: f"{op}: out_dtype {otype} {_NOT_TGEMM}")
    return otype


@_fake("tgemm::gemm_a16w4")
def gemm_a16w4_fake(x, w, w_scale, bias=None, out_dtype=None):
    op = "gemm_a16w4"
    otype = _out_dtype(op, out_dtype, x.dtype)
    _check_views(op, (("x", x), ("w", w), ("w_scale", w_scale), ("bias", bias)))
    _check(x.dim() >= 2, lambda: f"{op}: x must be of rank 2 or more ([..., K]), got rank {x.dim()}")
    _check_weight_ranks(op, w, w_scale, bias)
    _check(x.dtype in _A16W16_IN, lambda: f"{op}: x.dtype must be torch.bfloat16 or torch.float16, got {x.dtype}")
    _check_weight_dtypes(op, w, w_scale, otype)
    if bias is not None:
        _check(
            bias.dtype in (x.dtype, otype),
            lambda: f"{op}: bias.dtype must be x's ({x.dtype}) or out's ({otype}), got {bias.dtype}",
        )
    k = x.shape[-1]
    _check_k(op, k)
    n = _check_weight_shapes(op, k, x, w, w_scale, bias)
    return x.new_empty(_with_last(x, n), dtype=otype)


@_fake("tgemm::gemm_a8w4")
def gemm_a8w4_fake(x, w, x_scale, w_scale, bias=None, out_dtype=None):
    op = "gemm_a8w4"
    otype = _out_dtype(op, out_dtype, torch.bfloat16)
    _check_views(op, (("x", x), ("w", w), ("x_scale", x_scale), ("w_scale", w_scale), ("bias", bias)))
    _check(x.dim() >= 2, lambda: f"{op}: x must be of rank 2 or more ([..., K]), got rank {x.dim()}")
    _check_weight_ranks(op, w, w_scale, bias)
    _check(x.dtype == torch.float8_e4m3fn, lambda: f"{op}: x.dtype must be torch.float8_e4m3fn, got {x.dtype}")
    _check(
        x_scale.dtype == torch.float32,
        lambda: f"{op}: x_scale.dtype must be torch.float32 (one scale per tensor or per token), got {x_scale.dtype}",
    )
    _check_weight_dtypes(op, w, w_scale, otype)
    _check_bias_out_or_fp32(op, bias, otype)
    k = x.shape[-1]
    _check_k(op, k)
    n = _check_weight_shapes(op, k, x, w, w_scale, bias)
    _check_a8w8_scale(op, "x_scale", x_scale, math.prod(x.shape[:-1]), "M", "per-token: [M, 1]")
    return x.new_empty(_with_last(x, n), dtype=otype)


@_fake("tgemm::gemm_a4w4")
def gemm_a4w4_fake(x, w, x_scale, w_scale, bias=None, out_dtype=None):
    op = "gemm_a4w4"
    otype = _out_dtype(op, out_dtype, torch.bfloat16)
    _check_views(op, (("x", x), ("w", w), ("x_scale", x_scale), ("w_scale", w_scale), ("bias", bias)))
    _check(x.dim() >= 2, lambda: f"{op}: x must be of rank 2 or more ([..., K / 2]), got rank {x.dim()}")
    _check(
        x_scale.dim() >= 2,
        lambda: f"{op}: x_scale must be of x's rank ([..., K / 32]), got rank {x_scale.dim()}",
    )
    _check_weight_ranks(op, w, w_scale, bias)
    _check(x.dtype == torch.uint8, lambda: f"{op}: x.dtype must be torch.uint8 (two e2m1 codes a byte), got {x.dtype}")
    _check(
        x_scale.dtype == torch.uint8,
        lambda: f"{op}: x_scale.dtype must be torch.uint8 (E8M0, one per 32 values), got {x_scale.dtype}",
    )
    _check_weight_dtypes(op, w, w_scale, otype)
    _check_bias_out_or_fp32(op, bias, otype)
    half_k = x.shape[-1]
    _check(
        half_k % (_BLOCK // 2) == 0,
        lambda: (
            f"{op}: x.size(-1) (K / 2, two e2m1 codes a byte) must be a multiple of 16 (one E8M0 scale per 32 "
            f"values), got {_n(half_k)}"
        ),
    )
    k = 2 * half_k
    _check(
        x_scale.dim() == x.dim() and x_scale.shape[:-1] == x.shape[:-1] and x_scale.shape[-1] == k // _BLOCK,
        lambda: (
            f"{op}: x_scale must have x's leading sizes and K / 32 = {_n(k // _BLOCK)} in its last dim (x is "
            f"{_shape(x.shape)}), got {_shape(x_scale.shape)}"
        ),
    )
    n = _check_weight_shapes(op, k, x, w, w_scale, bias)
    return x.new_empty(_with_last(x, n), dtype=otype)
