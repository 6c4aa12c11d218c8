"""bench/skinny_fixed_cost.py on synthetic runs (no GPU): the fitted per-launch costs and rates of
the floor, the baseline and the dispatch, the candidates' ranking, and the ratio by weight size."""

import csv
import json
import os
import unittest

from script_case import ScriptCase  # puts bench/ on sys.path

import skinny_fixed_cost  # noqa: E402

PROFILE = ["arch", "sm_count", "M", "N", "K", "bias", "dtype", "outdtype", "epilogue", "libtype", "kernelName",
           "screen_us", "us", "spread", "err_ratio", "strict_ok", "error"]
SHAPES = [(576, 64), (576, 2048), (576, 7168), (8192, 1024), (4096, 4096), (4096, 14336)]


def t(m, n, k, t0, tbps):
    return t0 + skinny_fixed_cost.problem_bytes(m, n, k) / (tbps * 1e6)


class SkinnyFixedCost(ScriptCase):
    tool = skinny_fixed_cost

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write_profile(self, name, scale):
        rows = []
        for n, k in SHAPES:
            # "fast": 1.0 us per launch at 4.0 TB/s; "slow": 3.5 us at 4.4 TB/s (screen time only);
            # "bad" fails its check and must not be fitted.
            rows.append(["sm_90a", "132", 1, n, k, "False", "bf16", "bf16", "none", "skinny", "fast",
                         "99", f"{scale * t(1, n, k, 1.0, 4.0):.6f}", "0", "0", "True", ""])
            rows.append(["sm_90a", "132", 1, n, k, "False", "bf16", "bf16", "none", "skinny", "slow",
                         f"{scale * t(1, n, k, 3.5, 4.4):.6f}", "-1", "0", "-1", "", ""])
            rows.append(["sm_90a", "132", 1, n, k, "False", "bf16", "bf16", "none", "skinny", "bad",
                         "1", "0.5", "0", "1", "False", ""])
        with open(self.path(name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(PROFILE)
            w.writerows(rows)
        return self.path(name)


    def test_fits_series_candidates_and_ratios(self):
        rows = [{"M": 1, "N": n, "K": k, "floor_us": t(1, n, k, 1.7, 4.5), "baseline_us": t(1, n, k, 4.0, 4.2),
                 "tgemm_us": t(1, n, k, 3.0, 4.4)} for n, k in SHAPES]
        with open(self.path("bench.json"), "w") as f:
            json.dump({"rows": rows}, f)
        a = self.write_profile("a.csv", 1.0)
        b = self.write_profile("b.csv", 0.9)
        out = self.run_tool(self.path("bench.json"), "--profile", a, "--compare", b)
        self.assertIn("floor              t0   1.70 us,  4.50 TB/s", out)
        self.assertIn("cuBLASLt default   t0   4.00 us,  4.20 TB/s", out)
        self.assertIn("tgemm dispatch     t0   3.00 us,  4.40 TB/s", out)
        fast = out.index("t0   1.00 us,  4.00 TB/s  (6 problems)  fast")
        slow = out.index("t0   3.50 us,  4.40 TB/s  (6 problems)  slow")
        self.assertLess(fast, slow)  # lowest per-launch cost first
        self.assertNotIn("bad", out)
        self.assertIn("M =   1, weight < 16 MiB : 0.900", out)
        self.assertIn("M =   1, weight 16-64 MiB: 0.900", out)
        self.assertIn("M =   1, weight >= 64 MiB: 0.900", out)

    def test_one_size_is_not_a_fit(self):
        self.assertIsNone(skinny_fixed_cost.fit([(100, 1.0), (100, 2.0)]))
        self.assertIsNone(skinny_fixed_cost.fit([(100, 2.0), (200, 1.0)]))  # time falling with bytes
        t0, rate = skinny_fixed_cost.fit([(0, 2.0), (4e6, 3.0)])
        self.assertAlmostEqual(t0, 2.0)
        self.assertAlmostEqual(rate, 4.0)


if __name__ == "__main__":
    unittest.main()
