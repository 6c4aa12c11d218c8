#!/usr/bin/env python3
"""Why two tunes of the same problems picked different rows.

    python3 bench/tune_agreement.py A.csv B.csv [--profiles profA.csv[.gz] profB.csv[.gz]] [--top 6]

For every problem in both tuned tables: identical rows, or the two picks. With the tunes'
`--profile_file` outputs, each pick's rank among the other tune's timed candidates that passed
the checks (by accurate time), and whether the other tune did not race it because it launches
what another candidate launches (`tgemm tune --dedupe_launches`: error column "not raced: same
launch as X"). The summary says how often each pick was among the other tune's `--top` fastest:
when it rarely is, the tunes disagree before their confirmations. Last, how far the two tunes'
accurate times of the same candidates agree (p10, median, p90 of their ratio): the run-to-run
resolution that the tie band is up against. Profiles with the `accurate_us` column also give, for each tune, how many accurately timed candidates read
more than 15% over their own screen time (143 of ~1650 on 21 problems that two tunes disagreed
on with unblocked accurate timing, 14 with `--accurate_block 8`): the accurate stage's slow
windows, which push candidates out of the finals.

Profiles with a `stage` column (how far the race took each candidate) also say, for
each differing row, how far the other tune took each pick ("absent": never a candidate there, as
refine() adds configurations around the screen's leaders; "screen"; "accurate"; "final";
"confirm"), and sort the row into one of three classes:
  default  one tune kept the default (`cublaslt:heuristic`);
  set      a pick never got past the other tune's screen (absent or screened only): the tunes
           disagreed before any accurate timing;
  rank     both picks were timed accurately by both tunes, which ranked them differently.
With `--compare run1.json ...` (the `tgemm compare --measure --json` runs of the same two
tables, as bench/compare_runs.py takes them), the classes are counted again over the rows beyond
the tie band by the median of those runs: the rows that cost agreement. Each default-class row
those runs measured also gets the judges' ratio of the non-default pick to the default, and the
summary says which way they went (in 38 of 39 such rows of four pairs of tunes the non-default
pick was ahead).
With `--logs A.log B.log` (the two tunes' output, with the reconfirmation `tgemm tune` runs after
the race), each differing row that one tune's reconfirmation reverted to the default says so,
with the ratios it read, and the summary counts those one-sided reverts (6 of 15 rows beyond the
band in one pair). A reconfirmation with `--alternatives` that replaced a row by
another candidate says so too ("replaced in A's reconfirmation: own -> new"), and the summary
counts those replacements.
Standard library only; no GPU.
"""

import argparse
import csv
import gzip
import json
import re
import statistics
import sys

import compare_runs

KEY = ("M", "N", "K", "bias", "dtype", "outdtype", "epilogue")
SLOW_ACCURATE = 1.15  # an accurate time this far over the candidate's screen time reads slow
SAME_LAUNCH = "not raced: same launch as "


def read_csv(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(lines))


def key_of(row):
    return tuple(row.get(c, "none" if c == "epilogue" else "") for c in KEY)


def read_table(path):
    return {key_of(r): r["kernelName"] for r in read_csv(path)}


class Profile:
    """One tune's candidates per problem: passing ones ranked by accurate time, and which
    candidates stood for others (same launch)."""

    def __init__(self, path, max_err_ratio=0.05):
        self.ranked = {}
        self.same_as = {}
        self.stages = {}  # key -> {name: stage}; empty for profiles without the stage column
        self.accurate = 0  # candidates with an accurate_us (profiles that have the column)
        self.slow_accurate = 0  # of which accurate_us > SLOW_ACCURATE x screen_us
        for r in read_csv(path):
            k = key_of(r)
            acc, scr = float(r.get("accurate_us") or -1), float(r.get("screen_us") or -1)
            if acc > 0 and scr > 0:
                self.accurate += 1
                self.slow_accurate += acc > SLOW_ACCURATE * scr
            if r.get("stage") is not None:
                self.stages.setdefault(k, {})[r["kernelName"]] = r["stage"] or "failed"
            err = r.get("error", "")
            if err.startswith(SAME_LAUNCH):
                self.same_as.setdefault(k, {})[r["kernelName"]] = err[len(SAME_LAUNCH):]
                continue
            us = float(r.get("us") or -1)
            ok = (not err and us > 0 and r.get("strict_ok") == "True"
                  and 0 <= float(r.get("err_ratio") or -1) <= max_err_ratio)
            if ok:
                self.ranked.setdefault(k, []).append((us, r["kernelName"]))
        for v in self.ranked.values():
            v.sort()

    def stand_in(self, key, name):
        """The candidate this tune raced for `name` (itself unless it was a same-launch one)."""
        return self.same_as.get(key, {}).get(name, name)

    def has_stages(self):
        return bool(self.stages)

    def stage(self, key, name):
        """How far this tune's race took `name` (or its stand-in): a stage, or "absent"."""
        return self.stages.get(key, {}).get(self.stand_in(key, name), "absent")

    def rank(self, key, name):
        """1-based rank of `name` (or its stand-in) among the passing timed candidates, or None."""
        name = self.stand_in(key, name)
        for i, (_, n) in enumerate(self.ranked.get(key, [])):
            if n == name:
                return i + 1
        return None


def quantile(values, q):
    """The q-quantile of sorted `values` by linear interpolation."""
    x = (len(values) - 1) * q
    lo = int(x)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (x - lo)


def timing_noise(pa, pb):
    """How far the two tunes' accurate times of the same candidate agree: for every (problem,
    candidate) timed in both, time in A / time in B. Returns (count, p10, median, p90), or None
    when no candidate was timed in both."""
    ratios = []
    for key, timed in pa.ranked.items():
        other = dict((n, us) for us, n in pb.ranked.get(key, []))
        ratios += [us / other[n] for us, n in timed if n in other]
    if not ratios:
        return None
    ratios.sort()
    return len(ratios), quantile(ratios, 0.1), quantile(ratios, 0.5), quantile(ratios, 0.9)


DEFAULT = "cublaslt:heuristic"
UNTIMED = ("absent", "screen", "failed")


def classify(pick_a, pick_b, stage_a_in_b, stage_b_in_a):
    """default, set or rank (module docstring) for a differing row."""
    if DEFAULT in (pick_a, pick_b):
        return "default"
    if stage_a_in_b in UNTIMED or stage_b_in_a in UNTIMED:
        return "set"
    return "rank"


def problem_key(m, problem):
    """The tuned-table key of a problem printed as `tgemm` prints it ("arch=... N=... K=... bias=...
    dtype=... outdtype=... epilogue=...") and its M."""
    fields = dict(tok.split("=", 1) for tok in problem.split() if "=" in tok)
    return (str(m), fields.get("N", ""), fields.get("K", ""), fields.get("bias", ""), fields.get("dtype", ""),
            fields.get("outdtype", ""), fields.get("epilogue", "none"))


def compare_key(row):
    """The tuned-table key of a `tgemm compare --json` row (its problem string and m)."""
    return problem_key(row["m"], row["problem"])


def median_ratios(paths):
    """Each differing row measured by every compare run: its median paired ratio (A's time / B's),
    and the runs' tie band."""
    runs = [compare_runs.read_run(p) for p in paths]
    ratios = {}
    for run in runs:
        for row in run["rows"]:
            if row["verdict"] != "identical" and row.get("ratio", 0) > 0:
                ratios.setdefault(compare_key(row), []).append(row["ratio"])
    return {k: statistics.median(v) for k, v in ratios.items() if len(v) == len(runs)}, runs[0]["tie_band"]


def beyond_band(medians, band):
    """Keys of the rows whose median paired ratio (median_ratios) is beyond the tie band."""
    return {k for k, r in medians.items() if compare_runs.verdict(r, band) != "tie"}


REVERTED = re.compile(r"^arch=\S+ sm_count=\d+ (?P<fields>.*?) M=(?P<m>\d+): \S+ reverted to \S+ "
                      r"\((?P<ratio>[\d.]+)x the default, min (?P<min>[\d.]+)x")


REPLACED = re.compile(r"^arch=\S+ sm_count=\d+ (?P<fields>.*?) M=(?P<m>\d+): (?P<own>\S+) replaced by (?P<new>\S+) ")


def reconfirm_changes(path):
    """What a tune's reconfirmation changed, from the `tgemm tune` output (the lines after "tgemm
    tune --reconfirm"): (reverts, replacements); reverts: key -> (median ratio, min ratio) of the
    row reverted to the default; replacements (`--reconfirm_alternatives`): key -> (own, new)."""
    opener = gzip.open if path.endswith(".gz") else open
    reverts, replaced, seen = {}, {}, False
    with opener(path, "rt") as f:
        for line in f:
            seen = seen or line.startswith("tgemm tune --reconfirm")
            if not seen:
                continue
            m = REVERTED.match(line)
            if m:
                reverts[problem_key(m.group("m"), m.group("fields"))] = (float(m.group("ratio")), float(m.group("min")))
            m = REPLACED.match(line)
            if m:
                replaced[problem_key(m.group("m"), m.group("fields"))] = (m.group("own"), m.group("new"))
    return reverts, replaced


def reconfirm_reverts(path):
    """The rows a tune's reconfirmation reverted to the default: key -> (median ratio, min ratio)."""
    return reconfirm_changes(path)[0]


def describe(key):
    m, n, k, bias, _, _, epi = key
    return f"{m}x{n}x{k}" + (" bias" if bias == "True" else "") + ("" if epi in ("", "none") else f" {epi}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--profiles", nargs=2, metavar=("PROF_A", "PROF_B"))
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--compare", nargs="+", metavar="RUN_JSON",
                    help="tgemm compare --measure --json runs of A and B: count the classes of the rows beyond the band")
    ap.add_argument("--logs", nargs=2, metavar=("LOG_A", "LOG_B"),
                    help="the two tunes' output: mark the rows one tune's reconfirmation reverted")
    o = ap.parse_args(argv)
    (ra_rev, ra_rep), (rb_rev, rb_rep) = ((reconfirm_changes(o.logs[0]), reconfirm_changes(o.logs[1])) if o.logs
                                          else (({}, {}), ({}, {})))
    one_sided = one_sided_beyond = 0
    ta, tb = read_table(o.a), read_table(o.b)
    pa, pb = (Profile(o.profiles[0]), Profile(o.profiles[1])) if o.profiles else (None, None)
    common = sorted(set(ta) & set(tb), key=lambda k: (k[6], int(k[0]), int(k[1]), int(k[2]), k[3]))
    identical = same_launch = a_in_b = b_in_a = both = 0
    classes = {"default": 0, "set": 0, "rank": 0}
    medians, band = median_ratios(o.compare) if o.compare else ({}, None)
    beyond = beyond_band(medians, band) if o.compare else None
    default_gains = []  # default-class rows the runs measured: the default's time / the other pick's
    beyond_classes = {"default": 0, "set": 0, "rank": 0}
    staged = pa is not None and pa.has_stages() and pb.has_stages()
    differing = []
    for k in common:
        if ta[k] == tb[k]:
            identical += 1
            continue
        line = f"{describe(k)}: A {ta[k]} | B {tb[k]}"
        if pa:
            if pa.stand_in(k, tb[k]) == ta[k] or pb.stand_in(k, ta[k]) == tb[k]:
                same_launch += 1
                line += " (same launch)"
            ra, rb = pb.rank(k, ta[k]), pa.rank(k, tb[k])
            in_b = ra is not None and ra <= o.top
            in_a = rb is not None and rb <= o.top
            a_in_b += in_b
            b_in_a += in_a
            both += in_b and in_a
            line += f"; A's pick is #{ra or '-'} in B, B's is #{rb or '-'} in A"
            if staged:
                sa, sb = pb.stage(k, ta[k]), pa.stage(k, tb[k])
                c = classify(ta[k], tb[k], sa, sb)
                classes[c] += 1
                line += f"; stages: A's pick {sa} in B, B's {sb} in A: {c}"
                if beyond is not None and k in beyond:
                    beyond_classes[c] += 1
                    line += " (beyond the band)"
                if c == "default" and k in medians:
                    gain = medians[k] if ta[k] == DEFAULT else 1 / medians[k]
                    default_gains.append(gain)
                    line += f"; the judges: the other pick {gain:.3f}x the default"
        if (k in ra_rev) != (k in rb_rev):
            who, (ratio, low) = ("A", ra_rev[k]) if k in ra_rev else ("B", rb_rev[k])
            one_sided += 1
            one_sided_beyond += beyond is not None and k in beyond
            line += f"; reverted by {who}'s reconfirmation at {ratio:.3f}x, min {low:.3f}x"
        for who, rep in (("A", ra_rep), ("B", rb_rep)):
            if k in rep:
                line += f"; replaced in {who}'s reconfirmation: {rep[k][0]} -> {rep[k][1]}"
        differing.append(line)
    for line in differing:
        print(line)
    print(f"{len(common)} problems in both ({len(ta) - len(common)} only in A, {len(tb) - len(common)} only in B): "
          f"{identical} identical, {len(differing)} differ")
    if pa:
        print(f"of the {len(differing)} that differ: {same_launch} are the same launch; A's pick among B's {o.top} "
              f"fastest in {a_in_b}, B's among A's in {b_in_a}, both in {both}")
        if staged:
            print(f"classes of the {len(differing)} that differ: {classes['default']} default (one tune kept it), "
                  f"{classes['set']} candidate set (a pick not timed accurately by the other tune), "
                  f"{classes['rank']} ranking (both timed by both)")
            if beyond is not None:
                print(f"beyond the band by the median of {len(o.compare)} compare runs: {len(beyond)} rows; "
                      f"{beyond_classes['default']} default, {beyond_classes['set']} candidate set, "
                      f"{beyond_classes['rank']} ranking")
                if default_gains:
                    ahead = sum(g > 1 for g in default_gains)
                    print(f"default rows measured by the judges: {len(default_gains)}; the other pick ahead of "
                          f"the default in {ahead}, the default ahead in {len(default_gains) - ahead}; the other "
                          f"pick's median {statistics.median(default_gains):.3f}x the default")
        noise = timing_noise(pa, pb)
        if noise:
            n, p10, med, p90 = noise
            print(f"timing noise: {n} candidates timed in both tunes; time in A / time in B: p10 {p10:.4f}, "
                  f"median {med:.4f}, p90 {p90:.4f}")
        if o.logs:
            print(f"reconfirmation reverts: A {len(ra_rev)}, B {len(rb_rev)}; one tune's only, among the rows that "
                  f"differ: {one_sided}" + (f", beyond the band: {one_sided_beyond}" if beyond is not None else ""))
            if ra_rep or rb_rep:
                print(f"reconfirmation replacements (--alternatives): A {len(ra_rep)}, B {len(rb_rep)}")
        if pa.accurate or pb.accurate:
            print(f"accurate times over {SLOW_ACCURATE:g}x the screen's: A {pa.slow_accurate} of {pa.accurate}, "
                  f"B {pb.slow_accurate} of {pb.accurate}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
