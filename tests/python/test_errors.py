"""Bad input raises an exception with the C++ library's message text, exactly, through every entry
point, and never takes the process down:

* ``torch.ops.tgemm.*``: a plain ``RuntimeError`` (the kernels raise c10::Error only; no tgemm::Error
  or other C++ exception crosses torch's dispatcher);
* ``tgemm.*`` in eager mode, ``tgemm._C.*`` and ``tgemm.describe``: ``tgemm.TgemmError``, a
  ``RuntimeError`` subclass, so ``except RuntimeError`` catches both;
* the fake kernels (FakeTensorMode, tracing): ``tgemm.TgemmError`` with the real kernel's text;
* compiled code: fails at trace time with the same text.

The tests without ``requires_cuda`` use CPU tensors (the CPU kernels, the autograd kernels and the
Python entry points run without a GPU).
"""

from __future__ import annotations

import re

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import tgemm
from tgemm_test_utils import make_linear_inputs, requires_cuda


class _PassThroughFunctionMode(TorchFunctionMode):
    """A TorchFunctionMode that only forwards: tgemm.* must then call torch.ops (so that the mode
    sees the op) and still raise TgemmError."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _in_function_mode(fn):
    def call(*a):
        with _PassThroughFunctionMode():
            return fn(*a)

    return call


# entry point -> (callable, exception class it must raise, exactly)
ENTRIES = {
    "tgemm.gemm_a16w16": (lambda *a: tgemm.gemm_a16w16(*a), tgemm.TgemmError),
    "tgemm.mm": (lambda *a: tgemm.mm(*a), tgemm.TgemmError),
    "tgemm.gemm_a16w16 in a TorchFunctionMode": (_in_function_mode(tgemm.gemm_a16w16), tgemm.TgemmError),
    "torch.ops": (lambda *a: torch.ops.tgemm.gemm_a16w16(*a), RuntimeError),
    "torch.ops .default": (lambda *a: torch.ops.tgemm.gemm_a16w16.default(*a), RuntimeError),
    "_C fast path": (lambda *a: tgemm._C.gemm_a16w16(*a), tgemm.TgemmError),
    "describe": (lambda *a: tgemm.describe(*a), tgemm.TgemmError),
}

OUT_ENTRIES = {
    "tgemm.gemm_a16w16_out": (lambda *a: tgemm.gemm_a16w16_out(*a), tgemm.TgemmError),
    "tgemm.gemm_a16w16_out in a TorchFunctionMode": (_in_function_mode(tgemm.gemm_a16w16_out), tgemm.TgemmError),
    "torch.ops": (lambda *a: torch.ops.tgemm.gemm_a16w16_out(*a), RuntimeError),
    "_C fast path": (lambda *a: tgemm._C.gemm_a16w16_out(*a), tgemm.TgemmError),
}


def _expect_exact(call, args, exc_type, message):
    with pytest.raises(RuntimeError) as info:
        call(*args)
    assert type(info.value) is exc_type, f"{type(info.value).__name__}: {info.value}"
    assert str(info.value) == message


def _device_still_works():
    # No sticky CUDA error left behind.
    torch.ones(1, device="cuda").add_(1)
    torch.cuda.synchronize()


# ---------------------------------------------------------------------------------------------
# Without a GPU


def test_tgemm_error_is_a_python_runtime_error():
    assert issubclass(tgemm.TgemmError, RuntimeError)
    assert tgemm.TgemmError.__module__ == "tgemm"
    # Defined in Python, not registered by the extension (no pybind11 translator, which would be
    # shared with torch's bindings).
    assert not hasattr(tgemm._C, "TgemmError")


_CPU_X_MESSAGE = "gemm_a16w16: x must be a CUDA tensor, got device cpu"


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_cpu_input_every_entry(entry):
    call, exc_type = ENTRIES[entry]
    x, w = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(32, 64, dtype=torch.bfloat16)
    for _ in range(3):  # repeated failures stay clean
        _expect_exact(call, (x, w, None, None), exc_type, _CPU_X_MESSAGE)


@pytest.mark.parametrize("entry", list(OUT_ENTRIES))
def test_cpu_input_out_variant_every_entry(entry):
    call, exc_type = OUT_ENTRIES[entry]
    x, w = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(32, 64, dtype=torch.bfloat16)
    out = torch.empty(4, 32, dtype=torch.bfloat16)
    _expect_exact(call, (x, w, out, None), exc_type, _CPU_X_MESSAGE)


@pytest.mark.parametrize("entry", list(OUT_ENTRIES))
def test_out_variant_refuses_autograd(entry):
    # Raised by the autograd kernel, before any backend kernel: the same on CPU tensors.
    call, exc_type = OUT_ENTRIES[entry]
    x = torch.ones(4, 64, dtype=torch.bfloat16, requires_grad=True)
    w, out = torch.ones(32, 64, dtype=torch.bfloat16), torch.empty(4, 32, dtype=torch.bfloat16)
    _expect_exact(
        call,
        (x, w, out, None),
        exc_type,
        "gemm_a16w16_out: functions with an out tensor do not support automatic differentiation, "
        "but an argument requires grad; use gemm_a16w16",
    )


@pytest.mark.parametrize("entry", ["tgemm.gemm_a16w16", "torch.ops", "_C fast path"])
def test_forward_mode_ad_is_refused(entry):
    import torch.autograd.forward_ad as fwAD

    call, exc_type = ENTRIES[entry]
    x, w = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(32, 64, dtype=torch.bfloat16)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        _expect_exact(
            call,
            (dual, w, None, None),
            exc_type,
            "gemm_a16w16: forward-mode AD (dual tensors) is not supported; use torch.nn.functional.linear",
        )


class _Refusal(ValueError):
    pass


class _RefusingDispatchMode(TorchDispatchMode):
    """Raises its own Python exception for the tgemm ops, below the autograd kernel."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "tgemm":
            raise _Refusal(f"refused {func}")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("entry", ["tgemm.gemm_a16w16", "torch.ops", "_C fast path"])
@pytest.mark.parametrize("grad", [False, True])
def test_python_exceptions_from_below_pass_unchanged(entry, grad):
    # A Python exception raised under the kernels (a dispatch mode's, a fake kernel's) crosses the
    # autograd kernel and the fast path's error handling with its type: nothing re-labels it.
    call, _ = ENTRIES[entry]
    x = torch.ones(4, 64, dtype=torch.bfloat16, requires_grad=grad)
    w = torch.ones(32, 64, dtype=torch.bfloat16)
    with _RefusingDispatchMode():
        with pytest.raises(_Refusal, match="refused tgemm.gemm_a16w16.default"):
            call(x, w, None, None)


def test_fake_kernel_error_keeps_its_type_through_the_fast_path():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 64, dtype=torch.bfloat16, requires_grad=True)
        w = torch.empty(32, 63, dtype=torch.bfloat16)
        for entry in ("tgemm.gemm_a16w16", "torch.ops", "_C fast path"):
            call, _ = ENTRIES[entry]
            message = "gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 63 vs 64"
            _expect_exact(call, (x, w, None, None), tgemm.TgemmError, message)


def test_compiled_calls_keep_the_text():
    # Under torch.compile tgemm.gemm_a16w16 is the op in the graph (no graph break): errors the
    # fake kernel sees fail at trace time, the others at run time as the op's RuntimeError.
    import torch._dynamo.testing

    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounter()
    compiled = torch.compile(lambda x, w: tgemm.gemm_a16w16(x, w), fullgraph=True, backend=counter)
    x, w = torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(32, 64, dtype=torch.bfloat16)
    _expect_exact(compiled, (x, w), RuntimeError, _CPU_X_MESSAGE)
    assert counter.frame_count == 1
    with pytest.raises(Exception, match=re.escape("gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 63 vs 64")):
        compiled(x, torch.ones(32, 63, dtype=torch.bfloat16))
    torch._dynamo.reset()


# ---------------------------------------------------------------------------------------------
# On a GPU

# case -> (make args, the exact message, whether the fake kernel sees it too)
CASES = {
    "fp32 input": (
        lambda: (torch.randn(4, 64, device="cuda"), torch.randn(32, 64, device="cuda"), None, None),
        "gemm_a16w16: x.dtype must be torch.bfloat16 or torch.float16, got torch.float32",
        True,
    ),
    "weight dtype": (
        lambda: (
            make_linear_inputs((4,), 32, 64)[0],
            make_linear_inputs((4,), 32, 64, dtype=torch.float16)[1],
            None,
            None,
        ),
        "gemm_a16w16: w.dtype must equal x.dtype (torch.bfloat16), got torch.float16",
        True,
    ),
    "K mismatch": (
        lambda: (make_linear_inputs((4,), 32, 64)[0], make_linear_inputs((4,), 32, 63)[1], None, None),
        "gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 63 vs 64",
        True,
    ),
    "w rank": (
        lambda: (
            make_linear_inputs((4,), 32, 64)[0],
            torch.ones(2, 32, 64, device="cuda", dtype=torch.bfloat16),
            None,
            None,
        ),
        "gemm_a16w16: w must be 2-D [N, K], got rank 3 [2, 32, 64]",
        True,
    ),
    "bias shape": (
        lambda: (*make_linear_inputs((4,), 32, 64)[:2], torch.ones(31, device="cuda", dtype=torch.bfloat16), None),
        "gemm_a16w16: bias.size(0) must equal N (32), got 31",
        True,
    ),
    "output dtype": (
        lambda: (*make_linear_inputs((4,), 32, 64)[:2], None, torch.int8),
        "gemm_a16w16: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got torch.int8",
        True,
    ),
    "not a tgemm dtype": (
        lambda: (*make_linear_inputs((4,), 32, 64)[:2], None, torch.float64),
        "gemm_a16w16: otype torch.float64 is not a tgemm type "
        "(bfloat16, float16, float32, float8_e4m3fn, float8_e5m2, int8, int32) "
        "nor torch.uint8 (MXFP4 codes and scales)",
        True,
    ),
    "x rank 7": (
        lambda: (
            torch.ones(1, 1, 1, 1, 1, 4, 64, device="cuda", dtype=torch.bfloat16),
            make_linear_inputs((4,), 32, 64)[1],
            None,
            None,
        ),
        "gemm_a16w16: x.rank must be in [1, 6], got 7",
        True,
    ),
    "cpu input": (
        lambda: (torch.ones(4, 64, dtype=torch.bfloat16), torch.ones(32, 64, dtype=torch.bfloat16), None, None),
        _CPU_X_MESSAGE,
        False,
    ),
    "cpu weight": (
        lambda: (make_linear_inputs((4,), 32, 64)[0], torch.ones(32, 64, dtype=torch.bfloat16), None, None),
        "gemm_a16w16: w must be on the device of x (cuda:0), got cpu",
        False,
    ),
    "inner stride": (
        lambda: (make_linear_inputs((64,), 32, 4)[0].t(), make_linear_inputs((1,), 32, 64)[1], None, None),
        "gemm_a16w16: x.stride(-1) must be 1 (rows contiguous), got 4 for x [4, 64] strides (1, 4)",
        False,
    ),
}


@requires_cuda
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_bad_input_every_entry(case, entry):
    make_args, message, _ = CASES[case]
    call, exc_type = ENTRIES[entry]
    _expect_exact(call, make_args(), exc_type, message)
    _device_still_works()
    # A good call works after the bad one.
    x, w, _ = make_linear_inputs((4,), 32, 64)
    y = tgemm.gemm_a16w16(x, w)
    torch.testing.assert_close(y.float(), x.float() @ w.float().t(), rtol=1e-2, atol=1e-2)
    _device_still_works()


@requires_cuda
@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][2]])
def test_fake_kernel_raises_what_the_real_kernel_raises(case):
    # Trace time and run time agree: the first error a bad call meets has the same text, and a
    # RuntimeError in both (TgemmError from the fake kernel, RuntimeError from torch.ops).
    from torch._subclasses.fake_tensor import FakeTensorMode

    make_args, message, _ = CASES[case]
    args = make_args()
    _expect_exact(ENTRIES["torch.ops"][0], args, RuntimeError, message)
    with FakeTensorMode() as mode:
        fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        _expect_exact(ENTRIES["torch.ops"][0], fake_args, tgemm.TgemmError, message)
    _device_still_works()


@requires_cuda
@pytest.mark.parametrize("entry", list(OUT_ENTRIES))
def test_out_variant_errors(entry):
    call, exc_type = OUT_ENTRIES[entry]
    x, w, _ = make_linear_inputs((4,), 32, 64)
    _expect_exact(
        call,
        (x, w, torch.empty(4, 31, device="cuda", dtype=torch.bfloat16), None),
        exc_type,
        "gemm_a16w16: out.size(-1) must equal w.size(0) (N), got 31 vs 32",
    )
    big = torch.empty(4, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(exc_type, match=re.escape("gemm_a16w16: out must not overlap x: out spans [")) as info:
        call(big, w, big[:, :32], None)
    assert type(info.value) is exc_type
    _device_still_works()
    out = torch.empty(4, 32, device="cuda", dtype=torch.bfloat16)
    call(x, w, out, None)
    torch.testing.assert_close(out.float(), x.float() @ w.float().t(), rtol=1e-2, atol=1e-2)


@requires_cuda
def test_compiled_call_fails_at_trace_time_with_same_text():
    x = make_linear_inputs((4,), 32, 64)[0]
    w = make_linear_inputs((4,), 32, 63)[1]
    compiled = torch.compile(lambda x, w: tgemm.gemm_a16w16(x, w), fullgraph=True)
    with pytest.raises(Exception, match=re.escape("gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 63 vs 64")):
        compiled(x, w)
    _device_still_works()


@requires_cuda
def test_forward_mode_ad_routes_to_stock_in_linear():
    import torch.autograd.forward_ad as fwAD

    x, w, _ = make_linear_inputs((4,), 32, 64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        with pytest.raises(tgemm.TgemmError, match="forward-mode AD"):
            tgemm.gemm_a16w16(dual, w)
        # The patched F.linear routes dual tensors to the stock path instead.
        y = tgemm.linear(dual, w)
        assert fwAD.unpack_dual(y).tangent is not None
