"""Bad input raises tgemm.TgemmError (a RuntimeError) with the C++ library's message text, through
every entry point: tgemm.*, torch.ops.tgemm.*, the eager fast path, describe, compiled code."""

from __future__ import annotations

import re

import pytest
import torch

import tgemm
from tgemm_test_utils import make_linear_inputs, requires_cuda

pytestmark = requires_cuda


def _entry_points():
    return {
        "tgemm.gemm_a16w16": lambda *a: tgemm.gemm_a16w16(*a),
        "torch.ops": lambda *a: torch.ops.tgemm.gemm_a16w16(*a),
        "_C fast path": lambda *a: tgemm._C.gemm_a16w16(*a),
        "describe": lambda *a: tgemm.describe(*a),
    }


def test_tgemm_error_is_a_runtime_error():
    assert issubclass(tgemm.TgemmError, RuntimeError)


CASES = {
    "fp32 input": (
        lambda: (torch.randn(4, 64, device="cuda"), torch.randn(32, 64, device="cuda"), None, None),
        "gemm_a16w16: x.dtype must be torch.bfloat16 or torch.float16, got torch.float32",
    ),
    "weight dtype": (
        lambda: (make_linear_inputs((4,), 32, 64)[0], make_linear_inputs((4,), 32, 64, dtype=torch.float16)[1], None, None),
        "gemm_a16w16: w.dtype must equal x.dtype (torch.bfloat16), got torch.float16",
    ),
    "K mismatch": (
        lambda: (make_linear_inputs((4,), 32, 64)[0], make_linear_inputs((4,), 32, 63)[1], None, None),
        "gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 63 vs 64",
    ),
    "w rank": (
        lambda: (make_linear_inputs((4,), 32, 64)[0], torch.ones(2, 32, 64, device="cuda", dtype=torch.bfloat16), None, None),
        "gemm_a16w16: w must be 2-D [N, K], got rank 3",
    ),
    "bias shape": (
        lambda: (*make_linear_inputs((4,), 32, 64)[:2], torch.ones(31, device="cuda", dtype=torch.bfloat16), None),
        "gemm_a16w16: bias.size(0) must equal N (32), got 31",
    ),
    "output dtype": (
        lambda: (*make_linear_inputs((4,), 32, 64)[:2], None, torch.int8),
        "gemm_a16w16: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got torch.int8",
    ),
    "not a tgemm dtype": (
        lambda: (*make_linear_inputs((4,), 32, 64)[:2], None, torch.float64),
        "gemm_a16w16: otype torch.float64 is not a tgemm type",
    ),
    "cpu input": (
        lambda: (torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(32, 64, dtype=torch.bfloat16), None, None),
        "gemm_a16w16: x must be a CUDA tensor, got device cpu",
    ),
    "cpu weight": (
        lambda: (make_linear_inputs((4,), 32, 64)[0], torch.ones(32, 64, dtype=torch.bfloat16), None, None),
        "gemm_a16w16: w must be on the device of x (cuda:0), got cpu",
    ),
    "inner stride": (
        lambda: (make_linear_inputs((64,), 32, 4)[0].t(), make_linear_inputs((1,), 32, 64)[1], None, None),
        "gemm_a16w16: x.stride(-1) must be 1 (rows contiguous), got 4",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("entry", list(_entry_points()))
def test_bad_input_raises_tgemm_error(case, entry):
    make_args, message = CASES[case]
    args = make_args()
    with pytest.raises(tgemm.TgemmError, match=re.escape(message)):
        _entry_points()[entry](*args)
    # No sticky CUDA error left behind: the device still works.
    torch.ones(1, device="cuda").add_(1)
    torch.cuda.synchronize()


def test_error_message_is_unchanged_text():
    x = make_linear_inputs((4,), 32, 64)[0]
    w = make_linear_inputs((4,), 32, 63)[1]
    with pytest.raises(RuntimeError) as info:
        torch.ops.tgemm.gemm_a16w16(x, w)
    assert str(info.value).startswith("gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 63 vs 64")


def test_out_variant_errors():
    x, w, _ = make_linear_inputs((4,), 32, 64)
    with pytest.raises(tgemm.TgemmError, match=re.escape("gemm_a16w16: out.size(-1) must equal w.size(0) (N), got 31 vs 32")):
        tgemm.gemm_a16w16_out(x, w, torch.empty(4, 31, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(tgemm.TgemmError, match="out must not overlap x"):
        big = torch.empty(4, 64, device="cuda", dtype=torch.bfloat16)
        tgemm.gemm_a16w16_out(big, w, big[:, :32])
    with pytest.raises(tgemm.TgemmError, match="do not support automatic differentiation"):
        tgemm.gemm_a16w16_out(x.requires_grad_(), w, torch.empty(4, 32, device="cuda", dtype=torch.bfloat16))


def test_compiled_call_fails_at_trace_time_with_same_text():
    x = make_linear_inputs((4,), 32, 64)[0]
    w = make_linear_inputs((4,), 32, 63)[1]
    compiled = torch.compile(lambda x, w: tgemm.gemm_a16w16(x, w), fullgraph=True)
    with pytest.raises(Exception, match=re.escape("w.size(1) must equal x.size(-1) (K), got 63 vs 64")):
        compiled(x, w)


def test_forward_mode_ad_is_refused_not_wrong():
    import torch.autograd.forward_ad as fwAD

    x, w, _ = make_linear_inputs((4,), 32, 64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        with pytest.raises(tgemm.TgemmError, match="forward-mode AD"):
            tgemm.gemm_a16w16(dual, w)
        # The patched F.linear routes dual tensors to the stock path instead.
        y = tgemm.linear(dual, w)
        assert fwAD.unpack_dual(y).tangent is not None
