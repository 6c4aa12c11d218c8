"""tgemm.topk_softmax, tgemm.grouped_topk and tgemm.fused_moe (and their torch ops): results against
pure-torch references (softmax + topk, vLLM's grouped_topk, an fp32 MoE layer looping over experts)
with the documented device rules (out-of-range ids and experts on other ranks contribute 0), opcheck,
torch.compile(fullgraph=True), CUDA-graph replay with new routing, errors (the same text from the
real and the fake kernel). The fused_moe tests run under both grouped backends
(TGEMM_GROUPED_BACKEND=tile and =cutlass; the CUTLASS path takes H and I multiples of 8), and
test_fused_moe_prefill_* force the CUTLASS path on prefill-sized layers.
"""

from __future__ import annotations

import pytest
import torch

import tgemm
from tgemm_test_utils import assert_bad_input, device_arch, randn, requires_cuda

pytestmark = requires_cuda


@pytest.fixture(params=["tile", "cutlass"])
def grouped_backend(request, tgemm_env):
    """The backend fused_moe runs its GEMMs on (TGEMM_GROUPED_BACKEND, read on reload_config())."""
    tgemm_env.setenv("TGEMM_GROUPED_BACKEND", request.param)
    return request.param


def reference_moe(hidden, w1, w2, topk_weights, topk_ids, activation="silu", expert_map=None):
    """The layer in fp32, expert by expert, with the documented rule for ids out of range."""
    t, k = topk_ids.shape
    e_local, inter = w1.shape[0], w1.shape[1] // 2
    ids = topk_ids.long()
    if expert_map is not None:
        g = expert_map.shape[0]
        valid = (ids >= 0) & (ids < g)
        ids = torch.where(valid, expert_map.long()[ids.clamp(0, max(g - 1, 0))], torch.full_like(ids, -1))
    out = torch.zeros(t, hidden.shape[1], device=hidden.device)
    act = torch.nn.functional.silu if activation == "silu" else torch.nn.functional.gelu
    for e in range(e_local):
        tok, slot = torch.nonzero(ids == e, as_tuple=True)
        if tok.numel() == 0:
            continue
        x = hidden[tok].float()
        gate_up = x @ w1[e].float().t()
        y = (act(gate_up[:, :inter]) * gate_up[:, inter:]) @ w2[e].float().t()
        out.index_add_(0, tok, y * topk_weights[tok, slot].float()[:, None])
    return out


def make_moe(t, k, e, h, inter, dtype=torch.bfloat16, seed=0, routing="uniform", id_range=None):
    hidden = randn(t, h, dtype=dtype, seed=seed)
    w1 = randn(e, 2 * inter, h, dtype=dtype, scale=h**-0.5, seed=seed + 1)
    w2 = randn(e, h, inter, dtype=dtype, scale=inter**-0.5, seed=seed + 2)
    gen = torch.Generator(device="cuda").manual_seed(seed + 3)
    n = id_range or e
    if routing == "one":
        ids = torch.full((t, k), n - 1, dtype=torch.int32, device="cuda")
    else:
        ids = torch.stack([torch.randperm(n, generator=gen, device="cuda")[:k] for _ in range(t)]).int()
        if routing == "skewed":
            ids[: (3 * t) // 4, 0] = 1
            ids[: (3 * t) // 4, 1:] = torch.where(ids[: (3 * t) // 4, 1:] == 1, 0, ids[: (3 * t) // 4, 1:])
        elif routing == "some_empty":
            ids = ids - ids % 3 + (ids % 3 != 0).int()  # experts 0, 3, 6... never chosen
    weights = torch.rand(t, k, generator=gen, device="cuda")
    return hidden, w1, w2, weights, ids


def assert_close(out, ref, inputs=None):
    """inputs: the layer's input dtype where out is wider. gate_up and act are held in the input
    dtype (as vLLM's fused_moe does), so an fp32 out carries bf16 rounding from them."""
    tol = {torch.bfloat16: 3e-2, torch.float16: 5e-3, torch.float32: 5e-3}[inputs or out.dtype]
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), ref.float(), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------------
# fused_moe


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize("routing", ["uniform", "skewed", "some_empty", "one"])
def test_fused_moe_matches_reference(dtype, activation, routing, grouped_backend):
    hidden, w1, w2, tw, ids = make_moe(45, 2, 8, 128, 96, dtype, routing=routing)
    out = tgemm.fused_moe(hidden, w1, w2, tw, ids, activation)
    assert out.dtype == dtype and out.shape == (45, 128)
    assert_close(out, reference_moe(hidden, w1, w2, tw, ids, activation))


@pytest.mark.parametrize("h,inter,e,k", [(100, 60, 8, 2), (64, 33, 4, 3), (96, 40, 64, 6), (128, 64, 1, 1)])
def test_fused_moe_unaligned_sizes_and_fp32_out(h, inter, e, k, grouped_backend):
    hidden, w1, w2, tw, ids = make_moe(33, k, e, h, inter, seed=7)
    out = tgemm.fused_moe(hidden, w1, w2, tw.bfloat16(), ids, out_dtype=torch.float32)
    assert out.dtype == torch.float32
    assert_close(out, reference_moe(hidden, w1, w2, tw.bfloat16(), ids), inputs=hidden.dtype)


def test_fused_moe_expert_map_and_out_of_range_ids(grouped_backend):
    hidden, w1, w2, tw, ids = make_moe(40, 4, 6, 64, 48, seed=3, id_range=16)
    expert_map = torch.full((16,), -1, dtype=torch.int32, device="cuda")
    expert_map[torch.tensor([2, 5, 7, 8, 11, 13], device="cuda")] = torch.arange(6, dtype=torch.int32, device="cuda")
    expert_map[9] = 6  # a local index >= E: contributes 0
    ids[0, 0] = -3  # ids outside [0, E_global): contribute 0
    ids[1, 1] = 16
    out = tgemm.fused_moe(hidden, w1, w2, tw, ids, expert_map=expert_map)
    assert_close(out, reference_moe(hidden, w1, w2, tw, ids, expert_map=expert_map))
    # Without the map the same ids index the local experts directly.
    assert_close(tgemm.fused_moe(hidden, w1, w2, tw, ids), reference_moe(hidden, w1, w2, tw, ids))


def test_fused_moe_empty_shapes(grouped_backend):
    hidden, w1, w2, tw, ids = make_moe(6, 2, 4, 32, 16)
    assert tgemm.fused_moe(hidden[:0], w1, w2, tw[:0], ids[:0]).shape == (0, 32)
    no_slot = torch.empty(6, 0, device="cuda")
    zeros = tgemm.fused_moe(hidden, w1, w2, no_slot, no_slot.int())
    assert torch.equal(zeros, torch.zeros_like(zeros))


def test_describe_fused_moe_names_the_level_and_fused_moe_follows_its_table(
    grouped_backend, tgemm_env, monkeypatch, tmp_path
):
    """TGEMM_GROUPED_BACKEND forces a backend (level forced); unset, a row of TGEMM_CONFIG_FMOE for
    the call's key (the power-of-two bucket of T, E, topk, H, I, dtype, activation) chooses (level
    table) and fused_moe's result stays right; a call of another bucket gets the default rule."""
    hidden, w1, w2, tw, ids = make_moe(48, 2, 8, 128, 96, routing="skewed", seed=5)
    forced = tgemm.describe_fused_moe(hidden, w1, w2, tw, ids)
    assert forced["level"] == "forced"
    assert (forced["kernelName"] == "tile") == (grouped_backend == "tile")
    tgemm_env.delenv("TGEMM_GROUPED_BACKEND")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    table = tmp_path / "tuned_fmoe.csv"
    table.write_text(
        "arch,sm_count,tokens,E,topk,H,I,dtype,solution\n"
        f"{device_arch()},{props.multi_processor_count},64,8,2,128,96,torch.bfloat16,tile\n"
    )
    monkeypatch.setenv("TGEMM_CONFIG_FMOE", str(table))
    tgemm.reload_config()
    try:
        info = tgemm.describe_fused_moe(hidden, w1, w2, tw, ids)
        assert (info["level"], info["kernelName"], info["where"]) == ("table", "tile", f"{table}:2")
        assert_close(tgemm.fused_moe(hidden, w1, w2, tw, ids), reference_moe(hidden, w1, w2, tw, ids))
        assert tgemm.describe_fused_moe(hidden[:32], w1, w2, tw[:32], ids[:32])["level"] == "default"
        assert tgemm.describe_fused_moe(hidden, w1, w2, tw, ids, "gelu")["level"] == "default"
    finally:
        monkeypatch.delenv("TGEMM_CONFIG_FMOE")
        tgemm.reload_config()


@pytest.mark.parametrize("routing", ["uniform", "skewed", "some_empty", "one"])
def test_fused_moe_prefill_on_cutlass(routing, tgemm_env):
    """A prefill-sized layer (512 tokens x 4 of 16 experts) on the CUTLASS path, forced."""
    tgemm_env.setenv("TGEMM_GROUPED_BACKEND", "cutlass")
    hidden, w1, w2, tw, ids = make_moe(512, 4, 16, 256, 192, seed=21, routing=routing)
    out = tgemm.fused_moe(hidden, w1, w2, tw, ids)
    assert_close(out, reference_moe(hidden, w1, w2, tw, ids))


def test_fused_moe_prefill_cuda_graph_on_cutlass(tgemm_env):
    tgemm_env.setenv("TGEMM_GROUPED_BACKEND", "cutlass")
    hidden, w1, w2, tw, ids = make_moe(256, 2, 8, 128, 64, seed=31)
    tgemm.fused_moe(hidden, w1, w2, tw, ids)  # warm the stream's workspace before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = tgemm.fused_moe(hidden, w1, w2, tw, ids)
    for seed, routing in ((32, "skewed"), (33, "one"), (34, "some_empty")):
        ids.copy_(make_moe(256, 2, 8, 128, 64, seed=seed, routing=routing)[4])
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, reference_moe(hidden, w1, w2, tw, ids))


# ---------------------------------------------------------------------------------------------
# routing


def reference_grouped_topk(gating, bias, n_group, topk_group, k, scoring, renormalize, scaling):
    """vLLM's grouped_topk in fp32 (group score: top-2 sum of the biased scores, else the max)."""
    logits = gating.float()
    scores = logits.sigmoid() if scoring == "sigmoid" else logits.softmax(-1)
    choice = scores + bias if bias is not None else scores
    t, e = choice.shape
    grouped = choice.view(t, n_group, e // n_group)
    group_scores = grouped.topk(2, dim=-1)[0].sum(-1) if bias is not None else grouped.max(-1)[0]
    groups = group_scores.topk(topk_group, dim=-1)[1]
    mask = torch.zeros_like(group_scores).scatter_(1, groups, 1.0)
    mask = mask[:, :, None].expand(t, n_group, e // n_group).reshape(t, e)
    ids = choice.masked_fill(mask == 0, float("-inf")).topk(k, dim=-1)[1]
    weights = scores.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights * scaling, ids


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("e,k", [(8, 2), (60, 4), (128, 8), (300, 6)])
@pytest.mark.parametrize("renormalize", [False, True])
def test_topk_softmax_matches_torch(dtype, e, k, renormalize):
    gating = randn(50, e, dtype=torch.float32, seed=e).to(dtype)
    weights, ids = tgemm.topk_softmax(gating, k, renormalize)
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32 and ids.shape == (50, k)
    ref_w, ref_ids = gating.float().softmax(-1).topk(k, dim=-1)
    if renormalize:
        ref_w = ref_w / ref_w.sum(-1, keepdim=True)
    # Ids may differ only where two probabilities tie; compare the probabilities they pick.
    probs = gating.float().softmax(-1)
    torch.testing.assert_close(probs.gather(1, ids.long()), probs.gather(1, ref_ids), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(weights, ref_w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "e,n_group,topk_group,k,scoring,bias",
    [
        (256, 8, 4, 8, "sigmoid", True),  # DeepSeek-V3
        (256, 8, 4, 8, "softmax", False),
        (64, 4, 2, 6, "sigmoid", False),
        (96, 3, 3, 7, "softmax", True),
    ],
)
def test_grouped_topk_matches_torch(e, n_group, topk_group, k, scoring, bias):
    gating = randn(40, e, dtype=torch.float32, seed=e + k)
    correction = randn(e, dtype=torch.float32, scale=0.1, seed=1) if bias else None
    weights, ids = tgemm.grouped_topk(gating, correction, n_group, topk_group, k, scoring, True, 2.5)
    ref_w, ref_ids = reference_grouped_topk(gating, correction, n_group, topk_group, k, scoring, True, 2.5)
    assert torch.equal(ids.long().sort(-1)[0], ref_ids.sort(-1)[0])
    # Same experts; the weights in the kernel's rank order.
    order = ref_ids.argsort(-1)
    torch.testing.assert_close(weights.gather(1, ids.long().argsort(-1)), ref_w.gather(1, order), rtol=1e-5, atol=1e-6)


def test_routing_nan_logits_give_distinct_ids_in_range():
    gating = randn(4, 32, dtype=torch.float32)
    gating[1] = float("nan")
    gating[1, 9] = 0.5
    _, ids = tgemm.topk_softmax(gating, 4)
    _, gids = tgemm.grouped_topk(gating, None, 4, 2, 4)
    for i in (ids, gids):
        assert ((i >= 0) & (i < 32)).all()
        assert all(len(set(row)) == 4 for row in i.tolist())
        assert i[1, 0].item() == 9


# ---------------------------------------------------------------------------------------------
# opcheck, compile, graphs


def _opcheck_cases():
    gating = randn(12, 16, dtype=torch.float32)
    yield torch.ops.tgemm.topk_softmax.default, (gating, 2, True)
    bias = randn(16, dtype=torch.float32, scale=0.1)
    yield torch.ops.tgemm.grouped_topk.default, (gating, bias, 4, 2, 3, "sigmoid", True, 2.5)
    hidden, w1, w2, tw, ids = make_moe(12, 2, 4, 32, 24)
    yield torch.ops.tgemm.fused_moe.default, (hidden, w1, w2, tw, ids, "silu", None, None)
    expert_map = torch.tensor([0, -1, 1, 2, -1, 3, -1, -1], dtype=torch.int32, device="cuda")
    yield torch.ops.tgemm.fused_moe.default, (hidden, w1, w2, tw, ids, "gelu", expert_map, torch.float32)


@pytest.mark.parametrize("case", list(_opcheck_cases()) if torch.cuda.is_available() else [])
def test_opcheck(case):
    op, args = case
    torch.library.opcheck(op, args)


def test_compile_fullgraph_routing_and_layer():
    hidden, w1, w2, _, _ = make_moe(24, 2, 8, 64, 32)
    gating = randn(24, 8, dtype=torch.bfloat16, seed=9)

    def layer(hidden, gating, w1, w2):
        weights, ids = tgemm.topk_softmax(gating, 2, True)
        return tgemm.fused_moe(hidden, w1, w2, weights, ids) * 2

    out = torch.compile(layer, fullgraph=True)(hidden, gating, w1, w2)
    weights, ids = tgemm.topk_softmax(gating, 2, True)
    assert_close(out, reference_moe(hidden, w1, w2, weights, ids) * 2)


def test_cuda_graph_replays_with_new_routing(grouped_backend):
    hidden, w1, w2, _, _ = make_moe(64, 2, 8, 64, 48, seed=11)
    gating = randn(64, 8, dtype=torch.float32, seed=12)
    weights, ids = tgemm.topk_softmax(gating, 2, True)  # warm the stream's workspace before capture
    tgemm.fused_moe(hidden, w1, w2, weights, ids)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        weights, ids = tgemm.topk_softmax(gating, 2, True)
        out = tgemm.fused_moe(hidden, w1, w2, weights, ids)
    for seed in (13, 14, 15):
        gating.copy_(randn(64, 8, dtype=torch.float32, seed=seed, scale=3.0))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref_w, ref_ids = gating.softmax(-1).topk(2, dim=-1)
        assert torch.equal(ids.long(), ref_ids)
        assert_close(out, reference_moe(hidden, w1, w2, ref_w / ref_w.sum(-1, keepdim=True), ids))


# (call, message, whether the fake kernel raises it too: it checks no strides)
def _bad_cases():
    hidden, w1, w2, tw, ids = make_moe(8, 2, 4, 32, 16)
    gating = randn(8, 16, dtype=torch.float32)
    ids_strided = torch.zeros(8, 4, dtype=torch.int32, device="cuda")[:, ::2]
    return [
        (torch.ops.tgemm.fused_moe, (hidden, w1, w2[:3], tw, ids), "fused_moe: w2.size(0) must equal w1.size(0)", True),
        (torch.ops.tgemm.fused_moe, (hidden.float(), w1, w2, tw, ids), "fused_moe: hidden.dtype must be", True),
        (
            torch.ops.tgemm.fused_moe,
            (hidden, w1, w2, tw[:, :1], ids),
            "fused_moe: topk_weights must have topk_ids's shape [T, k] = [8, 2], got [8, 1]",
            True,
        ),
        (torch.ops.tgemm.fused_moe, (hidden, w1[:, :31], w2, tw, ids), "fused_moe: w1.size(1) must be even", True),
        (
            torch.ops.tgemm.fused_moe,
            (hidden, w1, w2, tw, ids, "relu"),
            "fused_moe: activation must be 'silu' or 'gelu', got 'relu'",
            True,
        ),
        (torch.ops.tgemm.fused_moe, (hidden, w1, w2, tw, ids_strided), "fused_moe: topk_ids must be contiguous", False),
        (torch.ops.tgemm.topk_softmax, (gating, 17), "topk_softmax: k (topk_ids.size(1)) must be <= E", True),
        (
            torch.ops.tgemm.grouped_topk,
            (gating, None, 5, 2, 2),
            "grouped_topk: n_group must be >= 1 and divide E (gating.size(1)), got n_group=5 E=16",
            True,
        ),
        (
            torch.ops.tgemm.grouped_topk,
            (gating, None, 4, 1, 5),
            "grouped_topk: k (topk_ids.size(1)) must be <= topk_group * E / n_group (4",
            True,
        ),
    ]


@pytest.mark.parametrize("index", range(9))
def test_bad_input_names_the_argument(index):
    assert_bad_input(*_bad_cases()[index])


# ---------------------------------------------------------------------------------------------
# patch_moe


class TinyExpert(torch.nn.Module):
    """Mixtral's expert MLP (w1 gate, w3 up, w2 down, SiLU)."""

    def __init__(self, h, inter):
        super().__init__()
        self.w1 = torch.nn.Linear(h, inter, bias=False)
        self.w2 = torch.nn.Linear(inter, h, bias=False)
        self.w3 = torch.nn.Linear(h, inter, bias=False)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.w2(self.act_fn(self.w1(x)) * self.w3(x))


class TinySparseMoe(torch.nn.Module):
    """The computation of transformers' MixtralSparseMoeBlock, on a few random experts."""

    def __init__(self, h, inter, e, k):
        super().__init__()
        self.gate = torch.nn.Linear(h, e, bias=False)
        self.experts = torch.nn.ModuleList(TinyExpert(h, inter) for _ in range(e))
        self.top_k = k

    def forward(self, hidden_states):
        shape = hidden_states.shape
        x = hidden_states.view(-1, shape[-1])
        router_logits = self.gate(x)
        weights, selected = torch.softmax(router_logits, dim=1, dtype=torch.float).topk(self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            tok, slot = torch.where(selected == e)
            out.index_add_(0, tok, expert(x[tok]) * weights[tok, slot, None])
        return out.view(shape), router_logits


def test_patch_moe_matches_the_stock_block_and_restores_it():
    torch.manual_seed(0)
    model = torch.nn.Sequential(TinySparseMoe(64, 96, 8, 2), TinySparseMoe(64, 96, 8, 2)).cuda().bfloat16()
    model[1].experts[3].act_fn = torch.nn.GELU()  # not SiLU: left to its own forward

    def run(x):
        return model[1](model[0](x)[0])[0]

    x = randn(3, 5, 64, dtype=torch.bfloat16, seed=21)
    with torch.no_grad():
        stock = run(x)
        with tgemm.patch_moe(model) as patch:
            assert patch.names == ["0"]
            assert "forward" in model[0].__dict__ and "forward" not in model[1].__dict__
            patched = run(x)
        assert "forward" not in model[0].__dict__
        assert torch.equal(run(x), stock)
    assert_close(patched, stock.float())


class StackedExperts(torch.nn.Module):
    """transformers 5's MixtralExperts / Qwen3MoeExperts: every expert in two 3-D parameters."""

    def __init__(self, h, inter, e):
        super().__init__()
        self.num_experts = e
        self.gate_up_proj = torch.nn.Parameter(torch.randn(e, 2 * inter, h) * h**-0.5)
        self.down_proj = torch.nn.Parameter(torch.randn(e, h, inter) * inter**-0.5)
        self.act_fn = torch.nn.SiLU()

    def forward(self, hidden_states, top_k_index, top_k_weights):
        out = torch.zeros_like(hidden_states)
        for e in range(self.num_experts):
            tok, slot = torch.where(top_k_index == e)
            gate, up = torch.nn.functional.linear(hidden_states[tok], self.gate_up_proj[e]).chunk(2, dim=-1)
            y = torch.nn.functional.linear(self.act_fn(gate) * up, self.down_proj[e])
            out.index_add_(0, tok, (y * top_k_weights[tok, slot, None]).to(out.dtype))
        return out


class StackedSparseMoe(torch.nn.Module):
    """transformers 5's MixtralSparseMoeBlock: its router, then experts(hidden, ids, weights)."""

    def __init__(self, h, inter, e, k):
        super().__init__()
        self.gate = torch.nn.Linear(h, e, bias=False)
        self.experts = StackedExperts(h, inter, e)
        self.top_k = k

    def forward(self, hidden_states):
        x = hidden_states.view(-1, hidden_states.shape[-1])
        probs = torch.softmax(self.gate(x).float(), dim=-1)
        weights, ids = probs.topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return self.experts(x, ids, weights).view(hidden_states.shape)


def test_patch_moe_takes_stacked_experts_as_they_are():
    torch.manual_seed(1)
    model = torch.nn.Sequential(StackedSparseMoe(64, 96, 8, 2), StackedSparseMoe(64, 96, 8, 2)).cuda().bfloat16()
    model[1].experts.act_fn = torch.nn.GELU()  # not SiLU: left to its own forward
    x = randn(3, 5, 64, dtype=torch.bfloat16, seed=22)
    with torch.no_grad():
        stock = model(x)
        with tgemm.patch_moe(model) as patch:
            assert patch.names == ["0.experts"]
            assert "forward" not in model[0].__dict__ and "forward" in model[0].experts.__dict__
            patched = model(x)
            assert len(tgemm.patch_moe(model)) == 0  # already patched: nothing more
        assert "forward" not in model[0].experts.__dict__
        assert torch.equal(model(x), stock)
    assert_close(patched, stock.float())


@pytest.mark.parametrize("arch", ["mixtral", "qwen3_moe"])
def test_patch_moe_on_transformers_blocks(arch):
    transformers = pytest.importorskip("transformers")
    if arch == "mixtral":
        from transformers.models.mixtral import modeling_mixtral as mod

        config = transformers.MixtralConfig(
            hidden_size=128,
            intermediate_size=96,
            num_local_experts=8,
            num_experts_per_tok=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
        block = mod.MixtralSparseMoeBlock(config)
    else:
        from transformers.models.qwen3_moe import modeling_qwen3_moe as mod

        config = transformers.Qwen3MoeConfig(
            hidden_size=128,
            moe_intermediate_size=96,
            num_experts=8,
            num_experts_per_tok=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
        block = mod.Qwen3MoeSparseMoeBlock(config)
    torch.manual_seed(2)
    block = block.cuda().bfloat16()
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(torch.randn_like(p) * p.shape[-1] ** -0.5)
        x = randn(2, 7, 128, dtype=torch.bfloat16, seed=23)
        stock = block(x)
        stock = stock[0] if isinstance(stock, tuple) else stock
        with tgemm.patch_moe(block) as patch:
            assert len(patch) == 1, "the block's experts were not recognised"
            out = block(x)
            out = out[0] if isinstance(out, tuple) else out
    assert_close(out, stock)
