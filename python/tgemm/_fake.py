"""Fake (meta) kernels of the torch.ops.tgemm ops: output metadata without running anything, for
torch.compile, torch.library.opcheck and FakeTensorMode. The C++ library names this module
(``set_python_module``), so torch imports it when it needs a fake kernel.

Each fake runs the checks the real kernel runs that need no data and no device, in the real
kernel's order and with its exact text (python/csrc/torch_view.cpp's conversions, then
src/core/validate.cpp's validate_a16w16), so the first error a bad call meets is the same at trace
time as at run time: the same message, and an exception class that is a RuntimeError in both
cases (here :class:`tgemm.TgemmError`; the real kernel through ``torch.ops`` raises a plain
RuntimeError, through ``tgemm.*`` a TgemmError). Not checked here, left to the real kernel:
devices, strides, alignment, overlap and the 2^31-1 size limits.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from ._errors import TgemmError

# op name -> fake kernel of the modules registered at the end of this one (see there).
_DEFERRED: dict = {}


def _deferred_fake(qualname: str):
    """A decorator recording fn as qualname's fake kernel, registered by this module."""

    def record(fn):
        _DEFERRED[qualname] = fn
        return fn

    return record


_A16W16_IN = (torch.bfloat16, torch.float16)
_A16W16_OUT = (torch.bfloat16, torch.float16, torch.float32)
# The torch dtypes tgemm has a type for (torch_view.cpp's to_dtype).
_TGEMM_DTYPES = (
    torch.bfloat16,
    torch.float16,
    torch.float32,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.int8,
    torch.int32,
    torch.uint8,
)
_NOT_TGEMM = (
    "is not a tgemm type (bfloat16, float16, float32, float8_e4m3fn, float8_e5m2, int8, int32) "
    "nor torch.uint8 (MXFP4 codes and scales)"
)
_MAX_RANK = 6  # tgemm::kMaxRank
_FLT_MAX = 3.4028234663852886e38  # std::numeric_limits<float>::max()


def _check(cond, message: Callable[[], str]) -> None:
    # A plain bool fails now; a symbolic one fails now when its hint is false (with a guard), and
    # becomes a runtime assert of the graph when it has none. Always with TgemmError.
    if cond is True:
        return
    if cond is False:
        raise TgemmError(message())
    torch._check_with(TgemmError, cond, message)


def _n(v) -> str:
    # A size as the real kernel prints it: its value (a symbolic size's hint, as traced).
    if isinstance(v, torch.SymInt):
        from torch.fx.experimental.symbolic_shapes import has_hint, hint_int

        return str(hint_int(v)) if has_hint(v) else str(v)
    return str(v)


def _shape(shape) -> str:
    # The core's shape_str: "[2, 32, 64]".
    return "[" + ", ".join(_n(s) for s in shape) + "]"


def _check_view(op: str, name: str, t: torch.Tensor) -> None:
    # to_view (torch_view.cpp): rank bound, then a dtype tgemm has a type for.
    _check(t.dim() <= _MAX_RANK, lambda: f"{op}: {name}.rank must be in [1, {_MAX_RANK}], got {t.dim()}")
    _check(t.dtype in _TGEMM_DTYPES, lambda: f"{op}: {name}.dtype {t.dtype} {_NOT_TGEMM}")


def _check_dtypes(op: str, x, w, bias, out_dtype, xn: str = "x", wn: str = "w") -> None:
    """validate.cpp's check_pointers_and_dtypes (the dtypes): 16-bit inputs of one dtype, a 16- or
    32-bit float output, a bias of the inputs' or the output's dtype; xn and wn name the operands."""
    _check(x.dtype in _A16W16_IN, lambda: f"{op}: {xn}.dtype must be torch.bfloat16 or torch.float16, got {x.dtype}")
    _check(w.dtype == x.dtype, lambda: f"{op}: {wn}.dtype must equal {xn}.dtype ({x.dtype}), got {w.dtype}")
    _check(
        out_dtype in _A16W16_OUT,
        lambda: f"{op}: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got {out_dtype}",
    )
    if bias is not None:
        _check(
            bias.dtype == x.dtype or bias.dtype == out_dtype,
            lambda: f"{op}: bias.dtype must equal {xn}.dtype ({x.dtype}) or out.dtype ({out_dtype}), got {bias.dtype}",
        )


def _check_a16w16(op: str, x, w, bias, out_shape, out_dtype, c=None) -> None:
    """validate_a16w16 (src/core/validate.cpp) without data: ranks, dtypes, ranks again, shapes,
    then c's dtype, rank and shape (gemm_alpha_beta)."""
    ranks = [("x", x.dim()), ("w", w.dim()), ("out", len(out_shape))]
    if bias is not None:
        ranks.append(("bias", bias.dim()))
    if c is not None:
        ranks.append(("c", c.dim()))
    for name, rank in ranks:
        _check(
            1 <= rank <= _MAX_RANK,
            lambda name=name, rank=rank: f"{op}: {name}.rank must be in [1, {_MAX_RANK}], got {rank}",
        )
    _check_dtypes(op, x, w, bias, out_dtype)
    _check(w.dim() == 2, lambda: f"{op}: w must be 2-D [N, K], got rank {w.dim()} {_shape(w.shape)}")
    _check(len(out_shape) == x.dim(), lambda: f"{op}: out.rank must equal x.rank ({x.dim()}), got {len(out_shape)}")
    if bias is not None:
        _check(bias.dim() == 1, lambda: f"{op}: bias must be 1-D [N], got rank {bias.dim()} {_shape(bias.shape)}")
    k, n = x.shape[-1], w.shape[0]
    _check(w.shape[1] == k, lambda: f"{op}: w.size(1) must equal x.size(-1) (K), got {_n(w.shape[1])} vs {_n(k)}")
    _check(
        out_shape[-1] == n,
        lambda: f"{op}: out.size(-1) must equal w.size(0) (N), got {_n(out_shape[-1])} vs {_n(n)}",
    )
    for d in range(x.dim() - 1):
        _check(
            out_shape[d] == x.shape[d],
            lambda d=d: f"{op}: out.size({d}) must equal x.size({d}), got {_n(out_shape[d])} vs {_n(x.shape[d])}",
        )
    if bias is not None:
        _check(bias.shape[0] == n, lambda: f"{op}: bias.size(0) must equal N ({_n(n)}), got {_n(bias.shape[0])}")
    if c is not None:
        _check(
            c.dtype == out_dtype,
            lambda: f"{op}: c.dtype must equal out.dtype ({out_dtype}), got {c.dtype}",
        )
        _check(c.dim() == len(out_shape), lambda: f"{op}: c.rank must equal out.rank ({len(out_shape)}), got {c.dim()}")
        for d in range(c.dim()):
            _check(
                c.shape[d] == out_shape[d],
                lambda d=d: f"{op}: c.size({d}) must equal out.size({d}), got {_n(c.shape[d])} vs {_n(out_shape[d])}",
            )


@torch.library.register_fake("tgemm::gemm_a16w16")
def gemm_a16w16_fake(x, w, bias=None, otype=None):
    op = "gemm_a16w16"
    out_dtype = x.dtype if otype is None else otype
    # The real kernel's order: otype, the views of x, w (and out, fine once x and otype are), bias,
    # then the core.
    if otype is not None:
        _check(otype in _TGEMM_DTYPES, lambda: f"{op}: otype {otype} {_NOT_TGEMM}")
    _check_view(op, "x", x)
    _check_view(op, "w", w)
    if bias is not None:
        _check_view(op, "bias", bias)
    # linear_output_sizes (torch_view.cpp): (*x.shape[:-1], N); [N] for a 0-d x, 0 for N of a 0-d
    # w (both rejected by the checks).
    out_shape = (*x.shape[:-1], w.shape[0] if w.dim() >= 1 else 0)
    _check_a16w16(op, x, w, bias, out_shape, out_dtype)
    return x.new_empty(out_shape, dtype=out_dtype)


@torch.library.register_fake("tgemm::gemm_a16w16_out")
def gemm_a16w16_out_fake(x, w, out, bias=None):
    op = "gemm_a16w16"
    for name, t in (("x", x), ("w", w), ("out", out), ("bias", bias)):
        if t is not None:
            _check_view(op, name, t)
    _check_a16w16(op, x, w, bias, tuple(out.shape), out.dtype)
    return None


# ---------------------------------------------------------------------------------------------
# Fused epilogues (python/csrc/ops_epilogue.cpp): the same checks, with the op's own name, after
# the binding's own checks of its non-tensor arguments (approximate, alpha, beta), which the real
# kernels run first.


def _linear_out_shape(x, w):
    # linear_output_sizes (torch_view.cpp).
    return (*x.shape[:-1], w.shape[0] if w.dim() >= 1 else 0)


def _functional_fake(op, x, w, bias, otype):
    out_dtype = x.dtype if otype is None else otype
    if otype is not None:
        _check(otype in _TGEMM_DTYPES, lambda: f"{op}: otype {otype} {_NOT_TGEMM}")
    _check_view(op, "x", x)
    _check_view(op, "w", w)
    if bias is not None:
        _check_view(op, "bias", bias)
    out_shape = _linear_out_shape(x, w)
    _check_a16w16(op, x, w, bias, out_shape, out_dtype)
    return x.new_empty(out_shape, dtype=out_dtype)


def _out_fake(op, x, w, out, bias):
    for name, t in (("x", x), ("w", w), ("out", out), ("bias", bias)):
        if t is not None:
            _check_view(op, name, t)
    _check_a16w16(op, x, w, bias, tuple(out.shape), out.dtype)


def _check_approximate(approximate) -> None:
    # gelu_tanh (ops_epilogue.cpp).
    _check(
        approximate in ("none", "tanh"),
        lambda: f"gemm_gelu: approximate must be 'none' or 'tanh', got '{approximate}'",
    )


def _check_fp32_scalar(op: str, name: str, v) -> None:
    # to_fp32_scalar (ops_epilogue.cpp); "%g" is the real message's format. A symbolic float is
    # left to the real kernel.
    if not isinstance(v, (int, float)):
        return
    _check(
        math.isfinite(v) and abs(v) <= _FLT_MAX,
        lambda: f"{op}: {name} must be finite and within float32 range, got {'%g' % v}",
    )


@torch.library.register_fake("tgemm::gemm_bias")
def gemm_bias_fake(x, w, bias, otype=None):
    return _functional_fake("gemm_bias", x, w, bias, otype)


@torch.library.register_fake("tgemm::gemm_bias_out")
def gemm_bias_out_fake(x, w, bias, out):
    _out_fake("gemm_bias", x, w, out, bias)
    return None


@torch.library.register_fake("tgemm::gemm_gelu")
def gemm_gelu_fake(x, w, bias=None, approximate="none", otype=None):
    _check_approximate(approximate)
    return _functional_fake("gemm_gelu", x, w, bias, otype)


@torch.library.register_fake("tgemm::gemm_gelu_out")
def gemm_gelu_out_fake(x, w, out, bias=None, approximate="none"):
    _check_approximate(approximate)
    _out_fake("gemm_gelu", x, w, out, bias)
    return None


@torch.library.register_fake("tgemm::gemm_relu")
def gemm_relu_fake(x, w, bias=None, otype=None):
    return _functional_fake("gemm_relu", x, w, bias, otype)


@torch.library.register_fake("tgemm::gemm_relu_out")
def gemm_relu_out_fake(x, w, out, bias=None):
    _out_fake("gemm_relu", x, w, out, bias)
    return None


_ALPHA_BETA_C = (torch.bfloat16, torch.float16, torch.float32)


@torch.library.register_fake("tgemm::gemm_alpha_beta")
def gemm_alpha_beta_fake(x, w, c, alpha=1.0, beta=1.0):
    op = "gemm_alpha_beta"
    # The real kernel's order: alpha, beta, the views of x, w, c, c's dtype (the output's), the
    # view of out (fine by then), the core.
    _check_fp32_scalar(op, "alpha", alpha)
    _check_fp32_scalar(op, "beta", beta)
    for name, t in (("x", x), ("w", w), ("c", c)):
        _check_view(op, name, t)
    _check(
        c.dtype in _ALPHA_BETA_C,
        lambda: (
            f"{op}: c.dtype must be torch.bfloat16, torch.float16 or torch.float32 (the output has c's dtype), "
            f"got {c.dtype}"
        ),
    )
    out_shape = _linear_out_shape(x, w)
    _check_a16w16(op, x, w, None, out_shape, c.dtype, c=c)
    return x.new_empty(out_shape, dtype=c.dtype)


@torch.library.register_fake("tgemm::gemm_alpha_beta_out")
def gemm_alpha_beta_out_fake(x, w, c, out, alpha=1.0, beta=1.0):
    op = "gemm_alpha_beta"
    _check_fp32_scalar(op, "alpha", alpha)
    _check_fp32_scalar(op, "beta", beta)
    for name, t in (("x", x), ("w", w), ("c", c), ("out", out)):
        _check_view(op, name, t)
    _check_a16w16(op, x, w, None, tuple(out.shape), out.dtype, c=c)
    return None


# ---------------------------------------------------------------------------------------------
# a8w8 and a8w8_blockscale (python/csrc/ops_a8w8.cpp): validate_a8w8[_blockscale] without data, in
# their order.

_A8W8_IN = (torch.float8_e4m3fn, torch.int8)
_A8W8_NAMES = ("x", "w", "x_scale", "w_scale")


def _check_a8w8_scale(op, name, s, rows, rows_name, per_row) -> None:
    numel = s.numel()
    _check(
        numel == 1 or numel == rows,
        lambda: (
            f"{op}: {name} must have 1 element (per-tensor) or {rows_name} = {_n(rows)} elements ({per_row}), "
            f"got shape {_shape(s.shape)}"
        ),
    )


def _check_a8w8_dtypes(op, x, w, x_scale, w_scale, bias, out_dtype, blockscale, names=_A8W8_NAMES) -> None:
    """validate.cpp's check_a8w8_pointers_and_dtypes (the dtypes); names: the four operands'."""
    xn, wn, xsn, wsn = names
    _check(
        x.dtype != torch.float8_e5m2,
        lambda: (
            f"{op}: {xn}.dtype torch.float8_e5m2 is not supported (Hopper's FP8 GEMMs take e5m2 only against an e4m3 "
            "operand): quantize to torch.float8_e4m3fn"
        ),
    )
    if blockscale:
        _check(
            x.dtype == torch.float8_e4m3fn,
            lambda: f"{op}: {xn}.dtype must be torch.float8_e4m3fn (block scales are an FP8 recipe), got {x.dtype}",
        )
    _check(x.dtype in _A8W8_IN, lambda: f"{op}: {xn}.dtype must be torch.float8_e4m3fn or torch.int8, got {x.dtype}")
    _check(
        w.dtype == x.dtype,
        lambda: f"{op}: {wn}.dtype must equal {xn}.dtype ({x.dtype}): fp8 and int8 operands do not mix, got {w.dtype}",
    )
    _check(
        out_dtype in _A16W16_OUT,
        lambda: f"{op}: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got {out_dtype}",
    )
    if bias is not None:
        _check(
            bias.dtype == out_dtype or bias.dtype == torch.float32,
            lambda: f"{op}: bias.dtype must equal out.dtype ({out_dtype}) or be torch.float32, got {bias.dtype}",
        )
    _check(x_scale.dtype == torch.float32, lambda: f"{op}: {xsn}.dtype must be torch.float32, got {x_scale.dtype}")
    _check(w_scale.dtype == torch.float32, lambda: f"{op}: {wsn}.dtype must be torch.float32, got {w_scale.dtype}")


def _a8w8_operands(op, x, w, x_scale, w_scale, bias, out_dtype, blockscale):
    """The checks gemm_a8w8 and gemm_a8w8_blockscale share before their scales' shapes; returns
    (out_shape, out_dtype, M, N, K)."""
    if out_dtype is not None:
        _check(out_dtype in _TGEMM_DTYPES, lambda: f"{op}: out_dtype {out_dtype} {_NOT_TGEMM}")
    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    for name, t in (("x", x), ("w", w), ("x_scale", x_scale), ("w_scale", w_scale), ("bias", bias)):
        if t is not None:
            _check_view(op, name, t)
    out_shape = _linear_out_shape(x, w)
    for name, rank, low in (
        ("x", x.dim(), 1),
        ("w", w.dim(), 1),
        ("x_scale", x_scale.dim(), 0),
        ("w_scale", w_scale.dim(), 0),
        ("out", len(out_shape), 1),
        ("bias", bias.dim() if bias is not None else 1, 1),
    ):
        _check(
            low <= rank <= _MAX_RANK,
            lambda name=name, rank=rank, low=low: f"{op}: {name}.rank must be in [{low}, {_MAX_RANK}], got {rank}",
        )
    _check_a8w8_dtypes(op, x, w, x_scale, w_scale, bias, out_dtype, blockscale)
    _check(w.dim() == 2, lambda: f"{op}: w must be 2-D [N, K], got rank {w.dim()} {_shape(w.shape)}")
    if bias is not None:
        _check(bias.dim() == 1, lambda: f"{op}: bias must be 1-D [N], got rank {bias.dim()} {_shape(bias.shape)}")
    k, n = x.shape[-1], w.shape[0]
    _check(w.shape[1] == k, lambda: f"{op}: w.size(1) must equal x.size(-1) (K), got {_n(w.shape[1])} vs {_n(k)}")
    if bias is not None:
        _check(bias.shape[0] == n, lambda: f"{op}: bias.size(0) must equal N ({_n(n)}), got {_n(bias.shape[0])}")
    _check(
        k % 16 == 0,
        lambda: (
            f"{op}: K (x.size(-1)) must be a multiple of 16 for {x.dtype} operands (16-byte rows for TMA), got {_n(k)}"
        ),
    )
    return out_shape, out_dtype, math.prod(x.shape[:-1]), n, k


@torch.library.register_fake("tgemm::gemm_a8w8")
def gemm_a8w8_fake(x, w, x_scale, w_scale, bias=None, out_dtype=None):
    op = "gemm_a8w8"
    out_shape, out_dtype, m, n, _ = _a8w8_operands(op, x, w, x_scale, w_scale, bias, out_dtype, blockscale=False)
    _check_a8w8_scale(op, "x_scale", x_scale, m, "M", "per-token: [M, 1]")
    _check_a8w8_scale(op, "w_scale", w_scale, n, "N", "per-channel: [N, 1]")
    return x.new_empty(out_shape, dtype=out_dtype)


def _check_block_scale(op, name, s, rows, cols, shape_text, allow_mn_major) -> None:
    """core/validate.cpp's check_block_scale_layout: [rows, cols], row-major or (where allowed)
    MN-major (strides (1, ld), any ld >= rows)."""
    _check(
        s.dim() == 2 and s.shape[0] == rows and s.shape[1] == cols,
        lambda: f"{op}: {name} must be {shape_text} = [{_n(rows)}, {_n(cols)}], got {_shape(s.shape)}",
    )
    s0, s1 = s.stride()
    row_major = (cols <= 1 or s1 == 1) and (rows <= 1 or s0 >= cols)
    mn_major = (rows <= 1 or s0 == 1) and (cols <= 1 or s1 >= rows)
    if allow_mn_major:
        _check(
            row_major or mn_major,
            lambda: (
                f"{op}: {name} must be row-major (strides (ld, 1), ld >= {_n(cols)}) or MN-major "
                f"(strides (1, ld), ld >= {_n(rows)}), got strides ({s0}, {s1})"
            ),
        )
    else:
        _check(
            row_major,
            lambda: f"{op}: {name} must be row-major (strides (ld, 1), ld >= {_n(cols)}), got strides ({s0}, {s1})",
        )


@torch.library.register_fake("tgemm::gemm_a8w8_blockscale")
def gemm_a8w8_blockscale_fake(x, w, x_scale, w_scale, bias=None, out_dtype=None):
    op = "gemm_a8w8_blockscale"
    out_shape, out_dtype, m, n, k = _a8w8_operands(op, x, w, x_scale, w_scale, bias, out_dtype, blockscale=True)
    kb, nb = (k + 127) // 128, (n + 127) // 128
    _check_block_scale(op, "x_scale", x_scale, m, kb, "[M, ceil(K / 128)]", True)
    _check_block_scale(op, "w_scale", w_scale, nb, kb, "[ceil(N / 128), ceil(K / 128)]", False)
    return x.new_empty(out_shape, dtype=out_dtype)


@torch.library.register_fake("tgemm::gmm")
def gmm_fake(lhs, rhs, group_sizes, bias=None, transpose_rhs=False, out_dtype=None):
    """validate_gmm (src/core/validate.cpp) without data: ranks, dtypes, then K, G and bias shapes.
    group_sizes are never read: the real kernel reads them on the device only."""
    op = "gmm"
    if out_dtype is not None:
        _check(out_dtype in _TGEMM_DTYPES, lambda: f"{op}: out_dtype {out_dtype} {_NOT_TGEMM}")
    for name, t in (("lhs", lhs), ("rhs", rhs), ("group_sizes", group_sizes), ("bias", bias)):
        if t is not None:
            _check_view(op, name, t)
    for name, t, rank in (("lhs", lhs, 2), ("rhs", rhs, 3), ("group_sizes", group_sizes, 1), ("bias", bias, 2)):
        if t is not None:
            _check(
                t.dim() == rank,
                lambda name=name, t=t, rank=rank: (
                    f"{op}: {name} must have rank {rank}, got {t.dim()} (sizes {_shape(t.shape)})"
                ),
            )
    out_dtype = lhs.dtype if out_dtype is None else out_dtype
    _check(
        lhs.dtype in _A16W16_IN,
        lambda: f"{op}: lhs.dtype must be torch.bfloat16 or torch.float16, got {lhs.dtype}",
    )
    _check(rhs.dtype == lhs.dtype, lambda: f"{op}: rhs.dtype must equal lhs.dtype ({lhs.dtype}), got {rhs.dtype}")
    _check(
        group_sizes.dtype == torch.int32,
        lambda: f"{op}: group_sizes.dtype must be torch.int32, got {group_sizes.dtype}",
    )
    _check(
        out_dtype in (lhs.dtype, torch.float32),
        lambda: f"{op}: out.dtype must be lhs.dtype ({lhs.dtype}) or torch.float32, got {out_dtype}",
    )
    if bias is not None:
        _check(
            bias.dtype in (lhs.dtype, torch.float32),
            lambda: f"{op}: bias.dtype must be lhs.dtype ({lhs.dtype}) or torch.float32, got {bias.dtype}",
        )
    m, k, g = lhs.shape[0], lhs.shape[1], rhs.shape[0]
    rhs_k, n = (rhs.shape[2], rhs.shape[1]) if transpose_rhs else (rhs.shape[1], rhs.shape[2])
    k_dim = "rhs.size(2)" if transpose_rhs else "rhs.size(1)"
    layout = "(rhs [G, N, K], transpose_rhs=true)" if transpose_rhs else "(rhs [G, K, N], transpose_rhs=false)"
    _check(
        rhs_k == k,
        lambda: f"{op}: {k_dim} must equal lhs.size(1) (K) {layout}, got {_n(rhs_k)} vs {_n(k)}",
    )
    _check(
        group_sizes.shape[0] == g,
        lambda: f"{op}: group_sizes.size(0) must equal rhs.size(0) (G), got {_n(group_sizes.shape[0])} vs {_n(g)}",
    )
    if bias is not None:
        _check(
            bias.shape[0] == g and bias.shape[1] == n,
            lambda: f"{op}: bias must have shape [G, N] = [{_n(g)}, {_n(n)}], got {_shape(bias.shape)}",
        )
    return lhs.new_empty((m, n), dtype=out_dtype)


def _check_batched(op: str, a, b, out_shape, out_dtype, transpose_a, transpose_b, bias, check_dtypes=None) -> None:
    """validate_batched (src/core/validate.cpp) without data: ranks, dtypes (check_dtypes(), or
    batched_gemm's 16-bit ones), then the batch, K, out's shape and bias's."""
    for name, t, rank in (("a", a.shape, 3), ("b", b.shape, 3), ("out", out_shape, 3)) + (
        (("bias", bias.shape, 1),) if bias is not None else ()
    ):
        _check(
            len(t) == rank,
            lambda name=name, t=t, rank=rank: f"{op}: {name} must have rank {rank}, got {len(t)} (sizes {_shape(t)})",
        )
    if check_dtypes is None:
        _check_dtypes(op, a, b, bias, out_dtype, "a", "b")
    else:
        check_dtypes()
    a_layout = "[B, K, M] (transpose_a=true)" if transpose_a else "[B, M, K] (transpose_a=false)"
    b_layout = "[B, N, K] (transpose_b=true)" if transpose_b else "[B, K, N] (transpose_b=false)"
    batch = a.shape[0]
    m, k = (a.shape[2], a.shape[1]) if transpose_a else (a.shape[1], a.shape[2])
    b_k, n = (b.shape[2], b.shape[1]) if transpose_b else (b.shape[1], b.shape[2])
    _check(
        b.shape[0] == batch,
        lambda: (
            f"{op}: b.size(0) must equal a.size(0) (B), got {_n(b.shape[0])} vs {_n(batch)} "
            "(a broadcast batch is a stride of 0, with the size of the batch)"
        ),
    )
    _check(
        b_k == k,
        lambda: (
            f"{op}: K of b {b_layout} must equal K of a {a_layout}, got {_n(b_k)} vs {_n(k)} "
            f"(a {_shape(a.shape)}, b {_shape(b.shape)})"
        ),
    )
    _check(
        out_shape[0] == batch and out_shape[1] == m and out_shape[2] == n,
        lambda: f"{op}: out must have shape [B, M, N] = [{_n(batch)}, {_n(m)}, {_n(n)}], got {_shape(out_shape)}",
    )
    if bias is not None:
        _check(bias.shape[0] == n, lambda: f"{op}: bias.size(0) must equal N ({_n(n)}), got {_n(bias.shape[0])}")


def _batched_out_shape(a, b, transpose_a, transpose_b):
    # ops_batched.cpp's empty_output: a wrong rank gives an empty output, for the core to reject.
    if a.dim() != 3 or b.dim() != 3:
        return (0, 0, 0)
    return (a.shape[0], a.shape[2] if transpose_a else a.shape[1], b.shape[1] if transpose_b else b.shape[2])


@torch.library.register_fake("tgemm::batched_gemm")
def batched_gemm_fake(a, b, transpose_a=False, transpose_b=False, bias=None, out_dtype=None):
    op = "batched_gemm"
    if out_dtype is not None:
        _check(out_dtype in _TGEMM_DTYPES, lambda: f"{op}: out_dtype {out_dtype} {_NOT_TGEMM}")
    for name, t in (("a", a), ("b", b), ("bias", bias)):
        if t is not None:
            _check_view(op, name, t)
    out_dtype = a.dtype if out_dtype is None else out_dtype
    out_shape = _batched_out_shape(a, b, transpose_a, transpose_b)
    _check_batched(op, a, b, out_shape, out_dtype, transpose_a, transpose_b, bias)
    return a.new_empty(out_shape, dtype=out_dtype)


@torch.library.register_fake("tgemm::batched_gemm_out")
def batched_gemm_out_fake(a, b, out, transpose_a=False, transpose_b=False, bias=None):
    op = "batched_gemm"
    for name, t in (("a", a), ("b", b), ("out", out), ("bias", bias)):
        if t is not None:
            _check_view(op, name, t)
    _check_batched(op, a, b, out.shape, out.dtype, transpose_a, transpose_b, bias)


def _check_batched_a8w8_scale(op, name, s, batch, rows, per_row) -> None:
    per_batch = (s.dim() == 1 and s.shape[0] == batch) or (s.dim() == 3 and tuple(s.shape) == (batch, 1, 1))
    per_row_ok = s.dim() == 3 and tuple(s.shape) == (batch, rows, 1)
    _check(
        s.numel() == 1 or per_batch or per_row_ok,
        lambda: (
            f"{op}: {name} must have 1 element (one scale for every product), shape [B] or [B, 1, 1] (per-tensor "
            f"per product) or {per_row} with B = {_n(batch)}, got shape {_shape(s.shape)}"
        ),
    )


@torch.library.register_fake("tgemm::batched_gemm_a8w8")
def batched_gemm_a8w8_fake(a, b, a_scale, b_scale, bias=None, out_dtype=None):
    """validate_batched_a8w8 without data: ranks, dtypes, shapes, K % 16, the scales' shapes."""
    op = "batched_gemm_a8w8"
    if out_dtype is not None:
        _check(out_dtype in _TGEMM_DTYPES, lambda: f"{op}: out_dtype {out_dtype} {_NOT_TGEMM}")
    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    for name, t in (("a", a), ("b", b), ("a_scale", a_scale), ("b_scale", b_scale), ("bias", bias)):
        if t is not None:
            _check_view(op, name, t)
    out_shape = _batched_out_shape(a, b, False, True)
    names = ("a", "b", "a_scale", "b_scale")
    _check_batched(
        op,
        a,
        b,
        out_shape,
        out_dtype,
        False,
        True,
        bias,
        lambda: _check_a8w8_dtypes(op, a, b, a_scale, b_scale, bias, out_dtype, False, names),
    )
    batch, m, k, n = a.shape[0], a.shape[1], a.shape[2], b.shape[1]
    _check(
        k % 16 == 0,
        lambda: f"{op}: K (a.size(2)) must be a multiple of 16 for {a.dtype} operands (16-byte rows), got {_n(k)}",
    )
    _check_batched_a8w8_scale(op, "a_scale", a_scale, batch, m, "[B, M, 1] (per-token)")
    _check_batched_a8w8_scale(op, "b_scale", b_scale, batch, n, "[B, N, 1] (per-channel)")
    return a.new_empty(out_shape, dtype=out_dtype)


# ---------------------------------------------------------------------------------------------
# Quantization (python/csrc/ops_quant.cpp, checked by src/quant/quant_validate.cpp). The ops
# allocate q and the scales themselves, so only the input's checks can fail before the kernel:
# its view, its rank, its dtype (and qtype, the given scale).

_QUANT_IN = (torch.bfloat16, torch.float16)
_QUANT_BLOCK = 128  # tgemm::kQuantBlock


def _check_quant_input(op: str, x, name: str = "x", weight: bool = False) -> None:
    _check_view(op, name, x)
    if weight:
        _check(x.dim() == 2, lambda: f"{op}: {name} must be 2-D [N, K], got rank {x.dim()}")
    else:
        _check(x.dim() >= 2, lambda: f"{op}: {name} must be of rank 2 or more ([..., K]), got rank {x.dim()}")
    _check(
        x.dtype in _QUANT_IN,
        lambda: f"{op}: {name}.dtype must be torch.bfloat16 or torch.float16, got {x.dtype}",
    )


def _rows(x) -> int:
    return math.prod(x.shape[:-1])


def _blocks(n) -> int:
    return (n + _QUANT_BLOCK - 1) // _QUANT_BLOCK


@torch.library.register_fake("tgemm::quant_fp8_per_tensor")
def quant_fp8_per_tensor_fake(x):
    _check_quant_input("quant_fp8_per_tensor", x)
    return x.new_empty(x.shape, dtype=torch.float8_e4m3fn), x.new_empty((1,), dtype=torch.float32)


@torch.library.register_fake("tgemm::quant_fp8_per_tensor_static")
def quant_fp8_per_tensor_static_fake(x, scale):
    op = "quant_fp8_per_tensor_static"
    _check_view(op, "x", x)
    _check_view(op, "scale", scale)
    _check_quant_input(op, x)
    _check(scale.dtype == torch.float32, lambda: f"{op}: scale.dtype must be torch.float32, got {scale.dtype}")
    _check(scale.numel() == 1, lambda: f"{op}: scale must hold one element, got {_shape(scale.shape)}")
    return x.new_empty(x.shape, dtype=torch.float8_e4m3fn)


@torch.library.register_fake("tgemm::quant_per_token")
def quant_per_token_fake(x, qtype=None):
    op = "quant_per_token"
    qtype = torch.float8_e4m3fn if qtype is None else qtype
    _check(qtype in _TGEMM_DTYPES, lambda: f"{op}: qtype {qtype} {_NOT_TGEMM}")
    _check_quant_input(op, x)
    if qtype == torch.float8_e5m2:
        raise TgemmError(
            f"{op}: q.dtype torch.float8_e5m2 is not supported: quantization writes torch.float8_e4m3fn or torch.int8"
        )
    _check(
        qtype in (torch.float8_e4m3fn, torch.int8),
        lambda: f"{op}: q.dtype must be torch.float8_e4m3fn or torch.int8, got {qtype}",
    )
    return x.new_empty(x.shape, dtype=qtype), x.new_empty((*x.shape[:-1], 1), dtype=torch.float32)


@torch.library.register_fake("tgemm::quant_fp8_per_block_1x128")
def quant_fp8_per_block_1x128_fake(x, mn_major=False):
    _check_quant_input("quant_fp8_per_block_1x128", x)
    m, kb = _rows(x), _blocks(x.shape[-1])
    if mn_major:
        # mn_major_tma_aligned_ld: M rounded up to a multiple of 4 (16 bytes of fp32).
        scale = x.new_empty_strided((m, kb), (1, (m + 3) // 4 * 4), dtype=torch.float32)
    else:
        scale = x.new_empty((m, kb), dtype=torch.float32)
    return x.new_empty(x.shape, dtype=torch.float8_e4m3fn), scale


@torch.library.register_fake("tgemm::quant_fp8_per_block_128x128")
def quant_fp8_per_block_128x128_fake(w):
    _check_quant_input("quant_fp8_per_block_128x128", w, name="w", weight=True)
    scale = w.new_empty((_blocks(w.shape[0]), _blocks(w.shape[1])), dtype=torch.float32)
    return w.new_empty(w.shape, dtype=torch.float8_e4m3fn), scale


# The fake kernels of the grouped, MoE, sparse and MXFP4 ops live in modules of their own, which
# record them with _deferred_fake; torch accepts a fake kernel only when register_fake is called
# from the module the C++ library names (set_python_module("tgemm._fake")), so they are registered
# here.
from . import _fake_fp4, _fake_grouped, _fake_grouped_fp8, _fake_moe, _fake_sparse  # noqa: E402,F401

for _qualname, _fn in _DEFERRED.items():
    torch.library.register_fake(_qualname)(_fn)
