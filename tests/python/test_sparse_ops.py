"""The sparse ops (tgemm.prune_2_4, compress_2_4, csr_weight, sparse_gemm; torch.ops.tgemm.prune_2_4,
sparse_gemm_2_4, sparse_gemm_csr) against F.linear in fp32 on the dense weight: 2:4 bf16/fp16
(M = 1, odd M, rank-3 input, bias), CSR at 1%, 5% and 30% density with empty rows, a torch sparse
CSR tensor passed as it is, the dense path; opcheck, torch.compile, CUDA-graph replay,
tgemm.nn.sparsify_linear; bad weights raising TgemmError. The C++ tests, against a float64
reference with poisoned outputs, are tests/gpu/test_sparse.cpp.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_matches_reference, randn, reference, requires_cuda

pytestmark = requires_cuda

DTYPES = [torch.bfloat16, torch.float16]
needs_cusparselt = pytest.mark.skipif(
    not torch.cuda.is_available() or not tgemm._C.has_cusparselt(), reason="no cuSPARSELt in this build"
)


def _bias_tolerance(y, ref, dtype):
    # sparse_gemm rounds the product before its bias pass adds the bias: one more rounding.
    rtol, atol = {torch.bfloat16: (2e-2, 2e-2), torch.float16: (4e-3, 4e-3)}[dtype]
    torch.testing.assert_close(y.float(), ref, rtol=rtol, atol=atol)


def _pruned(n, k, dtype, seed):
    w = randn(n, k, dtype=dtype, scale=k**-0.5, seed=seed)
    return tgemm.prune_2_4(w)


def test_prune_2_4_keeps_the_two_largest_of_every_four():
    w = randn(64, 128, dtype=torch.bfloat16, seed=1)
    p = tgemm.prune_2_4(w)
    groups, pg = w.float().view(64, 32, 4), p.float().view(64, 32, 4)
    kept = torch.zeros_like(groups, dtype=torch.bool).scatter_(2, groups.abs().topk(2, dim=2).indices, True)
    torch.testing.assert_close(pg, torch.where(kept, groups, torch.zeros_like(groups)), rtol=0, atol=0)


@needs_cusparselt
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m_shape", [(1,), (7,), (2, 33), (512,)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("bias", [False, True])
def test_2_4_matches_linear(dtype, m_shape, bias):
    n, k = 256, 512
    w = _pruned(n, k, dtype, seed=len(m_shape) + m_shape[0])
    x = randn(*m_shape, k, dtype=dtype, seed=3)
    b = randn(n, dtype=dtype, seed=4) if bias else None
    weight = tgemm.compress_2_4(w)
    y = tgemm.sparse_gemm(x, weight, b)
    if bias:
        _bias_tolerance(y, reference(x, w, b), dtype)
    else:
        assert_matches_reference(y, reference(x, w), dtype)


@needs_cusparselt
def test_2_4_dense_path_and_candidates_agree():
    w = _pruned(128, 256, torch.bfloat16, seed=5)
    x = randn(64, 256, seed=6)
    weight = tgemm.compress_2_4(w, keep_dense=True)
    ref = reference(x, w)
    assert_matches_reference(tgemm.sparse_gemm(x, weight, backend="dense"), ref, torch.bfloat16)
    assert_matches_reference(tgemm.sparse_gemm(x, weight, algorithm=0), ref, torch.bfloat16)
    assert_matches_reference(tgemm.sparse_gemm(x, weight, split_k=2), ref, torch.bfloat16)


@needs_cusparselt
def test_2_4_rejects_a_dense_weight():
    w = randn(64, 128, seed=7)
    with pytest.raises(tgemm.TgemmError, match=r"compress_2_4: the weight is not 2:4 sparse: row 0"):
        tgemm.compress_2_4(w)
    with pytest.raises(tgemm.TgemmError, match=r"K \(columns\) must be a positive multiple of 16"):
        tgemm.compress_2_4(tgemm.prune_2_4(randn(64, 136, seed=8)))


def _csr(n, k, density, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    mask = torch.rand(n, k, generator=g, device="cuda") < density
    mask[::5] = False  # every fifth row empty
    return torch.where(mask, randn(n, k, dtype=dtype, seed=seed + 1), torch.zeros((), dtype=dtype, device="cuda"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("density", [0.01, 0.05, 0.3])
@pytest.mark.parametrize("m", [1, 13, 256])
def test_csr_matches_linear(dtype, density, m):
    n, k = 192, 640
    w = _csr(n, k, density, dtype, seed=m)
    x = randn(m, k, dtype=dtype, seed=9)
    b = randn(n, dtype=dtype, seed=10)
    _bias_tolerance(tgemm.sparse_gemm(x, tgemm.csr_weight(w.to_sparse_csr()), b), reference(x, w, b), dtype)
    # Torch sparse CSR and COO tensors as they are (checked on this call).
    assert_matches_reference(tgemm.sparse_gemm(x, w.to_sparse_csr()), reference(x, w), dtype)
    assert_matches_reference(tgemm.sparse_gemm(x, w.to_sparse_coo()), reference(x, w), dtype)


def test_csr_rejects_unsorted_indices():
    crow = torch.tensor([0, 2, 3], dtype=torch.int32, device="cuda")
    col = torch.tensor([5, 1, 0], dtype=torch.int32, device="cuda")
    values = torch.ones(3, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(tgemm.TgemmError, match=r"col_indices of row 0 must be sorted and distinct"):
        tgemm._C.check_sparse_csr(crow, col, values, 2, 8)


def _opcheck_cases():
    cases = [("prune_2_4", lambda: (randn(32, 64),))]

    def csr_args():
        w = tgemm.csr_weight(_csr(48, 64, 0.2, torch.bfloat16, seed=11).to_sparse_csr())
        return (randn(5, 64, seed=12), w.crow_indices, w.col_indices, w.values, 48, randn(48, seed=13))

    cases.append(("sparse_gemm_csr", csr_args))
    if tgemm._C.has_cusparselt():

        def args_24():
            weight = tgemm.compress_2_4(_pruned(64, 128, torch.bfloat16, seed=14))
            return (randn(16, 128, seed=15), weight.compressed, 64, randn(64, seed=16))

        cases.append(("sparse_gemm_2_4", args_24))
    return cases


@pytest.mark.parametrize("case", _opcheck_cases() if torch.cuda.is_available() else [], ids=lambda c: c[0])
def test_opcheck(case):
    op, make_args = case
    torch.library.opcheck(getattr(torch.ops.tgemm, op).default, make_args())


@needs_cusparselt
def test_compile_and_cuda_graph():
    weight = tgemm.compress_2_4(_pruned(128, 256, torch.bfloat16, seed=17))
    x = randn(24, 256, seed=18)
    compiled = torch.compile(lambda x: tgemm.sparse_gemm(x, weight), fullgraph=True)
    torch.testing.assert_close(compiled(x), tgemm.sparse_gemm(x, weight), rtol=0, atol=0)

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tgemm.sparse_gemm(x, weight)  # the first call sizes the stream's workspace and plan
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = tgemm.sparse_gemm(x, weight)
    x.copy_(randn(24, 256, seed=19))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, tgemm.sparse_gemm(x, weight), rtol=0, atol=0)


@needs_cusparselt
@pytest.mark.parametrize("pattern", ["2:4", "csr"])
def test_sparsify_linear(pattern):
    model = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32)).cuda().bfloat16()
    x = randn(9, 128, seed=20)
    if pattern == "csr":
        for layer in (model[0], model[2]):
            layer.weight.data = _csr(*layer.weight.shape, 0.1, torch.bfloat16, seed=21)
    else:
        for layer in (model[0], model[2]):
            layer.weight.data = tgemm.prune_2_4(layer.weight.data)
    with torch.no_grad():
        ref = model(x)
        assert tgemm.nn.sparsify_linear(model, pattern) == 2
        assert isinstance(model[0], tgemm.nn.SparseLinear)
        _bias_tolerance(model(x), ref.float(), torch.bfloat16)
