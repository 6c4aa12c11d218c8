"""Concurrency through the torch ops: 8 Python threads, each on its own ``torch.cuda.Stream``, call
every op of ``torch.ops.tgemm`` (functional and out= forms, bf16 and fp16 inputs, bf16/fp16/fp32
outputs, bias, erf and tanh GELU, ReLU, alpha/beta with a separate c and in place) on mixed shapes
(M 1..300, odd values included). The first calls of each shape race: ``tgemm.reload_config()``
forgets every cached dispatch decision before rounds 0 and 2, and threads start each round
together. out= outputs are NaN-poisoned on the thread's stream before the call; every result is
compared with a float32 torch reference. The ops release the GIL while the library runs, so the
threads really are inside the dispatcher at once. The same is run through the ``tgemm`` wrappers
(the ``tgemm._C`` eager entry).

Then every other op family through ``torch.ops.tgemm`` in one race (a8w8, a8w8_blockscale, batched,
gmm, tgmm, grouped_gemm, the masked form, routing, fused_moe, quantization; see _family_cases),
each compared with the float32 torch reference of the family's own test module. The C++
counterparts are tests/gpu/test_concurrency.cpp and tests/gpu/test_concurrency_families.cpp.
"""

from __future__ import annotations

import threading

import torch
import torch.nn.functional as F
from test_a8w8 import accumulation_bound as a8w8_bound
from test_a8w8 import make as a8w8_make
from test_a8w8 import reference as a8w8_reference
from test_a8w8_blockscale import accumulation_bound as blockscale_bound
from test_a8w8_blockscale import make as blockscale_make
from test_a8w8_blockscale import reference as blockscale_reference
from test_batched import assert_close as batched_assert_close
from test_batched import make as batched_make
from test_batched import reference as batched_reference
from test_gmm import assert_close as gmm_assert_close
from test_gmm import make as gmm_make
from test_gmm import reference as gmm_reference
from test_grouped import assert_close as grouped_assert_close
from test_grouped import grouped_reference, make_grouped, make_tgmm, tgmm_reference
from test_moe import assert_close as moe_assert_close
from test_moe import make_moe, reference_grouped_topk, reference_moe
from test_quant_ops import _assert_codes_equal as quant_assert_codes_equal
from test_quant_ops import _block_amax as quant_block_amax
from test_quant_ops import _codes as quant_codes
from test_quant_ops import _expand as quant_expand
from test_quant_ops import _input as quant_input
from test_quant_ops import _scale_of as quant_scale_of

import tgemm
from tgemm_test_utils import assert_close_quantized, make_linear_inputs, randn, requires_cuda, tolerance

THREADS = 8
ROUNDS = 3
RELOAD_BEFORE = (0, 2)

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32

# (M, N, K, op, input dtype, output dtype, bias). (N, K) pairs: rows of the shipped table
# (576x7168 at M = 1, 16, 64), the skinny defaults (2304x1536 at M <= 8, 1536x7168 at M = 13),
# the fused CUTLASS GELU (5632x1024 at M = 257-384 on 132 SMs), the staged GELU + bias
# (1000x520 above M = 16), small odd shapes for cuBLASLt.
CASES = [
    (1, 576, 7168, "gemm_a16w16", BF16, BF16, False),
    (16, 576, 7168, "gemm_a16w16_out", BF16, BF16, False),
    (64, 576, 7168, "gemm_bias", BF16, FP32, True),
    (37, 576, 7168, "gemm_gelu_tanh_out", FP16, FP16, True),
    (13, 1536, 7168, "gemm_a16w16", BF16, BF16, False),
    (9, 1536, 7168, "gemm_relu_out", FP16, FP32, True),
    (300, 1536, 7168, "gemm_alpha_beta", BF16, BF16, False),
    (5, 2304, 1536, "gemm_a16w16_out", BF16, BF16, True),
    (7, 2304, 1536, "gemm_bias_out", FP16, FP16, True),
    (3, 2304, 1536, "gemm_gelu", BF16, BF16, False),
    (211, 2304, 1536, "gemm_alpha_beta_out_inplace", BF16, BF16, False),
    (1, 1000, 520, "gemm_a16w16", FP16, FP16, False),
    (100, 1000, 520, "gemm_gelu", BF16, BF16, True),
    (255, 1000, 520, "gemm_relu", BF16, FP32, False),
    (31, 1000, 520, "gemm_alpha_beta_out", FP16, FP16, False),
    (299, 5632, 1024, "gemm_gelu", BF16, BF16, True),
    (65, 5632, 1024, "gemm_gelu_tanh_out", BF16, BF16, True),
    (2, 200, 72, "gemm_relu", FP16, FP16, True),
    (33, 200, 72, "gemm_a16w16", BF16, FP32, True),
    (171, 200, 72, "gemm_alpha_beta_out_inplace", FP16, FP16, False),
]

ALPHA, BETA = 0.75, -0.5


class Case:
    """One case's inputs and float32 reference, built on the default stream before the threads."""

    def __init__(self, index, m, n, k, op, dtype, out_dtype, bias):
        self.m, self.n, self.k, self.op = m, n, k, op
        self.dtype, self.out_dtype = dtype, out_dtype
        self.x, self.w, self.b = make_linear_inputs((m,), n, k, dtype=dtype, bias=bias, seed=1000 + 7 * index)
        self.c = randn(m, n, dtype=out_dtype, seed=2000 + index) if op.startswith("gemm_alpha_beta") else None
        lin = self.x.float() @ self.w.float().t()
        if self.b is not None and not op.startswith("gemm_alpha_beta"):
            lin = lin + self.b.float()
        if op.startswith("gemm_gelu"):
            self.ref = F.gelu(lin, approximate="tanh" if "tanh" in op else "none")
        elif op.startswith("gemm_relu"):
            self.ref = F.relu(lin)
        elif op.startswith("gemm_alpha_beta"):
            self.ref = ALPHA * lin + BETA * self.c.float()
        else:
            self.ref = lin

    def describe(self):
        bias = " bias" if self.b is not None and not self.op.startswith("gemm_alpha_beta") else ""
        return f"{self.op} M={self.m} N={self.n} K={self.k} {self.dtype}->{self.out_dtype}{bias}"

    def check(self, y):
        assert y.dtype == self.out_dtype and y.shape == self.ref.shape, self.describe()
        assert torch.isfinite(y).all(), f"{self.describe()}: non-finite output"
        rtol, atol = tolerance(self.out_dtype)
        torch.testing.assert_close(y.float(), self.ref, rtol=rtol, atol=atol, msg=lambda m: f"{self.describe()}: {m}")

    def nan_out(self):
        return torch.full((self.m, self.n), float("nan"), device="cuda", dtype=self.out_dtype)

    def call(self, ns):
        """Runs the case through namespace `ns` (torch.ops.tgemm or tgemm) on the current stream;
        returns the output."""
        x, w, b, otype = self.x, self.w, self.b, self.out_dtype
        op = self.op
        if op == "gemm_a16w16":
            return ns.gemm_a16w16(x, w, b, otype)
        if op == "gemm_a16w16_out":
            out = self.nan_out()
            ns.gemm_a16w16_out(x, w, out, b)
            return out
        if op == "gemm_bias":
            return ns.gemm_bias(x, w, b, otype)
        if op == "gemm_bias_out":
            out = self.nan_out()
            ns.gemm_bias_out(x, w, b, out)
            return out
        if op == "gemm_gelu":
            return ns.gemm_gelu(x, w, b, "none", otype)
        if op == "gemm_gelu_tanh_out":
            out = self.nan_out()
            ns.gemm_gelu_out(x, w, out, b, "tanh")
            return out
        if op == "gemm_relu":
            return ns.gemm_relu(x, w, b, otype)
        if op == "gemm_relu_out":
            out = self.nan_out()
            ns.gemm_relu_out(x, w, out, b)
            return out
        if op == "gemm_alpha_beta":
            return ns.gemm_alpha_beta(x, w, self.c, ALPHA, BETA)
        if op == "gemm_alpha_beta_out":
            out = self.nan_out()
            ns.gemm_alpha_beta_out(x, w, self.c, out, ALPHA, BETA)
            return out
        if op == "gemm_alpha_beta_out_inplace":
            out = self.c.clone()  # on this thread's stream: c's values, accumulated into in place
            ns.gemm_alpha_beta_out(x, w, out, out, ALPHA, BETA)
            return out
        raise AssertionError(f"unknown op {op}")


def _visit_order(thread, n):
    """Threads t and t + 4 share an order (they race on every first call); the four orders start a
    quarter of the list apart."""
    start = (thread % 4) * n // 4
    return [(start + i) % n for i in range(n)]


def _race(cases, run):
    """THREADS threads, each on its own stream, call run(case) for every case in their visit order,
    synchronise their stream once, then check every result (case.check). Each round starts cold
    where RELOAD_BEFORE says. Failures are collected with their thread and round."""
    streams = [torch.cuda.Stream() for _ in range(THREADS)]
    torch.cuda.synchronize()
    errors = []
    lock = threading.Lock()
    calls = [0]

    def worker(thread, round_, barrier):
        stream = streams[thread]
        try:
            barrier.wait()
            results = []
            with torch.cuda.stream(stream):
                for i in _visit_order(thread, len(cases)):
                    results.append((cases[i], run(cases[i])))
            stream.synchronize()
            with torch.cuda.stream(stream):
                for case, y in results:
                    case.check(y)
            with lock:
                calls[0] += len(results)
        except Exception as e:  # noqa: BLE001 - reported by the main thread with its case
            with lock:
                errors.append(f"thread {thread} round {round_}: {type(e).__name__}: {e}")

    for round_ in range(ROUNDS):
        if round_ in RELOAD_BEFORE:
            tgemm.reload_config()
        barrier = threading.Barrier(THREADS)
        threads = [threading.Thread(target=worker, args=(t, round_, barrier)) for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    torch.cuda.synchronize()  # raises on a sticky CUDA error
    assert not errors, "\n".join(errors[:20])
    assert calls[0] == THREADS * ROUNDS * len(cases)


def _a16w16_cases():
    torch.manual_seed(0)
    return [Case(i, *c) for i, c in enumerate(CASES)]


@requires_cuda
def test_threads_on_streams_through_torch_ops():
    _race(_a16w16_cases(), lambda case: case.call(torch.ops.tgemm))


@requires_cuda
def test_threads_on_streams_through_the_wrappers():
    _race(_a16w16_cases(), lambda case: case.call(tgemm))


# ---------------------------------------------------------------------------------------------
# Every other op family through torch.ops.tgemm: gemm_a8w8 (FP8 per tensor, FP8 and INT8 per token
# x per channel, INT8 per tensor), gemm_a8w8_blockscale (both x_scale layouts, and a shape cuBLASLt
# refuses), batched_gemm (and its out= form), gmm, tgmm (and tgmm_out with bias_grad and
# accumulate), grouped_gemm, m_grouped_gemm_masked, topk_softmax, grouped_topk, fused_moe and the
# five quantization ops, with empty groups, experts no slot chooses and masks of 0. Inputs and the
# float32 references (those of the families' own tests) are built once, before the threads; out=
# outputs are NaN-poisoned on the thread's stream; the functional forms allocate theirs.

OPS = torch.ops.tgemm
FP8 = torch.float8_e4m3fn


class FamilyCase:
    """One problem of an op family: ``run()`` calls the op on the current stream and returns its
    outputs, ``check(outputs)`` compares them with the reference built with the inputs."""

    def __init__(self, name, run, check):
        self.name, self.run, self._check = name, run, check

    def describe(self):
        return self.name

    def check(self, outputs):
        try:
            self._check(outputs)
        except AssertionError as e:
            raise AssertionError(f"{self.name}: {e}") from e


def _nan(*shape, dtype):
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


def _a8w8(m, n, k, dtype, per_row, out_dtype, bias_dtype, seed):
    xq, wq, xs, ws, b = a8w8_make(m, n, k, dtype, per_row, per_row, bias_dtype, seed)
    ref, bound = a8w8_reference(xq, wq, xs, ws, b, out_dtype), a8w8_bound(xq, wq, xs, ws)
    recipe = "per-token x per-channel" if per_row else "per-tensor"
    return FamilyCase(
        f"gemm_a8w8 M={m} N={n} K={k} {dtype}->{out_dtype} {recipe} bias={bias_dtype}",
        lambda: OPS.gemm_a8w8(xq, wq, xs, ws, b, out_dtype),
        lambda y: assert_close_quantized(y, ref, out_dtype, k, bound),
    )


def _blockscale(m, n, k, mn_major, out_dtype, bias_dtype, seed):
    xq, wq, xs, ws, b = blockscale_make(m, n, k, mn_major, bias_dtype, seed)
    ref, bound = blockscale_reference(xq, wq, xs, ws, b), blockscale_bound(xq, wq, xs, ws)
    return FamilyCase(
        f"gemm_a8w8_blockscale M={m} N={n} K={k} ->{out_dtype} mn_major={mn_major} bias={bias_dtype}",
        lambda: OPS.gemm_a8w8_blockscale(xq, wq, xs, ws, b, out_dtype),
        lambda y: assert_close_quantized(y, ref, out_dtype, k, bound),
    )


def _batched(batch, m, n, k, ta, tb, dtype, out_dtype, bias, out_form, seed):
    a, b, bb = batched_make(batch, m, n, k, ta, tb, dtype, bias, seed)
    ref = batched_reference(a, b, ta, tb, bb)

    def run():
        if not out_form:
            return OPS.batched_gemm(a, b, ta, tb, bb, out_dtype)
        out = _nan(batch, m, n, dtype=out_dtype)
        OPS.batched_gemm_out(a, b, out, ta, tb, bb)
        return out

    def check(y):
        assert y.dtype == out_dtype
        batched_assert_close(y, ref)

    form = "batched_gemm_out" if out_form else "batched_gemm"
    return FamilyCase(
        f"{form} B={batch} M={m} N={n} K={k} ta={ta} tb={tb} {dtype}->{out_dtype} bias={bias}", run, check
    )


def _gmm(m, n, k, sizes, dtype, out_dtype, transpose, bias, seed):
    lhs, rhs, gs, b = gmm_make(m, n, k, sizes, dtype, transpose, bias, seed)
    ref = gmm_reference(lhs, rhs, gs, b, transpose, out_dtype)

    def check(y):
        assert y.dtype == out_dtype
        gmm_assert_close(y, ref)

    return FamilyCase(
        f"gmm M={m} N={n} K={k} sizes={sizes} {dtype}->{out_dtype} transpose_rhs={transpose} bias={bias}",
        lambda: OPS.gmm(lhs, rhs, gs, b, transpose, out_dtype),
        check,
    )


def _tgmm(m, k, n, sizes, dtype, col_major, persistent, accumulate, seed):
    """tgmm (functional), or with accumulate tgmm_out adding into an fp32 out and writing bias_grad."""
    lhs, rhs, gs = make_tgmm(m, k, n, sizes, dtype, col_major, seed)
    g = len(sizes)
    before = torch.randn(g, k, n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed))
    ref, ref_bias = tgmm_reference(lhs, rhs, gs, before if accumulate else None)

    def run():
        if not accumulate:
            return OPS.tgmm(lhs, rhs, gs, persistent, None), None
        out = before.clone()  # on this thread's stream
        bias_grad = _nan(g, k, dtype=torch.float32)
        OPS.tgmm_out(lhs, rhs, gs, out, bias_grad, True, persistent)
        return out, bias_grad

    def check(outputs):
        out, bias_grad = outputs
        grouped_assert_close(out, ref)
        if bias_grad is not None:
            grouped_assert_close(bias_grad, ref_bias)

    form = "tgmm_out(accumulate, bias_grad)" if accumulate else "tgmm"
    return FamilyCase(
        f"{form} M={m} K={k} N={n} sizes={sizes} {dtype} col_major={col_major} persistent={persistent}", run, check
    )


def _grouped_gemm(t, topk, h, n, e, per_slot, transpose, weighted, out_dtype, seed):
    x, w, ids = make_grouped(t, topk, h, n, e, per_slot, transpose, seed=seed, invalid=True)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tw = torch.rand(t, topk, device="cuda", generator=gen) if weighted else None
    ref = grouped_reference(x, w, ids, tw, transpose)

    def check(y):
        assert y.dtype == out_dtype
        grouped_assert_close(y, ref)

    return FamilyCase(
        f"grouped_gemm T={t} topk={topk} H={h} N={n} E={e} per_slot={per_slot} transpose={transpose} "
        f"weighted={weighted} ->{out_dtype}",
        lambda: OPS.grouped_gemm(x, w, ids, tw, transpose, out_dtype),
        check,
    )


def _masked(g, max_m, n, k, masks, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(g, max_m, k, device="cuda", generator=gen).to(torch.bfloat16)
    w = (torch.randn(g, n, k, device="cuda", generator=gen) / 8).to(torch.bfloat16)
    masked_m = torch.tensor(masks, dtype=torch.int32, device="cuda")
    rows = [min(max(mm, 0), max_m) for mm in masks]
    refs = [x[i, : rows[i]].float() @ w[i].float().t() for i in range(g)]

    def run():
        out = _nan(g, max_m, n, dtype=torch.bfloat16)
        OPS.m_grouped_gemm_masked(x, w, out, masked_m, max_m // 2)
        return out

    def check(out):
        for i in range(g):
            grouped_assert_close(out[i, : rows[i]], refs[i])
            assert torch.isnan(out[i, rows[i] :]).all(), f"group {i}: rows at or past masked_m were written"

    return FamilyCase(f"m_grouped_gemm_masked G={g} max_m={max_m} N={n} K={k} masked_m={masks}", run, check)


def _topk_softmax(t, e, k, dtype, renormalize, seed):
    gating = randn(t, e, dtype=torch.float32, seed=seed).to(dtype)
    probs = gating.float().softmax(-1)
    ref_w, ref_ids = probs.topk(k, dim=-1)
    if renormalize:
        ref_w = ref_w / ref_w.sum(-1, keepdim=True)

    def check(outputs):
        weights, ids = outputs
        assert weights.dtype == torch.float32 and ids.dtype == torch.int32 and ids.shape == (t, k)
        # Ids may differ only where two probabilities tie: compare the probabilities they pick.
        torch.testing.assert_close(probs.gather(1, ids.long()), probs.gather(1, ref_ids), rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(weights, ref_w, rtol=1e-5, atol=1e-6)

    return FamilyCase(
        f"topk_softmax T={t} E={e} k={k} {dtype} renormalize={renormalize}",
        lambda: OPS.topk_softmax(gating, k, renormalize),
        check,
    )


def _grouped_topk(t, e, n_group, topk_group, k, scoring, bias, seed):
    gating = randn(t, e, dtype=torch.float32, seed=seed)
    correction = randn(e, dtype=torch.float32, scale=0.1, seed=seed + 1) if bias else None
    ref_w, ref_ids = reference_grouped_topk(gating, correction, n_group, topk_group, k, scoring, True, 2.5)

    def check(outputs):
        weights, ids = outputs
        assert torch.equal(ids.long().sort(-1)[0], ref_ids.sort(-1)[0])
        order = ref_ids.argsort(-1)
        torch.testing.assert_close(
            weights.gather(1, ids.long().argsort(-1)), ref_w.gather(1, order), rtol=1e-5, atol=1e-6
        )

    return FamilyCase(
        f"grouped_topk T={t} E={e} n_group={n_group} topk_group={topk_group} k={k} {scoring} bias={bias}",
        lambda: OPS.grouped_topk(gating, correction, n_group, topk_group, k, scoring, True, 2.5),
        check,
    )


def _fused_moe(t, k, e, h, inter, dtype, out_dtype, activation, routing, seed):
    hidden, w1, w2, weights, ids = make_moe(t, k, e, h, inter, dtype, seed, routing)
    ref = reference_moe(hidden, w1, w2, weights, ids, activation)

    def check(y):
        assert y.dtype == out_dtype
        moe_assert_close(y, ref, dtype if out_dtype != dtype else None)

    return FamilyCase(
        f"fused_moe T={t} k={k} E={e} H={h} I={inter} {dtype}->{out_dtype} {activation} routing={routing}",
        lambda: OPS.fused_moe(hidden, w1, w2, weights, ids, activation, None, out_dtype),
        check,
    )


def _quant(op, m, k, dtype, seed, qtype=FP8, mn_major=False):
    """The quantization op's codes and scales against the CPU reference of test_quant_ops.py, bit
    for bit."""
    x = quant_input((m,), k, dtype, seed)
    x32 = x.float().cpu()
    qmax = 127.0 if qtype == torch.int8 else 448.0
    static_scale = torch.tensor([2.0**-7], device="cuda")
    if op == "quant_fp8_per_tensor":
        want_scale = quant_scale_of(x32.abs().amax().reshape(1), qmax)
    elif op == "quant_fp8_per_tensor_static":
        want_scale = static_scale.cpu()
    elif op == "quant_per_token":
        want_scale = quant_scale_of(x32.abs().amax(dim=-1, keepdim=True), qmax)
    elif op == "quant_fp8_per_block_1x128":
        want_scale = quant_scale_of(quant_block_amax(x32, 1, 128), qmax)
    else:
        want_scale = quant_scale_of(quant_block_amax(x32, 128, 128), qmax)
    rows, cols = (128, 128) if op == "quant_fp8_per_block_128x128" else (1, 128)
    blocked = op.startswith("quant_fp8_per_block")
    want_codes = quant_codes(x32, quant_expand(want_scale, rows, cols, m, k) if blocked else want_scale, qtype)

    def run():
        if op == "quant_fp8_per_tensor":
            return OPS.quant_fp8_per_tensor(x)
        if op == "quant_fp8_per_tensor_static":
            return OPS.quant_fp8_per_tensor_static(x, static_scale), None  # the scale is an input
        if op == "quant_per_token":
            return OPS.quant_per_token(x, qtype)
        if op == "quant_fp8_per_block_1x128":
            return OPS.quant_fp8_per_block_1x128(x, mn_major)
        return OPS.quant_fp8_per_block_128x128(x)

    def check(outputs):
        q, scale = outputs
        assert q.dtype == qtype and q.shape == x.shape
        assert scale is None or torch.equal(scale.cpu(), want_scale), "scales differ"
        quant_assert_codes_equal(q, want_codes)

    layout = " mn_major" if mn_major else ""
    return FamilyCase(f"{op} M={m} K={k} {dtype}->{qtype}{layout}", run, check)


def _family_cases():
    bf16, fp16, fp32 = BF16, FP16, FP32
    return [
        # gemm_a8w8: cuBLASLt's fused FP8 (scalar and outer-vector scales) and staged INT8.
        _a8w8(1, 4096, 1024, FP8, False, bf16, None, 1),
        _a8w8(333, 1000, 528, FP8, True, fp16, fp32, 2),
        _a8w8(13, 1000, 528, torch.int8, True, bf16, bf16, 3),
        _a8w8(64, 512, 256, torch.int8, False, fp32, fp32, 4),
        # gemm_a8w8_blockscale: cuBLASLt (N a multiple of 4) and the reference kernel (N = 130).
        _blockscale(37, 200, 272, False, bf16, None, 5),
        _blockscale(129, 1000, 528, True, fp16, fp32, 6),
        _blockscale(5, 130, 144, False, fp32, fp32, 7),
        # batched_gemm: stacked nn.Linear weights, a transposed a, the out= form.
        _batched(4, 37, 64, 72, False, True, bf16, bf16, True, False, 8),
        _batched(3, 1, 130, 257, True, False, fp16, fp32, False, True, 9),
        # gmm, tgmm: empty groups (0 sizes), a sum past M (clamped), both lhs layouts, accumulate.
        _gmm(517, 72, 96, [40, 0, 77, 3, 0, 8, 389, 0], bf16, bf16, False, False, 10),
        _gmm(301, 130, 257, [7, 0, 129, 1, 0, 200], fp16, fp32, True, True, 11),
        _tgmm(520, 72, 64, [100, 0, 77, 3, 0, 340], bf16, False, True, False, 12),
        _tgmm(301, 65, 33, [7, 0, 129, 1, 0, 163], fp16, True, False, True, 13),
        # grouped_gemm (some ids out of range) and its weighted sum; the masked form.
        _grouped_gemm(37, 3, 64, 72, 8, False, False, False, bf16, 14),
        _grouped_gemm(21, 4, 96, 130, 6, True, True, True, fp32, 15),
        _grouped_gemm(9, 2, 64, 48, 64, False, True, False, bf16, 30),  # most experts' groups empty
        _masked(6, 130, 72, 64, [0, 130, 1, 65, 500, -7], 16),
        _masked(4, 16, 128, 256, [3, 0, 16, 9], 17),
        # Routing and the MoE layer (a third of the experts chosen by no slot).
        _topk_softmax(33, 64, 4, fp32, False, 18),
        _topk_softmax(7, 300, 6, bf16, True, 19),
        _grouped_topk(33, 256, 8, 4, 8, "sigmoid", True, 20),
        _fused_moe(37, 2, 9, 128, 96, bf16, bf16, "silu", "some_empty", 21),
        _fused_moe(29, 3, 4, 64, 33, fp16, fp32, "gelu", "skewed", 22),
        # Quantization, odd M and K.
        _quant("quant_fp8_per_tensor", 33, 129, bf16, 23),
        _quant("quant_fp8_per_tensor_static", 7, 4096, fp16, 24),
        _quant("quant_per_token", 257, 384, bf16, 25),
        _quant("quant_per_token", 3, 4095, fp16, 26, qtype=torch.int8),
        _quant("quant_fp8_per_block_1x128", 130, 1000, bf16, 27),
        _quant("quant_fp8_per_block_1x128", 19, 1024, fp16, 28, mn_major=True),
        _quant("quant_fp8_per_block_128x128", 257, 384, bf16, 29),
    ]


@requires_cuda
def test_threads_on_streams_every_op_family():
    cases = _family_cases()
    torch.cuda.synchronize()
    _race(cases, lambda case: case.run())
