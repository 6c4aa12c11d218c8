"""scripts/native-backtrace on small C programs: a fault and a call through a null function
pointer each print where they happened (symbol of the faulting code, or of the null call's
caller) and keep the process's exit status (128 + SIGSEGV)."""

import os
import shutil
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "native-backtrace")

PROGRAM = r"""
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) void call_through(void (*f)(void)) { f(); }
__attribute__((noinline)) void write_through(volatile int* p) { *p = 1; }
int main(int argc, char** argv) {
  if (strcmp(argv[1], "null") == 0) call_through(NULL);
  if (strcmp(argv[1], "fault") == 0) write_through((volatile int*)16);
  return 0;
}
"""


@unittest.skipIf(shutil.which("cc") is None, "no C compiler")
class NativeBacktrace(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        src = os.path.join(cls.dir, "crash.c")
        with open(src, "w") as f:
            f.write(PROGRAM)
        cls.exe = os.path.join(cls.dir, "crash")
        subprocess.run(["cc", "-O1", "-rdynamic", "-o", cls.exe, src], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def run_script(self, mode):
        return subprocess.run([SCRIPT, self.exe, mode], capture_output=True, text=True, timeout=120)

    def test_fault_names_the_faulting_function(self):
        r = self.run_script("fault")
        self.assertEqual(r.returncode, 139, r.stderr)
        self.assertIn("native-backtrace: signal 11", r.stderr)
        self.assertIn("write_through", r.stderr)

    def test_null_call_names_the_caller(self):
        r = self.run_script("null")
        self.assertEqual(r.returncode, 139, r.stderr)
        self.assertIn("at pc (nil)", r.stderr)
        self.assertRegex(r.stderr, r"null call from 0x[0-9a-f]+ = call_through\+0x[0-9a-f]+ in ")

    def test_clean_exit_passes_through(self):
        r = self.run_script("none")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("native-backtrace: signal", r.stderr)


if __name__ == "__main__":
    unittest.main()
