"""Fake (meta) kernels of the grouped ops beyond gmm (python/csrc/ops_grouped.cpp): the checks of
src/core/validate_grouped.cpp that need no data and no device, in its order and with its text
(ranks, dtypes, shape agreement); strides, alignment, overlap, devices and size limits are left to
the real kernel. Group sizes, expert ids and masks are never read: the real kernels read them on
the device only. Imported by tgemm._fake, which torch imports for every tgemm fake kernel.
"""

from __future__ import annotations

import torch

from ._fake import _A16W16_IN, _NOT_TGEMM, _TGEMM_DTYPES, _check, _check_view, _n, _shape
from ._fake import _deferred_fake as _fake


def _check_ranks(op: str, tensors) -> None:
    # check_view: (name, shape or None, accepted ranks) in the core's order.
    for name, shape, ranks in tensors:
        if shape is None:
            continue
        _check(
            len(shape) in ranks,
            lambda name=name, shape=shape, ranks=ranks: (
                f"{op}: {name} must have rank {' or '.join(str(r) for r in ranks)}, got {len(shape)} "
                f"(sizes {_shape(shape)})"
            ),
        )


def _shape_of(t):
    return None if t is None else tuple(t.shape)


def _check_16bit(op: str, a, an: str, b, bn: str) -> None:
    _check(a.dtype in _A16W16_IN, lambda: f"{op}: {an}.dtype must be torch.bfloat16 or torch.float16, got {a.dtype}")
    _check(b.dtype == a.dtype, lambda: f"{op}: {bn}.dtype must equal {an}.dtype ({a.dtype}), got {b.dtype}")


def _check_out_dtype(op: str, out_dtype) -> None:
    if out_dtype is not None:
        _check(out_dtype in _TGEMM_DTYPES, lambda: f"{op}: out_dtype {out_dtype} {_NOT_TGEMM}")


def _check_tgmm(op, lhs, rhs, group_sizes, out_shape, out_dtype, bias_grad) -> None:
    """validate_tgmm without data."""
    _check_ranks(
        op,
        [
            ("lhs", _shape_of(lhs), (2,)),
            ("rhs", _shape_of(rhs), (2,)),
            ("group_sizes", _shape_of(group_sizes), (1,)),
            ("out", tuple(out_shape), (3,)),
            ("bias_grad", _shape_of(bias_grad), (2,)),
        ],
    )
    _check_16bit(op, lhs, "lhs", rhs, "rhs")
    _check(
        group_sizes.dtype == torch.int32,
        lambda: f"{op}: group_sizes.dtype must be torch.int32, got {group_sizes.dtype}",
    )
    _check(
        out_dtype in (lhs.dtype, torch.float32),
        lambda: f"{op}: out.dtype must be lhs.dtype ({lhs.dtype}) or torch.float32, got {out_dtype}",
    )
    if bias_grad is not None:
        _check(
            bias_grad.dtype == torch.float32,
            lambda: f"{op}: bias_grad.dtype must be torch.float32, got {bias_grad.dtype}",
        )
    k, m, n, g = lhs.shape[0], lhs.shape[1], rhs.shape[1], group_sizes.shape[0]
    _check(
        rhs.shape[0] == m, lambda: f"{op}: rhs.size(0) must equal lhs.size(1) (M), got {_n(rhs.shape[0])} vs {_n(m)}"
    )
    _check(
        tuple(out_shape) == (g, k, n),
        lambda: f"{op}: out must have shape [G, K, N] = [{_n(g)}, {_n(k)}, {_n(n)}], got {_shape(out_shape)}",
    )
    if bias_grad is not None:
        _check(
            tuple(bias_grad.shape) == (g, k),
            lambda: f"{op}: bias_grad must have shape [G, K] = [{_n(g)}, {_n(k)}], got {_shape(bias_grad.shape)}",
        )


def _tgmm_views(op, *named) -> None:
    for name, t in named:
        if t is not None:
            _check_view(op, name, t)


@_fake("tgemm::tgmm")
def tgmm_fake(lhs, rhs, group_sizes, persistent=True, out_dtype=None):
    op = "ptgmm" if persistent else "nptgmm"
    _check_out_dtype(op, out_dtype)
    _tgmm_views(op, ("lhs", lhs), ("rhs", rhs), ("group_sizes", group_sizes))
    out_dtype = lhs.dtype if out_dtype is None else out_dtype
    g = group_sizes.shape[0] if group_sizes.dim() == 1 else 0
    k = lhs.shape[0] if lhs.dim() == 2 else 0
    n = rhs.shape[1] if rhs.dim() == 2 else 0
    _check_tgmm(op, lhs, rhs, group_sizes, (g, k, n), out_dtype, None)
    return lhs.new_empty((g, k, n), dtype=out_dtype)


@_fake("tgemm::tgmm_out")
def tgmm_out_fake(lhs, rhs, group_sizes, out, bias_grad=None, accumulate=False, persistent=True):
    op = "ptgmm" if persistent else "nptgmm"
    _tgmm_views(op, ("lhs", lhs), ("rhs", rhs), ("group_sizes", group_sizes), ("out", out), ("bias_grad", bias_grad))
    _check_tgmm(op, lhs, rhs, group_sizes, tuple(out.shape), out.dtype, bias_grad)


@_fake("tgemm::grouped_gemm")
def grouped_gemm_fake(x, weights, expert_ids, topk_weights=None, transpose_weights=False, out_dtype=None):
    """validate_grouped_gemm without data: ranks, dtypes, then H, T, topk and N agreement."""
    op = "grouped_gemm"
    _check_out_dtype(op, out_dtype)
    _tgmm_views(op, ("x", x), ("weights", weights), ("expert_ids", expert_ids), ("topk_weights", topk_weights))
    out_dtype = x.dtype if out_dtype is None else out_dtype
    t = expert_ids.shape[0] if expert_ids.dim() == 2 else 0
    topk = expert_ids.shape[1] if expert_ids.dim() == 2 else 0
    n = weights.shape[1 if transpose_weights else 2] if weights.dim() == 3 else 0
    out_shape = (t, n) if topk_weights is not None else (t, topk, n)
    _check_ranks(
        op,
        [
            ("x", _shape_of(x), (2, 3)),
            ("weights", _shape_of(weights), (3,)),
            ("expert_ids", _shape_of(expert_ids), (2,)),
            ("topk_weights", _shape_of(topk_weights), (2,)),
        ],
    )
    _check_16bit(op, x, "x", weights, "weights")
    _check(
        expert_ids.dtype == torch.int32, lambda: f"{op}: expert_ids.dtype must be torch.int32, got {expert_ids.dtype}"
    )
    _check(
        out_dtype in (x.dtype, torch.float32),
        lambda: f"{op}: out.dtype must be x.dtype ({x.dtype}) or torch.float32, got {out_dtype}",
    )
    if topk_weights is not None:
        _check(
            topk_weights.dtype in (x.dtype, torch.float32),
            lambda: f"{op}: topk_weights.dtype must be x.dtype ({x.dtype}) or torch.float32, got {topk_weights.dtype}",
        )
    h = x.shape[-1]
    w_h = weights.shape[2] if transpose_weights else weights.shape[1]
    _check(
        x.shape[0] == t, lambda: f"{op}: x.size(0) must equal expert_ids.size(0) (T), got {_n(x.shape[0])} vs {_n(t)}"
    )
    if x.dim() == 3:
        _check(
            x.shape[1] == topk,
            lambda: (
                f"{op}: x [T, topk, H] must have x.size(1) == expert_ids.size(1) (topk), "
                f"got {_n(x.shape[1])} vs {_n(topk)}"
            ),
        )
    w_dim = "weights.size(2)" if transpose_weights else "weights.size(1)"
    layout = (
        "(weights [E, N, H], transpose_weights=true)"
        if transpose_weights
        else "(weights [E, H, N], transpose_weights=false)"
    )
    _check(w_h == h, lambda: f"{op}: {w_dim} must equal x.size(-1) (H) {layout}, got {_n(w_h)} vs {_n(h)}")
    if topk_weights is not None:
        _check(
            tuple(topk_weights.shape) == (t, topk),
            lambda: (
                f"{op}: topk_weights must have shape [T, topk] = [{_n(t)}, {_n(topk)}], "
                f"got {_shape(topk_weights.shape)}"
            ),
        )
    return x.new_empty(out_shape, dtype=out_dtype)


@_fake("tgemm::m_grouped_gemm_masked")
def m_grouped_gemm_masked_fake(x, w, out, masked_m, expected_m):
    """validate_masked without data: ranks, dtypes, shapes, expected_m."""
    op = "m_grouped_gemm_masked"
    _tgmm_views(op, ("x", x), ("w", w), ("out", out), ("masked_m", masked_m))
    _check_ranks(
        op,
        [
            ("x", _shape_of(x), (3,)),
            ("w", _shape_of(w), (3,)),
            ("out", _shape_of(out), (3,)),
            ("masked_m", _shape_of(masked_m), (1,)),
        ],
    )
    for name, t in (("x", x), ("w", w), ("out", out)):
        _check(
            t.dtype == torch.bfloat16,
            lambda name=name, t=t: f"{op}: {name}.dtype must be torch.bfloat16, got {t.dtype}",
        )
    _check(masked_m.dtype == torch.int32, lambda: f"{op}: masked_m.dtype must be torch.int32, got {masked_m.dtype}")
    g, max_m, k, n = x.shape[0], x.shape[1], x.shape[2], w.shape[1]
    _check(
        w.shape[0] == g and w.shape[2] == k,
        lambda: (
            f"{op}: w must have shape [G, N, K] with G = {_n(g)} and K = {_n(k)} (from x [G, max_m, K]), "
            f"got {_shape(w.shape)}"
        ),
    )
    _check(
        tuple(out.shape) == (g, max_m, n),
        lambda: f"{op}: out must have shape [G, max_m, N] = [{_n(g)}, {_n(max_m)}, {_n(n)}], got {_shape(out.shape)}",
    )
    _check(
        masked_m.shape[0] == g,
        lambda: f"{op}: masked_m.size(0) must equal x.size(0) (G), got {_n(masked_m.shape[0])} vs {_n(g)}",
    )
    _check(expected_m >= 0, lambda: f"{op}: expected_m must be >= 0, got {expected_m}")
