"""The grouped ops beyond :func:`tgemm.gmm` (C++: ``include/tgemm/grouped.h``): the weight-gradient
form (:func:`ptgmm` / :func:`nptgmm`), MoE expert GEMMs by expert ids (:func:`grouped_gemm`) and
DeepGEMM's masked grouped GEMM (:func:`m_grouped_gemm_masked`); and DeepGEMM's FP8 grouped GEMMs with
DeepSeek-V3 block scales (:func:`m_grouped_gemm_fp8_contiguous`, :func:`m_grouped_gemm_fp8_masked`;
C++: ``include/tgemm/grouped_fp8.h``).

Each is a thin wrapper over ``torch.ops.tgemm.<op>`` taking the same three entries as ``tgemm.ops``
(traced op under torch.compile, ``tgemm._C`` fast path in plain eager, ``torch.ops`` under a
``__torch_function__`` override). Group sizes, expert ids and masks are read on the device only:
no host synchronisation, so the calls can be captured in a CUDA graph whose device data change
between replays. Not differentiable. Bad input raises :class:`tgemm.TgemmError` naming the argument.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import _C
from ._errors import TgemmError
from .ops import _call_op, _has_torch_function, _is_compiling

tgmm_op = torch.ops.tgemm.tgmm.default
tgmm_out_op = torch.ops.tgemm.tgmm_out.default
grouped_gemm_op = torch.ops.tgemm.grouped_gemm.default
m_grouped_gemm_masked_op = torch.ops.tgemm.m_grouped_gemm_masked.default
m_grouped_gemm_fp8_contiguous_op = torch.ops.tgemm.m_grouped_gemm_fp8_contiguous.default
m_grouped_gemm_fp8_masked_op = torch.ops.tgemm.m_grouped_gemm_fp8_masked.default


def _tgmm(persistent, lhs, rhs, group_sizes, bias_grad, out_dtype, out, accumulate):
    op = "ptgmm" if persistent else "nptgmm"
    if out is None and bias_grad is None:
        if accumulate:
            raise TgemmError(f"{op}: accumulate=True needs out (the tensor to add into)")
        if _is_compiling():
            return tgmm_op(lhs, rhs, group_sizes, persistent, out_dtype)
        if not _has_torch_function(lhs, rhs, group_sizes):
            return _C.tgmm(lhs, rhs, group_sizes, persistent, out_dtype)
        return _call_op(tgmm_op, lhs, rhs, group_sizes, persistent, out_dtype)
    if out is None:
        if accumulate:
            raise TgemmError(f"{op}: accumulate=True needs out (the tensor to add into)")
        # [G, K, N]; wrong ranks give empty dims and the op's rank check names them.
        g = group_sizes.shape[0] if group_sizes.dim() == 1 else 0
        k = lhs.shape[0] if lhs.dim() == 2 else 0
        n = rhs.shape[1] if rhs.dim() == 2 else 0
        out = lhs.new_empty((g, k, n), dtype=out_dtype or lhs.dtype)
    if _is_compiling():
        tgmm_out_op(lhs, rhs, group_sizes, out, bias_grad, accumulate, persistent)
    elif not _has_torch_function(lhs, rhs, group_sizes, out, bias_grad):
        _C.tgmm_out(lhs, rhs, group_sizes, out, bias_grad, accumulate, persistent)
    else:
        _call_op(tgmm_out_op, lhs, rhs, group_sizes, out, bias_grad, accumulate, persistent)
    return out


def ptgmm(
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    group_sizes: torch.Tensor,
    bias_grad: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
    out: Optional[torch.Tensor] = None,
    accumulate: bool = False,
) -> torch.Tensor:
    """Transposed grouped GEMM (the weight gradient of gmm), persistent grid:
    ``out[g] = lhs[:, cols of g] @ rhs[rows of g]``, the columns of lhs (rows of rhs) of group g
    being the g-th consecutive block of ``group_sizes[g]``.

    lhs: ``[K, M]`` bf16/fp16, row-major or column-major (``x.t()`` of an ``[M, K]`` tensor: no
    copy); rhs: ``[M, N]`` of lhs's dtype, rows contiguous; group_sizes: int32 ``[G]`` on the
    device (negative sizes count as 0, a sum above M is clamped). Returns ``out`` ``[G, K, N]`` in
    ``out_dtype`` (lhs's dtype or fp32), written into ``out`` when given; ``accumulate=True`` adds
    into ``out`` (fp32 sum, one rounding). ``bias_grad`` (fp32 ``[G, K]``) is overwritten with the
    row sums of ``lhs[:, cols of g]``. An empty group gives zeros (``out[g]`` unchanged with
    accumulate).
    """
    return _tgmm(True, lhs, rhs, group_sizes, bias_grad, out_dtype, out, accumulate)


def nptgmm(
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    group_sizes: torch.Tensor,
    bias_grad: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
    out: Optional[torch.Tensor] = None,
    accumulate: bool = False,
) -> torch.Tensor:
    """:func:`ptgmm` on a non-persistent grid (one CTA per output tile); the same values."""
    return _tgmm(False, lhs, rhs, group_sizes, bias_grad, out_dtype, out, accumulate)


def grouped_gemm(
    x: torch.Tensor,
    weights: torch.Tensor,
    expert_ids: torch.Tensor,
    topk: Optional[int] = None,
    topk_weights: Optional[torch.Tensor] = None,
    transpose_weights: bool = False,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """MoE expert GEMM: ``y[t, j] = x[t] @ W(expert_ids[t, j])`` (x ``[T, H]``: the token's row for
    each of its slots) or ``x[t, j] @ W(expert_ids[t, j])`` (x ``[T, topk, H]``: one row per slot).

    weights: ``[E, H, N]``, or ``[E, N, H]`` (stacked ``nn.Linear`` weights) with
    ``transpose_weights=True``; expert_ids: int32 ``[T, topk]`` on the device; an id outside
    ``[0, E)`` gives a zero row. Returns y ``[T, topk, N]``, or with ``topk_weights`` ``[T, topk]``
    (x's dtype or fp32) the weighted sum over the slots ``[T, N]`` (fp32, slot order, one rounding).
    ``topk``: the seeds' argument; when given it must equal ``expert_ids.shape[1]``.
    out_dtype: x's dtype (default) or fp32.
    """
    if topk is not None and (expert_ids.dim() != 2 or expert_ids.shape[1] != topk):
        raise TgemmError(
            f"grouped_gemm: topk ({topk}) must equal expert_ids.size(1), got expert_ids of shape "
            f"{list(expert_ids.shape)}"
        )
    args = (x, weights, expert_ids, topk_weights, transpose_weights, out_dtype)
    if _is_compiling():
        return grouped_gemm_op(*args)
    if not _has_torch_function(x, weights, expert_ids, topk_weights):
        return _C.grouped_gemm(*args)
    return _call_op(grouped_gemm_op, *args)


def m_grouped_gemm_masked(
    x: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    masked_m: torch.Tensor,
    expected_m: int,
) -> torch.Tensor:
    """DeepGEMM's masked grouped GEMM, bf16: ``out[g, :m_g] = x[g, :m_g] @ w[g].T`` with
    ``m_g = clamp(masked_m[g], 0, max_m)``; x ``[G, max_m, K]``, w ``[G, N, K]``, out
    ``[G, max_m, N]`` (written in place, rows ``m_g:`` left untouched), masked_m int32 ``[G]`` on
    the device. ``expected_m`` (>= 0): the rows per group the caller expects, DeepGEMM's
    kernel-selection hint. Returns ``out``.
    """
    args = (x, w, out, masked_m, expected_m)
    if _is_compiling():
        m_grouped_gemm_masked_op(*args)
    elif not _has_torch_function(x, w, out, masked_m):
        _C.m_grouped_gemm_masked(*args)
    else:
        _call_op(m_grouped_gemm_masked_op, *args)
    return out


def m_grouped_gemm_fp8_contiguous(
    x: torch.Tensor,
    x_scale: torch.Tensor,
    w: torch.Tensor,
    w_scale: torch.Tensor,
    out: torch.Tensor,
    m_indices: torch.Tensor,
) -> torch.Tensor:
    """DeepGEMM's contiguous FP8 grouped GEMM, arguments in its order: ``out[r] = x[r] @
    w[m_indices[r]].T`` with DeepSeek-V3 block scales, ``L = ceil(K / 128)``: x float8_e4m3fn
    ``[M, K]`` with x_scale fp32 ``[M, L]`` (row-major or MN-major, as ``quant_fp8_per_block_1x128``
    writes), w float8_e4m3fn ``[G, N, K]`` with w_scale fp32 ``[G, ceil(N / 128), L]`` (each group's
    ``quant_fp8_per_block_128x128``), out bf16 ``[M, N]`` written in place, m_indices int32 ``[M]``
    on the device. A row whose index lies outside ``[0, G)`` (DeepGEMM's -1 padding) gets zeros.
    Returns ``out``.
    """
    args = (x, x_scale, w, w_scale, out, m_indices)
    if _is_compiling():
        m_grouped_gemm_fp8_contiguous_op(*args)
    elif not _has_torch_function(*args):
        _C.m_grouped_gemm_fp8_contiguous(*args)
    else:
        _call_op(m_grouped_gemm_fp8_contiguous_op, *args)
    return out


def m_grouped_gemm_fp8_masked(
    x: torch.Tensor,
    x_scale: torch.Tensor,
    w: torch.Tensor,
    w_scale: torch.Tensor,
    out: torch.Tensor,
    masked_m: torch.Tensor,
    expected_m: int,
) -> torch.Tensor:
    """DeepGEMM's masked FP8 grouped GEMM, arguments in its order: ``out[g, :m_g] = x[g, :m_g] @
    w[g].T`` with ``m_g = clamp(masked_m[g], 0, max_m)`` and DeepSeek-V3 block scales: x
    float8_e4m3fn ``[G, max_m, K]`` with x_scale fp32 ``[G, max_m, ceil(K / 128)]`` (each group's
    plane row-major or MN-major), w and w_scale as :func:`m_grouped_gemm_fp8_contiguous`, out bf16
    ``[G, max_m, N]`` written in place (rows ``m_g:`` left untouched), masked_m int32 ``[G]`` on the
    device, ``expected_m`` (>= 0) DeepGEMM's kernel-selection hint. Returns ``out``.
    """
    args = (x, x_scale, w, w_scale, out, masked_m, expected_m)
    if _is_compiling():
        m_grouped_gemm_fp8_masked_op(*args)
    elif not _has_torch_function(x, x_scale, w, w_scale, out, masked_m):
        _C.m_grouped_gemm_fp8_masked(*args)
    else:
        _call_op(m_grouped_gemm_fp8_masked_op, *args)
    return out
