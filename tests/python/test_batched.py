"""torch.ops.tgemm.batched_gemm (and tgemm.batched_gemm, batched_gemm_out): results against
torch.bmm in fp32 for every transpose combination, broadcast (expand) and padded batch strides, bias
and output dtypes; opcheck; torch.compile(fullgraph=True); CUDA-graph replay with new inputs;
errors naming the argument, from the real and the fake kernel alike.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import requires_cuda

pytestmark = requires_cuda


def make(b, m, n, k, ta=False, tb=False, dtype=torch.bfloat16, bias=False, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((b, k, m) if ta else (b, m, k), device="cuda", generator=g).to(dtype)
    w = (torch.randn((b, n, k) if tb else (b, k, n), device="cuda", generator=g) / k**0.5).to(dtype)
    bb = torch.randn(n, device="cuda", generator=g).to(dtype) if bias else None
    return a, w, bb


def reference(a, b, ta, tb, bias):
    """torch.bmm in fp32 of the stored operands used as the flags say."""
    x = a.float().transpose(1, 2) if ta else a.float()
    y = b.float().transpose(1, 2) if tb else b.float()
    out = torch.bmm(x, y)
    return out + bias.float() if bias is not None else out


def assert_close(out, ref):
    tol = 1e-4 if out.dtype == torch.float32 else 2e-2 if out.dtype == torch.bfloat16 else 1e-2
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [False, True])
def test_matches_bmm(ta, tb, dtype, bias):
    a, b, bb = make(6, 33, 47, 65, ta, tb, dtype, bias)
    out = tgemm.batched_gemm(a, b, ta, tb, bb)
    assert out.dtype == dtype and out.shape == (6, 33, 47)
    assert_close(out, reference(a, b, ta, tb, bb))


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16])
def test_output_dtypes(out_dtype):
    a, b, bb = make(4, 17, 64, 96, bias=True, seed=1)
    out = tgemm.batched_gemm(a, b, False, False, bb, out_dtype)
    assert out.dtype == out_dtype
    assert_close(out, reference(a, b, False, False, bb))


def test_broadcast_and_padded_batch_strides():
    # a: one [M, K] matrix expanded over the batch (stride 0); b: every other matrix of a larger
    # stack (a padded batch stride); out: a slice of a wider buffer (padded rows).
    a1, _, _ = make(1, 24, 40, 56, seed=2)
    a = a1.expand(8, -1, -1)
    _, stack, _ = make(16, 24, 40, 56, seed=3)
    b = stack[::2]
    wide = torch.full((8, 24, 48), float("nan"), device="cuda", dtype=torch.bfloat16)
    out = wide[:, :, :40]
    tgemm.batched_gemm_out(a, b, out)
    assert_close(out, reference(a, b, False, False, None))
    assert torch.isnan(wide[:, :, 40:]).all()  # the padding is not written


def test_large_batch_and_one_row():
    a, b, _ = make(512, 1, 96, 64, tb=True, seed=4)
    assert_close(tgemm.batched_gemm(a, b, False, True), reference(a, b, False, True, None))


def test_out_form_matches_functional():
    a, b, bb = make(3, 20, 30, 40, ta=True, bias=True, seed=5)
    out = torch.empty(3, 20, 30, device="cuda", dtype=torch.bfloat16)
    assert tgemm.batched_gemm_out(a, b, out, True, False, bb) is out
    torch.testing.assert_close(out, tgemm.batched_gemm(a, b, True, False, bb), rtol=0, atol=0)


def _opcheck_cases():
    yield make(4, 32, 48, 64)[:2]
    a, b, bb = make(3, 16, 24, 40, ta=True, tb=True, bias=True)
    yield (a, b, True, True, bb)
    a, b, bb = make(2, 8, 16, 32, tb=True, bias=True)
    yield (a, b, False, True, bb.float(), torch.float32)


@pytest.mark.parametrize("args", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(args):
    torch.library.opcheck(torch.ops.tgemm.batched_gemm.default, args)


def test_opcheck_out():
    a, b, bb = make(3, 16, 24, 40, tb=True, bias=True)
    out = torch.full((3, 16, 24), float("nan"), device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.tgemm.batched_gemm_out.default, (a, b, out, False, True, bb))


def test_compile_fullgraph():
    a, b, bb = make(8, 64, 32, 48, tb=True, bias=True)

    def f(x, w, bias):
        return torch.relu(tgemm.batched_gemm(x, w, False, True, bias))

    compiled = torch.compile(f, fullgraph=True)
    assert_close(compiled(a, b, bb), torch.relu(reference(a, b, False, True, bb)))


def test_cuda_graph_replays_with_new_inputs():
    a, b, bb = make(16, 64, 512, 128, bias=True)
    tgemm.batched_gemm(a, b, False, False, bb)  # resolve the shape before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = tgemm.batched_gemm(a, b, False, False, bb)
    for seed in (7, 8):
        na, nb, _ = make(16, 64, 512, 128, seed=seed)
        a.copy_(na)
        b.copy_(nb)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, reference(a, b, False, False, bb))


# (mutation, message, whether the fake kernel raises it too: it checks no strides or aliasing,
# which only the real kernel sees).
BAD_CASES = [
    (lambda x: x.update(a=x["a"].float()), "batched_gemm: a.dtype must be torch.bfloat16 or torch.float16", True),
    (lambda x: x.update(b=x["b"].half()), "batched_gemm: b.dtype must equal a.dtype (torch.bfloat16)", True),
    (lambda x: x.update(b=x["b"][:3]), "batched_gemm: b.size(0) must equal a.size(0) (B), got 3 vs 4", True),
    (lambda x: x.update(a=x["a"][0]), "batched_gemm: a must have rank 3, got 2", True),
    (lambda x: x.update(a=x["a"][:, :, :40]), "batched_gemm: K of b [B, K, N] (transpose_b=false) must equal K", True),
    (lambda x: x.update(bb=x["bb"][:10]), "batched_gemm: bias.size(0) must equal N (24), got 10", True),
    (lambda x: x.update(a=x["a"].transpose(1, 2).contiguous().transpose(1, 2)), "a.stride(2) must be 1", False),
]


@pytest.mark.parametrize("mutate, message, fake_raises", BAD_CASES)
def test_bad_input_names_the_argument(mutate, message, fake_raises):
    a, b, bb = make(4, 16, 24, 48, bias=True)
    x = {"a": a, "b": b, "bb": bb}
    mutate(x)
    with pytest.raises(tgemm.TgemmError) as info:
        tgemm.batched_gemm(x["a"], x["b"], False, False, x["bb"])
    assert message in str(info.value)
    if fake_raises:
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            fakes = {k: mode.from_tensor(v) for k, v in x.items()}
            with pytest.raises(tgemm.TgemmError) as fake_info:
                torch.ops.tgemm.batched_gemm(fakes["a"], fakes["b"], False, False, fakes["bb"])
        assert message in str(fake_info.value)


def test_out_aliasing_a_broadcast_input_is_refused():
    buf = torch.randn(4, 16, 16, device="cuda").to(torch.bfloat16)
    a = buf[0:1].expand(4, -1, -1)  # one matrix broadcast, lying inside out
    b = torch.randn(4, 16, 16, device="cuda").to(torch.bfloat16)
    with pytest.raises(tgemm.TgemmError, match="out must not overlap a"):
        tgemm.batched_gemm_out(a, b, buf)
    out = torch.empty(4, 16, 16, device="cuda", dtype=torch.bfloat16).as_strided((4, 16, 16), (0, 16, 1))
    with pytest.raises(tgemm.TgemmError, match=r"out.stride\(0\) must not be 0"):
        tgemm.batched_gemm_out(buf.clone(), b, out)
