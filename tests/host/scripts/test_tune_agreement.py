"""bench/tune_agreement.py on two small synthetic tunes (no GPU): identical rows, ranks of each
pick in the other tune's profile, same-launch stand-ins, and the summary counts."""

import csv
import gzip
import json
import os
import unittest

from script_case import ScriptCase  # puts bench/ on sys.path

import tune_agreement  # noqa: E402

TABLE = ["arch", "sm_count", "M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle", "libtype",
         "solidx", "splitK", "us", "kernelName", "err_ratio", "tflops", "bw", "epilogue"]
PROFILE = ["arch", "sm_count", "M", "N", "K", "bias", "dtype", "outdtype", "epilogue", "libtype", "kernelName",
           "screen_us", "us", "spread", "err_ratio", "strict_ok", "error"]
BF = "torch.bfloat16"


def table_row(m, name):
    return ["sm_90a", "132", m, "4096", "4096", "False", BF, BF, "False", "False", "cublaslt", "0", "1", "10",
            name, "0", "1", "1", "none"]


def prof_row(m, name, us, error="", strict="True"):
    return ["sm_90a", "132", m, "4096", "4096", "False", BF, BF, "none", "cublaslt", name, us, us, "0", "0",
            strict, error]


def reconfirm_line(m, outcome):
    """A line of `tgemm reconfirm` output for the 4096x4096 problem at M = m."""
    return (f"arch=sm_90a sm_count=132 N=4096 K=4096 bias=False dtype={BF} outdtype={BF} scaleAB=False "
            f"bpreshuffle=False epilogue=none M={m}: {outcome}\n")


class TuneAgreement(ScriptCase):
    tool = tune_agreement

    def write(self, name, header, rows, gz=False):
        path = os.path.join(self.dir.name, name)
        with (gzip.open(path, "wt", newline="") if gz else open(path, "w", newline="")) as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
        return path

    def write_text(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path


    def test_ranks_stand_ins_and_counts(self):
        a = self.write("a.csv", TABLE, [table_row("1", "x"), table_row("16", "p"), table_row("64", "s")])
        b = self.write("b.csv", TABLE, [table_row("1", "x"), table_row("16", "q"), table_row("64", "t"),
                                        table_row("128", "z")])
        # M=16: A picked p, B picked q. In B's profile p is 2nd; in A's profile q is 3rd (r, the
        # failed one and an unmeasured one do not count).
        # M=64: A picked s; B raced s' stand-in t (same launch), so the pair is one launch.
        pa = self.write("pa.csv", PROFILE, [
            prof_row("16", "p", "9"), prof_row("16", "r", "9.5"), prof_row("16", "bad", "1", strict="False"),
            prof_row("16", "q", "9.9"), prof_row("16", "n", "-1"),
            prof_row("64", "s", "5"), prof_row("64", "t", "-1", error="not raced: same launch as s")])
        pb = self.write("pb.csv.gz", PROFILE, [
            prof_row("16", "q", "8"), prof_row("16", "p", "8.5"),
            prof_row("64", "t", "5"), prof_row("64", "s", "-1", error="not raced: same launch as t")], gz=True)
        out = self.run_tool(a, b, "--profiles", pa, pb, "--top", "2")
        self.assertIn("16x4096x4096: A p | B q; A's pick is #2 in B, B's is #3 in A", out)
        self.assertIn("64x4096x4096: A s | B t (same launch); A's pick is #1 in B, B's is #1 in A", out)
        self.assertIn("3 problems in both (0 only in A, 1 only in B): 1 identical, 2 differ", out)
        self.assertIn("of the 2 that differ: 1 are the same launch; A's pick among B's 2 fastest in 2, "
                      "B's among A's in 1, both in 1", out)
        # Timed in both: p (9 / 8.5) and q (9.9 / 8); s and t were each timed by one tune only.
        self.assertIn("timing noise: 2 candidates timed in both tunes; time in A / time in B: p10 1.0767, "
                      "median 1.1482, p90 1.2196", out)

    def test_stages_classify_the_differing_rows(self):
        # Profiles with a stage column carry a stage per candidate. M=1: B kept the default (default).
        # M=16: B's pick q never got past A's screen (candidate set). M=64: both picks reached
        # both tunes' finals (ranking). M=128: identical.
        staged = PROFILE + ["stage", "final_ratio", "confirm_ratio"]
        h = "cublaslt:heuristic"
        a = self.write("a.csv", TABLE, [table_row("1", "p"), table_row("16", "p"), table_row("64", "s"),
                                        table_row("128", "z")])
        b = self.write("b.csv", TABLE, [table_row("1", h), table_row("16", "q"), table_row("64", "t"),
                                        table_row("128", "z")])

        def row(m, name, us, stage):
            return prof_row(m, name, us) + [stage, "-1", "-1"]

        pa = self.write("pa.csv", staged, [
            row("1", "p", "9", "confirm"), row("1", h, "10", "final"),
            row("16", "p", "9", "confirm"), row("16", "q", "-1", "screen"), row("16", h, "10", "final"),
            row("64", "s", "5", "confirm"), row("64", "t", "5.1", "final"), row("64", h, "6", "final")])
        pb = self.write("pb.csv", staged, [
            row("1", "p", "9.5", "final"), row("1", h, "9.4", "final"),
            row("16", "q", "8", "confirm"), row("16", h, "10", "final"),
            row("64", "t", "5", "confirm"), row("64", "s", "5.1", "final"), row("64", h, "6", "final")])
        out = self.run_tool(a, b, "--profiles", pa, pb)
        self.assertIn("1x4096x4096: A p | B cublaslt:heuristic; A's pick is #2 in B, B's is #2 in A; "
                      "stages: A's pick final in B, B's final in A: default", out)
        self.assertIn("stages: A's pick absent in B, B's screen in A: set", out)
        self.assertIn("stages: A's pick final in B, B's final in A: rank", out)
        self.assertIn("classes of the 3 that differ: 1 default (one tune kept it), 1 candidate set (a pick not "
                      "timed accurately by the other tune), 1 ranking (both timed by both)", out)
        # With compare runs: M=1 and M=64 beyond the band by the median of two runs (M=1 in one run
        # only; M=16 ties by the median), so one default and one ranking row cost agreement.
        def cmp_row(m, ratio, verdict):
            return {"problem": f"arch=sm_90a sm_count=132 N=4096 K=4096 bias=False dtype={BF} outdtype={BF} "
                               "scaleAB=False bpreshuffle=False epilogue=none", "m": m, "ratio": ratio,
                    "verdict": verdict}
        runs = []
        for i, (r1, r16, r64) in enumerate([(1.03, 0.995, 0.97), (1.02, 1.02, 0.96)]):
            path = os.path.join(self.dir.name, f"cmp{i}.json")
            with open(path, "w") as f:
                json.dump({"a": a, "b": b, "tie_band": 0.01, "measure": True,
                           "rows": [cmp_row(1, r1, "b_faster"), cmp_row(16, r16, "tie"), cmp_row(64, r64, "a_faster"),
                                    cmp_row(128, 0, "identical")]}, f)
            runs.append(path)
        out = self.run_tool(a, b, "--profiles", pa, pb, "--compare", *runs)
        self.assertIn("final in A: default (beyond the band)", out)
        self.assertIn("screen in A: set\n", out)
        self.assertIn("beyond the band by the median of 2 compare runs: 2 rows; 1 default, 0 candidate set, "
                      "1 ranking", out)
        # M=1's median ratio (A's p / B's default) is 1.025: the default ahead, p 1 / 1.025 of it.
        self.assertIn("final in A: default (beyond the band); the judges: the other pick 0.976x the default", out)
        self.assertIn("default rows measured by the judges: 1; the other pick ahead of the default in 0, the "
                      "default ahead in 1; the other pick's median 0.976x the default", out)

    def test_slow_accurate_times_are_counted(self):
        # Profiles with accurate_us: A has one of two accurate times more than 15%
        # over its screen time (12 against 10), B none (10.5 against 10; a -1 is not timed).
        cols = PROFILE + ["stage", "final_ratio", "confirm_ratio", "accurate_us"]

        def row(m, name, screen, acc):
            r = prof_row(m, name, "10") + ["accurate", "-1", "-1", acc]
            r[PROFILE.index("screen_us")] = screen
            return r

        a = self.write("a.csv", TABLE, [table_row("1", "x")])
        b = self.write("b.csv", TABLE, [table_row("1", "y")])
        pa = self.write("pa.csv", cols, [row("1", "x", "10", "12"), row("1", "y", "10", "11.4")])
        pb = self.write("pb.csv", cols, [row("1", "y", "10", "10.5"), row("1", "x", "10", "-1")])
        out = self.run_tool(a, b, "--profiles", pa, pb)
        self.assertIn("accurate times over 1.15x the screen's: A 1 of 2, B 0 of 1", out)
        # Older profiles (no accurate_us column): no such line.
        pa_old = self.write("pa_old.csv", PROFILE, [prof_row("1", "x", "9")])
        pb_old = self.write("pb_old.csv", PROFILE, [prof_row("1", "y", "9")])
        self.assertNotIn("accurate times over", self.run_tool(a, b, "--profiles", pa_old, pb_old))

    def test_reconfirmation_reverts_from_the_logs(self):
        # M=1: A's reconfirmation reverted its row to the default, B kept p (one-sided: marked).
        # M=16: both reverted (identical rows, not marked). M=64: B's log reverts a row before the
        # reconfirmation started (a race line, not a revert: ignored); A and B differ there.
        h = "cublaslt:heuristic"
        a = self.write("a.csv", TABLE, [table_row("1", h), table_row("16", h), table_row("64", "s")])
        b = self.write("b.csv", TABLE, [table_row("1", "p"), table_row("16", h), table_row("64", "t")])
        pa = self.write("pa.csv", PROFILE, [prof_row("1", "p", "9"), prof_row("64", "s", "5")])
        pb = self.write("pb.csv", PROFILE, [prof_row("1", "p", "9"), prof_row("64", "t", "5")])

        def reverted(m, ratio, low):
            return reconfirm_line(m, f"cublaslt:algo_x reverted to {h} ({ratio}x the default, min {low}x over 4 "
                                     "placements, margin 1.0%)")
        log_a = os.path.join(self.dir.name, "a.log")
        with open(log_a, "w") as f:
            f.write("[   1/3] M=1 ...\n\ntgemm tune --reconfirm: every non-default row once more\n")
            f.write(reverted(1, "1.010", "1.008") + reverted(16, "0.990", "0.980"))
        log_b = os.path.join(self.dir.name, "b.log.gz")
        with gzip.open(log_b, "wt") as f:
            f.write(reverted(64, "0.950", "0.940") + "tgemm tune --reconfirm: every non-default row once more\n")
            f.write(reverted(16, "1.001", "0.999"))
        out = self.run_tool(a, b, "--profiles", pa, pb, "--logs", log_a, log_b)
        self.assertIn("1x4096x4096: A cublaslt:heuristic | B p; A's pick is #- in B, B's is #1 in A; "
                      "reverted by A's reconfirmation at 1.010x, min 1.008x", out)
        self.assertNotIn("64x4096x4096: A s | B t; A's pick is #- in B, B's is #- in A; reverted", out)
        self.assertIn("reconfirmation reverts: A 2, B 1; one tune's only, among the rows that differ: 1\n", out)
        self.assertNotIn("replacements", out)

    def test_reconfirmation_replacements_from_the_logs(self):
        # --reconfirm_alternatives: B's reconfirmation replaced its row at M=64 (u -> t), and a
        # replacement line before the reconfirmation started is ignored (M=1).
        h = "cublaslt:heuristic"
        a = self.write("a.csv", TABLE, [table_row("1", h), table_row("64", "s")])
        b = self.write("b.csv", TABLE, [table_row("1", "p"), table_row("64", "t")])
        pa = self.write("pa.csv", PROFILE, [prof_row("1", "p", "9"), prof_row("64", "s", "5")])
        pb = self.write("pb.csv", PROFILE, [prof_row("1", "p", "9"), prof_row("64", "t", "5")])

        def replaced(m, own, new):
            return reconfirm_line(m, f"{own} replaced by {new} (1.020x the default, min 1.010x over 2 placements, "
                                     "margin 0.0%)")
        log_a = self.write_text("a.log", "tgemm tune --reconfirm: every non-default row once more\n")
        log_b = self.write_text("b.log", replaced(1, "q", "p") + "tgemm tune --reconfirm: every non-default row once more\n"
                                + replaced(64, "u", "t"))
        out = self.run_tool(a, b, "--profiles", pa, pb, "--logs", log_a, log_b)
        self.assertIn("64x4096x4096: A s | B t; A's pick is #- in B, B's is #- in A; "
                      "replaced in B's reconfirmation: u -> t", out)
        self.assertNotIn("replaced in B's reconfirmation: q -> p", out)
        self.assertIn("reconfirmation replacements (--alternatives): A 0, B 1\n", out)

    def test_tables_alone(self):
        a = self.write("a.csv", TABLE, [table_row("1", "x")])
        b = self.write("b.csv", TABLE, [table_row("1", "y")])
        out = self.run_tool(a, b)
        self.assertIn("1x4096x4096: A x | B y\n", out)
        self.assertIn("1 problems in both (0 only in A, 0 only in B): 0 identical, 1 differ", out)
        self.assertNotIn("fastest", out)
        self.assertNotIn("timing noise", out)
        self.assertNotIn("classes of", out)


if __name__ == "__main__":
    unittest.main()
