// Tuned-table writes (tuner/tuned_file.h): atomic and locked, refusing targets that are not
// regular files, leaving no temporary file behind on a failure; the merge that a resumed or a
// concurrent tune does keeps other processes' rows and the lines it cannot parse; the profile is
// appended under a lock. The concurrency cases run in forked processes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/csv.h"
#include "core/table.h"
#include "tests/common/host_test_util.h"
#include "tgemm/error.h"
#include "tuner/tuned_file.h"

namespace tgemm {
namespace {

TableRow row(std::int64_t m, const std::string& kernel, double us = 1.0) {
  TableRow r;
  r.key.arch = "sm_90a";
  r.key.sm_count = 132;
  r.key.n = 4096;
  r.key.k = 4096;
  r.m = m;
  r.libtype = "cublaslt";
  r.kernel_name = kernel;
  r.solidx = 1;
  r.us = us;
  return r;
}

std::vector<TableRow> parse_file(const std::string& path) {
  std::istringstream in(test::read_file(path));
  return parse_tuned_table(in, path).rows;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string header() { return csv::join(tuned_table_columns()); }

// Runs f in `n` forked children, released together once all are started; true when every child
// exited 0.
template <typename F>
bool in_children(int n, F f) {
  int gate[2];
  if (::pipe(gate) != 0) return false;
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      while (::read(gate[0], &c, 1) > 0) {
      }  // end of file: the parent closed the gate
      int rc = 0;
      try {
        f(i);
      } catch (...) {
        rc = 3;
      }
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    ok = ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
  }
  return ok;
}

TEST(TunedFile, WritesSortedRowsAndLeavesOnlyTheTableAndItsLock) {
  test::TempDir dir;
  const std::string path = dir.file("t.csv");
  write_tuned_table(path, {row(64, "b"), row(1, "a")});
  EXPECT_EQ(test::read_file(path),
            header() + "\n" + format_tuned_row(row(1, "a")) + "\n" + format_tuned_row(row(64, "b")) + "\n");
  EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"t.csv", "t.csv.lock"}));
}

TEST(TunedFile, ADirectoryTargetIsAnErrorAndLeavesNothingBehind) {
  test::TempDir dir;
  const std::string target = dir.file("out");
  std::filesystem::create_directory(target);
  for (int update = 0; update < 2; ++update) {
    try {
      if (update) {
        update_tuned_table(target, {row(1, "a")});
      } else {
        write_tuned_table(target, {row(1, "a")});
      }
      ADD_FAILURE() << "writing a table over a directory did not throw";
    } catch (const Error& e) {
      EXPECT_TRUE(test::contains(e.what(), target)) << e.what();
      EXPECT_TRUE(test::contains(e.what(), "not a regular file")) << e.what();
    }
    EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out"});
  }
}

TEST(TunedFile, ADeviceTargetIsAnErrorAndTheDeviceStays) {
  try {
    write_tuned_table("/dev/full", {row(1, "a")});
    ADD_FAILURE() << "writing a table to /dev/full did not throw";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), "/dev/full")) << e.what();
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/full was replaced";
}

TEST(TunedFile, AFailedWriteKeepsTheOldTableAndRemovesTheTemporaryFile) {
  // A child with a 4 KiB file size limit (writes past it fail with EFBIG once SIGXFSZ is
  // ignored), as a full disk would fail them.
  test::TempDir dir;
  const std::string path = dir.file("t.csv");
  write_tuned_table(path, {row(1, "a")});
  const std::string before = test::read_file(path);
  const bool ok = in_children(1, [&](int) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(4);
    std::vector<TableRow> many;
    for (int m = 1; m <= 200; ++m) many.push_back(row(m, "kernel_with_a_long_name_" + std::to_string(m)));
    try {
      update_tuned_table(path, many);
    } catch (const Error& e) {
      ::_exit(test::contains(e.what(), "failed") && test::contains(e.what(), path) ? 0 : 5);
    }
    ::_exit(6);
  });
  EXPECT_TRUE(ok) << "the oversized write did not fail with a message naming the file";
  EXPECT_EQ(test::read_file(path), before);
  EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"t.csv", "t.csv.lock"}));
}

TEST(TunedFile, UpdateKeepsCommentsAndUnparseableLinesVerbatim) {
  test::TempDir dir;
  const std::string path = dir.file("t.csv");
  const std::string malformed = "sm_90a,132,16,4096,4096,False,torch.bfloat16";  // too few fields
  const std::string unknown_dtype = format_tuned_row(row(32, "x"));
  std::string bad_dtype = unknown_dtype;
  bad_dtype.replace(bad_dtype.find("torch.bfloat16"), 14, "torch.bfloat17");
  test::write_file(path, "# tuned on the lab's H100\n" + header() + "\n" + format_tuned_row(row(8, "kept")) +
                             "\n# the rows below were edited by hand\n" + malformed + "\n" + bad_dtype + "\n");
  const std::vector<TableRow> merged = update_tuned_table(path, {row(1, "new")});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(test::read_file(path), header() + "\n# tuned on the lab's H100\n# the rows below were edited by hand\n" +
                                       malformed + "\n" + bad_dtype + "\n" + format_tuned_row(row(1, "new")) + "\n" +
                                       format_tuned_row(row(8, "kept")) + "\n");
  // Written again, nothing changes: the verbatim lines are not duplicated.
  const std::string once = test::read_file(path);
  update_tuned_table(path, {});
  EXPECT_EQ(test::read_file(path), once);
}

TEST(TunedFile, UpdateReplacesTheRowOfTheSameKeyAndM) {
  test::TempDir dir;
  const std::string path = dir.file("t.csv");
  write_tuned_table(path, {row(1, "old"), row(2, "other")});
  update_tuned_table(path, {row(1, "new", 0.5)});
  const std::vector<TableRow> rows = parse_file(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kernel_name, "new");
  EXPECT_EQ(rows[1].kernel_name, "other");
}

TEST(TunedFile, UpdateRefusesAFileThatIsNotATunedTable) {
  test::TempDir dir;
  const std::string path = dir.file("notes.csv");
  const std::string text = "M,N,K,bias\n1,4096,4096,False\n";  // an untuned table given as -o
  test::write_file(path, text);
  try {
    update_tuned_table(path, {row(1, "a")});
    ADD_FAILURE() << "an untuned table was overwritten";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), path + ":1")) << e.what();
    EXPECT_TRUE(test::contains(e.what(), "'arch'")) << e.what();
    EXPECT_TRUE(test::contains(e.what(), "refusing")) << e.what();
  }
  EXPECT_EQ(test::read_file(path), text);
}

TEST(TunedFile, ConcurrentUpdatesKeepEveryProcessRows) {
  // Four processes each add 25 rows one update at a time, as four tunes into the same -o with
  // --batch 1: an unlocked read-merge-write would lose rows another process wrote in between.
  test::TempDir dir;
  const std::string path = dir.file("t.csv");
  constexpr int kProcesses = 4, kRows = 25;
  const bool ok = in_children(kProcesses, [&](int p) {
    for (int i = 0; i < kRows; ++i) update_tuned_table(path, {row(1 + p * kRows + i, "p" + std::to_string(p))});
  });
  ASSERT_TRUE(ok);
  const std::vector<TableRow> rows = parse_file(path);
  std::set<std::int64_t> ms;
  for (const TableRow& r : rows) ms.insert(r.m);
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(kProcesses * kRows));
  EXPECT_EQ(ms.size(), static_cast<std::size_t>(kProcesses * kRows));
}

TEST(TunedFile, ConcurrentAppendsWriteOneHeaderAndWholeLines) {
  // Four processes append to the same 1000 new files in the same order, so their first appends to
  // a file race: the header must be written by exactly one of them, before any row.
  test::TempDir dir;
  constexpr int kProcesses = 4, kFiles = 1000;
  const std::string payload(300, 'x');
  const std::string head = "process,file,payload\n";
  const bool ok = in_children(kProcesses, [&](int p) {
    for (int f = 0; f < kFiles; ++f) {
      const std::string line = "p" + std::to_string(p) + "," + std::to_string(f) + "," + payload + "\n";
      append_locked(dir.file(std::to_string(f) + ".csv"), head, line + line);
    }
  });
  ASSERT_TRUE(ok);
  for (int f = 0; f < kFiles; ++f) {
    const std::vector<std::string> lines = test::read_lines(dir.file(std::to_string(f) + ".csv"));
    ASSERT_EQ(lines.size(), 1u + 2u * kProcesses) << "file " << f;
    EXPECT_EQ(lines[0], "process,file,payload") << "file " << f;
    for (std::size_t i = 1; i < lines.size(); i += 2) {
      EXPECT_EQ(lines[i], lines[i + 1]) << "file " << f << ": an append was interleaved at line " << i + 1;
      EXPECT_TRUE(test::contains(lines[i], "," + payload)) << "file " << f << ": line " << i + 1 << " is torn";
    }
  }
}

TEST(TunedFile, AppendToAnUnwritablePathNamesIt) {
  try {
    append_locked("/nonexistent-dir/profile.csv", "h\n", "x\n");
    ADD_FAILURE() << "did not throw";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), "/nonexistent-dir/profile.csv")) << e.what();
  }
}

}  // namespace
}  // namespace tgemm
