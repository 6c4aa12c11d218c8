"""Fake (meta) kernels of the MoE ops (python/csrc/ops_grouped.cpp: topk_softmax, grouped_topk,
fused_moe): the checks of src/core/validate_moe.cpp that need no data and no device, in its order
and with its text (ranks, dtypes, shape agreement, the routing parameters); strides, alignment,
overlap and size limits are left to the real kernel. Logits, expert ids and the expert map are never
read: the real kernels read them on the device only. Imported by tgemm._fake.
"""

from __future__ import annotations

import math

import torch

from ._fake import _A16W16_IN, _check, _n, _shape
from ._fake import _deferred_fake as _fake
from ._fake_grouped import _check_out_dtype, _check_ranks, _shape_of, _tgmm_views

_MAX_ROUTING_EXPERTS = 2048  # tgemm::kMaxRoutingExperts


def _routing_fake(op, gating, correction_bias, k):
    """validate_routing without data; returns (E, the output shape [T, k])."""
    _check(k >= 0, lambda: f"{op}: k must be >= 0, got {k}")
    _tgmm_views(op, ("gating", gating), ("correction_bias", correction_bias))
    t = gating.shape[0] if gating.dim() == 2 else 0
    _check_ranks(op, [("gating", _shape_of(gating), (2,)), ("correction_bias", _shape_of(correction_bias), (1,))])
    _check(
        gating.dtype in (torch.bfloat16, torch.float16, torch.float32),
        lambda: f"{op}: gating.dtype must be torch.bfloat16, torch.float16 or torch.float32, got {gating.dtype}",
    )
    if correction_bias is not None:
        _check(
            correction_bias.dtype == torch.float32,
            lambda: f"{op}: correction_bias.dtype must be torch.float32, got {correction_bias.dtype}",
        )
    e = gating.shape[1]
    if correction_bias is not None:
        _check(
            correction_bias.shape[0] == e,
            lambda: (
                f"{op}: correction_bias.size(0) must equal gating.size(1) (E), got "
                f"{_n(correction_bias.shape[0])} vs {_n(e)}"
            ),
        )
    _check(
        e <= _MAX_ROUTING_EXPERTS,
        lambda: (
            f"{op}: gating.size(1) (E) must be <= {_MAX_ROUTING_EXPERTS} (a row's scores live in shared memory), "
            f"got {_n(e)}"
        ),
    )
    _check(k <= e, lambda: f"{op}: k (topk_ids.size(1)) must be <= E (gating.size(1)), got k={k} E={_n(e)}")
    return e, (t, k)


def _routing_outputs(gating, shape):
    return gating.new_empty(shape, dtype=torch.float32), gating.new_empty(shape, dtype=torch.int32)


@_fake("tgemm::topk_softmax")
def topk_softmax_fake(gating, k, renormalize=False):
    _, shape = _routing_fake("topk_softmax", gating, None, k)
    return _routing_outputs(gating, shape)


@_fake("tgemm::grouped_topk")
def grouped_topk_fake(
    gating, correction_bias, n_group, topk_group, k, scoring="sigmoid", renormalize=True, routed_scaling=1.0
):
    op = "grouped_topk"
    _check(scoring in ("sigmoid", "softmax"), lambda: f"{op}: scoring must be 'sigmoid' or 'softmax', got '{scoring}'")
    e, shape = _routing_fake(op, gating, correction_bias, k)
    _check(
        n_group >= 1 and n_group <= max(e, 1) and e % n_group == 0,
        lambda: f"{op}: n_group must be >= 1 and divide E (gating.size(1)), got n_group={n_group} E={_n(e)}",
    )
    _check(
        1 <= topk_group <= n_group,
        lambda: f"{op}: topk_group must be in [1, n_group] = [1, {n_group}], got {topk_group}",
    )
    reachable = topk_group * (e // n_group)
    _check(
        k <= reachable,
        lambda: (
            f"{op}: k (topk_ids.size(1)) must be <= topk_group * E / n_group ({_n(reachable)}: the experts of "
            f"the chosen groups), got {k}"
        ),
    )
    _check(math.isfinite(routed_scaling), lambda: f"{op}: routed_scaling must be finite, got {routed_scaling}")
    return _routing_outputs(gating, shape)


def _check_moe_dtypes(op, hidden, w1, w2, topk_weights, topk_ids, out_dtype, expert_map):
    _check(
        hidden.dtype in _A16W16_IN,
        lambda: f"{op}: hidden.dtype must be torch.bfloat16 or torch.float16, got {hidden.dtype}",
    )
    for name, t in (("w1", w1), ("w2", w2)):
        _check(
            t.dtype == hidden.dtype,
            lambda name=name, t=t: f"{op}: {name}.dtype must equal hidden.dtype ({hidden.dtype}), got {t.dtype}",
        )
    _check(
        topk_weights.dtype in (torch.float32, hidden.dtype),
        lambda: (
            f"{op}: topk_weights.dtype must be torch.float32 or hidden.dtype ({hidden.dtype}), got {topk_weights.dtype}"
        ),
    )
    _check(topk_ids.dtype == torch.int32, lambda: f"{op}: topk_ids.dtype must be torch.int32, got {topk_ids.dtype}")
    _check(
        out_dtype in (hidden.dtype, torch.float32),
        lambda: f"{op}: out.dtype must be hidden.dtype ({hidden.dtype}) or torch.float32, got {out_dtype}",
    )
    if expert_map is not None:
        _check(
            expert_map.dtype == torch.int32,
            lambda: f"{op}: expert_map.dtype must be torch.int32, got {expert_map.dtype}",
        )


def _check_moe_shapes(op, hidden, w1, w2, topk_weights, topk_ids, out_shape):
    t, h, e, two_i = hidden.shape[0], hidden.shape[1], w1.shape[0], w1.shape[1]
    _check(
        w2.shape[0] == e,
        lambda: f"{op}: w2.size(0) must equal w1.size(0) (E, the experts), got {_n(w2.shape[0])} vs {_n(e)}",
    )
    _check(
        two_i % 2 == 0,
        lambda: f"{op}: w1.size(1) must be even (2 * I: the gate rows, then the up rows), got {_n(two_i)}",
    )
    _check(
        w1.shape[2] == h,
        lambda: f"{op}: w1.size(2) must equal hidden.size(1) (H), got {_n(w1.shape[2])} vs {_n(h)}",
    )
    _check(
        w2.shape[1] == h and w2.shape[2] == two_i // 2,
        lambda: (
            f"{op}: w2 must have shape [E, H, I] = [{_n(e)}, {_n(h)}, {_n(two_i // 2)}] (I = w1.size(1) / 2), "
            f"got {_shape(w2.shape)}"
        ),
    )
    _check(
        topk_ids.shape[0] == t,
        lambda: f"{op}: topk_ids.size(0) must equal hidden.size(0) (T), got {_n(topk_ids.shape[0])} vs {_n(t)}",
    )
    _check(
        tuple(topk_weights.shape) == (t, topk_ids.shape[1]),
        lambda: (
            f"{op}: topk_weights must have topk_ids's shape [T, k] = [{_n(t)}, {_n(topk_ids.shape[1])}], "
            f"got {_shape(topk_weights.shape)}"
        ),
    )
    _check(
        tuple(out_shape) == (t, h),
        lambda: f"{op}: out must have shape [T, H] = [{_n(t)}, {_n(h)}], got {_shape(out_shape)}",
    )


@_fake("tgemm::fused_moe")
def fused_moe_fake(hidden, w1, w2, topk_weights, topk_ids, activation="silu", expert_map=None, out_dtype=None):
    """validate_fused_moe without data: ranks, dtypes, then E, I, H, T and k agreement."""
    op = "fused_moe"
    _check(activation in ("silu", "gelu"), lambda: f"{op}: activation must be 'silu' or 'gelu', got '{activation}'")
    _check_out_dtype(op, out_dtype)
    _tgmm_views(
        op,
        ("hidden", hidden),
        ("w1", w1),
        ("w2", w2),
        ("topk_weights", topk_weights),
        ("topk_ids", topk_ids),
        ("expert_map", expert_map),
    )
    out_dtype = hidden.dtype if out_dtype is None else out_dtype
    out_shape = (hidden.shape[0], hidden.shape[1]) if hidden.dim() == 2 else (0, 0)
    _check_ranks(
        op,
        [
            ("hidden", _shape_of(hidden), (2,)),
            ("w1", _shape_of(w1), (3,)),
            ("w2", _shape_of(w2), (3,)),
            ("topk_weights", _shape_of(topk_weights), (2,)),
            ("topk_ids", _shape_of(topk_ids), (2,)),
            ("out", out_shape, (2,)),
            ("expert_map", _shape_of(expert_map), (1,)),
        ],
    )
    _check_moe_dtypes(op, hidden, w1, w2, topk_weights, topk_ids, out_dtype, expert_map)
    _check_moe_shapes(op, hidden, w1, w2, topk_weights, topk_ids, out_shape)
    return hidden.new_empty(out_shape, dtype=out_dtype)
