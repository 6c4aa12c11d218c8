"""bench/merge_results.py on synthetic `tgemm bench --json` parts (no GPU): the merged rows and the
summary recomputed as `tgemm bench` computes it, and the parts it must refuse."""

import json
import math
import os

from script_case import ScriptCase  # puts bench/ on sys.path

# isort: split
import merge_results  # noqa: E402


def row(model, m, speedup, check="ok", remeasured=False):
    return {
        "model": model,
        "layer": "qkv",
        "M": m,
        "N": 4096,
        "K": 4096,
        "dtype": "torch.bfloat16",
        "outdtype": "torch.bfloat16",
        "bias": False,
        "epilogue": "none",
        "family": "a16w16",
        "speedup": speedup,
        "check": check,
        "remeasured": remeasured,
    }


def part(rows, **over):
    doc = {
        "command": "tgemm bench --m-grid",
        "device": "NVIDIA H100 80GB HBM3",
        "sm_count": 132,
        "suite": "bench/shapes/llm_shapes.csv",
        "data": "unit",
        "m_grid_max": 16384,
        "remeasure_below": 0.98,
        "commit": "abc1234",
        "tables": ["configs/bf16_tuned_gemm.csv"],
        "date": "2026-01-01T00:00:00Z",
        "copy_tbps": 3.0,
        "rows": rows,
        "summary": {},
    }
    doc.update(over)
    return doc


class MergeResults(ScriptCase):
    tool = merge_results

    def write(self, name, doc):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def merged(self, *docs):
        paths = [self.write(f"p{i}.json", d) for i, d in enumerate(docs)]
        out = os.path.join(self.dir.name, "merged.json")
        printed = self.run_tool(*paths, "-o", out)
        with open(out) as f:
            return json.load(f), printed

    def test_rows_concatenate_and_the_summary_is_recomputed(self):
        a = part([row("llama", 1, 1.2), row("llama", 16, 0.97, remeasured=True)], command="tgemm bench --filter llama")
        b = part(
            [row("dsv3", 1, 1.05, check="3 bad"), row("dsv3", 2, 1.0, check="-")],
            command="tgemm bench --filter dsv3",
            date="2026-01-02T00:00:00Z",
        )
        doc, printed = self.merged(a, b)
        self.assertEqual(
            [(r["model"], r["M"]) for r in doc["rows"]], [("llama", 1), ("llama", 16), ("dsv3", 1), ("dsv3", 2)]
        )
        s = doc["summary"]
        self.assertEqual(s["problems"], 4)
        self.assertAlmostEqual(s["geomean_speedup"], math.exp((math.log(1.2) + math.log(0.97) + math.log(1.05)) / 4))
        self.assertAlmostEqual(s["min_speedup"], 0.97)
        self.assertEqual(s["below_0_98"], 1)
        self.assertEqual(s["check_failures"], 1)
        self.assertEqual(s["remeasured"], 1)
        self.assertEqual(doc["command"], "tgemm bench --filter llama ; tgemm bench --filter dsv3")
        self.assertEqual(doc["date"], "2026-01-02T00:00:00Z")
        self.assertEqual(doc["parts"], 2)
        self.assertEqual(doc["device"], "NVIDIA H100 80GB HBM3")
        self.assertIn("4 problems from 2 parts", printed)

    def refused(self, *docs):
        paths = [self.write(f"p{i}.json", d) for i, d in enumerate(docs)]
        with self.assertRaises(ValueError) as e:
            merge_results.merge([json.load(open(p)) for p in paths], paths)
        self.assertEqual(merge_results.main([*paths, "-o", os.path.join(self.dir.name, "m.json")]), 2)
        return str(e.exception)

    def test_torch_bench_parts_keep_the_maximum(self):
        a = part([row("llama", 1, 1.2)], summary={"max_speedup": 1.2, "host_overhead": {"us": 3}}, torch="2.11")
        b = part([row("dsv3", 1, 0.9, check="max abs err 3.1")], summary={"max_speedup": 0.9}, torch="2.11")
        doc, _ = self.merged(a, b)
        self.assertAlmostEqual(doc["summary"]["max_speedup"], 1.2)
        self.assertEqual(doc["summary"]["check_failures"], 1)
        self.assertNotIn("host_overhead", doc["summary"])
        self.assertIn("torch", self.refused(a, part([row("qwen", 1, 1.0)], summary={"max_speedup": 1.0}, torch="2.10")))

    def test_parts_of_another_card_commit_or_grid_are_refused(self):
        a = part([row("llama", 1, 1.2)])
        for key, value in (
            ("device", "NVIDIA H200"),
            ("commit", "def5678"),
            ("m_grid_max", 64),
            ("tables", ["configs/h200/bf16_tuned_gemm.csv"]),
        ):
            with self.subTest(key=key):
                msg = self.refused(a, part([row("dsv3", 1, 1.0)], **{key: value}))
                self.assertIn(key, msg)

    def test_a_problem_in_two_parts_is_refused(self):
        msg = self.refused(part([row("llama", 1, 1.2)]), part([row("llama", 1, 1.1)]))
        self.assertIn("also in", msg)

    def test_a_file_that_is_not_a_bench_result_is_refused(self):
        self.assertIn("no 'rows'", self.refused({"measure": True}))


if __name__ == "__main__":
    import unittest

    unittest.main()
