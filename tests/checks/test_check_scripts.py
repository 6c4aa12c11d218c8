"""scripts/check-length and scripts/check-format on small git repositories made for each test:
each check fails on a planted violation and passes without it.

Needs the checks' tools (scripts/setup --checks); without them the tests skip, except under CI
(CI=true), where a missing tool is a failure.
"""

import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(REPO, ".deps", "tools")


def have_tools():
    return (
        os.path.exists(os.path.join(TOOLS, "lizard.py"))
        and os.path.exists(os.path.join(TOOLS, "bin", "ruff"))
        and shutil.which("clang-format") is not None
        and shutil.which("git-clang-format") is not None
    )


def require_tools(test):
    if have_tools():
        return test
    if os.environ.get("CI") == "true":
        raise RuntimeError("the checks' tools are missing under CI: scripts/setup --checks must install them")
    return unittest.skip("scripts/setup --checks has not installed clang-format, ruff and lizard")(test)


def function_of(name, lines):
    """A C++ function `name` spanning exactly `lines` lines, signature to closing brace."""
    assert lines >= 3
    body = [f"  total += {i};" for i in range(lines - 3)]
    return "\n".join([f"int {name}(int total) {{", *body, "  return total;", "}"]) + "\n"


def git(cwd, *args):
    subprocess.run(["git", "-C", cwd, *args], check=True, capture_output=True, text=True)


def make_repo(root):
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "checks@tgemm.invalid")
    git(root, "config", "user.name", "checks")


def commit_all(root, message):
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@require_tools
class CheckLength(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="tgemm_check_length_")
        self.addCleanup(shutil.rmtree, self.root)
        make_repo(self.root)
        os.makedirs(os.path.join(self.root, "src"))
        os.makedirs(os.path.join(self.root, "tools"))

    def write(self, rel, text):
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(text)

    def run_check(self):
        return subprocess.run(
            [os.path.join(REPO, "scripts", "check-length"), "--root", self.root],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def test_fails_on_a_151_line_function(self):
        self.write("src/kept.cpp", function_of("at_limit", 150))
        self.write("tools/planted.cu", function_of("too_long", 151))  # .cu is read as C++ too
        commit_all(self.root, "planted")
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("tools/planted.cu:1: too_long is 151 lines (limit 150)", r.stdout)
        self.assertNotIn("at_limit is", r.stdout)

    def test_passes_at_the_limit(self):
        self.write("src/kept.cpp", function_of("at_limit", 150))
        commit_all(self.root, "at the limit")
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("150  at_limit", r.stdout)

    def test_reads_tracked_files_only(self):
        self.write("src/kept.cpp", function_of("at_limit", 150))
        commit_all(self.root, "at the limit")
        self.write("src/untracked.cpp", function_of("too_long", 200))
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


@require_tools
class CheckFormat(unittest.TestCase):
    """A repository with this one's style files and check-format; main holds badly formatted code
    that nobody changes, the branch `work` the change under test."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="tgemm_check_format_")
        self.addCleanup(shutil.rmtree, self.root)
        make_repo(self.root)
        os.makedirs(os.path.join(self.root, "scripts"))
        os.makedirs(os.path.join(self.root, ".deps"))
        shutil.copy(os.path.join(REPO, "scripts", "check-format"), os.path.join(self.root, "scripts"))
        shutil.copy(os.path.join(REPO, ".clang-format"), self.root)
        shutil.copy(os.path.join(REPO, "pyproject.toml"), self.root)
        os.symlink(TOOLS, os.path.join(self.root, ".deps", "tools"))
        self.write(".gitignore", "/.deps/\n")
        self.write("old.cpp", "int   untouched( int a ){return a;}\n")
        self.write("old.py", "import os, sys\n")
        commit_all(self.root, "base")
        git(self.root, "checkout", "-q", "-b", "work")

    def write(self, rel, text):
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(text)

    def run_check(self, *args):
        env = {k: v for k, v in os.environ.items() if k != "TGEMM_CHECK_BASE"}
        return subprocess.run(
            [os.path.join(self.root, "scripts", "check-format"), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    def test_clean_change_passes_and_old_code_is_not_held_to_the_style(self):
        self.write("new.cpp", "int added(int a) { return a + 1; }\n")
        self.write("new.py", "import os\n\nprint(os.sep)\n")
        commit_all(self.root, "clean change")
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_badly_formatted_cpp_line_fails(self):
        self.write("new.cpp", "int added( int a ){return a+1;}\n")
        commit_all(self.root, "bad change")
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("+int added(int a) { return a + 1; }", r.stdout)

    def test_python_lint_and_format_fail(self):
        self.write(
            "new.py",
            textwrap.dedent("""\
            import sys
            x = {'a':1}
            """),
        )
        commit_all(self.root, "bad python")
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("F401", r.stdout)  # sys imported but unused
        self.assertIn('+x = {"a": 1}', r.stdout)  # ruff format's diff

    def test_uncommitted_edit_counts_and_fix_repairs_it(self):
        self.write("new.cpp", "int added(int a) { return a + 1; }\n")
        commit_all(self.root, "clean change")
        self.assertEqual(self.run_check().returncode, 0)
        self.write("new.cpp", "int added( int a ){return a+1;}\n")
        self.assertEqual(self.run_check().returncode, 1)
        r = self.run_check("--fix")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.root, "new.cpp")) as f:
            self.assertEqual(f.read(), "int added(int a) { return a + 1; }\n")
        self.assertEqual(self.run_check().returncode, 0)

    def test_on_main_the_last_commit_is_checked(self):
        git(self.root, "checkout", "-q", "main")
        self.write("new.cpp", "int added( int a ){return a+1;}\n")
        commit_all(self.root, "bad change on main")
        r = self.run_check()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("(HEAD~1)", r.stdout)


TORCH_HEADERS = os.path.join(REPO, ".deps", "torch", "torch", "include")


@unittest.skipIf(
    not os.path.isdir(TORCH_HEADERS) and os.environ.get("CI") != "true",
    "scripts/setup --checks has not unpacked the torch headers",
)
class CheckBinding(unittest.TestCase):
    """scripts/check-binding on one planted source each: a binding-style file that compiles, and
    the same with an error."""

    def check(self, text):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "planted.cpp")
            with open(path, "w") as f:
                f.write(text)
            return subprocess.run(
                [os.path.join(REPO, "scripts", "check-binding"), path], capture_output=True, text=True, timeout=600
            )

    def test_passes_on_a_clean_source_and_fails_on_an_error(self):
        clean = '#include "python/csrc/torch_view.h"\nint planted(const at::Tensor& t) { return t.dim(); }\n'
        r = self.check(clean)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.check(clean + "int broken = ;\n")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("planted.cpp fails", r.stdout)


if __name__ == "__main__":
    unittest.main()
