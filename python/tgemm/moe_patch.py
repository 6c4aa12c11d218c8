"""Sparse MoE blocks of Mixtral / Qwen3-MoE style models through :func:`tgemm.topk_softmax` and
:func:`tgemm.fused_moe`.

Two layouts are recognised. transformers 5 holds a block's experts in one module (``MixtralExperts``,
``Qwen3MoeExperts``: parameters ``gate_up_proj [E, 2I, H]``, gate rows then up rows, and
``down_proj [E, H, I]``, SiLU, called as ``experts(hidden, top_k_index, top_k_weights)`` after the
block's own router): :func:`patch_moe` replaces that module's forward by one ``fused_moe`` call on
those parameters as they are (no copy; the routing stays the model's own, so the experts chosen
are the stock ones). Earlier releases hold a ``nn.ModuleList`` of per-expert MLPs:

:func:`patch_moe` finds the modules that look like Hugging Face's ``MixtralSparseMoeBlock`` or
``Qwen3MoeSparseMoeBlock``: a router ``gate`` (``nn.Linear`` H -> E), ``experts`` (an
``nn.ModuleList`` of E MLPs with SiLU, either ``w1`` (gate), ``w3`` (up), ``w2`` (down) or
``gate_proj``, ``up_proj``, ``down_proj``, all bias-free ``nn.Linear``), ``top_k`` (or
``num_experts_per_tok``), and for Qwen3-MoE ``norm_topk_prob`` (Mixtral always renormalizes). Their
forward becomes: router logits, ``topk_softmax``, one ``fused_moe`` call; it returns
``(hidden_states, router_logits)`` as theirs does. The experts' weights are stacked once, at patch
time, into ``w1 [E, 2I, H]`` and ``w2 [E, H, I]`` (a copy: patch after loading the weights, and
again after changing them). The routing weights stay fp32 where the stock block rounds them to the
activations' dtype, so outputs agree within bf16 tolerance, not bit for bit.
"""

from __future__ import annotations

import inspect
import types
from typing import Optional

import torch
from torch import nn

from .moe_ops import fused_moe, topk_softmax
from .routing import LinearPatch

_EXPERT_NAMES = (("w1", "w3", "w2"), ("gate_proj", "up_proj", "down_proj"))


def _expert_linears(expert: nn.Module) -> Optional[tuple[nn.Linear, nn.Linear, nn.Linear]]:
    act = getattr(expert, "act_fn", None)
    if act is not None and not isinstance(act, nn.SiLU):
        return None
    for names in _EXPERT_NAMES:
        mods = [getattr(expert, n, None) for n in names]
        if all(type(m) is nn.Linear and m.bias is None for m in mods):
            return mods[0], mods[1], mods[2]
    return None


def _stacked_weights(block: nn.Module) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
    gate, experts = getattr(block, "gate", None), getattr(block, "experts", None)
    if type(gate) is not nn.Linear or not isinstance(experts, nn.ModuleList) or len(experts) != gate.out_features:
        return None
    linears = [_expert_linears(e) for e in experts]
    if any(x is None for x in linears):
        return None
    with torch.no_grad():
        w1 = torch.stack([torch.cat([g.weight, u.weight], 0) for g, u, _ in linears]).contiguous()
        w2 = torch.stack([d.weight for _, _, d in linears]).contiguous()
    return w1, w2


def _top_k(block: nn.Module) -> Optional[int]:
    k = getattr(block, "top_k", getattr(block, "num_experts_per_tok", None))
    return k if isinstance(k, int) and k > 0 else None


def _stacked_experts(module: nn.Module) -> bool:
    """Whether module is a transformers 5 experts module fused_moe implements (module doc)."""
    gate_up, down = getattr(module, "gate_up_proj", None), getattr(module, "down_proj", None)
    if not isinstance(gate_up, torch.Tensor) or not isinstance(down, torch.Tensor):
        return False
    if gate_up.dim() != 3 or down.dim() != 3:
        return False
    e, two_i, h = gate_up.shape
    if two_i % 2 != 0 or tuple(down.shape) != (e, h, two_i // 2):
        return False
    if any(getattr(module, n, None) is not None for n in ("gate_up_proj_bias", "down_proj_bias")):
        return False
    act = getattr(module, "act_fn", None)
    if act is None or type(act).__name__ not in ("SiLU", "SiLUActivation"):
        return False
    try:
        params = list(inspect.signature(type(module).forward).parameters)
    except (TypeError, ValueError):
        return False
    return params[1:] == ["hidden_states", "top_k_index", "top_k_weights"]


def _stacked_experts_forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights):
    ids = top_k_index if top_k_index.dtype == torch.int32 else top_k_index.int()
    return fused_moe(hidden_states, self.gate_up_proj, self.down_proj, top_k_weights, ids)


def _moe_forward(self, hidden_states: torch.Tensor):
    shape = hidden_states.shape
    x = hidden_states.reshape(-1, shape[-1])
    router_logits = self.gate(x)
    weights, ids = topk_softmax(router_logits, self._tgemm_top_k, self._tgemm_renormalize)
    out = fused_moe(x, self._tgemm_w1, self._tgemm_w2, weights, ids)
    return out.view(shape), router_logits


class MoePatch(LinearPatch):
    """The MoE blocks :func:`patch_moe` switched to tgemm (``names``, ``len()`` and the ``with``
    protocol as :class:`LinearPatch`). ``remove()`` restores their own forward and drops the
    stacked weights."""

    def remove(self) -> None:
        for _, m in self._modules:
            for attr in ("forward", "_tgemm_w1", "_tgemm_w2", "_tgemm_top_k", "_tgemm_renormalize", "_tgemm_stacked"):
                m.__dict__.pop(attr, None)
        self._modules = []

    def __repr__(self) -> str:
        return f"MoePatch({len(self._modules)} sparse MoE blocks)"


def patch_moe(model: nn.Module) -> MoePatch:
    """Route ``model``'s Mixtral / Qwen3-MoE style sparse MoE blocks (see the module doc) through
    tgemm's fused expert layer: transformers 5's stacked experts modules (their forward becomes one
    ``fused_moe`` call, the block's router unchanged), or earlier releases' blocks of per-expert
    MLPs (routing through ``topk_softmax`` too). Blocks of another shape (biases, an activation
    other than SiLU, experts not ``nn.Linear``, a shared expert beside a ``nn.ModuleList``) are left
    as they are. Inference only
    (fused_moe has no derivative). Returns a :class:`MoePatch`; use it as a context manager or call
    ``remove()``. Patch before ``torch.compile`` or CUDA-graph capture.
    """
    patched = []
    for name, block in model.named_modules():
        if "_tgemm_stacked" in block.__dict__:
            continue
        if _stacked_experts(block):
            block._tgemm_stacked = True
            block.forward = types.MethodType(_stacked_experts_forward, block)
            patched.append((name, block))
            continue
        if getattr(block, "shared_expert", None) is not None or "_tgemm_w1" in block.__dict__:
            continue
        k = _top_k(block)
        weights = _stacked_weights(block) if k is not None else None
        if weights is None:
            continue
        block._tgemm_w1, block._tgemm_w2 = weights
        block._tgemm_top_k = k
        block._tgemm_renormalize = bool(getattr(block, "norm_topk_prob", True))
        block.forward = types.MethodType(_moe_forward, block)
        patched.append((name, block))
    return MoePatch(patched)
