"""bench/torch_bench.py without a GPU (and without torch): its M grid, the same grid as
src/core/m_grid.h (tests/host/cli/m_grid_cli.cmake compares the two), the re-measure rule and the
options that select them."""

import contextlib
import io
import math
import unittest

import script_case  # noqa: F401  (puts bench/ on sys.path)
import torch_bench  # noqa: E402


def is_power_of_two(v):
    return v > 0 and v & (v - 1) == 0


class MGrid(unittest.TestCase):
    def test_default_covers_1_to_16384_mostly_off_powers_of_two(self):
        grid = torch_bench.m_grid()
        self.assertGreaterEqual(len(grid), 48)
        self.assertEqual(grid[0], 1)
        self.assertEqual(grid[-1], 16384)
        self.assertEqual(grid, sorted(set(grid)))
        off = sum(not is_power_of_two(m) for m in grid)
        self.assertGreaterEqual(2 * off, len(grid))

    def test_every_m_to_16_then_four_rounded_steps_an_octave(self):
        grid = torch_bench.m_grid()
        self.assertEqual(grid[:16], list(range(1, 17)))
        for i in range(16, len(grid)):
            self.assertEqual(grid[i], round(2 ** (4 + (i - 15) / 4)), f"index {i}")
            self.assertTrue(1.10 < grid[i] / grid[i - 1] < 1.30, f"{grid[i - 1]} -> {grid[i]}")
        for p in range(15):
            self.assertIn(2**p, grid)

    def test_other_largest_m_ends_there_on_the_same_values(self):
        full = torch_bench.m_grid()
        for max_m in (5000, 300, 19, 17):
            grid = torch_bench.m_grid(max_m)
            self.assertEqual(grid[-1], max_m)
            self.assertEqual(grid[:-1], [m for m in full if m < max_m], max_m)
        self.assertEqual(torch_bench.m_grid(1), [1])
        self.assertEqual(torch_bench.m_grid(5), [1, 2, 3, 4, 5])
        self.assertEqual(torch_bench.m_grid(65536)[: len(full)], full)

    def test_refuses_largest_m_outside_the_range(self):
        for bad in (0, -1, 2**31):
            with self.assertRaisesRegex(ValueError, str(bad)):
                torch_bench.m_grid(bad)


class CountedReading(unittest.TestCase):
    @staticmethod
    def readings(*speedups):
        calls = iter(speedups)
        taken = []

        def measure():
            taken.append(next(calls))
            return {"speedup": taken[-1], "tgemm_us": 10.0 * len(taken)}

        return measure, taken

    def test_a_reading_at_or_above_the_bar_counts_at_once(self):
        measure, taken = self.readings(0.98, 0.5)
        counted, first = torch_bench.counted_reading(measure, 0.98)
        self.assertEqual(taken, [0.98])
        self.assertIsNone(first)
        self.assertEqual(counted["speedup"], 0.98)

    def test_a_reading_below_is_taken_again_and_the_second_counts(self):
        # The second reading counts even where it is lower still; both are returned.
        for second in (1.01, 0.9):
            measure, taken = self.readings(0.95, second)
            counted, first = torch_bench.counted_reading(measure, 0.98)
            self.assertEqual(taken, [0.95, second])
            self.assertEqual(first, {"speedup": 0.95, "tgemm_us": 10.0})
            self.assertEqual(counted, {"speedup": second, "tgemm_us": 20.0})

    def test_zero_never_re_measures(self):
        measure, taken = self.readings(0.2, 1.0)
        counted, first = torch_bench.counted_reading(measure, 0.0)
        self.assertEqual(taken, [0.2])
        self.assertIsNone(first)


class Options(unittest.TestCase):
    def parse_error(self, *argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            torch_bench.parse_args(list(argv))
        self.assertEqual(e.exception.code, 2)
        return err.getvalue()

    def test_m_grid_selects_the_grid(self):
        self.assertEqual(torch_bench.m_values(torch_bench.parse_args(["--m-grid"])), torch_bench.m_grid())
        args = torch_bench.parse_args(["--m-grid", "--m-grid-max", "300"])
        self.assertEqual(torch_bench.m_values(args), torch_bench.m_grid(300))
        self.assertEqual(torch_bench.m_values(torch_bench.parse_args(["--m", "3,37"])), [3, 37])
        self.assertEqual(torch_bench.m_values(torch_bench.parse_args([])), [1, 16, 64, 128, 512, 2048, 8192])
        self.assertTrue(math.isclose(torch_bench.parse_args([]).remeasure_below, 0.98))

    def test_refused_combinations_name_the_options(self):
        self.assertIn("--m and --m-grid", self.parse_error("--m-grid", "--m", "1"))
        self.assertIn("--m-grid-max needs --m-grid", self.parse_error("--m-grid-max", "64"))
        self.assertIn("--m-grid-max must be in", self.parse_error("--m-grid", "--m-grid-max", "0"))
        self.assertIn("--remeasure-below must be in", self.parse_error("--remeasure-below", "-1"))
        self.assertIn(
            "--ptgmm, --grouped-gemm, --masked, --fmoe, --fp8-contiguous and --fp8-masked",
            self.parse_error("--ptgmm", "--masked"),
        )
        self.assertIn(
            "--ptgmm, --grouped-gemm, --masked, --fmoe, --fp8-contiguous and --fp8-masked",
            self.parse_error("--grouped-gemm", "--gmm"),
        )
        self.assertIn(
            "--ptgmm, --grouped-gemm, --masked, --fmoe, --fp8-contiguous and --fp8-masked",
            self.parse_error("--fmoe", "--quant"),
        )
        self.assertIn(
            "--ptgmm, --grouped-gemm, --masked, --fmoe, --fp8-contiguous and --fp8-masked",
            self.parse_error("--fp8-contiguous", "--fp8-masked"),
        )

    def test_grouped_modes_take_the_moe_suite(self):
        for flag, name in (
            ("--ptgmm", "ptgmm"),
            ("--grouped-gemm", "grouped_gemm"),
            ("--masked", "masked"),
            ("--fmoe", "fmoe"),
            ("--fp8-contiguous", "fp8_contiguous"),
            ("--fp8-masked", "fp8_masked"),
        ):
            args = torch_bench.parse_args([flag])
            self.assertEqual(args.grouped, name)
            self.assertTrue(args.suite.endswith("moe_shapes.csv"))
        self.assertIsNone(torch_bench.parse_args([]).grouped)

    def test_blockscale_takes_a_layout_and_runs_on_its_own(self):
        self.assertEqual(torch_bench.parse_args(["--blockscale", "mn_major"]).blockscale, "mn_major")
        self.assertIsNone(torch_bench.parse_args([]).blockscale)
        self.assertIn("--blockscale", self.parse_error("--blockscale", "col_major"))
        self.assertIn(
            "--blockscale times bf16 outputs on its own", self.parse_error("--blockscale", "row_major", "--gelu")
        )
        self.assertIn(
            "--blockscale times bf16 outputs on its own",
            self.parse_error("--blockscale", "row_major", "--a8w8", "fp8_tensor"),
        )
        self.assertEqual(sorted(torch_bench.DEEPGEMM_H800_TFLOPS), [64, 128, 4096])
        self.assertEqual(torch_bench.parse_args(["--blockscale", "mn_major"]).blockscale_peer, "per_tensor")
        args = torch_bench.parse_args(["--blockscale", "row_major", "--blockscale-peer", "scaled_mm"])
        self.assertEqual(args.blockscale_peer, "scaled_mm")
        self.assertIn("--blockscale-peer", self.parse_error("--blockscale", "row_major", "--blockscale-peer", "cublas"))

    def test_batched_a8w8_takes_a_recipe_and_the_batched_suite(self):
        args = torch_bench.parse_args(["--batched-a8w8", "fp8_rowwise"])
        self.assertEqual(args.batched_a8w8, "fp8_rowwise")
        self.assertTrue(args.suite.endswith("batched_shapes.csv"))
        self.assertIsNone(torch_bench.parse_args([]).batched_a8w8)
        self.assertIn("--batched-a8w8", self.parse_error("--batched-a8w8", "int8_blockwise"))
        self.assertIn(
            "--batched-a8w8 times bf16 outputs on its own",
            self.parse_error("--batched-a8w8", "fp8_tensor", "--batched"),
        )
        self.assertIn(
            "--batched-a8w8 times bf16 outputs on its own",
            self.parse_error("--batched-a8w8", "fp8_tensor", "--out-dtype", "fp32"),
        )

    @unittest.skipIf(torch_bench.torch is not None, "PyTorch is installed here")
    def test_without_torch_main_says_so(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(torch_bench.main(["--m-grid"]), 2)
        self.assertIn("PyTorch is not installed", err.getvalue())


if __name__ == "__main__":
    unittest.main()
