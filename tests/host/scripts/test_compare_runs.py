"""bench/compare_runs.py on synthetic `tgemm compare --measure --json` runs (no GPU): the verdict
by the median of the runs' ratios against each run alone, and inputs it must refuse."""

import json
import os
import unittest

from script_case import ScriptCase  # puts bench/ on sys.path

import compare_runs  # noqa: E402


def row(m, verdict, ratio=None):
    r = {"problem": "N=4096 K=4096", "m": m, "a": f"lt_a{m}", "b": f"lt_b{m}", "a_table_us": 10.0,
         "b_table_us": 10.0, "verdict": verdict}
    if ratio is not None:
        r["ratio"] = ratio
    return r


class CompareRuns(ScriptCase):
    tool = compare_runs

    def write(self, name, rows, measure=True, a="A.csv", b="B.csv"):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump({"a": a, "b": b, "tie_band": 0.01, "measure": measure, "rows": rows}, f)
        return path

    def test_median_of_runs_judges_each_row(self):
        # M=1 identical; M=16 flips sign between runs, the median (ratio 0.995) ties; M=64 is
        # beyond the band in every run (A faster); M=128 beyond in one run only.
        runs = [
            [row(1, "identical"), row(16, "a_faster", 0.97), row(64, "a_faster", 0.95), row(128, "tie", 1.005)],
            [row(1, "identical"), row(16, "b_faster", 1.02), row(64, "a_faster", 0.96), row(128, "b_faster", 1.03)],
            [row(1, "identical"), row(16, "tie", 0.995), row(64, "a_faster", 0.94), row(128, "tie", 1.002)],
        ]
        paths = [self.write(f"r{i}.json", r) for i, r in enumerate(runs)]
        out = self.run_tool(*paths)
        self.assertIn("M=16: B +0.50% vs A by the median (runs: +3.09%, -1.96%, +0.50%): tie", out)
        self.assertIn("M=64: B +5.26% vs A by the median", out)
        self.assertIn(": a_faster", out)
        self.assertIn("M=128: B -0.50% vs A by the median", out)
        self.assertIn("4 rows: 3 agree or tie by the median of 3 runs (75.0%); 0 not measured", out)
        # Alone: run 0 ties M=1, M=128; run 1 only M=1; run 2 M=1, M=16, M=128.
        self.assertIn("by each run alone: 2 (50.0%), 1 (25.0%), 3 (75.0%)", out)

    def test_wider_band_and_unmeasured_rows(self):
        runs = [[row(16, "a_faster", 0.97), row(64, "not_measured")],
                [row(16, "a_faster", 0.975), row(64, "not_measured")]]
        paths = [self.write(f"w{i}.json", r) for i, r in enumerate(runs)]
        out = self.run_tool(*paths, "--tie-band", "0.05")
        self.assertIn("M=16: B +2.83% vs A by the median (runs: +3.09%, +2.56%): tie", out)
        self.assertIn("M=64: not measured in every run", out)
        self.assertIn("2 rows: 1 agree or tie by the median of 2 runs (50.0%); 1 not measured", out)

    def test_refuses_mixed_or_unmeasured_runs(self):
        a = self.write("a.json", [row(16, "a_faster", 0.97)])
        other = self.write("o.json", [row(16, "a_faster", 0.97)], b="C.csv")
        with self.assertRaises(SystemExit) as e:
            compare_runs.main([a, other])
        self.assertIn("compares A.csv and C.csv", str(e.exception))
        tables = self.write("t.json", [row(16, "a_faster")], measure=False)
        with self.assertRaises(SystemExit) as e:
            compare_runs.main([tables])
        self.assertIn("not a --measure run", str(e.exception))
        missing = self.write("m.json", [])
        with self.assertRaises(SystemExit) as e:
            compare_runs.main([a, missing])
        self.assertIn("not in every run", str(e.exception))


if __name__ == "__main__":
    unittest.main()
