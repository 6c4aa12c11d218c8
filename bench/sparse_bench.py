"""`torch_bench.py --sparse 2:4|csr`: tgemm.sparse_gemm against tgemm's own dense GEMM on the same
(pruned or sparse) weight, with torch's sparse path alongside.

- 2:4: weights magnitude-pruned by tgemm.prune_2_4, at M >= 512 (where 2:4 can pay); peer:
  F.linear on torch.sparse.to_sparse_semi_structured (cuSPARSELt's defaults through torch).
- csr: weights at each --sparse-density with every other zero, at every M; peer: torch.sparse.mm.
Each row's `speedup` is dense tgemm time over sparse tgemm time (paired rounds, as the other
modes), `peer_speedup` the same for torch's path. The dense weight's memory stays with the
caller: the row records the sparse form's bytes against the dense weight's.
"""

from __future__ import annotations

import functools
import os
import statistics

import torch
import torch_bench as tb

MIN_M_2_4 = 512


def _weight(pattern: str, n: int, k: int, density: float, gen):
    import tgemm

    w = (torch.randn(n, k, device="cuda", generator=gen) / k**0.5).to(torch.bfloat16)
    if pattern == "2:4":
        return tgemm.prune_2_4(w)
    keep = torch.rand(n, k, device="cuda", generator=gen) < density
    return torch.where(keep, w, torch.zeros((), dtype=w.dtype, device="cuda"))


def _sparse_forms(pattern: str, w):
    """(tgemm's weight, torch's step on x, bytes of tgemm's sparse form)."""
    import tgemm

    if pattern == "2:4":
        weight = tgemm.compress_2_4(w)
        peer_w = torch.sparse.to_sparse_semi_structured(w)
        return weight, (lambda x: torch.nn.functional.linear(x, peer_w)), weight.compressed.numel()
    csr = w.to_sparse_csr()
    weight = tgemm.csr_weight(csr)
    nbytes = sum(t.numel() * t.element_size() for t in (weight.crow_indices, weight.col_indices, weight.values))
    return weight, (lambda x: torch.sparse.mm(csr, x.t()).t()), nbytes


def _time_trio(steps, launches, replays, rounds) -> dict:
    (td, ts, tp), (rd, rs, rp) = tb.time_interleaved(steps, launches, replays, rounds)
    return {
        "baseline_us": statistics.median(td),
        "baseline_spread": tb.spread(td),
        "tgemm_us": statistics.median(ts),
        "tgemm_spread": tb.spread(ts),
        "peer_us": statistics.median(tp),
        "speedup": tb.paired_ratio(rd, rs),
        "peer_speedup": tb.paired_ratio(rd, rp),
    }


def _problems(args):
    densities = [float(v) for v in args.sparse_density.split(",")] if args.sparse == "csr" else [0.5]
    for s in tb.read_suite(args.suite):
        if args.filter and args.filter not in f"{s['model']}/{s['layer']}":
            continue
        for density in densities:
            for m in tb.m_values(args):
                if args.sparse == "2:4" and m < MIN_M_2_4:
                    continue
                yield s, density, m


def run(args, device_props) -> tuple[list[dict], dict, str]:
    import tgemm

    peer_name = "to_sparse_semi_structured" if args.sparse == "2:4" else "torch.sparse.mm"
    print(
        f"device {device_props.name}, torch {torch.__version__}, {args.sparse}: tgemm.sparse_gemm and {peer_name} "
        "against tgemm.gemm_a16w16 on the same weight"
    )
    rows = []
    for seed, (s, density, m) in enumerate(_problems(args)):
        n, k = s["N"], s["K"]
        gen = torch.Generator(device="cuda").manual_seed(seed)
        w = _weight(args.sparse, n, k, density, gen)
        x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        weight, peer, sparse_bytes = _sparse_forms(args.sparse, w)
        status = "-"
        if not args.no_check:
            bad = tb.check(tgemm.sparse_gemm(x, weight), x, w, None, torch.bfloat16)
            status = "ok" if bad == 0 else f"{bad} bad"
        steps = [
            lambda i, x=x, w=w: tgemm.gemm_a16w16(x, w),
            lambda i, x=x, weight=weight: tgemm.sparse_gemm(x, weight),
            lambda i, x=x, peer=peer: peer(x),
        ]
        launches, rounds = tb.plan_slots(tb.estimate_us(m, n, k, 2), args.rounds or 10)
        measure = functools.partial(_time_trio, steps, args.launches or launches, args.replays, args.rounds or rounds)
        reading, first = tb.counted_reading(measure, args.remeasure_below)
        row = {
            "family": "sparse",
            "pattern": args.sparse,
            "density": float((w != 0).sum().item()) / (n * k),
            "model": s["model"],
            "layer": s["layer"],
            "M": m,
            "N": n,
            "K": k,
            "baseline": "tgemm.gemm_a16w16",
            "peer": peer_name,
            **reading,
            "remeasured": first is not None,
            "check": status,
            "sparse_bytes": sparse_bytes,
            "dense_bytes": n * k * 2,
        }
        rows.append(row)
        print(
            f"{s['model']:<16} {s['layer']:<10} {m:>6} {n:>6} {k:>6} d={row['density']:.3f} | "
            f"{reading['baseline_us']:>9.2f} {reading['tgemm_us']:>9.2f} {reading['peer_us']:>9.2f} | "
            f"{row['speedup']:>6.3f}x (peer {row['peer_speedup']:.3f}x) {status}",
            flush=True,
        )
    torch.cuda.empty_cache()
    summary = tb.speedup_summary(rows)
    peers = [r["peer_speedup"] for r in rows]
    summary["peer_geomean_speedup"] = tb.geomean(peers) if peers else 0.0
    stem = "torch_sparse_" + ("2_4" if args.sparse == "2:4" else "csr")
    return rows, {"summary": summary, "suite": os.path.relpath(args.suite, tb.REPO)}, stem
