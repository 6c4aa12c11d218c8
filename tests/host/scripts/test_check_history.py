"""scripts/check-history on small git repositories made here (no GPU): a clean tree passes, a
planted line in any product directory fails with its file:line, the script itself is the only
file allowed to hold the pattern, and identifiers that merely contain a version pass.

The planted words are built from pieces so that this file does not hold them itself."""

import os
import shutil
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts", "check-history")

WORK_PERIOD = "ses" + "sion"
DIARY = "run" + "book"

CLEAN = {
    "README.md": "# demo\n\nA GEMV for M <= 4 and a weight-as-B MMA with cluster split-K.\n",
    "docs/notes.md": "Floors: bytes over bandwidth, FLOPs over peak.\n",
    "src/a.cpp": "// Rows past N are clamped: the loads stay in bounds.\nint a() { return 1; }\n",
    # Identifiers that contain a version but name no kernel by it.
    "src/b.h": "int binary_version 0;\n",
    "configs/t.csv": "kernelName\ncublaslt:algo66_tile10_cluster4_v130100\n",
}


@unittest.skipUnless(shutil.which("git") and shutil.which("bash"), "needs git and bash")
class CheckHistory(unittest.TestCase):
    def setUp(self):
        self.fresh()

    def fresh(self):
        """A new repository holding CLEAN and a copy of the script, all tracked."""
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.root = self.dir.name
        self.git("init", "-q")
        for path, text in CLEAN.items():
            self.write(path, text)
        os.makedirs(os.path.join(self.root, "scripts"))
        shutil.copy(SCRIPT, os.path.join(self.root, "scripts", "check-history"))
        self.git("add", "-A")

    def git(self, *args):
        subprocess.run(["git", "-C", self.root, *args], check=True, capture_output=True)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def plant(self, path, line):
        """Appends `line` to `path` as its third line (tracked) and returns "path:3:"."""
        self.write(path, "first\nsecond\n" + line + "\n")
        self.git("add", "-A")
        return f"{path}:3:"

    def check(self):
        r = subprocess.run(["bash", os.path.join(self.root, "scripts", "check-history"), self.root],
                           capture_output=True, text=True)
        return r.returncode, r.stdout

    def test_clean_tree_passes(self):
        rc, out = self.check()
        self.assertEqual((rc, out), (0, ""))

    def test_planted_lines_fail_with_file_and_line(self):
        planted = [
            ("src/a.cpp", f"// {WORK_PERIOD.capitalize()} 12 measured this"),
            ("docs/notes.md", f"See the gpu-{DIARY}."),
            ("README.md", "Measured in docs/perf" + "-notes.md."),
            ("kernels/k.cuh", "// Vers" + "ion 7 of the kernel"),
            ("tools/t.cpp", "// vers" + "ions 1-2 put the weight in A"),
            ("configs/t.csv", "skinny:sm90_m1_gemv_w8_c2_v1" + "6"),
            ("tests/t.py", "# bench/mi" + "cro/decode_lab.cu"),
            ("python/p.py", "# bench/results/stu" + "dies/s18/"),
            ("include/i.h", f"// {WORK_PERIOD.upper()}"),
            ("scripts/other", f"# {WORK_PERIOD}"),
        ]
        for path, line in planted:
            with self.subTest(path=path):
                self.fresh()
                where = self.plant(path, line)
                rc, out = self.check()
                self.assertEqual(rc, 1, out)
                self.assertIn(where, out)

    def test_only_the_script_itself_may_hold_the_pattern(self):
        with open(SCRIPT) as f:
            pattern_line = next(line for line in f if line.startswith("pattern="))
        rc, _ = self.check()
        self.assertEqual(rc, 0)  # the copy in scripts/ holds the pattern and passes
        where = self.plant("scripts/copy-of-check", pattern_line.rstrip("\n"))
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertIn(where, out)

    def test_directories_outside_the_product_are_not_searched(self):
        where = self.plant("bench/results/r.json", f'{{"note": "{WORK_PERIOD} 3"}}')
        rc, out = self.check()
        self.assertEqual((rc, out), (0, ""), where)

    def test_not_a_git_tree_is_an_error(self):
        with tempfile.TemporaryDirectory() as bare:
            r = subprocess.run(["bash", SCRIPT, bare], capture_output=True, text=True,
                               env={**os.environ, "GIT_CEILING_DIRECTORIES": os.path.dirname(bare)})
        self.assertEqual(r.returncode, 2, r.stderr)


if __name__ == "__main__":
    unittest.main()
