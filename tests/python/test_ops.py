"""tgemm.gemm_a16w16 / torch.ops.tgemm.* against an fp32 reference, and the table helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

import tgemm
from tgemm_test_utils import (
    assert_matches_reference,
    device_arch,
    make_linear_inputs,
    randn,
    reference,
    requires_cuda,
)

pytestmark = requires_cuda

SHAPES = [  # (leading dims of x, N, K): decode, odd, tile-unaligned, prefill-like
    ((1,), 4096, 4096),
    ((7,), 1000, 520),
    ((16,), 256, 4096),
    ((64,), 1536, 1024),
    ((300,), 768, 2048),
    ((1024,), 1024, 512),
]


@pytest.mark.parametrize("m_shape,n,k", SHAPES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [False, True])
def test_matches_fp32_reference(m_shape, n, k, dtype, bias):
    x, w, b = make_linear_inputs(m_shape, n, k, dtype=dtype, bias=bias)
    y = tgemm.gemm_a16w16(x, w, b)
    assert_matches_reference(y, reference(x, w, b), dtype)


@pytest.mark.parametrize("otype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [False, True])
def test_output_dtype(otype, bias):
    x, w, b = make_linear_inputs((33,), 512, 768, bias=bias)
    y = tgemm.gemm_a16w16(x, w, b, otype)
    assert_matches_reference(y, reference(x, w, b), otype)


def test_bias_in_output_dtype():
    # The bias may have the output dtype instead of the input dtype.
    x, w, b = make_linear_inputs((20,), 384, 256, bias=True, bias_dtype=torch.float32)
    y = tgemm.gemm_a16w16(x, w, b, torch.float32)
    assert_matches_reference(y, reference(x, w, b), torch.float32)


@pytest.mark.parametrize("m_shape", [(2, 17), (3, 4, 5), (1, 1, 8)])
def test_rank3_and_higher_input(m_shape):
    x, w, b = make_linear_inputs(m_shape, 640, 512, bias=True)
    y = tgemm.gemm_a16w16(x, w, b)
    assert y.shape == (*m_shape, 640)
    assert_matches_reference(y, reference(x, w, b), torch.bfloat16)
    torch.testing.assert_close(y, F.linear(x, w, b), rtol=1e-2, atol=1e-2)


def test_rank1_input():
    x, w, b = make_linear_inputs((), 256, 512, bias=True)
    assert x.shape == (512,)
    y = tgemm.gemm_a16w16(x, w, b)
    assert y.shape == (256,)
    assert_matches_reference(y, reference(x, w, b), torch.bfloat16)


def test_mm_is_gemm_a16w16_and_op_agrees():
    x, w, b = make_linear_inputs((9,), 512, 256, bias=True)
    y1 = tgemm.mm(x, w, b)
    y2 = torch.ops.tgemm.gemm_a16w16(x, w, b)
    y3 = torch.ops.tgemm.gemm_a16w16.default(x, w, bias=b, otype=None)
    y4 = tgemm._C.gemm_a16w16(x, w, b, None)
    for y in (y2, y3, y4):
        assert torch.equal(y1, y)  # same solution, same inputs: bitwise equal


def test_row_strided_input():
    # Rows with a leading dimension larger than K (a column slice of a wider tensor).
    wide = make_linear_inputs((48,), 8, 1024)[0]
    x = wide[:, :768]
    assert not x.is_contiguous()
    w = make_linear_inputs((1,), 320, 768)[1]
    y = tgemm.gemm_a16w16(x, w)
    assert_matches_reference(y, reference(x, w), torch.bfloat16)


def test_out_variant_writes_out():
    x, w, b = make_linear_inputs((5, 12), 384, 512, bias=True)
    out = torch.full((5, 12, 384), float("nan"), device="cuda", dtype=torch.float32)
    ret = tgemm.gemm_a16w16_out(x, w, out, b)
    assert ret is out
    assert_matches_reference(out, reference(x, w, b), torch.float32)


def test_empty_m_and_zero_k():
    x, w, b = make_linear_inputs((0,), 256, 512, bias=True)
    assert tgemm.gemm_a16w16(x, w, b).shape == (0, 256)
    # K = 0: an empty sum, the output is the bias.
    x = torch.empty(4, 0, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(256, 0, device="cuda", dtype=torch.bfloat16)
    y = tgemm.gemm_a16w16(x, w, b)
    torch.testing.assert_close(y, b.expand(4, 256))


def test_runs_on_current_stream():
    x, w, b = make_linear_inputs((64,), 2048, 2048, bias=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = tgemm.gemm_a16w16(x, w, b)
    s.synchronize()
    assert_matches_reference(y, reference(x, w, b), torch.bfloat16)


def test_backward_matches_f_linear():
    x, w, b = make_linear_inputs((3, 10), 256, 128, bias=True)
    grad = randn(3, 10, 256, seed=7)
    grads = []
    for fn in (tgemm.gemm_a16w16, F.linear):
        xs, ws, bs = (t.detach().clone().requires_grad_() for t in (x, w, b))
        fn(xs, ws, bs).backward(grad)
        grads.append((xs.grad, ws.grad, bs.grad))
    for got, want in zip(grads[0], grads[1]):
        torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)


def test_describe_reports_dispatch():
    x, w, _ = make_linear_inputs((16,), 4096, 4096)
    info = tgemm.describe(x, w)
    assert set(info) >= {"level", "matched_m", "file", "line", "where", "libtype", "kernelName"}
    assert info["level"] in ("exact", "range", "default")
    assert info["kernelName"].startswith(info["libtype"] + ":")
    if info["level"] == "default":
        assert info["where"] == "" and info["matched_m"] == -1
    else:
        assert info["where"] == f"{info['file']}:{info['line']}"


def test_table_row_is_used_and_reload(tmp_path):
    props = torch.cuda.get_device_properties(0)
    table = tmp_path / "bf16_tuned_gemm.csv"
    table.write_text(
        "arch,sm_count,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,kernelName,"
        "err_ratio,tflops,bw\n"
        f"{device_arch()},{props.multi_processor_count},64,256,512,False,torch.bfloat16,torch.bfloat16,False,False,"
        "cublaslt,-1,0,1.0,cublaslt:heuristic,0.0,0.0,0.0\n"
    )
    os.environ["TGEMM_CONFIG_GEMM_BF16"] = str(table)
    tgemm.reload_config()
    assert tgemm.table_files() == [str(table)]
    x, w, _ = make_linear_inputs((64,), 256, 512)
    info = tgemm.describe(x, w)
    assert (info["level"], info["matched_m"], info["line"]) == ("exact", 64, 2)
    assert os.path.samefile(info["file"], table)
    assert (info["libtype"], info["kernelName"]) == ("cublaslt", "cublaslt:heuristic")
    # M = 50 has no row: the row of M = 64 was not measured there, so the default runs.
    x50 = x[:50]
    assert tgemm.describe(x50, w)["level"] == "default"
    assert_matches_reference(tgemm.gemm_a16w16(x50, w), reference(x50, w), torch.bfloat16)
    del os.environ["TGEMM_CONFIG_GEMM_BF16"]
    tgemm.reload_config()
    assert tgemm.describe(x, w)["file"] != str(table)


def test_shipped_configs_are_package_data():
    d = tgemm.shipped_config_dir()
    assert os.path.isfile(os.path.join(d, "bf16_tuned_gemm.csv")), d


def test_capture_writes_untuned_csv(tmp_path):
    """TGEMM_TUNE_GEMM=1 through Python records the problem via the C++ core's capture."""
    untuned = tmp_path / "bf16_untuned_gemm.csv"
    empty_table = tmp_path / "empty.csv"
    empty_table.write_text(
        "arch,sm_count,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,kernelName,"
        "err_ratio,tflops,bw\n"
    )
    script = textwrap.dedent(
        """
        import torch, tgemm
        x = torch.randn(48, 512, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(256, device="cuda", dtype=torch.bfloat16)
        tgemm.gemm_a16w16(x, w)
        tgemm.gemm_a16w16(x, w, b, torch.float32)
        tgemm.gemm_a16w16(x, w)  # once per shape
        lin = torch.nn.Linear(512, 128, dtype=torch.bfloat16, device="cuda")
        with torch.no_grad(), tgemm.patch_linear(lin):
            lin(x[:3])
        torch.cuda.synchronize()
        """
    )
    env = dict(os.environ, TGEMM_TUNE_GEMM="1", TGEMM_UNTUNED_GEMM_BF16=str(untuned),
               TGEMM_CONFIG_GEMM_BF16=str(empty_table))
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=300)
    lines = untuned.read_text().strip().splitlines()
    assert lines[0] == "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue"
    assert sorted(lines[1:]) == sorted([
        "48,256,512,False,torch.bfloat16,torch.bfloat16,False,False,none",
        "48,256,512,True,torch.bfloat16,torch.float32,False,False,none",
        "3,128,512,True,torch.bfloat16,torch.bfloat16,False,False,none",
    ])
