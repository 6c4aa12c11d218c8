"""A unittest base for the analysis scripts under bench/: a temporary directory per test, and
run_tool, which calls the script's main(argv) and returns what it printed (main must return 0).
Subclasses set `tool` to the imported script module."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))


class ScriptCase(unittest.TestCase):
    tool = None  # the script module under test

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def run_tool(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(self.tool.main(list(args)), 0)
        return out.getvalue()
