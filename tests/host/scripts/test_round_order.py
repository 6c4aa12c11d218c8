"""bench/round_order.py on synthetic `tgemm bench --json` runs (no GPU): the even/odd-round split
of each row's ratio, the --same-config filter and rows without round data."""

import json
import os
import unittest

from script_case import ScriptCase  # puts bench/ on sys.path

import round_order  # noqa: E402


def row(m, base, tg, algo_b="lt:x", algo_t="lt:x", speedup=1.0):
    r = {"M": m, "N": 4096, "K": 4096, "speedup": speedup, "baseline_algo": algo_b, "tgemm_algo": algo_t}
    if base is not None:
        r["round_baseline_us"] = base
        r["round_tgemm_us"] = tg
    return r


class RoundOrder(ScriptCase):
    tool = round_order

    def write(self, rows):
        path = os.path.join(self.dir.name, "bench.json")
        with open(path, "w") as f:
            json.dump({"rows": rows}, f)
        return path

    def test_second_in_round_runs_slower(self):
        # Whoever runs second in a round is 2% slower: baseline first (even rounds) gives
        # 100/102, tgemm first (odd rounds) 102/100.
        base = [100.0, 102.0, 100.0, 102.0]
        tg = [102.0, 100.0, 102.0, 100.0]
        out = self.run_tool(self.write([row(8192, base, tg)]))
        self.assertIn("M=8192 N=4096 K=4096: speedup 1.000; baseline first 0.980, tgemm first 1.020 (gap +4.04%)",
                      out)
        self.assertIn("1 rows: geomean baseline first 0.9804, tgemm first 1.0200 (gap +4.04%); 0 rows without", out)

    def test_same_config_filter_and_rows_without_rounds(self):
        rows = [row(1, [10.0, 10.0], [10.0, 10.0], algo_t="lt:other"), row(16, [10.0, 10.0], [9.0, 11.0]),
                row(64, None, None)]
        out = self.run_tool(self.write(rows), "--same-config")
        self.assertNotIn("M=1 ", out)  # another configuration: filtered out
        self.assertIn("M=16 N=4096 K=4096: speedup 1.000; baseline first 1.111, tgemm first 0.909", out)
        self.assertIn("1 rows: geomean", out)
        self.assertIn("1 rows without round data", out)  # M=64 (old JSON)

    def test_no_round_data(self):
        out = self.run_tool(self.write([row(1, None, None)]))
        self.assertEqual(out.strip(), "no rows with round data (1 without)")


if __name__ == "__main__":
    unittest.main()
