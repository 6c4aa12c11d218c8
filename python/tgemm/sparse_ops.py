"""Sparse-weight GEMM (C++: ``include/tgemm/sparse.h``): ``y = x @ W^T (+ bias)`` as ``F.linear``
with ``W`` sparse, bf16/fp16.

Weights are checked once, when they are built: :func:`compress_2_4` (a 2:4 weight, compressed by
cuSPARSELt) and :func:`csr_weight` (CSR arrays) read the weight back to the host and raise
:class:`tgemm.TgemmError` for a weight that is not 2:4 or for malformed CSR indices; the GEMM then
only checks shapes, so it runs under torch.compile and inside CUDA-graph capture. A torch sparse
CSR tensor passed straight to :func:`sparse_gemm` is checked on every call (it synchronizes):
build a :class:`CsrWeight` once instead.

The same three entries as ``tgemm.ops`` (traced op under torch.compile, ``tgemm._C`` fast path in
plain eager, ``torch.ops`` under a ``__torch_function__`` override). Not differentiable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

from . import _C
from .ops import _call_op, _has_torch_function, _is_compiling

prune_2_4_op = torch.ops.tgemm.prune_2_4.default
sparse_gemm_2_4_op = torch.ops.tgemm.sparse_gemm_2_4.default
sparse_gemm_csr_op = torch.ops.tgemm.sparse_gemm_csr.default


@dataclass
class Sparse24Weight:
    """A 2:4 weight ``[n, k]`` in cuSPARSELt's compressed form (``compressed``: int8 bytes).
    ``dense``: the uncompressed weight when kept (``compress_2_4(w, keep_dense=True)``), which lets
    :func:`sparse_gemm` take the dense path (``backend="dense"``) at the memory of a dense copy."""

    compressed: torch.Tensor
    n: int
    k: int
    dtype: torch.dtype
    dense: Optional[torch.Tensor] = None


@dataclass
class CsrWeight:
    """A CSR weight ``[n, k]``: int32 ``crow_indices [n + 1]`` and ``col_indices [nnz]``, ``values
    [nnz]`` bf16/fp16, checked by :func:`csr_weight`."""

    crow_indices: torch.Tensor
    col_indices: torch.Tensor
    values: torch.Tensor
    n: int
    k: int


def prune_2_4(w: torch.Tensor) -> torch.Tensor:
    """``w`` with, in every group of 4 consecutive elements along K, the 2 of largest magnitude
    kept and the other 2 zeroed (ties keep the lower index). w: ``[N, K]`` bf16/fp16, ``K % 4 == 0``."""
    if _is_compiling():
        return prune_2_4_op(w)
    if not _has_torch_function(w):
        return _C.prune_2_4(w)
    return _call_op(prune_2_4_op, w)


def compress_2_4(w: torch.Tensor, keep_dense: bool = False) -> Sparse24Weight:
    """The 2:4 weight ``w [N, K]`` (bf16/fp16, contiguous, N and K multiples of 16) compressed
    for :func:`sparse_gemm`. Raises :class:`tgemm.TgemmError` where a group of 4 along K holds more
    than 2 nonzeros (:func:`prune_2_4` makes a weight 2:4). Eager only; synchronizes."""
    compressed = _C.compress_2_4(w)
    return Sparse24Weight(compressed, int(w.shape[0]), int(w.shape[1]), w.dtype, w if keep_dense else None)


def csr_weight(
    w: torch.Tensor,
) -> CsrWeight:
    """A :class:`CsrWeight` from a torch sparse CSR tensor ``[N, K]`` (``w.to_sparse_csr()``) or a
    COO one (converted to CSR: cuSPARSE's CSR SpMM serves both), its indices converted to int32
    and checked once. Eager only; synchronizes."""
    if w.layout == torch.sparse_coo:
        w = w.coalesce().to_sparse_csr()
    if w.layout != torch.sparse_csr:
        raise TypeError(f"tgemm.csr_weight: w must be a torch.sparse_csr or sparse_coo tensor, got layout {w.layout}")
    n, k = int(w.shape[0]), int(w.shape[1])
    if w.values().numel() >= 2**31:
        raise ValueError(f"tgemm.csr_weight: nnz {w.values().numel()} does not fit the int32 indices")
    crow = w.crow_indices().to(torch.int32)
    col = w.col_indices().to(torch.int32)
    values = w.values().contiguous()
    _C.check_sparse_csr(crow, col, values, n, k)
    return CsrWeight(crow, col, values, n, k)


def sparse_gemm(
    x: torch.Tensor,
    weight: Union[Sparse24Weight, CsrWeight, torch.Tensor],
    bias: Optional[torch.Tensor] = None,
    backend: str = "default",
    algorithm: int = -1,
    split_k: int = 0,
) -> torch.Tensor:
    """``x @ W^T (+ bias)`` for a sparse ``W [N, K]``: a :class:`Sparse24Weight` (cuSPARSELt), a
    :class:`CsrWeight` or a torch sparse CSR or COO tensor (cuSPARSE SpMM). x: ``[..., K]`` of the
    weight's dtype; bias: ``[N]``, x's dtype. ``backend="dense"`` runs a 2:4 weight's kept dense
    copy through tgemm's dense GEMM. ``algorithm`` / ``split_k``: cuSPARSELt's configuration id
    and split-K (-1 / 0: its defaults)."""
    if isinstance(weight, torch.Tensor) and weight.layout in (torch.sparse_csr, torch.sparse_coo):
        weight = csr_weight(weight)
    if isinstance(weight, Sparse24Weight):
        if backend == "dense":
            if weight.dense is None:
                raise ValueError("tgemm.sparse_gemm: backend 'dense' needs compress_2_4(w, keep_dense=True)")
            from .ops import gemm_a16w16

            return gemm_a16w16(x, weight.dense, bias)
        if backend not in ("default", "cusparselt"):
            raise ValueError(f"tgemm.sparse_gemm: a 2:4 weight runs on 'cusparselt' or 'dense', got {backend!r}")
        args = (x, weight.compressed, weight.n, bias, algorithm, split_k)
        if _is_compiling():
            return sparse_gemm_2_4_op(*args)
        if not _has_torch_function(x, weight.compressed, bias):
            return _C.sparse_gemm_2_4(*args)
        return _call_op(sparse_gemm_2_4_op, *args)
    if isinstance(weight, CsrWeight):
        if backend not in ("default", "cusparse"):
            raise ValueError(f"tgemm.sparse_gemm: a CSR weight runs on 'cusparse', got {backend!r}")
        args = (x, weight.crow_indices, weight.col_indices, weight.values, weight.n, bias)
        if _is_compiling():
            return sparse_gemm_csr_op(*args)
        if not _has_torch_function(x, weight.crow_indices, weight.col_indices, weight.values, bias):
            return _C.sparse_gemm_csr(*args)
        return _call_op(sparse_gemm_csr_op, *args)
    raise TypeError(
        "tgemm.sparse_gemm: weight must be a Sparse24Weight (tgemm.compress_2_4), a CsrWeight (tgemm.csr_weight) "
        f"or a torch.sparse_csr / sparse_coo tensor, got {type(weight).__name__}"
    )
