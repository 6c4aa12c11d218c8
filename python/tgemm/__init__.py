"""tgemm: per-shape tuned GEMMs for NVIDIA Hopper, as PyTorch ops.

Every GEMM is routed, by its exact shape and types, to the fastest solution found by ``tgemm tune``
(cuBLASLt configurations, tgemm's own kernels), through tables loaded at run time.

    import tgemm
    y = tgemm.gemm_a16w16(x, w, bias)                  # = F.linear(x, w, bias), tuned per shape
    y = tgemm.gemm_gelu(x, w, bias)                    # = F.gelu(F.linear(x, w, bias)), fused or staged
    y = torch.ops.tgemm.gemm_a16w16(x, w, bias, None)  # the same op (torch.compile, CUDA graphs)
    tgemm.describe(x, w)                                # which table row / kernel a call uses
    with tgemm.patch_linear(model): model(ids)          # nn.Linear layers of a model through tgemm
    with tgemm.route_linear(): model(ids)               # every F.linear call through tgemm

Environment (read at import; call ``tgemm.reload_config()`` after changing them):
``TGEMM_CONFIG_GEMM_BF16`` (tables), ``TGEMM_TUNE_GEMM=1`` (record untuned shapes),
``TGEMM_LOG_TUNED_CONFIG=1`` (log each shape's dispatch), ``TGEMM_CONFIG_DIR``. See docs/python.md.
"""

from __future__ import annotations

import importlib as _importlib
import os as _os

import torch as _torch  # loads libtorch before the extension needs it

try:
    from . import _C
except ImportError as _e:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"tgemm: cannot load the extension tgemm._C ({_e}). It must be built against the installed "
        f"torch ({_torch.__version__}): python3 -m pip install --no-build-isolation --no-deps "
        f"--force-reinstall <tgemm source dir>"
    ) from _e

# The C++ ABI of torch changes between minor versions: refuse a build made for another one.
if _C.torch_version.split(".")[:2] != _torch.__version__.split("+")[0].split(".")[:2]:  # pragma: no cover
    raise ImportError(
        f"tgemm._C was built against torch {_C.torch_version} but torch {_torch.__version__} is "
        f"installed; rebuild tgemm: python3 -m pip install --no-build-isolation --no-deps "
        f"--force-reinstall <tgemm source dir>"
    )

# Before any call into the extension: the exception its functions raise for bad input.
from ._errors import TgemmError  # noqa: E402

_C._set_error_type(TgemmError)

# The shipped tables are package data; TGEMM_CONFIG_DIR still takes precedence in the library.
_CONFIGS = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "configs")
if _os.path.isdir(_CONFIGS):
    _C.set_shipped_config_dir(_CONFIGS)

from . import _fake  # noqa: E402,F401  registers the fake kernels (torch.compile, opcheck, FakeTensorMode)
from .config import (  # noqa: E402
    cli_path,
    release_workspaces,
    reload_config,
    set_shipped_config_dir,
    shipped_config_dir,
    table_files,
)
from .grouped_ops import (  # noqa: E402
    grouped_gemm,
    m_grouped_gemm_fp8_contiguous,
    m_grouped_gemm_fp8_masked,
    m_grouped_gemm_masked,
    nptgmm,
    ptgmm,
)
from .moe_ops import describe_fused_moe, fused_moe, grouped_topk, topk_softmax  # noqa: E402
from .moe_patch import MoePatch, patch_moe  # noqa: E402
from .nn import QuantLinear, quantize_linear  # noqa: E402  (tgemm.nn)
from .ops import (  # noqa: E402
    batched_gemm,
    batched_gemm_a8w8,
    batched_gemm_out,
    dequant_mxfp4,
    describe,
    describe_a8w8,
    describe_a8w8_blockscale,
    describe_batched,
    describe_batched_a8w8,
    describe_gmm,
    gemm_a4w4,
    gemm_a8w4,
    gemm_a8w8,
    gemm_a8w8_blockscale,
    gemm_a16w4,
    gemm_a16w16,
    gemm_a16w16_out,
    gemm_alpha_beta,
    gemm_alpha_beta_out,
    gemm_bias,
    gemm_bias_out,
    gemm_gelu,
    gemm_gelu_out,
    gemm_relu,
    gemm_relu_out,
    gmm,
    int8_gemm,
    mm,
    quant_fp8_per_block_1x128,
    quant_fp8_per_block_128x128,
    quant_fp8_per_tensor,
    quant_mxfp4,
    quant_per_token,
)
from .routing import (  # noqa: E402
    DEFAULT_MAX_M,
    DEFAULT_MIN_M,
    LinearPatch,
    TgemmLinear,
    linear,
    linear_route,
    patch_linear,
    route_linear,
)
from .sparse_ops import (  # noqa: E402
    BlockWeight,
    CsrWeight,
    Sparse24Weight,
    block_weight,
    compress_2_4,
    csr_weight,
    prune_2_4,
    sparse_gemm,
    sparse_gemm_a8w8,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_M",
    "DEFAULT_MIN_M",
    "LinearPatch",
    "MoePatch",
    "QuantLinear",
    "TgemmError",
    "TgemmLinear",
    "CsrWeight",
    "BlockWeight",
    "Sparse24Weight",
    "batched_gemm",
    "batched_gemm_a8w8",
    "batched_gemm_out",
    "cli_path",
    "compress_2_4",
    "csr_weight",
    "block_weight",
    "describe",
    "describe_a8w8",
    "describe_a8w8_blockscale",
    "fused_moe",
    "describe_batched",
    "describe_batched_a8w8",
    "describe_gmm",
    "describe_fused_moe",
    "gemm_a4w4",
    "gemm_a8w4",
    "gemm_a8w8",
    "dequant_mxfp4",
    "gemm_a8w8_blockscale",
    "gemm_a16w4",
    "gemm_a16w16",
    "gemm_a16w16_out",
    "gemm_alpha_beta",
    "gemm_alpha_beta_out",
    "gemm_bias",
    "gemm_bias_out",
    "gemm_gelu",
    "gemm_gelu_out",
    "gemm_relu",
    "gemm_relu_out",
    "gmm",
    "grouped_gemm",
    "grouped_topk",
    "int8_gemm",
    "linear",
    "linear_route",
    "m_grouped_gemm_fp8_contiguous",
    "m_grouped_gemm_fp8_masked",
    "m_grouped_gemm_masked",
    "mm",
    "nn",
    "quantize_linear",
    "nptgmm",
    "patch_linear",
    "patch_moe",
    "profile",
    "prune_2_4",
    "ptgmm",
    "quant_fp8_per_block_1x128",
    "quant_fp8_per_block_128x128",
    "quant_fp8_per_tensor",
    "quant_mxfp4",
    "quant_per_token",
    "release_workspaces",
    "reload_config",
    "route_linear",
    "set_shipped_config_dir",
    "shipped_config_dir",
    "sparse_gemm",
    "sparse_gemm_a8w8",
    "table_files",
    "topk_softmax",
]


def __getattr__(name: str):
    # tgemm.profile is imported on first use (it pulls in torch.profiler).
    if name == "profile":
        return _importlib.import_module(".profile", __name__)
    raise AttributeError(f"module 'tgemm' has no attribute {name!r}")
