"""Linear layers with 8-bit weights through tgemm's A8W8 GEMMs.

    import tgemm.nn
    tgemm.nn.quantize_linear(model, "fp8_rowwise")   # every eligible nn.Linear -> QuantLinear
    layer = tgemm.nn.QuantLinear.from_fp8_block(weight, weight_scale_inv, bias)  # a DeepSeek FP8 pair

Schemes (``SCHEMES``); the weight is quantized once, the activations at every call:

- ``fp8_tensor``: FP8 e4m3fn weight with one scale; activations with one scale per call
  (:func:`tgemm.quant_fp8_per_tensor`, two passes), then :func:`tgemm.gemm_a8w8`.
- ``fp8_rowwise``: one scale per output channel; activations one per token
  (:func:`tgemm.quant_per_token`), then :func:`tgemm.gemm_a8w8`.
- ``int8_rowwise``: the same in int8 (scales amax / 127); the product accumulates exactly in int32.
- ``fp8_block``: DeepSeek-V3's recipe, 128x128 weight blocks and 1x128 activation blocks
  (:func:`tgemm.quant_fp8_per_block_128x128`, :func:`tgemm.quant_fp8_per_block_1x128`), then
  :func:`tgemm.gemm_a8w8_blockscale`.
- ``mxfp4``: weight-only, OCP MXFP4 (e2m1 codes two a byte, one E8M0 scale per 32 values along K,
  :func:`tgemm.quant_mxfp4`); the activations stay 16-bit and meet the 4-bit weight in
  :func:`tgemm.gemm_a16w4`. Eligible layers need in_features a multiple of 32.
- ``mxfp4_a8``: the same MXFP4 weight; activations FP8 e4m3 with one scale per token
  (:func:`tgemm.quant_per_token`), then :func:`tgemm.gemm_a8w4`. in_features a multiple of 32.

The output has the input's dtype (bf16 or fp16), the bias is added in fp32 before the one
rounding. A layer is eligible when it is an ``nn.Linear`` on a CUDA device with a bf16 or fp16
weight and in_features a multiple of 16 (the 8-bit GEMMs' K alignment); others stay as they are.
Inference only: the quantized weight is a buffer, no gradient flows.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Union

import torch
from torch import nn

from .ops import (
    dequant_mxfp4,
    gemm_a8w4,
    gemm_a8w8,
    gemm_a8w8_blockscale,
    gemm_a16w4,
    quant_fp8_per_block_1x128,
    quant_fp8_per_block_128x128,
    quant_fp8_per_tensor,
    quant_mxfp4,
    quant_per_token,
)
from .sparse_ops import CsrWeight, Sparse24Weight, compress_2_4, csr_weight, prune_2_4, sparse_gemm

SCHEMES = ("fp8_tensor", "fp8_rowwise", "int8_rowwise", "fp8_block", "mxfp4", "mxfp4_a8")
_MXFP4_WEIGHT = ("mxfp4", "mxfp4_a8")
# in_features of an eligible layer must be a multiple of this: the 8-bit GEMMs' K alignment, the
# MXFP4 scale block.
_K_MULTIPLE = {"mxfp4": 32, "mxfp4_a8": 32}


def quantize_weight(weight: torch.Tensor, scheme: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q, scale)`` of a ``[N, K]`` bf16/fp16 weight under ``scheme``, ``weight ~= q * scale``:
    scale fp32 ``[1]`` (fp8_tensor), ``[N, 1]`` (fp8_rowwise, int8_rowwise) or
    ``[ceil(N / 128), ceil(K / 128)]`` (fp8_block). mxfp4, mxfp4_a8: q uint8 ``[N, K / 2]`` packed e2m1 codes
    and scale uint8 ``[N, K / 32]`` (E8M0), ``weight ~= dequant_mxfp4(q, scale)``."""
    _check_scheme(scheme)
    w = weight.detach()
    if scheme == "fp8_tensor":
        return quant_fp8_per_tensor(w)
    if scheme == "fp8_block":
        return quant_fp8_per_block_128x128(w)
    if scheme in _MXFP4_WEIGHT:
        return quant_mxfp4(w)
    return quant_per_token(w, torch.int8 if scheme == "int8_rowwise" else torch.float8_e4m3fn)


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"tgemm.nn: scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")


class QuantLinear(nn.Module):
    """``y = x @ dequant(q).T + bias`` with an 8-bit weight ``q`` and its scales (module docs)."""

    def __init__(
        self,
        qweight: torch.Tensor,
        weight_scale: torch.Tensor,
        scheme: str,
        bias: Optional[torch.Tensor] = None,
    ):
        super().__init__()
        _check_scheme(scheme)
        if qweight.dim() != 2:
            raise ValueError(f"tgemm.nn.QuantLinear: qweight must be [N, K], got sizes {tuple(qweight.shape)}")
        want = {"int8_rowwise": torch.int8, "mxfp4": torch.uint8, "mxfp4_a8": torch.uint8}.get(
            scheme, torch.float8_e4m3fn
        )
        if qweight.dtype != want:
            raise ValueError(f"tgemm.nn.QuantLinear: scheme {scheme} needs a {want} qweight, got {qweight.dtype}")
        self.scheme = scheme
        self.out_features, self.in_features = qweight.shape
        if scheme in _MXFP4_WEIGHT:
            self.in_features *= 2  # two codes a byte
            want_scale = (self.out_features, self.in_features // 32)
            if weight_scale.dtype != torch.uint8 or tuple(weight_scale.shape) != want_scale:
                raise ValueError(
                    f"tgemm.nn.QuantLinear: scheme {scheme} needs a torch.uint8 weight_scale of sizes {want_scale}, "
                    f"got {weight_scale.dtype} {tuple(weight_scale.shape)}"
                )
        self.register_buffer("qweight", qweight.contiguous())
        mx = scheme in _MXFP4_WEIGHT
        self.register_buffer("weight_scale", weight_scale.contiguous() if mx else weight_scale.float())
        self.register_buffer("bias", None if bias is None else bias.detach())

    @classmethod
    def from_linear(cls, linear: nn.Linear, scheme: str) -> "QuantLinear":
        q, scale = quantize_weight(linear.weight, scheme)
        return cls(q, scale, scheme, linear.bias)

    @classmethod
    def from_fp8_block(
        cls, weight: torch.Tensor, weight_scale_inv: torch.Tensor, bias: Optional[torch.Tensor] = None
    ) -> "QuantLinear":
        """A DeepSeek-V3-style checkpoint pair, taken as it is (no requantization): ``weight``
        float8_e4m3fn ``[N, K]`` and ``weight_scale_inv`` fp32 ``[ceil(N / 128), ceil(K / 128)]``,
        the factor that dequantizes each 128x128 block (``weight ~= q * scale_inv``)."""
        n, k = weight.shape
        want = ((n + 127) // 128, (k + 127) // 128)
        if tuple(weight_scale_inv.shape) != want:
            raise ValueError(
                f"tgemm.nn.QuantLinear.from_fp8_block: weight_scale_inv must have sizes {want} for a weight "
                f"[{n}, {k}], got {tuple(weight_scale_inv.shape)}"
            )
        return cls(weight, weight_scale_inv.contiguous(), "fp8_block", bias)

    def dequantized_weight(self) -> torch.Tensor:
        """The weight the layer multiplies by, in fp32 ``[N, K]`` (for checks)."""
        if self.scheme in _MXFP4_WEIGHT:
            return dequant_mxfp4(self.qweight, self.weight_scale)
        q = self.qweight.float()
        if self.scheme != "fp8_block":
            return q * self.weight_scale.reshape(-1, 1)
        s = self.weight_scale.repeat_interleave(128, 0).repeat_interleave(128, 1)
        return q * s[: self.out_features, : self.in_features]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        if self.scheme == "mxfp4":
            y = gemm_a16w4(x2, self.qweight, self.weight_scale, self.bias, x.dtype)
        elif self.scheme == "mxfp4_a8":
            xq, xs = quant_per_token(x2, torch.float8_e4m3fn)
            y = gemm_a8w4(xq, self.qweight, xs, self.weight_scale, self.bias, x.dtype)
        elif self.scheme == "fp8_block":
            xq, xs = quant_fp8_per_block_1x128(x2)
            y = gemm_a8w8_blockscale(xq, self.qweight, xs, self.weight_scale, self.bias, x.dtype)
        else:
            if self.scheme == "fp8_tensor":
                xq, xs = quant_fp8_per_tensor(x2)
            else:
                xq, xs = quant_per_token(x2, self.qweight.dtype)
            y = gemm_a8w8(xq, self.qweight, xs, self.weight_scale, self.bias, x.dtype)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, scheme={self.scheme}"
        )


def eligible(linear: nn.Module, scheme: str = "fp8_rowwise") -> bool:
    """Whether :func:`quantize_linear` replaces this module under ``scheme`` (module docs)."""
    w = getattr(linear, "weight", None)
    return (
        type(linear) is nn.Linear
        and w is not None
        and w.is_cuda
        and w.dtype in (torch.bfloat16, torch.float16)
        and linear.in_features % _K_MULTIPLE.get(scheme, 16) == 0
    )


def quantize_linear(
    model: nn.Module,
    scheme: str = "fp8_rowwise",
    skip: Union[Iterable[str], Callable[[str], bool]] = ("lm_head",),
) -> int:
    """Replaces, in place, every eligible ``nn.Linear`` of ``model`` by a :class:`QuantLinear`
    under ``scheme``; returns how many. ``skip``: names (a module is skipped when its qualified
    name ends with one of them; by default the output head) or a predicate on the qualified name.
    Quantize after loading the weights: the 8-bit weight is a copy."""
    _check_scheme(scheme)
    skipped = skip if callable(skip) else (lambda name, ends=tuple(skip): any(name.endswith(e) for e in ends))
    targets = [(name, m) for name, m in model.named_modules() if name and eligible(m, scheme) and not skipped(name)]
    for name, linear in targets:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, QuantLinear.from_linear(linear, scheme))
    return len(targets)


SPARSE_PATTERNS = ("2:4", "csr")


class SparseLinear(nn.Module):
    """``y = x @ W^T (+ bias)`` for a sparse weight through :func:`tgemm.sparse_gemm`: ``"2:4"``
    (cuSPARSELt's compressed form, a buffer) or ``"csr"`` (the CSR arrays, buffers). Built by
    :meth:`from_linear`; inference only."""

    def __init__(self, weight, bias: Optional[torch.Tensor], pattern: str):
        super().__init__()
        self.pattern = pattern
        self.in_features, self.out_features = weight.k, weight.n
        if isinstance(weight, Sparse24Weight):
            self.register_buffer("compressed", weight.compressed)
            self._dtype = weight.dtype
        elif isinstance(weight, CsrWeight):
            self.register_buffer("crow_indices", weight.crow_indices)
            self.register_buffer("col_indices", weight.col_indices)
            self.register_buffer("values", weight.values)
        else:
            raise TypeError(f"tgemm.nn.SparseLinear: weight must be a Sparse24Weight or CsrWeight, got {type(weight)}")
        # The dense weight when kept (keep_dense): a sparse-table row that found dense faster runs it.
        self.register_buffer("dense", weight.dense)
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    @classmethod
    def from_linear(
        cls, linear: nn.Linear, pattern: str = "2:4", prune: bool = True, keep_dense: bool = False
    ) -> "SparseLinear":
        """The layer's weight as ``pattern``. ``"2:4"``: magnitude-pruned first when ``prune``
        (:func:`tgemm.prune_2_4`; without it the weight must already be 2:4). ``"csr"``: its zeros
        dropped (``to_sparse_csr``). ``keep_dense``: also keep the (pruned) dense weight, at the
        memory of a dense copy, for the sparse table's dense rows."""
        w = linear.weight.detach()
        if pattern == "2:4":
            weight = compress_2_4(prune_2_4(w) if prune else w.contiguous(), keep_dense)
        elif pattern == "csr":
            weight = csr_weight(w.to_sparse_csr(), keep_dense)
        else:
            raise ValueError(f"tgemm.nn: pattern must be one of {SPARSE_PATTERNS}, got {pattern!r}")
        return cls(weight, linear.bias, pattern)

    def _weight(self):
        if self.pattern == "2:4":
            return Sparse24Weight(self.compressed, self.out_features, self.in_features, self._dtype, self.dense)
        return CsrWeight(
            self.crow_indices, self.col_indices, self.values, self.out_features, self.in_features, self.dense
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sparse_gemm(x, self._weight(), self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, pattern={self.pattern}"
        )


def sparse_eligible(linear: nn.Module) -> bool:
    """Whether :func:`sparsify_linear` replaces this module: an ``nn.Linear`` on CUDA with a bf16 or
    fp16 weight whose in and out features are multiples of 16 (cuSPARSELt's 2:4 shape rule)."""
    w = getattr(linear, "weight", None)
    return (
        type(linear) is nn.Linear
        and w is not None
        and w.is_cuda
        and w.dtype in (torch.bfloat16, torch.float16)
        and linear.in_features % 16 == 0
        and linear.out_features % 16 == 0
    )


def sparsify_linear(
    model: nn.Module,
    pattern: str = "2:4",
    prune: bool = True,
    skip: Union[Iterable[str], Callable[[str], bool]] = ("lm_head",),
    keep_dense: bool = False,
) -> int:
    """Replaces, in place, every eligible ``nn.Linear`` of ``model`` by a :class:`SparseLinear`
    with ``pattern`` (``"2:4"``: magnitude-pruned unless ``prune=False``; ``"csr"``: the weight's
    zeros dropped); returns how many. ``skip`` as in :func:`quantize_linear`. ``keep_dense``: each
    layer also keeps its dense weight (twice the weight memory for 2:4), so the layers where the
    sparse table found dense faster run dense."""
    if pattern not in SPARSE_PATTERNS:
        raise ValueError(f"tgemm.nn: pattern must be one of {SPARSE_PATTERNS}, got {pattern!r}")
    skipped = skip if callable(skip) else (lambda name, ends=tuple(skip): any(name.endswith(e) for e in ends))
    targets = [(name, m) for name, m in model.named_modules() if name and sparse_eligible(m) and not skipped(name)]
    for name, linear in targets:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, SparseLinear.from_linear(linear, pattern, prune, keep_dense))
    return len(targets)
