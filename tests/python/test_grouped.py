"""tgemm.ptgmm / nptgmm, tgemm.grouped_gemm and tgemm.m_grouped_gemm_masked (and their torch ops):
results against per-group fp32 torch references with the documented device-side rules, opcheck,
torch.compile(fullgraph=True), CUDA-graph replay with device data changed between replays, errors
(the same text from the real and the fake kernel).
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import requires_cuda

pytestmark = requires_cuda


def offsets(sizes, m):
    # Negative sizes count as 0, prefix sums clamped to m.
    off = [0]
    for s in sizes:
        off.append(min(m, off[-1] + max(int(s), 0)))
    return off


def assert_close(out, ref, tol=None):
    tol = tol or (2e-2 if out.dtype != torch.float32 else 1e-3)
    torch.testing.assert_close(out.float(), ref.float(), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------------
# ptgmm / nptgmm


def tgmm_reference(lhs, rhs, sizes, out_before=None):
    k, m = lhs.shape
    off = offsets(sizes.tolist(), m)
    g = len(off) - 1
    out = torch.zeros(g, k, rhs.shape[1], device=lhs.device)
    bias = torch.zeros(g, k, device=lhs.device)
    for i in range(g):
        a = lhs[:, off[i] : off[i + 1]].float()
        out[i] = a @ rhs[off[i] : off[i + 1]].float()
        bias[i] = a.sum(1)
    if out_before is not None:
        out += out_before.float()
    return out, bias


def make_tgmm(m, k, n, sizes, dtype=torch.bfloat16, col_major=False, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if col_major:  # the transpose of an [M, K] row-major tensor
        lhs = torch.randn(m, k, device="cuda", generator=gen).to(dtype).t()
    else:
        lhs = torch.randn(k, m, device="cuda", generator=gen).to(dtype)
    rhs = (torch.randn(m, n, device="cuda", generator=gen) / 8).to(dtype)
    return lhs, rhs, torch.tensor(sizes, dtype=torch.int32, device="cuda")


@pytest.mark.parametrize("fn", [tgemm.ptgmm, tgemm.nptgmm], ids=["ptgmm", "nptgmm"])
@pytest.mark.parametrize("col_major", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "sizes",
    [[40, 0, 77, 3, 0, 8], [128], [0, 128, 0], [10, 20], [-4, 50, 200]],
    ids=["zeros", "one", "all", "tail", "clamped"],
)
def test_tgmm_matches_reference(fn, col_major, dtype, sizes):
    lhs, rhs, gs = make_tgmm(128, 72, 40, sizes, dtype, col_major)
    out = fn(lhs, rhs, gs)
    assert out.dtype == dtype and out.shape == (len(sizes), 72, 40)
    ref, _ = tgmm_reference(lhs, rhs, gs)
    assert_close(out, ref)


@pytest.mark.parametrize("fn", [tgemm.ptgmm, tgemm.nptgmm], ids=["ptgmm", "nptgmm"])
def test_tgmm_accumulate_bias_grad_fp32(fn):
    lhs, rhs, gs = make_tgmm(300, 65, 33, [100, 0, 150, 50], seed=1)
    out = torch.randn(4, 65, 33, device="cuda")
    before = out.clone()
    bias_grad = torch.full((4, 65), float("nan"), device="cuda")
    res = fn(lhs, rhs, gs, bias_grad=bias_grad, out=out, accumulate=True)
    assert res is out
    ref, bias = tgmm_reference(lhs, rhs, gs, before)
    assert_close(out, ref)
    assert_close(bias_grad, bias)
    with pytest.raises(tgemm.TgemmError, match="accumulate=True needs out"):
        fn(lhs, rhs, gs, accumulate=True)


def test_tgmm_grids_agree_bit_for_bit():
    lhs, rhs, gs = make_tgmm(700, 130, 72, torch.randint(0, 40, (30,)).tolist(), col_major=True, seed=6)
    assert torch.equal(
        tgemm.ptgmm(lhs, rhs, gs, out_dtype=torch.float32), tgemm.nptgmm(lhs, rhs, gs, out_dtype=torch.float32)
    )


def test_tgmm_many_groups():
    sizes = torch.randint(0, 5, (256,)).tolist()
    lhs, rhs, gs = make_tgmm(sum(sizes) + 3, 64, 64, sizes, seed=2)
    ref, _ = tgmm_reference(lhs, rhs, gs)
    assert_close(tgemm.ptgmm(lhs, rhs, gs, out_dtype=torch.float32), ref)


# ---------------------------------------------------------------------------------------------
# grouped_gemm


def grouped_reference(x, weights, ids, topk_weights=None, transpose=False):
    t, topk = ids.shape
    e = weights.shape[0]
    n = weights.shape[1] if transpose else weights.shape[2]
    y = torch.zeros(t, topk, n, device=x.device)
    for ti in range(t):
        for j in range(topk):
            ex = int(ids[ti, j])
            if 0 <= ex < e:
                row = x[ti, j] if x.dim() == 3 else x[ti]
                w = weights[ex].float().t() if transpose else weights[ex].float()
                y[ti, j] = row.float() @ w
    if topk_weights is None:
        return y
    return (y * topk_weights.float().unsqueeze(-1)).sum(1)


def make_grouped(t, topk, h, n, e, per_slot=False, transpose=False, dtype=torch.bfloat16, seed=0, invalid=False):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = (
        torch.randn(t, topk, h, device="cuda", generator=gen)
        if per_slot
        else torch.randn(t, h, device="cuda", generator=gen)
    )
    shape = (e, n, h) if transpose else (e, h, n)
    w = (torch.randn(*shape, device="cuda", generator=gen) / h**0.5).to(dtype)
    ids = torch.randint(0, max(e, 1), (t, topk), device="cuda", generator=gen, dtype=torch.int32)
    if invalid:
        ids[::5, 0] = -1
        ids[1::7, -1] = e
    return x.to(dtype), w, ids


@pytest.mark.parametrize("per_slot", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_grouped_gemm_matches_reference(per_slot, transpose, weighted):
    x, w, ids = make_grouped(37, 3, 64, 48, 8, per_slot, transpose, invalid=True)
    tw = torch.rand(37, 3, device="cuda") if weighted else None
    out = tgemm.grouped_gemm(x, w, ids, topk_weights=tw, transpose_weights=transpose)
    assert out.shape == ((37, 48) if weighted else (37, 3, 48))
    assert_close(out, grouped_reference(x, w, ids, tw, transpose))


def test_grouped_gemm_seeds_call_and_fp32_out():
    x, w, ids = make_grouped(64, 2, 32, 40, 4, seed=3)
    assert_close(tgemm.grouped_gemm(x, w, ids, 2), grouped_reference(x, w, ids))
    out = tgemm.grouped_gemm(x, w, ids, out_dtype=torch.float32)
    assert out.dtype == torch.float32
    assert_close(out, grouped_reference(x, w, ids))
    with pytest.raises(tgemm.TgemmError, match="topk"):
        tgemm.grouped_gemm(x, w, ids, 3)


# ---------------------------------------------------------------------------------------------
# m_grouped_gemm_masked


def test_masked_writes_only_the_masked_rows():
    gen = torch.Generator(device="cuda").manual_seed(4)
    g, max_m, k, n = 4, 96, 64, 80
    x = torch.randn(g, max_m, k, device="cuda", generator=gen).to(torch.bfloat16)
    w = (torch.randn(g, n, k, device="cuda", generator=gen) / 8).to(torch.bfloat16)
    masked_m = torch.tensor([0, 96, 33, 500], dtype=torch.int32, device="cuda")
    out = torch.full((g, max_m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert tgemm.m_grouped_gemm_masked(x, w, out, masked_m, 48) is out
    for i, m in enumerate([0, 96, 33, 96]):
        assert_close(out[i, :m], x[i, :m].float() @ w[i].float().t())
        assert torch.isnan(out[i, m:]).all()


# ---------------------------------------------------------------------------------------------
# opcheck, compile, graphs


def _opcheck_cases():
    lhs, rhs, gs = make_tgmm(64, 32, 48, [20, 0, 44])
    yield torch.ops.tgemm.tgmm.default, (lhs, rhs, gs, True, None)
    lhs_t, rhs_t, gs_t = make_tgmm(50, 16, 32, [10, 60], col_major=True)
    yield torch.ops.tgemm.tgmm.default, (lhs_t, rhs_t, gs_t, False, torch.float32)
    out = torch.zeros(3, 32, 48, device="cuda", dtype=torch.bfloat16)
    bias_grad = torch.zeros(3, 32, device="cuda")
    yield torch.ops.tgemm.tgmm_out.default, (lhs, rhs, gs, out, bias_grad, True, True)
    x, w, ids = make_grouped(20, 2, 32, 24, 4)
    yield torch.ops.tgemm.grouped_gemm.default, (x, w, ids, None, False, None)
    xs, ws, ids_s = make_grouped(20, 2, 32, 24, 4, per_slot=True, transpose=True)
    yield torch.ops.tgemm.grouped_gemm.default, (xs, ws, ids_s, torch.rand(20, 2, device="cuda"), True, torch.float32)
    xm = torch.randn(2, 16, 32, device="cuda").to(torch.bfloat16)
    wm = torch.randn(2, 24, 32, device="cuda").to(torch.bfloat16)
    om = torch.zeros(2, 16, 24, device="cuda", dtype=torch.bfloat16)
    yield (
        torch.ops.tgemm.m_grouped_gemm_masked.default,
        (xm, wm, om, torch.tensor([16, 16], dtype=torch.int32, device="cuda"), 16),
    )


@pytest.mark.parametrize("case", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(case):
    op, args = case
    torch.library.opcheck(op, args)


def test_compile_fullgraph():
    lhs, rhs, gs = make_tgmm(96, 64, 32, [30, 0, 66])
    x, w, ids = make_grouped(24, 2, 64, 32, 4)

    def f(lhs, rhs, gs, x, w, ids):
        return torch.relu(tgemm.ptgmm(lhs, rhs, gs)), tgemm.grouped_gemm(x, w, ids) * 2

    a, b = torch.compile(f, fullgraph=True)(lhs, rhs, gs, x, w, ids)
    assert_close(a, torch.relu(tgmm_reference(lhs, rhs, gs)[0]))
    assert_close(b, grouped_reference(x, w, ids) * 2)


def test_cuda_graphs_read_device_data_at_replay():
    lhs, rhs, gs = make_tgmm(192, 64, 80, [64, 64, 64])
    x, w, ids = make_grouped(48, 2, 64, 40, 6, seed=5)
    xm = torch.randn(3, 32, 64, device="cuda").to(torch.bfloat16)
    wm = torch.randn(3, 40, 64, device="cuda").to(torch.bfloat16)
    masked_m = torch.tensor([32, 32, 32], dtype=torch.int32, device="cuda")
    om = torch.zeros(3, 32, 40, device="cuda", dtype=torch.bfloat16)
    tgemm.nptgmm(lhs, rhs, gs)  # warm the stream's workspace before capture
    tgemm.grouped_gemm(x, w, ids)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = tgemm.nptgmm(lhs, rhs, gs)
        y = tgemm.grouped_gemm(x, w, ids)
        tgemm.m_grouped_gemm_masked(xm, wm, om, masked_m, 16)
    for step, sizes in enumerate(([0, 192, 0], [1, 2, 150], [100, -1, 500])):
        gs.copy_(torch.tensor(sizes, dtype=torch.int32))
        ids.copy_(torch.randint(-1, 7, ids.shape, dtype=torch.int32))
        masked_m.copy_(torch.tensor([step * 10, 32, 5], dtype=torch.int32))
        om.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, tgmm_reference(lhs, rhs, gs)[0])
        assert_close(y, grouped_reference(x, w, ids))
        for i, m in enumerate(masked_m.tolist()):
            assert_close(om[i, :m], xm[i, :m].float() @ wm[i].float().t())
            assert torch.isnan(om[i, m:]).all()


# (call, message, whether the fake kernel raises it too: it checks no strides)
def _bad_cases():
    lhs, rhs, gs = make_tgmm(64, 32, 48, [20, 0, 44])
    x, w, ids = make_grouped(8, 2, 32, 24, 4)
    xm = torch.zeros(2, 16, 32, device="cuda", dtype=torch.bfloat16)
    wm = torch.zeros(2, 24, 32, device="cuda", dtype=torch.bfloat16)
    om = torch.zeros(2, 16, 24, device="cuda", dtype=torch.bfloat16)
    mm = torch.zeros(2, dtype=torch.int32, device="cuda")
    return [
        (
            torch.ops.tgemm.tgmm,
            (lhs.float(), rhs, gs),
            "ptgmm: lhs.dtype must be torch.bfloat16 or torch.float16",
            True,
        ),
        (
            torch.ops.tgemm.tgmm,
            (lhs, rhs[:40], gs, False),
            "nptgmm: rhs.size(0) must equal lhs.size(1) (M), got 40 vs 64",
            True,
        ),
        (torch.ops.tgemm.tgmm, (lhs[:, ::2], rhs[:32], gs), "ptgmm: lhs [K, M] must be row-major", False),
        (
            torch.ops.tgemm.grouped_gemm,
            (x, w, ids.long()),
            "grouped_gemm: expert_ids.dtype torch.int64 is not a tgemm type",
            True,
        ),
        (
            torch.ops.tgemm.grouped_gemm,
            (x, w[:, :30], ids),
            "grouped_gemm: weights.size(1) must equal x.size(-1) (H)",
            True,
        ),
        (
            torch.ops.tgemm.grouped_gemm,
            (x, w, ids, torch.rand(8, 3, device="cuda")),
            "topk_weights must have shape [T, topk] = [8, 2]",
            True,
        ),
        (
            torch.ops.tgemm.m_grouped_gemm_masked,
            (xm, wm, om, mm, -1),
            "m_grouped_gemm_masked: expected_m must be >= 0, got -1",
            True,
        ),
        (
            torch.ops.tgemm.m_grouped_gemm_masked,
            (xm.half(), wm, om, mm, 1),
            "m_grouped_gemm_masked: x.dtype must be torch.bfloat16",
            True,
        ),
    ]


@pytest.mark.parametrize("index", range(8))
def test_bad_input_names_the_argument(index):
    op, args, message, fake_raises = _bad_cases()[index]
    with pytest.raises(RuntimeError) as info:
        op(*args)
    assert message in str(info.value)
    if fake_raises:
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            with pytest.raises(tgemm.TgemmError) as fake_info:
                op(*fakes)
        assert message in str(fake_info.value)
