"""Concurrency through the torch ops: 8 Python threads, each on its own ``torch.cuda.Stream``, call
every op of ``torch.ops.tgemm`` (functional and out= forms, bf16 and fp16 inputs, bf16/fp16/fp32
outputs, bias, erf and tanh GELU, ReLU, alpha/beta with a separate c and in place) on mixed shapes
(M 1..300, odd values included). The first calls of each shape race: ``tgemm.reload_config()``
forgets every cached dispatch decision before rounds 0 and 2, and threads start each round
together. out= outputs are NaN-poisoned on the thread's stream before the call; every result is
compared with a float32 torch reference. The ops release the GIL while the library runs, so the
threads really are inside the dispatcher at once. The same is run through the ``tgemm`` wrappers
(the ``tgemm._C`` eager entry). The C++ counterpart is tests/gpu/test_concurrency.cpp.
"""

from __future__ import annotations

import threading

import torch
import torch.nn.functional as F

import tgemm
from tgemm_test_utils import make_linear_inputs, randn, requires_cuda, tolerance

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


def _race(ns):
    torch.manual_seed(0)
    cases = [Case(i, *c) for i, c in enumerate(CASES)]
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
                    results.append((cases[i], cases[i].call(ns)))
            stream.synchronize()
            with torch.cuda.stream(stream):
                for case, y in results:
                    assert y.dtype == case.out_dtype and y.shape == case.ref.shape, case.describe()
                    assert torch.isfinite(y).all(), f"{case.describe()}: non-finite output"
                    rtol, atol = tolerance(case.out_dtype)
                    torch.testing.assert_close(
                        y.float(), case.ref, rtol=rtol, atol=atol, msg=lambda m, c=case: f"{c.describe()}: {m}"
                    )
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


@requires_cuda
def test_threads_on_streams_through_torch_ops():
    _race(torch.ops.tgemm)


@requires_cuda
def test_threads_on_streams_through_the_wrappers():
    _race(tgemm)
