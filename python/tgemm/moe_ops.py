"""The MoE layer ops (C++: ``include/tgemm/moe.h``): routing (:func:`topk_softmax`,
:func:`grouped_topk`) and the expert layer (:func:`fused_moe`), bf16/fp16 (no FP8 experts).

Thin wrappers over ``torch.ops.tgemm.<op>`` with the same three entries as ``tgemm.ops`` (traced op
under torch.compile, ``tgemm._C`` fast path in plain eager, ``torch.ops`` under a
``__torch_function__`` override). Logits, expert ids and the expert map are read on the device
only: no host synchronisation, so a whole MoE layer can be captured in a CUDA graph whose routing
changes between replays. Not differentiable. Bad input raises :class:`tgemm.TgemmError` naming the
argument.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import _C
from .ops import _call_op, _has_torch_function, _is_compiling, _with_where

topk_softmax_op = torch.ops.tgemm.topk_softmax.default
grouped_topk_op = torch.ops.tgemm.grouped_topk.default
fused_moe_op = torch.ops.tgemm.fused_moe.default


def topk_softmax(gating: torch.Tensor, k: int, renormalize: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Softmax routing: ``topk_ids[t]`` = the experts of the ``k`` largest logits of ``gating[t]``
    (descending, ties to the lower expert), ``topk_weights[t, j]`` = their softmax probabilities
    (fp32), divided by their sum when ``renormalize``. gating: ``[T, E]`` bf16/fp16/fp32,
    ``E <= 2048``. Returns ``(topk_weights fp32 [T, k], topk_ids int32 [T, k])``; the ids of a row
    are always ``k`` distinct experts in ``[0, E)``, even with NaN logits (which rank lowest).
    """
    if _is_compiling():
        return topk_softmax_op(gating, k, renormalize)
    if not _has_torch_function(gating):
        return _C.topk_softmax(gating, k, renormalize)
    return _call_op(topk_softmax_op, gating, k, renormalize)


def grouped_topk(
    gating: torch.Tensor,
    correction_bias: Optional[torch.Tensor],
    n_group: int,
    topk_group: int,
    k: int,
    scoring: str = "sigmoid",
    renormalize: bool = True,
    routed_scaling: float = 1.0,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """DeepSeek-V3 routing (vLLM's ``grouped_topk``): scores ``s = sigmoid(gating)`` (or softmax),
    choice ``c = s + correction_bias``; the experts form ``n_group`` groups, a group scores the sum
    of its two best ``c`` (its best logit without a bias), the ``topk_group`` best groups stay, and
    ``topk_ids`` are the ``k`` best ``c`` among their experts. ``topk_weights = s[topk_ids]``,
    renormalized when asked, times ``routed_scaling``. correction_bias: fp32 ``[E]`` or None.
    Returns ``(topk_weights fp32 [T, k], topk_ids int32 [T, k])``.
    """
    args = (gating, correction_bias, n_group, topk_group, k, scoring, renormalize, routed_scaling)
    if _is_compiling():
        return grouped_topk_op(*args)
    if not _has_torch_function(gating, correction_bias):
        return _C.grouped_topk(*args)
    return _call_op(grouped_topk_op, *args)


def fused_moe(
    hidden: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    activation: str = "silu",
    expert_map: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """The expert layer of a sparse MoE block (vLLM's ``fused_experts``):
    ``out[t] = sum_j topk_weights[t, j] * (act(x W_gate^T) * (x W_up^T)) W_down^T`` for
    ``x = hidden[t]`` and the expert ``e = topk_ids[t, j]`` (``expert_map[e]`` with a map).

    hidden: ``[T, H]`` bf16/fp16; w1: ``[E, 2I, H]`` (gate rows ``:I``, up rows ``I:``); w2:
    ``[E, H, I]``; topk_weights: ``[T, k]`` fp32 or hidden's dtype; topk_ids: int32 ``[T, k]``;
    activation ``"silu"`` or ``"gelu"`` (erf); expert_map: int32 ``[E_global]``, global id -> local
    expert or -1 (on another rank). A slot whose id or mapped expert is out of range contributes 0.
    Returns ``[T, H]`` in ``out_dtype`` (hidden's dtype or fp32).
    """
    args = (hidden, w1, w2, topk_weights, topk_ids, activation, expert_map, out_dtype)
    if _is_compiling():
        return fused_moe_op(*args)
    if not _has_torch_function(hidden, w1, w2, topk_weights, topk_ids, expert_map):
        return _C.fused_moe(*args)
    return _call_op(fused_moe_op, *args)


def describe_fused_moe(
    hidden: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    activation: str = "silu",
    expert_map: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> dict:
    """Where :func:`fused_moe` with these arguments is routed, without running it: the dict of
    :func:`tgemm.describe`, with level ``forced`` (TGEMM_GROUPED_BACKEND), ``table`` (a row of
    fused_moe's tuned table, ``tuned_fmoe.csv`` / TGEMM_CONFIG_FMOE, for the call's power-of-two
    token bucket; matched_m is the row's tokens), ``default`` (the grouped default rule) or
    ``empty``; kernelName ``tile`` or ``cutlass up <instance> down <instance>``."""
    return _with_where(_C.describe_fused_moe(hidden, w1, w2, topk_weights, topk_ids, activation, expert_map, out_dtype))
