"""The sparse ops (tgemm.prune_2_4, compress_2_4, csr_weight, block_weight, sparse_gemm,
sparse_gemm_a8w8; torch.ops.tgemm.prune_2_4, sparse_gemm_2_4, sparse_gemm_csr, sparse_gemm_bsr,
sparse_gemm_2_4_fp8) against F.linear in fp32 on the dense weight: 2:4 bf16/fp16 (M = 1, odd M,
rank-3 input, bias), CSR at 1%, 5% and 30% density with empty rows, a torch sparse CSR tensor
passed as it is, block-sparse weights (16/32/64 blocks, empty block rows, fully dense, from a mask
and from a torch BSR tensor), FP8 2:4 with per-tensor and per-token x per-channel scales against
the dequantized operands, the dense path; opcheck, torch.compile, CUDA-graph replay,
tgemm.nn.sparsify_linear; bad weights raising TgemmError. The C++ tests, against a float64
reference with poisoned outputs, are tests/gpu/test_sparse.cpp.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_matches_reference, opcheck_float8, randn, reference, requires_cuda

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
    # cuSPARSELt decides per problem which split-K it takes (0.8.0 refuses 2 here): accepted, the
    # result matches; refused, the error names the argument and the next call runs.
    try:
        out = tgemm.sparse_gemm(x, weight, split_k=2)
    except tgemm.TgemmError as e:
        assert "options.split_k must be a split-K cuSPARSELt accepts" in str(e)
        assert "got 2" in str(e)
        out = tgemm.sparse_gemm(x, weight)
    assert_matches_reference(out, ref, torch.bfloat16)


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


def _block_dense(n, k, bs, density, dtype, seed):
    """A dense [n, k] weight whose bs x bs blocks are kept with probability density, block row 1
    empty, and its block mask."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    mask = torch.rand(n // bs, k // bs, generator=g, device="cuda") < density
    mask[0, 0] = True
    mask[1] = False
    full = mask.repeat_interleave(bs, 0).repeat_interleave(bs, 1)
    w = torch.where(full, randn(n, k, dtype=dtype, seed=seed + 1), torch.zeros((), dtype=dtype, device="cuda"))
    return w, mask


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bs", [16, 32, 64])
@pytest.mark.parametrize("density", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("m", [1, 13, 256])
def test_block_matches_linear(dtype, bs, density, m):
    n, k = 4 * bs, 6 * bs
    w, mask = _block_dense(n, k, bs, density, dtype, seed=m + bs)
    x = randn(m, k, dtype=dtype, seed=22)
    b = randn(n, dtype=dtype, seed=23)
    weight = tgemm.block_weight(w, bs, mask)
    assert weight.values.shape == (int(mask.sum()), bs, bs)
    _bias_tolerance(tgemm.sparse_gemm(x, weight, b), reference(x, w, b), dtype)
    # A torch BSR tensor as it is (checked on this call), its block size read from its values.
    assert_matches_reference(tgemm.sparse_gemm(x, w.to_sparse_bsr((bs, bs))), reference(x, w), dtype)


def test_block_rejects_bad_block_size_and_indices():
    w = randn(64, 96, seed=24)
    with pytest.raises(tgemm.TgemmError, match=r"block_size 64 must divide the weight's N and K, got \[64, 96\]"):
        tgemm.block_weight(w, 64)
    crow = torch.tensor([0, 2, 2], dtype=torch.int32, device="cuda")
    col = torch.tensor([1, 1], dtype=torch.int32, device="cuda")
    values = torch.ones(2, 16, 16, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(tgemm.TgemmError, match=r"col_indices of row 0 must be sorted and distinct"):
        tgemm._C.check_sparse_bsr(crow, col, values, 32, 64, 16)
    with pytest.raises(tgemm.TgemmError, match=r"col_indices\[0\] \(row 0\) must be in \[0, K = 4\), got 4"):
        tgemm._C.check_sparse_bsr(crow, torch.tensor([4, 5], dtype=torch.int32, device="cuda"), values, 32, 64, 16)


def _fp8_24(n, k, seed):
    """An e4m3 2:4 weight: a pruned bf16 weight quantized per channel, and its fp32 scales [n, 1]."""
    w = _pruned(n, k, torch.bfloat16, seed).float()
    scale = (w.abs().amax(1, keepdim=True) / 448.0).clamp_min(1e-12)
    return (w / scale).to(torch.float8_e4m3fn), scale


@needs_cusparselt
@pytest.mark.parametrize("m_shape", [(1,), (7,), (2, 33), (256,)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
def test_fp8_2_4_matches_dequantized(m_shape, per_token, out_dtype):
    n, k = 128, 256
    wq, w_scale = _fp8_24(n, k, seed=25)
    x = randn(*m_shape, k, seed=26).float()
    if per_token:
        x_scale = (x.abs().amax(-1, keepdim=True) / 448.0).clamp_min(1e-12)
    else:
        x_scale = (x.abs().amax() / 448.0).clamp_min(1e-12).reshape(1)
        w_scale = w_scale.amax().reshape(1)
        wq = (_pruned(n, k, torch.bfloat16, seed=25).float() / w_scale).to(torch.float8_e4m3fn)
    xq = (x / x_scale).to(torch.float8_e4m3fn)
    bias = randn(n, seed=27).float()
    weight = tgemm.compress_2_4(wq, keep_dense=True)
    assert weight.dtype == torch.float8_e4m3fn
    y = tgemm.sparse_gemm_a8w8(xq, weight, x_scale, w_scale, bias, out_dtype)
    assert y.dtype == out_dtype and y.shape == (*m_shape, n)
    ref = (xq.float() * x_scale) @ (wq.float() * w_scale).t() + bias
    # Hopper's FP8 tensor cores add the exact products at reduced precision: 2^-11 of sum |x w|
    # (the a8w8 tests' bound), beside the output's rounding.
    mag = (xq.float().abs() * x_scale) @ (wq.float().abs() * w_scale).t()
    rtol = 1e-5 if out_dtype == torch.float32 else 1e-2
    atol = 2.0**-11 * float(mag.max()) + rtol * float(ref.abs().max())
    torch.testing.assert_close(y.float(), ref, rtol=rtol, atol=atol)
    dense = tgemm.sparse_gemm_a8w8(xq, weight, x_scale, w_scale, bias, out_dtype, backend="dense")
    torch.testing.assert_close(y.float(), dense.float(), rtol=rtol, atol=2 * atol)


@needs_cusparselt
def test_fp8_2_4_compile_and_cuda_graph():
    wq, w_scale = _fp8_24(64, 256, seed=38)  # K a multiple of 256: cuSPARSELt's FP8 kernels
    weight = tgemm.compress_2_4(wq)
    xq = randn(12, 256, seed=39).float().to(torch.float8_e4m3fn)
    x_scale = torch.full((12, 1), 0.25, device="cuda")

    def run(xq, x_scale):
        return tgemm.sparse_gemm_a8w8(xq, weight, x_scale, w_scale)

    compiled = torch.compile(run, fullgraph=True)
    torch.testing.assert_close(compiled(xq, x_scale), run(xq, x_scale), rtol=0, atol=0)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        run(xq, x_scale)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = run(xq, x_scale)
    # New activations and scales between capture and replay: the scales are read on the device.
    xq.copy_(randn(12, 256, seed=40).float().to(torch.float8_e4m3fn))
    x_scale.fill_(0.5)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, run(xq, x_scale), rtol=0, atol=0)


@needs_cusparselt
def test_fp8_2_4_rejects_dense_and_misuse():
    dense = torch.ones(64, 128, device="cuda").to(torch.float8_e4m3fn)
    with pytest.raises(tgemm.TgemmError, match=r"compress_2_4: the weight is not 2:4 sparse: row 0"):
        tgemm.compress_2_4(dense)
    with pytest.raises(tgemm.TgemmError, match=r"multiple of 32 \(cuSPARSELt's structured-matrix rule for 8-bit"):
        tgemm.compress_2_4(torch.zeros(48, 128, device="cuda").to(torch.float8_e4m3fn))
    wq, w_scale = _fp8_24(64, 128, seed=28)
    weight = tgemm.compress_2_4(wq)
    xq = torch.zeros(4, 128, device="cuda").to(torch.float8_e4m3fn)
    with pytest.raises(tgemm.TgemmError, match=r"runs through sparse_gemm_a8w8"):
        tgemm.sparse_gemm(xq, weight)
    # K = 128: cuSPARSELt's FP8 kernels read whole 256-deep tiles past the compressed weight.
    with pytest.raises(tgemm.TgemmError, match=r"K must be a multiple of 256 for cuSPARSELt's FP8 2:4"):
        tgemm.sparse_gemm_a8w8(xq, weight, torch.ones(1, device="cuda"), w_scale)
    y = tgemm.sparse_gemm_a8w8(xq, tgemm.compress_2_4(wq, keep_dense=True), torch.ones(1, device="cuda"), w_scale)
    assert y.shape == (4, 64) and not y.isnan().any()


_TABLE_PROBE = """
import torch
import tgemm

def pruned(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = torch.randn(64, 128, generator=g, device="cuda").bfloat16()
    return tgemm.prune_2_4(w)

def blocky(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = torch.randn(64, 128, generator=g, device="cuda").bfloat16()
    mask = torch.tensor([[1, 0, 1, 0], [0, 1, 0, 1]], dtype=torch.bool, device="cuda")  # density 0.5
    return w * mask.repeat_interleave(32, 0).repeat_interleave(32, 1), mask

def check(y, x, w):
    torch.testing.assert_close(y.float(), x.float() @ w.float().t(), rtol=2e-2, atol=2e-2)

x16, x17 = (torch.randn(m, 128, device="cuda").bfloat16() for m in (16, 17))
# Each weight's kept dense copy is another matrix than its sparse form, so the output tells which
# path ran: the table's dense row (M = 16) takes the copy, M = 17 (no row) the sparse form.
w24, other24 = pruned(1), pruned(2)
weight = tgemm.compress_2_4(w24, keep_dense=True)
weight.dense = other24
check(tgemm.sparse_gemm(x16, weight), x16, other24)
check(tgemm.sparse_gemm(x17, weight), x17, w24)
(wb, mask), (ob, _) = blocky(3), blocky(4)
block = tgemm.block_weight(wb, 32, mask, keep_dense=True)
block.dense = ob
check(tgemm.sparse_gemm(x16, block), x16, ob)
check(tgemm.sparse_gemm(x17, block), x17, wb)
print("routed")
"""


@needs_cusparselt
def test_table_dense_rows_take_the_kept_dense_copy(tmp_path):
    import os
    import subprocess
    import sys

    table = tmp_path / "sparse_tuned_gemm.csv"
    table.write_text(
        "pattern,density,block_size,M,N,K,dtype,backend\n"
        "2:4,0.5,,16,64,128,torch.bfloat16,dense\n"
        "block,0.5,32,16,64,128,torch.bfloat16,dense\n"
    )
    env = dict(os.environ, TGEMM_CONFIG_GEMM_SPARSE=str(table))
    done = subprocess.run([sys.executable, "-c", _TABLE_PROBE], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "routed" in done.stdout, done.stdout + done.stderr


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

        def args_fp8():
            wq, w_scale = _fp8_24(64, 256, seed=29)
            xq = randn(16, 256, seed=30).float().to(torch.float8_e4m3fn)
            x_scale = torch.full((16, 1), 0.5, device="cuda")
            return (xq, tgemm.compress_2_4(wq).compressed, 64, x_scale, w_scale, randn(64, seed=31), torch.bfloat16)

        cases.append(("sparse_gemm_2_4_fp8", args_fp8))

    def bsr_args():
        w, mask = _block_dense(64, 96, 32, 0.5, torch.bfloat16, seed=32)
        b = tgemm.block_weight(w, 32, mask)
        return (randn(5, 96, seed=33), b.crow_indices, b.col_indices, b.values, 64, randn(64, seed=34))

    cases.append(("sparse_gemm_bsr", bsr_args))
    return cases


@pytest.mark.parametrize("case", _opcheck_cases() if torch.cuda.is_available() else [], ids=lambda c: c[0])
def test_opcheck(case):
    op, make_args = case
    opcheck_float8(getattr(torch.ops.tgemm, op).default, make_args())


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


def test_block_compile_and_cuda_graph():
    w, mask = _block_dense(128, 256, 32, 0.4, torch.bfloat16, seed=35)
    weight = tgemm.block_weight(w, 32, mask)
    x = randn(1, 256, seed=36)
    compiled = torch.compile(lambda x: tgemm.sparse_gemm(x, weight), fullgraph=True)
    torch.testing.assert_close(compiled(x), tgemm.sparse_gemm(x, weight), rtol=0, atol=0)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tgemm.sparse_gemm(x, weight)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = tgemm.sparse_gemm(x, weight)
    x.copy_(randn(1, 256, seed=37))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, tgemm.sparse_gemm(x, weight), rtol=0, atol=0)


@needs_cusparselt
@pytest.mark.parametrize("pattern", ["2:4", "csr"])
@pytest.mark.parametrize("keep_dense", [False, True])
def test_sparsify_linear(pattern, keep_dense):
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
        w0 = model[0].weight.detach().clone()
        assert tgemm.nn.sparsify_linear(model, pattern, keep_dense=keep_dense) == 2
        assert isinstance(model[0], tgemm.nn.SparseLinear)
        assert (model[0].dense is not None) == keep_dense
        if keep_dense:
            torch.testing.assert_close(model[0].dense, w0, rtol=0, atol=0)
        _bias_tolerance(model(x), ref.float(), torch.bfloat16)
