"""Fake (meta) kernels of the FP8 block-scaled grouped GEMMs (python/csrc/ops_grouped_fp8.cpp): the
checks of src/core/validate_grouped_fp8.cpp that need no data and no device, in its order and with
its text (ranks, dtypes, shape agreement, K a multiple of 16); strides, alignment, overlap, devices
and size limits are left to the real kernel. m_indices and masked_m are never read: the real
kernel reads them on the device only. Imported by tgemm._fake, which torch imports for every tgemm
fake kernel.
"""

from __future__ import annotations

import torch

from ._fake import _check, _n, _shape
from ._fake import _deferred_fake as _fake
from ._fake_grouped import _check_ranks, _shape_of, _tgmm_views


def _blocks(v):
    return (v + 127) // 128


def _check_dtypes(op, x, x_scale, w, w_scale, out, index, index_name) -> None:
    for name, t, want in (
        ("x", x, torch.float8_e4m3fn),
        ("w", w, torch.float8_e4m3fn),
        ("x_scale", x_scale, torch.float32),
        ("w_scale", w_scale, torch.float32),
        ("out", out, torch.bfloat16),
        (index_name, index, torch.int32),
    ):
        _check(t.dtype == want, lambda name=name, t=t, want=want: f"{op}: {name}.dtype must be {want}, got {t.dtype}")


def _check_weights(op, w, w_scale, g, n, k) -> None:
    _check(
        w.shape[0] == g and w.shape[2] == k,
        lambda: f"{op}: w must have shape [G, N, K] with G = {_n(g)} and K = {_n(k)}, got {_shape(w.shape)}",
    )
    nb, kb = _blocks(n), _blocks(k)
    _check(
        w_scale.shape[0] == g,
        lambda: (
            f"{op}: w_scale must have shape [G, ceil(N / 128), ceil(K / 128)] = [{_n(g)}, {_n(nb)}, {_n(kb)}], "
            f"got {_shape(w_scale.shape)}"
        ),
    )
    _check(
        w_scale.shape[1] == nb and w_scale.shape[2] == kb,
        lambda: (
            f"{op}: w_scale must be [ceil(N / 128), ceil(K / 128)] per group = [{_n(nb)}, {_n(kb)}], "
            f"got {_shape(w_scale.shape[1:])}"
        ),
    )
    _check(
        k % 16 == 0,
        lambda: f"{op}: K (x.size(-1)) must be a multiple of 16 for torch.float8_e4m3fn (16-byte rows), got {_n(k)}",
    )


@_fake("tgemm::m_grouped_gemm_fp8_contiguous")
def m_grouped_gemm_fp8_contiguous_fake(x, x_scale, w, w_scale, out, m_indices):
    """validate_fp8_contiguous without data."""
    op = "m_grouped_gemm_fp8_contiguous"
    named = (("x", x), ("x_scale", x_scale), ("w", w), ("w_scale", w_scale), ("out", out), ("m_indices", m_indices))
    _tgmm_views(op, *named)
    ranks = {"x": 2, "x_scale": 2, "w": 3, "w_scale": 3, "out": 2, "m_indices": 1}
    _check_ranks(op, [(name, _shape_of(t), (ranks[name],)) for name, t in named])
    _check_dtypes(op, x, x_scale, w, w_scale, out, m_indices, "m_indices")
    m, k, g, n = x.shape[0], x.shape[1], w.shape[0], w.shape[1]
    _check_weights(op, w, w_scale, g, n, k)
    _check(
        tuple(out.shape) == (m, n),
        lambda: f"{op}: out must have shape [M, N] = [{_n(m)}, {_n(n)}], got {_shape(out.shape)}",
    )
    _check(
        m_indices.shape[0] == m,
        lambda: f"{op}: m_indices.size(0) must equal x.size(0) (M), got {_n(m_indices.shape[0])} vs {_n(m)}",
    )
    kb = _blocks(k)
    _check(
        tuple(x_scale.shape) == (m, kb),
        lambda: f"{op}: x_scale must be [M, ceil(K / 128)] = [{_n(m)}, {_n(kb)}], got {_shape(x_scale.shape)}",
    )


@_fake("tgemm::m_grouped_gemm_fp8_masked")
def m_grouped_gemm_fp8_masked_fake(x, x_scale, w, w_scale, out, masked_m, expected_m):
    """validate_fp8_masked without data."""
    op = "m_grouped_gemm_fp8_masked"
    named = (("x", x), ("x_scale", x_scale), ("w", w), ("w_scale", w_scale), ("out", out), ("masked_m", masked_m))
    _tgmm_views(op, *named)
    ranks = {"x": 3, "x_scale": 3, "w": 3, "w_scale": 3, "out": 3, "masked_m": 1}
    _check_ranks(op, [(name, _shape_of(t), (ranks[name],)) for name, t in named])
    _check_dtypes(op, x, x_scale, w, w_scale, out, masked_m, "masked_m")
    g, max_m, k, n = x.shape[0], x.shape[1], x.shape[2], w.shape[1]
    _check_weights(op, w, w_scale, g, n, k)
    _check(
        tuple(out.shape) == (g, max_m, n),
        lambda: f"{op}: out must have shape [G, max_m, N] = [{_n(g)}, {_n(max_m)}, {_n(n)}], got {_shape(out.shape)}",
    )
    _check(
        masked_m.shape[0] == g,
        lambda: f"{op}: masked_m.size(0) must equal x.size(0) (G), got {_n(masked_m.shape[0])} vs {_n(g)}",
    )
    kb = _blocks(k)
    _check(
        x_scale.shape[0] == g,
        lambda: (
            f"{op}: x_scale must have shape [G, max_m, ceil(K / 128)] = [{_n(g)}, {_n(max_m)}, {_n(kb)}], "
            f"got {_shape(x_scale.shape)}"
        ),
    )
    _check(expected_m >= 0, lambda: f"{op}: expected_m must be >= 0, got {expected_m}")
    _check(
        x_scale.shape[1] == max_m and x_scale.shape[2] == kb,
        lambda: (
            f"{op}: x_scale must be [max_m, ceil(K / 128)] per group = [{_n(max_m)}, {_n(kb)}], "
            f"got {_shape(x_scale.shape[1:])}"
        ),
    )
