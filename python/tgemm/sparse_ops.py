"""Sparse-weight GEMM (C++: ``include/tgemm/sparse.h``): ``y = x @ W^T (+ bias)`` as ``F.linear``
with ``W`` sparse, bf16/fp16; and FP8 2:4 with the A8W8 scales (:func:`sparse_gemm_a8w8`).

Weights are checked once, when they are built: :func:`compress_2_4` (a 2:4 weight, compressed by
cuSPARSELt; bf16, fp16 or float8_e4m3fn), :func:`csr_weight` (CSR arrays) and
:func:`block_weight` (dense blocks in BSR form) read the weight back to the host and raise
:class:`tgemm.TgemmError` for a weight that is not 2:4 or for malformed indices; the GEMM then
only checks shapes, so it runs under torch.compile and inside CUDA-graph capture. A torch sparse
CSR, COO or BSR tensor passed straight to :func:`sparse_gemm` is checked on every call (it
synchronizes): build the weight object once instead.

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
sparse_gemm_bsr_op = torch.ops.tgemm.sparse_gemm_bsr.default
sparse_gemm_2_4_fp8_op = torch.ops.tgemm.sparse_gemm_2_4_fp8.default


@dataclass
class Sparse24Weight:
    """A 2:4 weight ``[n, k]`` in cuSPARSELt's compressed form (``compressed``: int8 bytes).
    ``dense``: the uncompressed weight when kept (``compress_2_4(w, keep_dense=True)``), which lets
    :func:`sparse_gemm` take the dense path (``backend="dense"``, or where the sparse table says
    dense is faster) at the memory of a dense copy."""

    compressed: torch.Tensor
    n: int
    k: int
    dtype: torch.dtype
    dense: Optional[torch.Tensor] = None


@dataclass
class CsrWeight:
    """A CSR weight ``[n, k]``: int32 ``crow_indices [n + 1]`` and ``col_indices [nnz]``, ``values
    [nnz]`` bf16/fp16, checked by :func:`csr_weight`. ``dense``: the dense weight when kept
    (``keep_dense=True``), taken where the sparse table says dense is faster."""

    crow_indices: torch.Tensor
    col_indices: torch.Tensor
    values: torch.Tensor
    n: int
    k: int
    dense: Optional[torch.Tensor] = None


@dataclass
class BlockWeight:
    """A block-sparse weight ``[n, k]`` of dense ``block_size x block_size`` blocks in BSR form:
    int32 ``crow_indices [n / block_size + 1]`` and ``col_indices [nnzb]`` (block columns),
    ``values [nnzb, block_size, block_size]`` bf16/fp16, checked by :func:`block_weight`.
    ``dense``: the dense weight when kept (``keep_dense=True``), taken where the sparse table says
    dense is faster."""

    crow_indices: torch.Tensor
    col_indices: torch.Tensor
    values: torch.Tensor
    n: int
    k: int
    block_size: int
    dense: Optional[torch.Tensor] = None

    @property
    def density(self) -> float:
        return self.values.numel() / (self.n * self.k) if self.n * self.k else 0.0


def block_weight(
    w: torch.Tensor, block_size: Optional[int] = None, mask: Optional[torch.Tensor] = None, keep_dense: bool = False
) -> BlockWeight:
    """A :class:`BlockWeight` from a torch BSR tensor (``w.to_sparse_bsr(bs)``; its block size is
    taken from its values) or from a dense ``[N, K]`` weight with ``block_size`` and a boolean
    block mask ``[N / bs, K / bs]`` (None: every block holding a nonzero is kept). Indices are
    converted to int32 and checked once. Eager only; synchronizes. ``block_size`` must divide N and
    K (:class:`tgemm.TgemmError` otherwise). ``keep_dense``: also keep the weight dense (the blocks
    the mask drops zeroed), at the memory of a dense copy."""
    if w.layout == torch.sparse_bsr:
        values = w.values().clone(memory_format=torch.contiguous_format)  # not a view: see csr_weight
        bs = int(values.shape[1])
        if block_size is not None and block_size != bs:
            raise ValueError(f"tgemm.block_weight: block_size {block_size} differs from the BSR tensor's {bs}")
        crow, col = w.crow_indices().to(torch.int32), w.col_indices().to(torch.int32)
        n, k = int(w.shape[0]), int(w.shape[1])
    elif w.layout == torch.strided:
        if block_size is None:
            raise ValueError("tgemm.block_weight: a dense w needs block_size")
        n, k, bs = int(w.shape[0]), int(w.shape[1]), int(block_size)
        if bs <= 0 or n % bs or k % bs:
            # The core's message, before any reshape fails on the shape.
            _C.check_sparse_bsr(
                torch.zeros(1, dtype=torch.int32, device=w.device),
                torch.zeros(0, dtype=torch.int32, device=w.device),
                torch.zeros(0, max(bs, 1), max(bs, 1), dtype=w.dtype, device=w.device),
                n,
                k,
                bs,
            )
        blocks = w.reshape(n // bs, bs, k // bs, bs).transpose(1, 2)
        keep = blocks.ne(0).any(dim=3).any(dim=2) if mask is None else mask.to(device=w.device, dtype=torch.bool)
        if tuple(keep.shape) != (n // bs, k // bs):
            raise ValueError(f"tgemm.block_weight: mask must be [{n // bs}, {k // bs}], got {list(keep.shape)}")
        where = keep.nonzero()  # row-major: block rows ascending, block columns ascending within one
        counts = torch.bincount(where[:, 0], minlength=n // bs)
        crow = torch.zeros(n // bs + 1, dtype=torch.int32, device=w.device)
        crow[1:] = counts.cumsum(0).to(torch.int32)
        col = where[:, 1].to(torch.int32).contiguous()
        values = blocks[keep].contiguous()
    else:
        raise TypeError(f"tgemm.block_weight: w must be a torch.sparse_bsr or dense tensor, got layout {w.layout}")
    _C.check_sparse_bsr(crow, col, values, n, k, bs)
    dense = None
    if keep_dense:
        if w.layout == torch.sparse_bsr:
            dense = w.to_dense().contiguous()
        else:
            dense = torch.where(keep.repeat_interleave(bs, 0).repeat_interleave(bs, 1), w, torch.zeros_like(w))
            dense = dense.contiguous()
    return BlockWeight(crow, col, values, n, k, bs, dense)


def prune_2_4(w: torch.Tensor) -> torch.Tensor:
    """``w`` with, in every group of 4 consecutive elements along K, the 2 of largest magnitude
    kept and the other 2 zeroed (ties keep the lower index). w: ``[N, K]`` bf16/fp16, ``K % 4 == 0``."""
    if _is_compiling():
        return prune_2_4_op(w)
    if not _has_torch_function(w):
        return _C.prune_2_4(w)
    return _call_op(prune_2_4_op, w)


def compress_2_4(w: torch.Tensor, keep_dense: bool = False) -> Sparse24Weight:
    """The 2:4 weight ``w [N, K]`` (bf16/fp16, contiguous, N and K multiples of 16; or
    float8_e4m3fn, multiples of 32, for :func:`sparse_gemm_a8w8`) compressed for
    :func:`sparse_gemm`. Raises :class:`tgemm.TgemmError` where a group of 4 along K holds more
    than 2 nonzeros (:func:`prune_2_4` makes a weight 2:4). Eager only; synchronizes."""
    compressed = _C.compress_2_4(w)
    return Sparse24Weight(compressed, int(w.shape[0]), int(w.shape[1]), w.dtype, w if keep_dense else None)


def csr_weight(w: torch.Tensor, keep_dense: bool = False) -> CsrWeight:
    """A :class:`CsrWeight` from a torch sparse CSR tensor ``[N, K]`` (``w.to_sparse_csr()``) or a
    COO one (converted to CSR: cuSPARSE's CSR SpMM serves both), its indices converted to int32
    and checked once. ``keep_dense``: also keep ``w.to_dense()``, at the memory of a dense copy.
    Eager only; synchronizes."""
    if w.layout == torch.sparse_coo:
        w = w.coalesce().to_sparse_csr()
    if w.layout != torch.sparse_csr:
        raise TypeError(f"tgemm.csr_weight: w must be a torch.sparse_csr or sparse_coo tensor, got layout {w.layout}")
    n, k = int(w.shape[0]), int(w.shape[1])
    if w.values().numel() >= 2**31:
        raise ValueError(f"tgemm.csr_weight: nnz {w.values().numel()} does not fit the int32 indices")
    crow = w.crow_indices().to(torch.int32)
    col = w.col_indices().to(torch.int32)
    # A copy, not the sparse tensor's own values: a view of a sparse tensor cannot be traced
    # (torch.compile's fake tensors would have to rebuild the sparse base).
    values = w.values().clone(memory_format=torch.contiguous_format)
    _C.check_sparse_csr(crow, col, values, n, k)
    return CsrWeight(crow, col, values, n, k, w.to_dense().contiguous() if keep_dense else None)


def sparse_gemm(
    x: torch.Tensor,
    weight: Union[Sparse24Weight, CsrWeight, BlockWeight, torch.Tensor],
    bias: Optional[torch.Tensor] = None,
    backend: str = "default",
    algorithm: int = -1,
    split_k: int = 0,
) -> torch.Tensor:
    """``x @ W^T (+ bias)`` for a sparse ``W [N, K]``: a :class:`Sparse24Weight` (cuSPARSELt), a
    :class:`CsrWeight`, a :class:`BlockWeight` or a torch sparse CSR, COO or BSR tensor (cuSPARSE
    SpMM). x: ``[..., K]`` of the weight's dtype; bias: ``[N]``, x's dtype. ``backend="dense"``
    runs a weight's kept dense copy (``keep_dense=True``) through tgemm's dense GEMM; at the
    default, a kept copy is passed along, so a sparse-table row naming dense can take it. ``algorithm`` / ``split_k``:
    cuSPARSELt's configuration id and split-K (-1 / 0: its defaults)."""
    if isinstance(weight, torch.Tensor) and weight.layout in (torch.sparse_csr, torch.sparse_coo):
        weight = csr_weight(weight)
    if isinstance(weight, torch.Tensor) and weight.layout == torch.sparse_bsr:
        weight = block_weight(weight)
    if isinstance(weight, (BlockWeight, CsrWeight)) and backend == "dense":
        if weight.dense is None:
            raise ValueError("tgemm.sparse_gemm: backend 'dense' needs the weight built with keep_dense=True")
        from .ops import gemm_a16w16

        return gemm_a16w16(x, weight.dense, bias)
    if isinstance(weight, BlockWeight):
        if backend not in ("default", "cusparse"):
            raise ValueError(f"tgemm.sparse_gemm: a block weight runs on 'cusparse' or 'dense', got {backend!r}")
        args = (x, weight.crow_indices, weight.col_indices, weight.values, weight.n, bias, weight.dense)
        if _is_compiling():
            return sparse_gemm_bsr_op(*args)
        if not _has_torch_function(x, weight.crow_indices, weight.col_indices, weight.values, bias, weight.dense):
            return _C.sparse_gemm_bsr(*args)
        return _call_op(sparse_gemm_bsr_op, *args)
    if isinstance(weight, Sparse24Weight):
        if backend == "dense":
            if weight.dense is None:
                raise ValueError("tgemm.sparse_gemm: backend 'dense' needs compress_2_4(w, keep_dense=True)")
            from .ops import gemm_a16w16

            return gemm_a16w16(x, weight.dense, bias)
        if backend not in ("default", "cusparselt"):
            raise ValueError(f"tgemm.sparse_gemm: a 2:4 weight runs on 'cusparselt' or 'dense', got {backend!r}")
        args = (x, weight.compressed, weight.n, bias, algorithm, split_k, weight.dense)
        if _is_compiling():
            return sparse_gemm_2_4_op(*args)
        if not _has_torch_function(x, weight.compressed, bias, weight.dense):
            return _C.sparse_gemm_2_4(*args)
        return _call_op(sparse_gemm_2_4_op, *args)
    if isinstance(weight, CsrWeight):
        if backend not in ("default", "cusparse"):
            raise ValueError(f"tgemm.sparse_gemm: a CSR weight runs on 'cusparse' or 'dense', got {backend!r}")
        args = (x, weight.crow_indices, weight.col_indices, weight.values, weight.n, bias, weight.dense)
        if _is_compiling():
            return sparse_gemm_csr_op(*args)
        if not _has_torch_function(x, weight.crow_indices, weight.col_indices, weight.values, bias, weight.dense):
            return _C.sparse_gemm_csr(*args)
        return _call_op(sparse_gemm_csr_op, *args)
    raise TypeError(
        "tgemm.sparse_gemm: weight must be a Sparse24Weight (tgemm.compress_2_4), a CsrWeight (tgemm.csr_weight), "
        f"a BlockWeight (tgemm.block_weight) or a torch.sparse_csr / sparse_coo / sparse_bsr tensor, got "
        f"{type(weight).__name__}"
    )


def sparse_gemm_a8w8(
    x: torch.Tensor,
    weight: Sparse24Weight,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
    backend: str = "default",
    algorithm: int = -1,
    split_k: int = 0,
) -> torch.Tensor:
    """``(x @ W^T) * x_scale * w_scale (+ bias)`` for an FP8 2:4 weight (``compress_2_4`` of a
    float8_e4m3fn ``[N, K]`` weight), :func:`tgemm.gemm_a8w8`'s contract: x float8_e4m3fn
    ``[..., K]``; scales fp32, one element (per-tensor) or ``[M, 1]`` / ``[N, 1]`` (per-token /
    per-channel); bias ``[N]`` of out's dtype or fp32; ``out_dtype`` bf16 (None), fp16 or fp32.
    cuSPARSELt writes the unscaled fp32 product; one pass applies both scales and the bias.
    ``backend="dense"`` runs :func:`tgemm.gemm_a8w8` on the kept dense copy."""
    if not isinstance(weight, Sparse24Weight) or weight.dtype != torch.float8_e4m3fn:
        raise TypeError("tgemm.sparse_gemm_a8w8: weight must be a Sparse24Weight of a torch.float8_e4m3fn weight")
    if backend == "dense":
        if weight.dense is None:
            raise ValueError("tgemm.sparse_gemm_a8w8: backend 'dense' needs compress_2_4(w, keep_dense=True)")
        from .ops import gemm_a8w8

        return gemm_a8w8(x, weight.dense, x_scale, w_scale, bias, out_dtype)
    if backend not in ("default", "cusparselt"):
        raise ValueError(f"tgemm.sparse_gemm_a8w8: an FP8 2:4 weight runs on 'cusparselt' or 'dense', got {backend!r}")
    args = (x, weight.compressed, weight.n, x_scale, w_scale, bias, out_dtype, algorithm, split_k, weight.dense)
    if _is_compiling():
        return sparse_gemm_2_4_fp8_op(*args)
    if not _has_torch_function(x, weight.compressed, x_scale, w_scale, bias, weight.dense):
        return _C.sparse_gemm_2_4_fp8(*args)
    return _call_op(sparse_gemm_2_4_fp8_op, *args)
