#!/usr/bin/env python3
"""Writes the cutlass backend's kernel instances: one CUDA translation unit per CUTLASS 4.2 Hopper
GEMM instance (so the build parallelises and can be pruned), a list of them for the registration
(instances.inc) and one for CMake (instances.cmake).

Run by src/CMakeLists.txt at configure time into the build directory; nothing generated is
committed. Files whose content did not change are left alone (no rebuild), files of instances no
longer selected are removed.

    tools/generate_cutlass_instances.py --out build/x/src/generated/cutlass_instances --subset all
    tools/generate_cutlass_instances.py --list            # print the catalog, one name a line

The catalog (CATALOG below) is the product of
  - kernel configurations: schedule (cooperative / pingpong) x tile (BLK_M x BLK_N x BLK_K) x
    cluster (1x1, 2x1, 1x2) x tile scheduler (persistent / stream-K, cooperative only);
  - dtypes: (input, output) in bf16/bf16, fp16/fp16 (every configuration worth having for LLM
    serving), bf16/fp32 and fp16/fp32 (a few);
  - epilogue kinds: lincomb (alpha * acc + beta * C) and bias_act (+ per-column bias, optional,
    then the activation chosen at run time).
GROUPED_CATALOG adds the pointer-array grouped GEMMs of gmm and fused_moe
(kernels/sm90/sm90_grouped_gemm_cutlass.cuh): dtype x B layout x tile; their list for the
registration is grouped_instances.inc (src/grouped/gmm_cutlass.cpp).
Raster order, swizzle, the stream-K decomposition, the bias and the activation are run-time
arguments: the backend registers them as separate solutions sharing one instance
(src/backends/cutlass/cutlass_backend.cpp). docs/performance.md ("CUTLASS") says why each
configuration is here. Names must match instance_name() in cutlass_backend.cpp (a test checks).
"""

import argparse
import os
import sys

# (schedule, tile_m, tile_n, tile_k, cluster_m, cluster_n, scheduler)
COOP, PING = "coop", "pingpong"
PERSISTENT, STREAMK = "persistent", "streamk"

CONFIGS = {
    # Cooperative: two consumer warpgroups share a tile (BLK_M >= 128), 168 registers each.
    "coop_128x128_c1x1": (COOP, 128, 128, 64, 1, 1, PERSISTENT),
    "coop_128x128_c2x1": (COOP, 128, 128, 64, 2, 1, PERSISTENT),
    "coop_128x256_c1x1": (COOP, 128, 256, 64, 1, 1, PERSISTENT),
    "coop_128x256_c2x1": (COOP, 128, 256, 64, 2, 1, PERSISTENT),
    "coop_256x128_c1x2": (COOP, 256, 128, 64, 1, 2, PERSISTENT),
    # Pingpong: each consumer warpgroup owns a tile; one's epilogue hides under the other's MMAs.
    "pingpong_64x128_c1x1": (PING, 64, 128, 64, 1, 1, PERSISTENT),
    "pingpong_64x256_c1x1": (PING, 64, 256, 64, 1, 1, PERSISTENT),
    "pingpong_128x128_c2x1": (PING, 128, 128, 64, 2, 1, PERSISTENT),
    # Stream-K: K split over CTAs when output tiles cannot fill the GPU (few tiles, long K).
    "coop_128x128_c1x1_streamk": (COOP, 128, 128, 64, 1, 1, STREAMK),
    "coop_128x256_c1x1_streamk": (COOP, 128, 256, 64, 1, 1, STREAMK),
}

ALL_CONFIGS = list(CONFIGS)
# (input dtype, output dtype) -> configurations instantiated for it.
DTYPES = {
    ("bf16", "bf16"): ALL_CONFIGS,
    ("fp16", "fp16"): [
        "coop_128x128_c1x1",
        "coop_128x256_c2x1",
        "pingpong_64x128_c1x1",
        "pingpong_64x256_c1x1",
        "coop_128x128_c1x1_streamk",
    ],
    ("bf16", "fp32"): ["coop_128x128_c1x1", "coop_128x256_c2x1", "pingpong_64x128_c1x1"],
    ("fp16", "fp32"): ["coop_128x128_c1x1", "pingpong_64x128_c1x1"],
}
EPILOGUES = ["lincomb", "bias_act"]

# TGEMM_KERNELS=ci: two instances that between them compile every code path of the backend
# (cooperative + stream-K + the bias/activation EVT; pingpong + linear combination).
CI_SUBSET = [
    "sm90_bf16_bf16out_128x128x64_c1x1_coop_streamk_bias_act",
    "sm90_bf16_bf16out_64x128x64_c1x1_pingpong_persistent_lincomb",
]

# Grouped GEMMs: (schedule, tile_m, tile_n, tile_k). 64x128 pingpong for groups of fewer than 128
# rows (decode, many experts), 128x128 and 128x256 cooperative for prefill-sized groups; each for
# bf16 and fp16 and both rhs layouts ([G, N, K]: K-major B "bk"; [G, K, N]: N-major B "bn").
GROUPED_TILES = [(PING, 64, 128, 64), (COOP, 128, 128, 64), (COOP, 128, 256, 64)]
GROUPED_DTYPES = ["bf16", "fp16"]
GROUPED_B_LAYOUTS = ["bk", "bn"]
# TGEMM_KERNELS=ci: one grouped instance (the fused_moe and nn.Linear-stacked layout) so CI
# compiles the backend's code path; the rest report themselves absent.
CI_GROUPED_SUBSET = ["sm90_grouped_bf16_bk_64x128x64_pingpong"]

DTYPE_ENUM = {"bf16": "DType::kBFloat16", "fp16": "DType::kFloat16", "fp32": "DType::kFloat32"}
SCHEDULE_ENUM = {COOP: "Schedule::kCooperative", PING: "Schedule::kPingpong"}
SCHEDULER_ENUM = {PERSISTENT: "TileScheduler::kPersistent", STREAMK: "TileScheduler::kStreamK"}
EPILOGUE_ENUM = {"lincomb": "EpilogueKind::kLinComb", "bias_act": "EpilogueKind::kBiasAct"}


def instance_name(in_t, out_t, cfg, epilogue):
    sched, tm, tn, tk, cm, cn, scheduler = cfg
    return f"sm90_{in_t}_{out_t}out_{tm}x{tn}x{tk}_c{cm}x{cn}_{sched}_{scheduler}_{epilogue}"


def catalog():
    """[(name, in, out, config tuple, epilogue)] in registration order."""
    out = []
    for (in_t, out_t), configs in DTYPES.items():
        for key in configs:
            for epi in EPILOGUES:
                cfg = CONFIGS[key]
                out.append((instance_name(in_t, out_t, cfg, epi), in_t, out_t, cfg, epi))
    names = [c[0] for c in out]
    assert len(names) == len(set(names)), "duplicate instance names"
    assert all(n in names for n in CI_SUBSET), "CI subset names an instance not in the catalog"
    return out


def grouped_instance_name(in_t, layout, tile):
    sched, tm, tn, tk = tile
    return f"sm90_grouped_{in_t}_{layout}_{tm}x{tn}x{tk}_{sched}"


def grouped_catalog():
    """[(name, in, layout, tile)] in registration order."""
    out = [
        (grouped_instance_name(t, lay, tile), t, lay, tile)
        for t in GROUPED_DTYPES
        for lay in GROUPED_B_LAYOUTS
        for tile in GROUPED_TILES
    ]
    names = [c[0] for c in out]
    assert len(names) == len(set(names)), "duplicate grouped instance names"
    assert all(n in names for n in CI_GROUPED_SUBSET), "CI subset names a grouped instance not in the catalog"
    return out


def grouped_translation_unit(name, in_t, layout, tile):
    sched, tm, tn, tk = tile
    b_k_major = "true" if layout == "bk" else "false"
    return f"""// Generated by tools/generate_cutlass_instances.py: do not edit.
// CUTLASS grouped GEMM instance {name}.
#include "grouped/gmm_cutlass_launch.cuh"

namespace tgemm::grouped_cutlass {{

void append_{name}(std::vector<GroupedKernel>& out) {{
  using Instance = kernels::Sm90CutlassGroupedGemm<{DTYPE_ENUM[in_t]}, {b_k_major}, {tm}, {tn}, {tk},
                                                   {SCHEDULE_ENUM[sched]}>;
  out.push_back(make_grouped_kernel<Instance>("{name}"));
}}

}}  // namespace tgemm::grouped_cutlass
"""


def translation_unit(name, in_t, out_t, cfg, epi):
    sched, tm, tn, tk, cm, cn, scheduler = cfg
    return f"""// Generated by tools/generate_cutlass_instances.py: do not edit.
// CUTLASS kernel instance {name}.
#include "backends/cutlass/cutlass_launch.cuh"

namespace tgemm::cutlass_sm90 {{

void append_{name}(std::vector<CutlassKernel>& out) {{
  using Instance = kernels::Sm90CutlassGemm<{DTYPE_ENUM[in_t]}, {DTYPE_ENUM[out_t]}, {tm}, {tn}, {tk}, {cm}, {cn},
                                            {SCHEDULE_ENUM[sched]}, {SCHEDULER_ENUM[scheduler]},
                                            {EPILOGUE_ENUM[epi]}>;
  out.push_back(make_cutlass_kernel<Instance>("{name}"));
}}

}}  // namespace tgemm::cutlass_sm90
"""


def write_if_changed(path, text):
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output directory")
    ap.add_argument(
        "--subset",
        choices=["all", "ci", "none"],
        default="all",
        help="all: the whole catalog; ci: CI_SUBSET; none: no instance (no sm_90a target)",
    )
    ap.add_argument("--list", action="store_true", help="print the selected instance names and exit")
    args = ap.parse_args()

    selected = catalog()
    grouped = grouped_catalog()
    if args.subset == "ci":
        selected = [c for c in selected if c[0] in CI_SUBSET]
        grouped = [c for c in grouped if c[0] in CI_GROUPED_SUBSET]
    elif args.subset == "none":
        selected = []
        grouped = []
    if args.list:
        for c in selected + grouped:
            print(c[0])
        return 0
    if not args.out:
        ap.error("--out is required unless --list")

    os.makedirs(args.out, exist_ok=True)
    sources = []
    for name, in_t, out_t, cfg, epi in selected:
        path = os.path.join(args.out, name + ".cu")
        write_if_changed(path, translation_unit(name, in_t, out_t, cfg, epi))
        sources.append(path)
    for name, in_t, layout, tile in grouped:
        path = os.path.join(args.out, name + ".cu")
        write_if_changed(path, grouped_translation_unit(name, in_t, layout, tile))
        sources.append(path)
    keep = {os.path.basename(s) for s in sources}
    for f in os.listdir(args.out):
        if f.endswith(".cu") and f not in keep:
            os.remove(os.path.join(args.out, f))

    inc = [
        "// Generated by tools/generate_cutlass_instances.py (subset: %s): the instances of this build." % args.subset
    ]
    inc += ["TGEMM_CUTLASS_INSTANCE(%s)" % c[0] for c in selected]
    write_if_changed(os.path.join(args.out, "instances.inc"), "\n".join(inc) + "\n")
    ginc = [
        "// Generated by tools/generate_cutlass_instances.py (subset: %s): the grouped instances of this build."
        % args.subset
    ]
    ginc += ["TGEMM_CUTLASS_GROUPED_INSTANCE(%s)" % c[0] for c in grouped]
    write_if_changed(os.path.join(args.out, "grouped_instances.inc"), "\n".join(ginc) + "\n")
    cmake = [
        "# Generated by tools/generate_cutlass_instances.py (subset: %s)." % args.subset,
        "set(TGEMM_CUTLASS_INSTANCE_SOURCES",
    ]
    cmake += ['  "%s"' % s for s in sources]
    cmake += [")", "set(TGEMM_CUTLASS_INSTANCE_COUNT %d)" % len(sources)]
    write_if_changed(os.path.join(args.out, "instances.cmake"), "\n".join(cmake) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
