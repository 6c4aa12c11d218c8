"""torch.library.opcheck on every tgemm op, torch.compile(fullgraph=True), CUDA-graph capture."""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_matches_reference, make_linear_inputs, reference, requires_cuda

pytestmark = requires_cuda

# Every public op of the tgemm torch library (python/csrc/library.cpp). A new op adds its cases
# here, so opcheck covers it.
OPS = (
    {"gemm_a16w16", "gemm_a16w16_out", "gemm_a8w8", "gemm_a8w8_blockscale", "gmm", "batched_gemm", "batched_gemm_out"}
    | {"batched_gemm_a8w8"}
    | {f"gemm_{e}{suffix}" for e in ("bias", "gelu", "relu", "alpha_beta") for suffix in ("", "_out")}
    | {
        "quant_fp8_per_tensor",
        "quant_fp8_per_tensor_static",
        "quant_per_token",
        "quant_fp8_per_block_1x128",
        "quant_fp8_per_block_128x128",
    }
    | {"tgmm", "tgmm_out", "grouped_gemm", "m_grouped_gemm_masked"}
    | {"m_grouped_gemm_fp8_contiguous", "m_grouped_gemm_fp8_masked"}
    | {"topk_softmax", "grouped_topk", "fused_moe"}
    | {"quant_mxfp4", "gemm_a16w4", "gemm_a8w4", "gemm_a4w4"}
    | {"prune_2_4", "sparse_gemm_csr", "sparse_gemm_2_4", "sparse_gemm_bsr", "sparse_gemm_2_4_fp8"}
)  # the epilogue ops' opcheck cases are in test_epilogue_ops.py, gemm_a8w8's in test_a8w8.py,
# gemm_a8w8_blockscale's in test_a8w8_blockscale.py, gmm's in test_gmm.py, the other grouped ops' in
# test_grouped.py, the FP8 grouped ops' in test_grouped_fp8.py, the MoE ops' in test_moe.py,
# batched_gemm's in test_batched.py, batched_gemm_a8w8's in test_batched_a8w8.py, the quantization
# ops' in test_quant_ops.py, the MXFP4 ops' in test_fp4_ops.py, the sparse ops' in test_sparse_ops.py


def test_every_op_has_opcheck_cases():
    registered = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("tgemm::")}
    assert registered == OPS


def _a16w16_cases():
    for m_shape, n, k, bias, otype, grad in [
        ((16,), 256, 512, False, None, False),
        ((7,), 384, 256, True, None, False),
        ((2, 9), 256, 128, True, torch.float32, False),
        ((33,), 128, 256, False, torch.float16, False),
        ((4, 3), 192, 64, True, None, True),  # requires_grad: the autograd kernel's path
    ]:
        x, w, b = make_linear_inputs(m_shape, n, k, bias=bias)
        if grad:
            x.requires_grad_()
            w.requires_grad_()
            b.requires_grad_()
        yield pytest.param((x, w, b, otype), id=f"{m_shape}x{n}x{k}-bias{bias}-{otype}-grad{grad}")


@pytest.mark.parametrize("args", list(_a16w16_cases()) if torch.cuda.is_available() else [])
def test_opcheck_gemm_a16w16(args):
    torch.library.opcheck(torch.ops.tgemm.gemm_a16w16.default, args)


@pytest.mark.parametrize("bias", [False, True])
def test_opcheck_gemm_a16w16_out(bias):
    x, w, b = make_linear_inputs((3, 5), 256, 128, bias=bias)
    out = torch.full((3, 5, 256), float("nan"), device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.tgemm.gemm_a16w16_out.default, (x, w, out, b))


def test_compile_fullgraph():
    def f(x, w, b):
        y = tgemm.gemm_a16w16(x, w, b)
        return torch.nn.functional.silu(y) * 2.0

    compiled = torch.compile(f, fullgraph=True)
    for m in (8, 40):  # a second M: recompiles or runs the dynamic graph, never breaks
        x, w, b = make_linear_inputs((m,), 256, 512, bias=True, seed=m)
        torch.testing.assert_close(compiled(x, w, b).float(), f(x, w, b).float(), rtol=1e-2, atol=1e-2)


def test_compile_fullgraph_otype_and_out_variant():
    def f(x, w, out):
        tgemm.gemm_a16w16_out(x, w, out)
        return tgemm.gemm_a16w16(x, w, None, torch.float32) + out.float()

    x, w, _ = make_linear_inputs((24,), 128, 256)
    out = torch.empty(24, 128, device="cuda", dtype=torch.bfloat16)
    got = torch.compile(f, fullgraph=True)(x, w, out)
    ref = reference(x, w)
    torch.testing.assert_close(got, ref + ref.to(torch.bfloat16).float(), rtol=2e-2, atol=2e-2)
    assert_matches_reference(out, ref, torch.bfloat16)


def test_compile_backward():
    x, w, b = make_linear_inputs((6, 4), 128, 64, bias=True)
    xs, ws, bs = (t.detach().clone().requires_grad_() for t in (x, w, b))
    torch.compile(lambda x, w, b: tgemm.gemm_a16w16(x, w, b).float().square().sum(), fullgraph=True)(
        xs, ws, bs
    ).backward()
    xr, wr, br = (t.detach().clone().requires_grad_() for t in (x, w, b))
    torch.nn.functional.linear(xr, wr, br).float().square().sum().backward()
    for got, want in ((xs.grad, xr.grad), (ws.grad, wr.grad), (bs.grad, br.grad)):
        torch.testing.assert_close(got.float(), want.float(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("bias", [False, True])
def test_cuda_graph_capture_and_replay(bias):
    x, w, b = make_linear_inputs((32,), 512, 1024, bias=bias)
    static_x = x.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tgemm.gemm_a16w16(static_x, w, b)  # warm the shape (first resolution) before capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        static_y = tgemm.gemm_a16w16(static_x, w, b)
    for seed in (11, 12):
        new_x = make_linear_inputs((32,), 512, 1024, seed=seed)[0]
        static_x.copy_(new_x)
        static_y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_matches_reference(static_y, reference(new_x, w, b), torch.bfloat16)


def test_cuda_graph_of_patched_module():
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 128, bias=False)).to(
        device="cuda", dtype=torch.bfloat16
    )
    x = make_linear_inputs((4, 16), 1, 256)[0]
    with torch.no_grad():
        expected = model(x)
        with tgemm.patch_linear(model) as patch:
            assert len(patch) == 2
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                model(x)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                y = model(x)
            graph.replay()
            torch.cuda.synchronize()
    torch.testing.assert_close(y, expected, rtol=2e-2, atol=2e-2)
