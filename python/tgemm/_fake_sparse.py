"""Fake (meta) kernels of the sparse ops (python/csrc/ops_sparse.cpp): the checks of
src/sparse/sparse_validate.cpp that need no data and no device, in its order and with its text
(the weight's dtype and shape rules, x's K); the compressed buffer's size, strides, overlap, the
scales' shapes and the CSR and BSR structure (checked once, by tgemm._C.check_sparse_csr and
check_sparse_bsr) are left to the real kernel. Imported by
tgemm._fake, which registers them (torch requires it of the module the C++ library names).
"""

from __future__ import annotations

import torch

from ._fake import _A16W16_IN, _check, _check_view, _n, _shape
from ._fake import _deferred_fake as _fake

# cuSPARSELt's structured-matrix rule: 16 elements for 16-bit types, 32 for 8-bit ones
# (kSparse24Multiple, kSparse24Multiple8Bit).
_SPARSE_24_MULTIPLE = 16
_SPARSE_24_MULTIPLE_8BIT = 32
_RULE = "(cuSPARSELt's structured-matrix rule for 16-bit types)"
_RULE_8BIT = "(cuSPARSELt's structured-matrix rule for 8-bit types)"
_SPARSE_24_DTYPES = (torch.bfloat16, torch.float16, torch.float8_e4m3fn)


def _output(x, n):
    return x.new_empty((*x.shape[:-1], n))


@_fake("tgemm::prune_2_4")
def prune_2_4_fake(w):
    op = "prune_2_4"
    _check_view(op, "w", w)
    _check(w.dim() == 2, lambda: f"{op}: w must have rank 2 ([N, K]), got rank {w.dim()}")
    _check(w.dtype in _A16W16_IN, lambda: f"{op}: w must be bf16 or fp16, got {w.dtype}")
    _check(
        w.shape[1] % 4 == 0,
        lambda: f"{op}: w.size(1) (K) must be a multiple of 4 (groups of 4 along K), got {_n(w.shape[1])}",
    )
    return torch.empty_like(w)


def _check_compressed_24(x, compressed, n) -> None:
    # SparseWeight::from_compressed_2_4's checks, with K taken from x.
    op = "SparseWeight::from_compressed_2_4"
    k = x.shape[-1] if x.dim() > 0 else 0
    _check(
        x.dtype in _SPARSE_24_DTYPES,
        lambda: f"{op}: a 2:4 weight must be bf16, fp16 or float8_e4m3fn, got {x.dtype}",
    )
    fp8 = x.dtype == torch.float8_e4m3fn
    multiple, rule = (_SPARSE_24_MULTIPLE_8BIT, _RULE_8BIT) if fp8 else (_SPARSE_24_MULTIPLE, _RULE)
    _check(
        n > 0 and n % multiple == 0,
        lambda: f"{op}: a 2:4 weight's N (rows) must be a positive multiple of {multiple} {rule}, got {n}",
    )
    _check(
        k > 0 and k % multiple == 0,
        lambda: f"{op}: a 2:4 weight's K (columns) must be a positive multiple of {multiple} {rule}, got {_n(k)}",
    )
    _check(compressed.dim() == 1, lambda: f"{op}: compressed must have rank 1 (bytes), got rank {compressed.dim()}")


@_fake("tgemm::sparse_gemm_2_4")
def sparse_gemm_2_4_fake(x, compressed, n, bias=None, algorithm=-1, split_k=0, dense=None):
    _check_view("sparse_gemm_2_4", "x", x)
    _check_compressed_24(x, compressed, n)
    _check(
        x.dtype in _A16W16_IN,
        lambda: (
            f"sparse_gemm: the weight is {x.dtype}: an FP8 2:4 weight runs through sparse_gemm_a8w8, with its scales"
        ),
    )
    _check(
        x.dim() >= 2,
        lambda: f"sparse_gemm: x must have rank 2 to 6, got {x.dim()} (sizes {_shape(x.shape)})",
    )
    return _output(x, n)


@_fake("tgemm::sparse_gemm_2_4_fp8")
def sparse_gemm_2_4_fp8_fake(
    x, compressed, n, x_scale, w_scale, bias=None, out_dtype=None, algorithm=-1, split_k=0, dense=None
):
    _check_view("sparse_gemm_2_4_fp8", "x", x)
    _check_compressed_24(x, compressed, n)
    _check(
        x.dtype == torch.float8_e4m3fn,
        lambda: (
            f"sparse_gemm_a8w8: the weight must be a float8_e4m3fn 2:4 weight, got a {x.dtype} 2:4 weight "
            "(sparse_gemm runs 16-bit weights)"
        ),
    )
    # The scales' and out_dtype's checks (gemm_a8w8's) are the real kernel's.
    return x.new_empty((*x.shape[:-1], n), dtype=torch.bfloat16 if out_dtype is None else out_dtype)


@_fake("tgemm::sparse_gemm_csr")
def sparse_gemm_csr_fake(x, crow_indices, col_indices, values, n, bias=None, dense=None):
    _check_view("sparse_gemm_csr", "x", x)
    op = "SparseWeight::csr_prechecked"
    for name, t in (("row_offsets", crow_indices), ("col_indices", col_indices)):
        _check(t.dtype == torch.int32, lambda name=name, t=t: f"{op}: {name} must be torch.int32, got {t.dtype}")
    _check(values.dtype in _A16W16_IN, lambda: f"{op}: values must be bf16 or fp16, got {values.dtype}")
    _check(
        x.dim() >= 2,
        lambda: f"sparse_gemm: x must have rank 2 to 6, got {x.dim()} (sizes {_shape(x.shape)})",
    )
    return _output(x, n)


@_fake("tgemm::sparse_gemm_bsr")
def sparse_gemm_bsr_fake(x, crow_indices, col_indices, values, n, bias=None, dense=None):
    _check_view("sparse_gemm_bsr", "x", x)
    op = "SparseWeight::bsr_prechecked"
    bs = values.shape[1] if values.dim() == 3 else 0
    k = x.shape[-1] if x.dim() > 0 else 0
    _check(bs > 0, lambda: f"{op}: block_size must be positive, got {_n(bs)}")
    _check(
        n % bs == 0 and k % bs == 0,
        lambda: f"{op}: block_size {_n(bs)} must divide the weight's N and K, got [{n}, {_n(k)}]",
    )
    for name, t in (("crow_indices", crow_indices), ("col_indices", col_indices)):
        _check(t.dtype == torch.int32, lambda name=name, t=t: f"{op}: {name} must be torch.int32, got {t.dtype}")
    _check(values.dtype in _A16W16_IN, lambda: f"{op}: values must be bf16 or fp16, got {values.dtype}")
    _check(
        x.dim() >= 2,
        lambda: f"sparse_gemm: x must have rank 2 to 6, got {x.dim()} (sizes {_shape(x.shape)})",
    )
    return _output(x, n)
