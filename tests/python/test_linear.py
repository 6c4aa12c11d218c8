"""The F.linear / nn.Linear patcher: on/off equality, the M window, explicit fallbacks, compile."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tgemm
from tgemm_test_utils import HAS_CUDA, make_linear_inputs, randn, requires_cuda


def _mlp(bias=True, dtype=torch.bfloat16, device="cuda"):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(256, 1024, bias=bias), nn.SiLU(), nn.Linear(1024, 512, bias=bias), nn.GELU(),
        nn.Linear(512, 256, bias=False),
    ).to(device=device, dtype=dtype)


def _tgemm_ops_called(fn) -> int:
    """How many times torch.ops.tgemm.gemm_a16w16 ran inside fn (profiler records the op)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.name == "tgemm::gemm_a16w16")


@requires_cuda
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("x_shape", [(1, 256), (37, 256), (2, 64, 256)])
def test_patch_on_off_equal(bias, x_shape):
    model = _mlp(bias=bias)
    x = randn(*x_shape, seed=3)
    with torch.no_grad():
        stock = model(x)
        with tgemm.patch_linear(model) as patch:
            assert len(patch) == 3
            assert all(type(m) is tgemm.TgemmLinear for _, m in patch._modules)
            patched = model(x)
            assert _tgemm_ops_called(lambda: model(x)) == 3
        assert all(type(m) in (nn.Linear, nn.SiLU, nn.GELU) for m in model)
        after = model(x)
    torch.testing.assert_close(patched, stock, rtol=2e-2, atol=2e-2)
    assert torch.equal(after, stock)  # removing the patch restores the stock path exactly


@requires_cuda
def test_route_linear_context_patches_functional_linear():
    model = _mlp()
    x = randn(8, 256, seed=4)
    stock_linear = F.linear
    with torch.no_grad():
        stock = model(x)
        with tgemm.route_linear():
            assert F.linear is not stock_linear
            routed = model(x)
            assert _tgemm_ops_called(lambda: model(x)) == 3
        assert F.linear is stock_linear
    torch.testing.assert_close(routed, stock, rtol=2e-2, atol=2e-2)


@requires_cuda
def test_m_window():
    model = _mlp()
    with torch.no_grad(), tgemm.patch_linear(model, min_m=4, max_m=64):
        assert _tgemm_ops_called(lambda: model(randn(3, 256))) == 0  # M=3 < min_m
        assert _tgemm_ops_called(lambda: model(randn(4, 256))) == 3
        assert _tgemm_ops_called(lambda: model(randn(2, 32, 256))) == 3  # M = 64 = max_m
        assert _tgemm_ops_called(lambda: model(randn(65, 256))) == 0
    with torch.no_grad(), tgemm.patch_linear(model, max_m=None):
        assert _tgemm_ops_called(lambda: model(randn(9000, 256))) == 3
    with pytest.raises(ValueError):
        tgemm.patch_linear(model, min_m=10, max_m=5)


@requires_cuda
def test_include_filter_and_subclasses_untouched():
    class MyLinear(nn.Linear):
        pass

    model = nn.Sequential(nn.Linear(64, 64), MyLinear(64, 64), nn.Linear(64, 32)).cuda().bfloat16()
    with tgemm.patch_linear(model, include=lambda name, m: name != "2") as patch:
        assert patch.names == ["0"]
        assert type(model[1]) is MyLinear and type(model[2]) is nn.Linear


FALLBACK_CASES = {
    "fp32": lambda: (randn(8, 64, dtype=torch.float32), randn(32, 64, dtype=torch.float32), None),
    "cpu": lambda: (randn(8, 64, device="cpu"), randn(32, 64, device="cpu"), None),
    "weight dtype": lambda: (randn(8, 64), randn(32, 64, dtype=torch.float16), None),
    "bias dtype": lambda: (randn(8, 64), randn(32, 64), randn(32, dtype=torch.float32)),
    "non-contiguous input": lambda: (randn(64, 8).t(), randn(32, 64), None),
    "transposed weight": lambda: (randn(8, 64), randn(64, 32).t(), None),
    "1-D weight": lambda: (randn(8, 64), randn(64), None),
    "rank 7 input": lambda: (randn(1, 1, 1, 1, 1, 2, 64), randn(32, 64), None),
}


@pytest.mark.parametrize("case", list(FALLBACK_CASES))
def test_fallbacks_equal_stock(case):
    if not HAS_CUDA and case != "cpu":
        pytest.skip("needs a CUDA device")
    x, w, b = FALLBACK_CASES[case]()
    assert tgemm.linear_route(x, w, b).startswith("stock: ")
    # Whatever F.linear does (a result, or an error for mixed dtypes), the patched path does too.
    try:
        want = F.linear(x, w, b)
    except RuntimeError as e:
        with pytest.raises(type(e)):
            tgemm.linear(x, w, b)
        return
    assert _tgemm_ops_called(lambda: tgemm.linear(x, w, b)) == 0
    assert torch.equal(tgemm.linear(x, w, b), want)


@requires_cuda
def test_fallback_under_autocast():
    x, w, _ = make_linear_inputs((8,), 32, 64)
    with torch.autocast("cuda", dtype=torch.float16):
        assert tgemm.linear_route(x, w) == "stock: autocast enabled"
        assert torch.equal(tgemm.linear(x, w), F.linear(x, w))
        assert tgemm.linear(x, w).dtype == torch.float16


@requires_cuda
def test_fallback_for_tensor_subclass():
    class Tagged(torch.Tensor):
        pass

    x, w, _ = make_linear_inputs((8,), 32, 64)
    xs = x.as_subclass(Tagged)
    assert tgemm.linear_route(xs, w).startswith("stock: input is a Tagged")
    assert _tgemm_ops_called(lambda: tgemm.linear(xs, w)) == 0


@requires_cuda
def test_training_with_grad_and_without():
    model = _mlp()
    x = randn(16, 256, seed=5)
    grads = {}
    for mode in ("stock", "tgemm", "tgemm-no-grad"):
        model.zero_grad(set_to_none=True)
        patch = None
        if mode == "tgemm":
            patch = tgemm.patch_linear(model)
        elif mode == "tgemm-no-grad":
            patch = tgemm.patch_linear(model, grad=False)
        calls = _tgemm_ops_called(lambda: model(x).float().square().mean().backward())
        grads[mode] = [p.grad.float().clone() for p in model.parameters()]
        if patch is not None:
            patch.remove()
        assert calls == {"stock": 0, "tgemm": 3, "tgemm-no-grad": 0}[mode]
    for got, want in zip(grads["tgemm"], grads["stock"]):
        assert (got - want).norm() <= 0.05 * want.norm()  # bf16 forward differences, relative
    for got, want in zip(grads["tgemm-no-grad"], grads["stock"]):
        assert torch.equal(got, want)


@requires_cuda
@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_patched_model_fullgraph(dynamic):
    model = _mlp()
    x = randn(2, 24, 256, seed=6)
    with torch.no_grad():
        stock = model(x)
        with tgemm.patch_linear(model):
            compiled = torch.compile(model, fullgraph=True, dynamic=dynamic)
            got = compiled(x)
            got2 = compiled(randn(3, 24, 256, seed=7))
            eager2 = model(randn(3, 24, 256, seed=7))
    torch.testing.assert_close(got, stock, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(got2, eager2, rtol=2e-2, atol=2e-2)


@requires_cuda
def test_compile_route_linear_fullgraph():
    model = _mlp()
    x = randn(40, 256, seed=8)
    with torch.no_grad():
        stock = model(x)
        with tgemm.route_linear():
            got = torch.compile(model, fullgraph=True)(x)
    torch.testing.assert_close(got, stock, rtol=2e-2, atol=2e-2)
