"""tgemm.profile: kernel-name classification (no GPU needed) and a profiled step on the GPU."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import tgemm
from tgemm_test_utils import randn, requires_cuda


@pytest.mark.parametrize(
    "name,category",
    [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm"),
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT", "gemm"),
        ("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, float, 128, 16, 4, 4, false, false>", "gemm"),
        ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float>", "gemm"),
        ("void tgemm::sm90_gemm_skinny<__nv_bfloat16, 1, 4, 4, 2>(tgemm::SkinnyParams)", "gemm"),
        ("triton_tem_fused_mm_0", "gemm"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", "attention"),
        ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80", "attention"),
        ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>", "elementwise"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", "elementwise"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", "elementwise"),
        ("triton_poi_fused_add_mul_0", "elementwise"),
        ("triton_red_fused__to_copy_mean_pow_1", "elementwise"),
        ("Memcpy HtoD (Pageable -> Device)", "other"),
        ("Memset (Device)", "other"),
    ],
)
def test_classify_kernel(name, category):
    assert tgemm.profile.classify_kernel(name) == category


@requires_cuda
def test_profile_splits_a_step():
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512)).to(
        device="cuda", dtype=torch.bfloat16)
    x = randn(64, 512)
    with torch.no_grad(), tgemm.patch_linear(model):
        report = tgemm.profile.profile(model, x, iters=3, warmup=1, print_table=False)
    cats = report["categories"]
    assert set(cats) == set(tgemm.profile.CATEGORIES)
    assert cats["gemm"]["us"] > 0 and cats["gemm"]["calls"] >= 2  # two GEMMs per step
    assert cats["elementwise"]["calls"] >= 1  # the GELU
    assert abs(sum(c["pct"] for c in cats.values()) - 100.0) < 1e-6
    assert report["gpu_us_per_iter"] > 0 and report["wall_us_per_iter"] > 0
    assert "gemm" in tgemm.profile.format_report(report)


@requires_cuda
def test_profile_module_entry(tmp_path):
    # python -m tgemm.profile on a tiny Llama stack (transformers needed).
    pytest.importorskip("transformers")
    out = tmp_path / "split.json"
    args = ["--layers", "1", "--hidden", "256", "--intermediate", "512", "--heads", "4", "--kv-heads", "2",
            "--vocab", "1000", "--tokens", "32", "--iters", "2", "--warmup", "1", "--json", str(out)]
    result = subprocess.run([sys.executable, "-m", "tgemm.profile", *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "== stock" in result.stdout and "== tgemm" in result.stdout
    assert out.exists()
