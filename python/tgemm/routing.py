"""``F.linear`` / ``nn.Linear`` through tgemm, with an M window and explicit fallbacks.

A call ``linear(input, weight, bias)`` runs ``torch.ops.tgemm.gemm_a16w16(input, weight, bias)``
when tgemm can take it and its row count ``M = input.numel() // input.shape[-1]`` is in
``[min_m, max_m]``; otherwise it runs the stock ``torch.nn.functional.linear``. Never a wrong
result: every input tgemm cannot take goes to the stock path explicitly.

Routed to tgemm only when all hold:
  * input and weight bf16 or fp16, the same dtype; bias absent or of that dtype and 1-D;
  * input on a CUDA device; input, weight and bias plain tensors (``torch.Tensor`` or
    ``nn.Parameter``: subclasses such as quantized or distributed tensors keep their own
    ``__torch_function__`` path) and contiguous; weight 2-D; input of rank 1 to 6;
  * autocast off (under autocast F.linear decides the compute dtype);
  * no forward-mode AD (dual tensors), and, with ``grad=False``, no input requiring grad while
    grad mode is on (with ``grad=True``, the default, tgemm's backward is used);
  * ``min_m <= M <= max_m``.

Defaults: ``min_m = 1`` (M = 0 is an empty product; F.linear handles it) and ``max_m = 8192``:
above 8192 rows a bf16 GEMM of LLM sizes is compute-bound at cuBLAS's roofline, where a tuned
configuration gains little, the shipped tables and ``tgemm shapes`` stop at 8192, and every
distinct M costs one lookup walk on its first call (not in CUDA-graph capture), so a serving
prefill with arbitrary lengths above the window keeps the stock path. Use ``max_m=None`` for no
upper bound.

The routing function itself takes a few hundred nanoseconds of Python checks; eager calls then go
through ``tgemm._C.gemm_a16w16`` (the op's dispatcher entry without the boxed ``torch.ops`` call;
``torch.ops`` while a TorchFunctionMode is active, so the mode sees the op), compiled code through
``torch.ops.tgemm.gemm_a16w16`` (traced by Dynamo, no graph break).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional

import torch
from torch import nn

from . import _C
from .ops import gemm_a16w16_op

DEFAULT_MIN_M = 1
DEFAULT_MAX_M = 8192

# The stock F.linear, taken before anything here patches torch.nn.functional.
_STOCK_LINEAR = torch.nn.functional.linear

LinearFn = Callable[..., torch.Tensor]


def _make_linear(min_m: int, max_m: Optional[int], grad: bool) -> LinearFn:
    """The routing function for one M window. Everything it needs is bound here, so a call is
    local lookups plus the tensor checks."""
    if min_m < 0:
        raise ValueError(f"min_m must be >= 0, got {min_m}")
    if max_m is not None and max_m < min_m:
        raise ValueError(f"max_m must be >= min_m ({min_m}) or None, got {max_m}")
    stock = _STOCK_LINEAR
    op = gemm_a16w16_op
    fast = _C.gemm_a16w16
    is_compiling = torch.compiler.is_compiling
    torch_function_mode = torch._C._is_torch_function_mode_enabled
    autocast_enabled = torch.is_autocast_enabled
    grad_enabled = torch.is_grad_enabled
    forward_ad = torch.autograd.forward_ad
    plain = (torch.Tensor, nn.Parameter)
    bf16, fp16 = torch.bfloat16, torch.float16
    upper = max_m if max_m is not None else (1 << 62)

    def linear(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        dtype = input.dtype
        if (
            (dtype is bf16 or dtype is fp16)
            and input.is_cuda
            and weight.dtype is dtype
            and type(input) in plain
            and type(weight) in plain
            and weight.dim() == 2
            and 1 <= input.dim() <= 6
            and input.is_contiguous()
            and weight.is_contiguous()
            and (
                bias is None
                or (bias.dtype is dtype and type(bias) in plain and bias.dim() == 1 and bias.is_contiguous())
            )
            and not autocast_enabled("cuda")
            and (
                grad
                or not grad_enabled()
                or not (input.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad))
            )
        ):
            k = input.shape[-1]
            m = input.numel() // k if k else 0
            if min_m <= m <= upper:
                if is_compiling():
                    return op(input, weight, bias, None)
                # Eager only (Dynamo never sees these): dual tensors, then the fast entry unless a
                # TorchFunctionMode must see the op.
                if forward_ad._current_level < 0:
                    if torch_function_mode():
                        return op(input, weight, bias, None)
                    return fast(input, weight, bias, None)
        return stock(input, weight, bias)

    linear.min_m = min_m  # type: ignore[attr-defined]
    linear.max_m = max_m  # type: ignore[attr-defined]
    linear.grad = grad  # type: ignore[attr-defined]
    return linear


linear: LinearFn = _make_linear(DEFAULT_MIN_M, DEFAULT_MAX_M, True)
linear.__doc__ = "F.linear through tgemm with the default M window (see the tgemm.routing module doc)."


def linear_route(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    min_m: int = DEFAULT_MIN_M,
    max_m: Optional[int] = DEFAULT_MAX_M,
    grad: bool = True,
) -> str:
    """Which path :func:`linear` takes for these arguments: ``"tgemm"``, or ``"stock: <reason>"``.
    For debugging and tests; the routing function itself runs the same checks inline."""
    dtype = input.dtype
    if dtype not in (torch.bfloat16, torch.float16):
        return f"stock: input dtype {dtype} (tgemm takes bfloat16/float16)"
    if not input.is_cuda:
        return f"stock: input on {input.device}"
    if weight.dtype != dtype:
        return f"stock: weight dtype {weight.dtype} != input dtype {dtype}"
    plain = (torch.Tensor, nn.Parameter)
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        if t is not None and type(t) not in plain:
            return f"stock: {name} is a {type(t).__name__} (tensor subclass)"
    if weight.dim() != 2:
        return f"stock: weight has rank {weight.dim()}"
    if not 1 <= input.dim() <= 6:
        return f"stock: input has rank {input.dim()}"
    if not input.is_contiguous():
        return "stock: input not contiguous"
    if not weight.is_contiguous():
        return "stock: weight not contiguous"
    if bias is not None:
        if bias.dtype != dtype:
            return f"stock: bias dtype {bias.dtype} != input dtype {dtype}"
        if bias.dim() != 1 or not bias.is_contiguous():
            return "stock: bias not a contiguous 1-D tensor"
    if torch.is_autocast_enabled("cuda"):
        return "stock: autocast enabled"
    if torch.autograd.forward_ad._current_level >= 0:
        return "stock: forward-mode AD"
    requires_grad = input.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    if not grad and torch.is_grad_enabled() and requires_grad:
        return "stock: requires grad and grad=False"
    k = input.shape[-1]
    m = input.numel() // k if k else 0
    if m < min_m:
        return f"stock: M={m} < min_m={min_m}"
    if max_m is not None and m > max_m:
        return f"stock: M={m} > max_m={max_m}"
    return "tgemm"


class TgemmLinear(nn.Linear):
    """An ``nn.Linear`` whose forward routes through tgemm (the class :func:`patch_linear` gives
    patched modules; parameters, state_dict and isinstance checks are those of nn.Linear)."""

    _tgemm_linear: LinearFn

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self._tgemm_linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        f = self._tgemm_linear
        return f"{super().extra_repr()}, tgemm M in [{f.min_m}, {f.max_m}]"  # type: ignore[attr-defined]

    # Pickling and deepcopy keep the window, not the routing closure (which cannot be pickled).
    def __getstate__(self):
        state = self.__dict__.copy()
        f = state.pop("_tgemm_linear")
        state["_tgemm_window"] = (f.min_m, f.max_m, f.grad)
        return state

    def __setstate__(self, state):
        state = dict(state)
        window = state.pop("_tgemm_window")
        super().__setstate__(state)
        self._tgemm_linear = _make_linear(*window)


class LinearPatch:
    """The nn.Linear modules :func:`patch_linear` switched to tgemm. ``remove()`` (or leaving the
    ``with`` block) switches them back."""

    def __init__(self, modules: list[tuple[str, nn.Linear]]):
        self._modules = modules

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._modules]

    def __len__(self) -> int:
        return len(self._modules)

    def remove(self) -> None:
        for _, module in self._modules:
            if type(module) is TgemmLinear:
                module.__class__ = nn.Linear
                del module._tgemm_linear
        self._modules = []

    def __enter__(self) -> "LinearPatch":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"LinearPatch({len(self._modules)} nn.Linear modules)"


def patch_linear(
    model: nn.Module,
    *,
    min_m: int = DEFAULT_MIN_M,
    max_m: Optional[int] = DEFAULT_MAX_M,
    grad: bool = True,
    include: Optional[Callable[[str, nn.Linear], bool]] = None,
) -> LinearPatch:
    """Route the ``nn.Linear`` modules of ``model`` through tgemm (see the module doc for the M
    window and the fallbacks). Only modules whose type is exactly ``nn.Linear`` are patched
    (subclasses keep their own forward); ``include(name, module)`` may narrow the set, e.g.
    ``include=lambda name, m: name != "lm_head"``. Returns a :class:`LinearPatch`; use it as a
    context manager or call ``remove()``. Patch before ``torch.compile`` or CUDA-graph capture.
    """
    route = _make_linear(min_m, max_m, grad)
    patched = []
    for name, module in model.named_modules():
        if type(module) is nn.Linear and (include is None or include(name, module)):
            module.__class__ = TgemmLinear
            module._tgemm_linear = route
            patched.append((name, module))
    return LinearPatch(patched)


@contextlib.contextmanager
def route_linear(
    *, min_m: int = DEFAULT_MIN_M, max_m: Optional[int] = DEFAULT_MAX_M, grad: bool = True
) -> Iterator[LinearFn]:
    """Within the block, every ``torch.nn.functional.linear`` call (hence every ``nn.Linear``)
    of every thread goes through tgemm (same window and fallbacks as :func:`patch_linear`).
    Code that bound ``F.linear`` to another name before the block is not affected."""
    route = _make_linear(min_m, max_m, grad)
    functional = torch.nn.functional
    previous = functional.linear
    functional.linear = route
    try:
        yield route
    finally:
        functional.linear = previous
