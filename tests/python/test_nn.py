"""tgemm.nn: QuantLinear and quantize_linear for every scheme against an fp32 reference of the
dequantized weight and activations, the eligibility and skip rules, a DeepSeek-style FP8 checkpoint
pair taken as it is, CUDA-graph capture, and the errors.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import tgemm
import tgemm.nn as tnn
from tgemm_test_utils import randn, requires_cuda

pytestmark = requires_cuda


def dequant_rows(x: torch.Tensor, scheme: str) -> torch.Tensor:
    """x as the layer's activation quantization leaves it, in fp32."""
    x2 = x.reshape(-1, x.shape[-1])
    if scheme == "mxfp4":
        return x2.float()  # weight-only: the activations stay 16-bit
    if scheme == "fp8_block":
        q, s = tgemm.quant_fp8_per_block_1x128(x2)
        return q.float() * s.repeat_interleave(128, 1)[:, : x2.shape[1]]
    if scheme == "fp8_tensor":
        q, s = tgemm.quant_fp8_per_tensor(x2)
    else:
        q, s = tgemm.quant_per_token(x2, torch.int8 if scheme == "int8_rowwise" else torch.float8_e4m3fn)
    return q.float() * s


def reference(layer: tnn.QuantLinear, x: torch.Tensor) -> torch.Tensor:
    y = dequant_rows(x, layer.scheme) @ layer.dequantized_weight().t()
    if layer.bias is not None:
        y = y + layer.bias.float()
    return y.reshape(*x.shape[:-1], layer.out_features)


def model(dtype=torch.bfloat16, seed=0):
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Linear(256, 384), nn.SiLU(), nn.Linear(384, 200, bias=False), nn.Linear(200, 64))
    m.lm_head = nn.Linear(64, 1000, bias=False)
    return m.to("cuda", dtype)


@pytest.mark.parametrize("scheme", tnn.SCHEMES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_layers_match_the_dequantized_reference(scheme, dtype):
    m = model(dtype)
    stock = {name: mod.weight.detach().clone() for name, mod in m.named_modules() if isinstance(mod, nn.Linear)}
    # 200 is not a multiple of 16: the third layer stays; lm_head is skipped by name.
    assert tnn.quantize_linear(m, scheme) == 2
    assert isinstance(m[0], tnn.QuantLinear) and isinstance(m[2], tnn.QuantLinear)
    assert type(m[3]) is nn.Linear and type(m.lm_head) is nn.Linear
    for idx in (0, 2):
        layer = m[idx]
        # The quantized weight is close to the stock one (the scheme's rounding only). MXFP4: a block
        # of amax in [4, 8) * scale rounds by up to 1 scale (between 4 and 6) and saturates values
        # in (6, 8) * scale by up to 2 scales, where amax >= 6 scales: a third of amax at most.
        w = stock[str(idx)].float()
        bound = 0.34 if scheme in ("mxfp4", "mxfp4_a8") else 0.07
        assert (layer.dequantized_weight() - w).abs().max() <= bound * w.abs().max()
        for shape in [(1, 256 if idx == 0 else 384), (3, 37, 256 if idx == 0 else 384)]:
            x = randn(*shape, dtype=dtype, seed=idx)
            y = layer(x)
            assert y.dtype == dtype and y.shape == (*shape[:-1], layer.out_features)
            ref = reference(layer, x)
            tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
            torch.testing.assert_close(y.float(), ref, rtol=tol, atol=tol * ref.abs().max().item())


def test_skip_takes_a_predicate_and_none_skips_nothing():
    m = model()
    assert tnn.quantize_linear(m, "fp8_tensor", skip=lambda name: name == "0") == 2  # layer 2 and lm_head
    assert type(m[0]) is nn.Linear and isinstance(m.lm_head, tnn.QuantLinear)
    m = model()
    assert tnn.quantize_linear(m, "fp8_tensor", skip=()) == 3


def test_fp8_block_checkpoint_pair_is_taken_as_it_is():
    n, k = 300, 512
    w = randn(n, k, seed=4)
    q, scale_inv = tgemm.quant_fp8_per_block_128x128(w)
    bias = randn(n, seed=5)
    layer = tnn.QuantLinear.from_fp8_block(q, scale_inv, bias)
    assert layer.qweight.data_ptr() == q.data_ptr()  # no copy, no requantization
    x = randn(17, k, seed=6)
    torch.testing.assert_close(layer(x).float(), reference(layer, x), rtol=2e-2, atol=2e-2)
    with pytest.raises(ValueError, match=r"weight_scale_inv must have sizes \(3, 4\)"):
        tnn.QuantLinear.from_fp8_block(q, scale_inv[:2])


def test_cuda_graph_replays_new_activations():
    layer = tnn.QuantLinear.from_linear(model()[0], "fp8_rowwise")
    x = randn(8, 256, seed=1)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        layer(x)  # first call outside capture: dispatch resolved, workspace allocated
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = layer(x)
    for seed in (2, 3):
        x.copy_(randn(8, 256, seed=seed))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y.float(), reference(layer, x), rtol=2e-2, atol=2e-2)


def test_mxfp4_layer_is_weight_only_and_graph_safe():
    # The layer's output is exactly gemm_a16w4 of the 16-bit input; under a CUDA graph at M = 1
    # (the decode GEMV) and M = 40 (dequantize + a16w16) replays follow new activations.
    layer = tnn.QuantLinear.from_linear(model()[0], "mxfp4")
    assert layer.qweight.dtype == torch.uint8 and layer.qweight.shape == (384, 128)
    assert layer.weight_scale.dtype == torch.uint8 and layer.weight_scale.shape == (384, 8)
    for m in (1, 40):
        x = randn(m, 256, seed=m)
        torch.testing.assert_close(
            layer(x), tgemm.gemm_a16w4(x, layer.qweight, layer.weight_scale, layer.bias), rtol=0, atol=0
        )
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            layer(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = layer(x)
        for seed in (2, 3):
            x.copy_(randn(m, 256, seed=seed))
            g.replay()
            torch.cuda.synchronize()
            torch.testing.assert_close(y.float(), reference(layer, x), rtol=2e-2, atol=2e-2)


def test_mxfp4_eligibility_needs_k_a_multiple_of_32():
    m = nn.Sequential(nn.Linear(48, 64), nn.Linear(64, 32)).to("cuda", torch.bfloat16)
    assert tnn.eligible(m[0]) and not tnn.eligible(m[0], "mxfp4")  # 48: a multiple of 16, not of 32
    assert tnn.quantize_linear(m, "mxfp4") == 1
    assert type(m[0]) is nn.Linear and isinstance(m[1], tnn.QuantLinear)


def test_bad_scheme_and_weight_dtype_raise():
    with pytest.raises(ValueError, match="scheme must be one of"):
        tnn.quantize_linear(model(), "fp4")
    q = torch.zeros(64, 64, dtype=torch.float8_e4m3fn, device="cuda")
    with pytest.raises(ValueError, match="needs a torch.int8 qweight"):
        tnn.QuantLinear(q, torch.ones(64, 1, device="cuda"), "int8_rowwise")
