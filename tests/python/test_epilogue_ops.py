"""The fused-epilogue ops (gemm_bias, gemm_gelu, gemm_relu, gemm_alpha_beta and their out= forms)
against float32 torch references on random data, opcheck on each op, torch.compile, autograd, and
bad input raising tgemm's error naming the argument.

Tests marked ``requires_cuda`` skip cleanly without a GPU; the CPU-tensor and FakeTensorMode tests
run anywhere tgemm imports.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import tgemm
from tgemm_test_utils import assert_matches_reference, make_linear_inputs, randn, requires_cuda

# (leading dims of x, N, K): decode (M = 1), N and K not multiples of 64, rank 3, prefill-like.
SHAPES = [
    ((1,), 4096, 4096),
    ((1,), 200, 72),
    ((7,), 1000, 520),
    ((33,), 384, 136),
    ((2, 9), 640, 200),
    ((256,), 1536, 1024),
    # M >= 512, K > 4096: with a bias, the erf GELU's untuned default is the staged path (split).
    ((600,), 1000, 5000),
]
SHAPE_IDS = [f"{'x'.join(map(str, m))}x{n}x{k}" for m, n, k in SHAPES]


def _linear_f32(x, w, b=None):
    return F.linear(x.float(), w.float(), None if b is None else b.float())


def ref_bias(x, w, b):
    return _linear_f32(x, w, b)


def ref_gelu(x, w, b=None, approximate="none"):
    return F.gelu(_linear_f32(x, w, b), approximate=approximate)


def ref_relu(x, w, b=None):
    return F.relu(_linear_f32(x, w, b))


def ref_alpha_beta(x, w, c, alpha, beta):
    return alpha * _linear_f32(x, w) + beta * c.float()


def _nan_out(shape, dtype):
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


# ---------------------------------------------------------------------------------------------
# Results against fp32 references


@requires_cuda
@pytest.mark.parametrize("m_shape,n,k", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gemm_bias(m_shape, n, k, dtype):
    x, w, b = make_linear_inputs(m_shape, n, k, dtype=dtype, bias=True, seed=101)
    assert_matches_reference(tgemm.gemm_bias(x, w, b), ref_bias(x, w, b), dtype)


@requires_cuda
@pytest.mark.parametrize("m_shape,n,k", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("bias", [False, True])
def test_gemm_gelu(m_shape, n, k, approximate, bias):
    x, w, b = make_linear_inputs(m_shape, n, k, bias=bias, seed=202)
    y = tgemm.gemm_gelu(x, w, b, approximate)
    assert_matches_reference(y, ref_gelu(x, w, b, approximate), torch.bfloat16)


@requires_cuda
def test_gemm_gelu_erf_and_tanh_are_distinct():
    # The two GELUs differ by up to 4.7e-4 (near |z| = 2.7). With fp32 output each result must be
    # closer to its own reference than to the other's where the references differ: by a wide
    # margin for the erf GELU (fp32 erff), by any margin for the tanh one (a fused epilogue, e.g.
    # cuBLASLt's, may use a fast tanh whose own error is of the same order as the difference).
    x, w, b = make_linear_inputs((64,), 512, 256, bias=True, seed=3)
    x = x * 2  # spread z over the region where the two differ
    ref = {a: ref_gelu(x, w, b, a) for a in ("none", "tanh")}
    where = (ref["none"] - ref["tanh"]).abs() > 2e-4
    assert where.sum().item() > 100
    for approximate, other in (("none", "tanh"), ("tanh", "none")):
        y = tgemm.gemm_gelu(x, w, b, approximate, torch.float32)
        own = (y - ref[approximate]).abs()[where].mean().item()
        far = (y - ref[other]).abs()[where].mean().item()
        assert own < (far / 4 if approximate == "none" else far), (approximate, own, far)


@requires_cuda
@pytest.mark.parametrize("m_shape,n,k", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("bias", [False, True])
def test_gemm_relu(m_shape, n, k, bias):
    x, w, b = make_linear_inputs(m_shape, n, k, bias=bias, seed=303)
    y = tgemm.gemm_relu(x, w, b)
    assert_matches_reference(y, ref_relu(x, w, b), torch.bfloat16)
    assert (y >= 0).all()


@requires_cuda
@pytest.mark.parametrize("m_shape,n,k", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, -2.0), (-1.25, 0.75)])
def test_gemm_alpha_beta(m_shape, n, k, alpha, beta):
    x, w, _ = make_linear_inputs(m_shape, n, k, seed=404)
    c = randn(*m_shape, n, seed=405)
    y = tgemm.gemm_alpha_beta(x, w, c, alpha, beta)
    assert_matches_reference(y, ref_alpha_beta(x, w, c, alpha, beta), torch.bfloat16)


@requires_cuda
@pytest.mark.parametrize("otype", [torch.float32, torch.float16])
def test_output_dtypes(otype):
    x, w, b = make_linear_inputs((17,), 256, 192, bias=True, seed=5)
    assert_matches_reference(tgemm.gemm_bias(x, w, b, otype), ref_bias(x, w, b), otype)
    assert_matches_reference(tgemm.gemm_gelu(x, w, b, "none", otype), ref_gelu(x, w, b), otype)
    assert_matches_reference(tgemm.gemm_relu(x, w, b, otype), ref_relu(x, w, b), otype)
    # gemm_alpha_beta's output has c's dtype.
    c = randn(17, 256, dtype=otype, seed=6)
    assert_matches_reference(tgemm.gemm_alpha_beta(x, w, c, 0.5, 2.0), ref_alpha_beta(x, w, c, 0.5, 2.0), otype)


@requires_cuda
def test_bias_in_output_dtype():
    x, w, b = make_linear_inputs((9,), 320, 256, bias=True, bias_dtype=torch.float32, seed=7)
    y = tgemm.gemm_gelu(x, w, b, "tanh", torch.float32)
    assert y.dtype == torch.float32
    # 1e-3, not fp32's 1e-4: a fused tanh-GELU epilogue (cuBLASLt's) may use a fast tanh.
    torch.testing.assert_close(y, ref_gelu(x, w, b, "tanh"), rtol=1e-3, atol=1e-3)
    assert_matches_reference(tgemm.gemm_relu(x, w, b, torch.float32), ref_relu(x, w, b), torch.float32)


@requires_cuda
def test_ops_agree_with_torch_ops_and_fast_path():
    x, w, b = make_linear_inputs((12,), 512, 256, bias=True, seed=8)
    c = randn(12, 512, seed=9)
    pairs = [
        (tgemm.gemm_bias(x, w, b), torch.ops.tgemm.gemm_bias(x, w, b)),
        (tgemm.gemm_gelu(x, w, b, "tanh"), torch.ops.tgemm.gemm_gelu(x, w, b, approximate="tanh")),
        (tgemm.gemm_gelu(x, w), tgemm._C.gemm_gelu(x, w)),
        (tgemm.gemm_relu(x, w, b), torch.ops.tgemm.gemm_relu.default(x, w, b, None)),
        (tgemm.gemm_alpha_beta(x, w, c, 2.0, 0.5), torch.ops.tgemm.gemm_alpha_beta(x, w, c, alpha=2.0, beta=0.5)),
    ]
    for got, want in pairs:
        assert torch.equal(got, want)  # same solution, same inputs: bitwise equal


# ---------------------------------------------------------------------------------------------
# out= forms: NaN-poisoned outputs must be fully overwritten


@requires_cuda
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
def test_out_forms_overwrite_nan(out_dtype):
    m_shape, n, k = (3, 5), 200, 136
    x, w, b = make_linear_inputs(m_shape, n, k, bias=True, seed=11)
    shape = (*m_shape, n)

    out = _nan_out(shape, out_dtype)
    assert tgemm.gemm_bias_out(x, w, b, out) is out
    assert_matches_reference(out, ref_bias(x, w, b), out_dtype)

    for approximate in ("none", "tanh"):
        out = _nan_out(shape, out_dtype)
        assert tgemm.gemm_gelu_out(x, w, out, b, approximate) is out
        assert_matches_reference(out, ref_gelu(x, w, b, approximate), out_dtype)

    out = _nan_out(shape, out_dtype)
    assert tgemm.gemm_relu_out(x, w, out) is out
    assert_matches_reference(out, ref_relu(x, w), out_dtype)

    c = randn(*shape, dtype=out_dtype, seed=12)
    out = _nan_out(shape, out_dtype)
    assert tgemm.gemm_alpha_beta_out(x, w, c, out, 1.5, -0.5) is out
    assert_matches_reference(out, ref_alpha_beta(x, w, c, 1.5, -0.5), out_dtype)


@requires_cuda
@pytest.mark.parametrize("m_shape,n,k", [((1,), 4096, 4096), ((48,), 1000, 520)])
def test_alpha_beta_in_place(m_shape, n, k):
    # out = c: c = alpha * x @ w^T + beta * c, accumulated in place.
    x, w, _ = make_linear_inputs(m_shape, n, k, seed=13)
    c = randn(*m_shape, n, dtype=torch.float32, seed=14)
    want = ref_alpha_beta(x, w, c, 0.25, 1.0)
    assert tgemm.gemm_alpha_beta_out(x, w, c, c, 0.25, 1.0) is c
    assert_matches_reference(c, want, torch.float32)


@requires_cuda
def test_alpha_beta_zero_beta_does_not_read_c():
    x, w, _ = make_linear_inputs((16,), 256, 128, seed=15)
    c = _nan_out((16, 256), torch.bfloat16)
    y = tgemm.gemm_alpha_beta(x, w, c, 2.0, 0.0)
    assert_matches_reference(y, 2.0 * _linear_f32(x, w), torch.bfloat16)


@requires_cuda
def test_empty_m_and_zero_k():
    x, w, b = make_linear_inputs((0,), 256, 512, bias=True, seed=16)
    assert tgemm.gemm_gelu(x, w, b).shape == (0, 256)
    # K = 0: an empty sum, the output is act(bias) (or beta * c).
    x = torch.empty(4, 0, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(256, 0, device="cuda", dtype=torch.bfloat16)
    torch.testing.assert_close(
        tgemm.gemm_gelu(x, w, b, "none", torch.float32), F.gelu(b.float()).expand(4, 256), rtol=1e-5, atol=1e-5
    )
    torch.testing.assert_close(tgemm.gemm_relu(x, w, b, torch.float32), F.relu(b.float()).expand(4, 256))
    c = randn(4, 256, dtype=torch.float32, seed=17)
    torch.testing.assert_close(tgemm.gemm_alpha_beta(x, w, c, 3.0, 0.5), 0.5 * c)


@requires_cuda
def test_runs_on_current_stream():
    x, w, b = make_linear_inputs((64,), 2048, 2048, bias=True, seed=18)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = tgemm.gemm_gelu(x, w, b)
    s.synchronize()
    assert_matches_reference(y, ref_gelu(x, w, b), torch.bfloat16)


# ---------------------------------------------------------------------------------------------
# Autograd: gradients against the same composition of torch ops


def _grads(fn, tensors, grad):
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    fn(*leaves).backward(grad)
    return [t.grad for t in leaves]


@requires_cuda
@pytest.mark.parametrize(
    "name",
    ["bias", "gelu-none", "gelu-tanh", "gelu-nobias", "relu", "alpha_beta"],
)
def test_backward_matches_torch(name):
    x, w, b = make_linear_inputs((3, 10), 256, 128, bias=True, seed=19)
    c = randn(3, 10, 256, seed=20)
    grad = randn(3, 10, 256, seed=21)
    cases = {
        "bias": ((x, w, b), tgemm.gemm_bias, lambda x, w, b: F.linear(x, w, b)),
        "gelu-none": ((x, w, b), tgemm.gemm_gelu, lambda x, w, b: F.gelu(F.linear(x, w, b))),
        "gelu-tanh": (
            (x, w, b),
            lambda x, w, b: tgemm.gemm_gelu(x, w, b, "tanh"),
            lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"),
        ),
        "gelu-nobias": ((x, w), tgemm.gemm_gelu, lambda x, w: F.gelu(F.linear(x, w))),
        "relu": ((x, w, b), tgemm.gemm_relu, lambda x, w, b: F.relu(F.linear(x, w, b))),
        "alpha_beta": (
            (x, w, c),
            lambda x, w, c: tgemm.gemm_alpha_beta(x, w, c, 0.5, -2.0),
            lambda x, w, c: 0.5 * F.linear(x, w) + -2.0 * c,
        ),
    }
    tensors, ours, theirs = cases[name]
    # The reference runs in fp32 on the same bf16 values. Stock torch on the bf16 tensors rounds
    # its intermediates (the activation's gradient) to bf16 as tgemm does; where a gradient element
    # cancels, that rounding alone can exceed a fixed 3e-2, so the bound is also relative to stock's
    # own error against the fp32 reference.
    got = _grads(ours, tensors, grad)
    want = _grads(lambda *t: theirs(*(v.float() for v in t)), tensors, grad.float())
    stock = _grads(theirs, tensors, grad)
    assert len(got) == len(want) == len(stock)
    for g, r, s in zip(got, want, stock):
        assert g is not None and g.dtype == r.dtype == torch.bfloat16
        err = (g.float() - r.float()).abs().max().item()
        stock_err = (s.float() - r.float()).abs().max().item()
        assert err <= max(3e-2, 2.0 * stock_err), f"max error {err} (stock bf16 torch: {stock_err})"
        assert (g.float() - r.float()).norm() <= 1e-2 * r.float().norm()


@requires_cuda
def test_out_forms_refuse_autograd():
    x, w, b = make_linear_inputs((4,), 64, 32, bias=True, seed=22)
    x.requires_grad_()
    out = torch.empty(4, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(tgemm.TgemmError, match=re.escape("gemm_gelu_out: functions with an out tensor do not support")):
        tgemm.gemm_gelu_out(x, w, out, b)


# ---------------------------------------------------------------------------------------------
# opcheck on every op (schema, fake kernel, autograd registration, AOT dispatch)


def _opcheck_args(op: str, grad: bool):
    x, w, b = make_linear_inputs((2, 7), 192, 136, bias=True, seed=23)
    c = randn(2, 7, 192, seed=24)
    out = _nan_out((2, 7, 192), torch.bfloat16)
    if grad:
        for t in (x, w, b, c):
            t.requires_grad_()
    return {
        "gemm_bias": (x, w, b, None),
        "gemm_bias_out": (x, w, b, out),
        "gemm_gelu": (x, w, b, "tanh", torch.float32),
        "gemm_gelu_out": (x, w, out, None, "none"),
        "gemm_relu": (x, w, b, None),
        "gemm_relu_out": (x, w, out, b),
        "gemm_alpha_beta": (x, w, c, 0.5, 2.0),
        "gemm_alpha_beta_out": (x, w, c, out, 0.5, 2.0),
    }[op]


EPILOGUE_OPS = [
    "gemm_bias",
    "gemm_bias_out",
    "gemm_gelu",
    "gemm_gelu_out",
    "gemm_relu",
    "gemm_relu_out",
    "gemm_alpha_beta",
    "gemm_alpha_beta_out",
]


def test_epilogue_ops_are_registered():
    registered = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("tgemm::")}
    assert set(EPILOGUE_OPS) <= registered


@requires_cuda
@pytest.mark.parametrize("op", EPILOGUE_OPS)
def test_opcheck(op):
    torch.library.opcheck(getattr(torch.ops.tgemm, op).default, _opcheck_args(op, grad=False))


@requires_cuda
@pytest.mark.parametrize("op", [o for o in EPILOGUE_OPS if not o.endswith("_out")])
def test_opcheck_requires_grad(op):
    # The autograd kernel's path (a Function node, ATen backward).
    torch.library.opcheck(getattr(torch.ops.tgemm, op).default, _opcheck_args(op, grad=True))


# ---------------------------------------------------------------------------------------------
# torch.compile


@requires_cuda
def test_compile_fullgraph_gelu():
    def f(x, w, b):
        return tgemm.gemm_gelu(x, w, b, "tanh") * 2.0 + tgemm.gemm_relu(x, w)

    compiled = torch.compile(f, fullgraph=True)
    for m in (8, 40):  # a second M: recompiles or runs the dynamic graph, never breaks
        x, w, b = make_linear_inputs((m,), 256, 520, bias=True, seed=m)
        torch.testing.assert_close(compiled(x, w, b).float(), f(x, w, b).float(), rtol=2e-2, atol=2e-2)


@requires_cuda
def test_compile_fullgraph_alpha_beta_out():
    def f(x, w, c, out):
        tgemm.gemm_alpha_beta_out(x, w, c, out, 0.5, 1.0)
        return out * 2.0

    x, w, _ = make_linear_inputs((24,), 128, 256, seed=25)
    c = randn(24, 128, dtype=torch.float32, seed=26)
    out = _nan_out((24, 128), torch.float32)
    got = torch.compile(f, fullgraph=True)(x, w, c, out)
    want = ref_alpha_beta(x, w, c, 0.5, 1.0)
    assert_matches_reference(out, want, torch.float32)
    torch.testing.assert_close(got, want * 2.0, rtol=1e-4, atol=2e-4)


# ---------------------------------------------------------------------------------------------
# Bad input: tgemm's error, naming the argument, from every entry point


_BF16 = torch.bfloat16


def test_cpu_input_names_the_op():
    x, w = torch.ones(4, 64, dtype=_BF16), torch.ones(32, 64, dtype=_BF16)
    bias, c = torch.ones(32, dtype=_BF16), torch.ones(4, 32, dtype=_BF16)
    args = {
        "gemm_bias": (x, w, bias),
        "gemm_gelu": (x, w),
        "gemm_relu": (x, w),
        "gemm_alpha_beta": (x, w, c),
    }
    for op, op_args in args.items():
        message = f"{op}: x must be a CUDA tensor, got device cpu"
        for call, exc_type in ((getattr(tgemm, op), tgemm.TgemmError), (getattr(torch.ops.tgemm, op), RuntimeError)):
            with pytest.raises(RuntimeError) as info:
                call(*op_args)
            assert type(info.value) is exc_type, f"{type(info.value).__name__}: {info.value}"
            assert str(info.value) == message


def test_out_form_refuses_autograd_on_cpu():
    # Raised by the autograd kernel, before any backend kernel.
    x = torch.ones(4, 64, dtype=_BF16, requires_grad=True)
    w, out = torch.ones(32, 64, dtype=_BF16), torch.empty(4, 32, dtype=_BF16)
    with pytest.raises(tgemm.TgemmError) as info:
        tgemm.gemm_relu_out(x, w, out)
    assert str(info.value) == (
        "gemm_relu_out: functions with an out tensor do not support automatic differentiation, "
        "but an argument requires grad; use gemm_relu"
    )


# case -> (op, make args on `device`, exact message). Every case is one the fake kernel sees too.
def _bad_cases(device):
    def xw(k_w=64, n=32):
        x = torch.ones(4, 64, device=device, dtype=_BF16)
        w = torch.ones(n, k_w, device=device, dtype=_BF16)
        return x, w

    def t(*shape, dtype=_BF16):
        return torch.ones(*shape, device=device, dtype=dtype)

    return {
        "gelu K mismatch": (
            "gemm_gelu", lambda: (*xw(k_w=63), None, "none", None),
            "gemm_gelu: w.size(1) must equal x.size(-1) (K), got 63 vs 64",
        ),
        "gelu approximate": (
            "gemm_gelu", lambda: (*xw(), None, "fast", None),
            "gemm_gelu: approximate must be 'none' or 'tanh', got 'fast'",
        ),
        "gelu bias dtype": (
            "gemm_gelu", lambda: (*xw(), t(32, dtype=torch.float16), "none", None),
            "gemm_gelu: bias.dtype must equal x.dtype (torch.bfloat16) or out.dtype (torch.bfloat16), "
            "got torch.float16",
        ),
        "bias shape": (
            "gemm_bias", lambda: (*xw(), t(31), None),
            "gemm_bias: bias.size(0) must equal N (32), got 31",
        ),
        "bias x dtype": (
            "gemm_bias", lambda: (t(4, 64, dtype=torch.float32), t(32, 64, dtype=torch.float32), t(32), None),
            "gemm_bias: x.dtype must be torch.bfloat16 or torch.float16, got torch.float32",
        ),
        "relu otype": (
            "gemm_relu", lambda: (*xw(), None, torch.int8),
            "gemm_relu: out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got torch.int8",
        ),
        "relu w rank": (
            "gemm_relu", lambda: (t(4, 64), t(2, 32, 64), None, None),
            "gemm_relu: w must be 2-D [N, K], got rank 3 [2, 32, 64]",
        ),
        "alpha_beta c shape": (
            "gemm_alpha_beta", lambda: (*xw(), t(4, 31), 1.0, 1.0),
            "gemm_alpha_beta: c.size(1) must equal out.size(1), got 31 vs 32",
        ),
        "alpha_beta c rank": (
            "gemm_alpha_beta", lambda: (*xw(), t(1, 4, 32), 1.0, 1.0),
            "gemm_alpha_beta: c.rank must equal out.rank (2), got 3",
        ),
        "alpha_beta c dtype": (
            "gemm_alpha_beta", lambda: (*xw(), t(4, 32, dtype=torch.int8), 1.0, 1.0),
            "gemm_alpha_beta: c.dtype must be torch.bfloat16, torch.float16 or torch.float32 (the output has c's "
            "dtype), got torch.int8",
        ),
        "alpha_beta alpha inf": (
            "gemm_alpha_beta", lambda: (*xw(), t(4, 32), float("inf"), 1.0),
            "gemm_alpha_beta: alpha must be finite and within float32 range, got inf",
        ),
        "alpha_beta beta overflow": (
            "gemm_alpha_beta", lambda: (*xw(), t(4, 32), 1.0, 1e300),
            "gemm_alpha_beta: beta must be finite and within float32 range, got 1e+300",
        ),
        "alpha_beta_out c dtype": (
            "gemm_alpha_beta_out", lambda: (*xw(), t(4, 32, dtype=torch.float32), t(4, 32), 1.0, 1.0),
            "gemm_alpha_beta: c.dtype must equal out.dtype (torch.bfloat16), got torch.float32",
        ),
        "gelu_out N": (
            "gemm_gelu_out", lambda: (*xw(), t(4, 31), None, "none"),
            "gemm_gelu: out.size(-1) must equal w.size(0) (N), got 31 vs 32",
        ),
    }


_CASE_NAMES = list(_bad_cases("cpu"))


@pytest.mark.parametrize("case", _CASE_NAMES)
def test_fake_kernel_rejects_with_library_text(case):
    # No GPU needed: FakeTensorMode on CPU tensors runs only the fake kernels.
    op, make_args, message = _bad_cases("cpu")[case]
    with FakeTensorMode() as mode:
        args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in make_args()]
        with pytest.raises(tgemm.TgemmError) as info:
            getattr(torch.ops.tgemm, op)(*args)
    assert str(info.value) == message


@requires_cuda
@pytest.mark.parametrize("case", _CASE_NAMES)
def test_bad_input_every_entry(case):
    op, make_args, message = _bad_cases("cuda")[case]
    entries = [
        (getattr(tgemm, op), tgemm.TgemmError),
        (getattr(tgemm._C, op), tgemm.TgemmError),
        (getattr(torch.ops.tgemm, op), RuntimeError),
    ]
    for call, exc_type in entries:
        with pytest.raises(RuntimeError) as info:
            call(*make_args())
        assert type(info.value) is exc_type, f"{type(info.value).__name__}: {info.value}"
        assert str(info.value) == message
    # No sticky CUDA error, and a good call still works.
    x, w, b = make_linear_inputs((4,), 32, 64, bias=True, seed=27)
    assert_matches_reference(tgemm.gemm_gelu(x, w, b), ref_gelu(x, w, b), torch.bfloat16)


@requires_cuda
def test_alpha_beta_out_overlapping_c_is_refused():
    x, w, _ = make_linear_inputs((4,), 32, 64, seed=28)
    big = torch.zeros(4, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(tgemm.TgemmError, match=re.escape("gemm_alpha_beta: c must be out itself or not overlap it")):
        tgemm.gemm_alpha_beta_out(x, w, big[:, 1:33], big[:, :32])
