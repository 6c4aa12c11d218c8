"""torch.ops.tgemm.gmm (and tgemm.gmm): results against a per-group fp32 torch reference with the
documented device-side rules (negative sizes count as 0, a sum above M is clamped, rows past the
sum are zeros), opcheck, torch.compile(fullgraph=True), CUDA-graph replay with group sizes changed
on the device, errors. Tolerance: the output dtype's rounding plus fp32 summation over K. Every
test runs under both grouped backends (TGEMM_GROUPED_BACKEND=tile and =cutlass; the CUTLASS kernel
takes the calls without bias whose K and N are multiples of 8, with out of the operands' dtype).
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import device_arch, requires_cuda

pytestmark = requires_cuda


@pytest.fixture(autouse=True, params=["tile", "cutlass"])
def grouped_backend(request, tgemm_env):
    """The backend gmm runs on (TGEMM_GROUPED_BACKEND, read on reload_config())."""
    tgemm_env.setenv("TGEMM_GROUPED_BACKEND", request.param)
    return request.param


def reference(lhs, rhs, sizes, bias, transpose_rhs, out_dtype):
    m = lhs.shape[0]
    n = rhs.shape[1] if transpose_rhs else rhs.shape[2]
    out = torch.zeros(m, n, device=lhs.device, dtype=torch.float32)
    begin = 0
    for g, size in enumerate(sizes.tolist()):
        end = min(m, begin + max(size, 0))
        w = rhs[g].float().T if transpose_rhs else rhs[g].float()
        if end > begin:
            out[begin:end] = lhs[begin:end].float() @ w
            if bias is not None:
                out[begin:end] += bias[g].float()
        begin = end
    return out.to(out_dtype)


def make(m, n, k, sizes, dtype=torch.bfloat16, transpose_rhs=False, bias=False, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    groups = len(sizes)
    lhs = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    shape = (groups, n, k) if transpose_rhs else (groups, k, n)
    rhs = (torch.randn(*shape, device="cuda", generator=g) / k**0.5).to(dtype)
    b = torch.randn(groups, n, device="cuda", generator=g).to(dtype) if bias else None
    return lhs, rhs, torch.tensor(sizes, dtype=torch.int32, device="cuda"), b


def assert_close(out, ref):
    tol = 2e-2 if out.dtype != torch.float32 else 1e-4
    torch.testing.assert_close(out.float(), ref.float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("transpose_rhs", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(
    "sizes",
    [[40, 0, 77, 3, 0, 8], [128], [0, 128, 0], [10, 20], [-4, 50, 200], [0, 0, 0]],
    ids=["zeros", "one", "all_in_one", "tail", "clamped", "empty_groups"],
)
def test_matches_reference(dtype, transpose_rhs, bias, sizes):
    lhs, rhs, gs, b = make(128, 96, 72, sizes, dtype, transpose_rhs, bias)
    out = tgemm.gmm(lhs, rhs, gs, b, transpose_rhs)
    assert out.dtype == dtype and out.shape == (128, 96)
    assert_close(out, reference(lhs, rhs, gs, b, transpose_rhs, dtype))


def test_fp32_output_and_many_groups():
    sizes = torch.randint(0, 9, (300,)).tolist()  # 300 groups: the offsets scan runs in chunks of 256
    m = sum(sizes) + 5
    lhs, rhs, gs, b = make(m, 40, 33, sizes, bias=True, seed=3)
    out = tgemm.gmm(lhs, rhs, gs, b, False, torch.float32)
    assert out.dtype == torch.float32
    assert_close(out, reference(lhs, rhs, gs, b, False, torch.float32))


def _opcheck_cases():
    yield make(64, 32, 48, [20, 0, 44])
    yield (*make(50, 16, 32, [10, 60], transpose_rhs=True, bias=True)[:3], None, True)
    lhs, rhs, gs, b = make(30, 24, 16, [7, 7, 7], bias=True)
    yield (lhs, rhs, gs, b.float(), False, torch.float32)


@pytest.mark.parametrize("args", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(args):
    torch.library.opcheck(torch.ops.tgemm.gmm.default, args)


def test_compile_fullgraph():
    lhs, rhs, gs, b = make(96, 64, 32, [30, 0, 66], transpose_rhs=True, bias=True)

    def f(x, w, s, bias):
        return torch.relu(tgemm.gmm(x, w, s, bias, True))

    compiled = torch.compile(f, fullgraph=True)
    assert_close(compiled(lhs, rhs, gs, b), torch.relu(reference(lhs, rhs, gs, b, True, lhs.dtype).float()))


def test_cuda_graph_reads_group_sizes_at_replay():
    lhs, rhs, gs, b = make(192, 80, 64, [64, 64, 64], bias=True)
    tgemm.gmm(lhs, rhs, gs, b)  # warm the stream's workspace before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = tgemm.gmm(lhs, rhs, gs, b)
    for sizes in ([0, 192, 0], [1, 2, 150], [100, -1, 500], [5, 0, 0]):
        gs.copy_(torch.tensor(sizes, dtype=torch.int32))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, reference(lhs, rhs, gs, b, False, lhs.dtype))


# (mutation, message, whether the fake kernel raises it too: it checks no strides, which only the
# real kernel sees).
BAD_CASES = [
    (lambda a: a.update(lhs=a["lhs"].float()), "gmm: lhs.dtype must be torch.bfloat16 or torch.float16", True),
    (lambda a: a.update(gs=a["gs"].float()), "gmm: group_sizes.dtype must be torch.int32, got torch.float32", True),
    (lambda a: a.update(gs=a["gs"].long()), "gmm: group_sizes.dtype torch.int64 is not a tgemm type", True),
    (lambda a: a.update(gs=a["gs"][:2]), "gmm: group_sizes.size(0) must equal rhs.size(0) (G), got 2 vs 3", True),
    (lambda a: a.update(lhs=a["lhs"][:, :40]), "gmm: rhs.size(1) must equal lhs.size(1) (K)", True),
    (lambda a: a.update(b=a["b"][:, :10]), "gmm: bias must have shape [G, N] = [3, 32], got [3, 10]", True),
    (
        lambda a: a.update(rhs=a["rhs"].transpose(1, 2).contiguous().transpose(1, 2)),
        "gmm: rhs.stride(2) must be 1",
        False,
    ),
]


@pytest.mark.parametrize("mutate, message, fake_raises", BAD_CASES)
def test_bad_input_names_the_argument(mutate, message, fake_raises):
    lhs, rhs, gs, b = make(64, 32, 48, [20, 0, 44], bias=True)
    a = {"lhs": lhs, "rhs": rhs, "gs": gs, "b": b}
    mutate(a)
    with pytest.raises(tgemm.TgemmError) as info:
        tgemm.gmm(a["lhs"], a["rhs"], a["gs"], a["b"])
    assert message in str(info.value)
    if fake_raises:
        with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
            fakes = {k: mode.from_tensor(v) for k, v in a.items()}
            with pytest.raises(tgemm.TgemmError) as fake_info:
                torch.ops.tgemm.gmm(fakes["lhs"], fakes["rhs"], fakes["gs"], fakes["b"])
        assert message in str(fake_info.value)


def test_describe_gmm_names_the_level_and_gmm_follows_its_table(grouped_backend, tgemm_env, monkeypatch, tmp_path):
    """TGEMM_GROUPED_BACKEND forces a backend (level forced); unset, a row of TGEMM_CONFIG_GMM for
    the call's key (G, the bucket of M / G, N, K, layout, dtypes, bias) chooses (level table) and
    gmm's result stays right; a call of another bucket gets the default rule."""
    lhs, rhs, sizes, _ = make(4 * 64, 256, 128, [64, 50, 78, 64], transpose_rhs=True)
    forced = tgemm.describe_gmm(lhs, rhs, sizes, transpose_rhs=True)
    assert forced["level"] == "forced"
    assert (forced["kernelName"] == "tile") == (grouped_backend == "tile")
    tgemm_env.delenv("TGEMM_GROUPED_BACKEND")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    table = tmp_path / "tuned_gmm.csv"
    table.write_text(
        "arch,sm_count,G,rows_per_group,N,K,rhs,dtype,solution\n"
        f"{device_arch()},{props.multi_processor_count},4,64,256,128,gnk,torch.bfloat16,tile\n"
    )
    monkeypatch.setenv("TGEMM_CONFIG_GMM", str(table))
    tgemm.reload_config()
    try:
        info = tgemm.describe_gmm(lhs, rhs, sizes, transpose_rhs=True)
        assert (info["level"], info["kernelName"], info["where"]) == ("table", "tile", f"{table}:2")
        out = tgemm.gmm(lhs, rhs, sizes, None, True)
        assert_close(out, reference(lhs, rhs, sizes, None, True, torch.bfloat16))
        half = tgemm.describe_gmm(lhs[: 4 * 32], rhs, sizes, transpose_rhs=True)
        assert half["level"] == "default"
    finally:
        monkeypatch.delenv("TGEMM_CONFIG_GMM")
        tgemm.reload_config()
