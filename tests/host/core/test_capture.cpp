// TGEMM_TUNE_GEMM capture: header once, each problem once, across Capture objects and processes.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/capture.h"
#include "core/csv.h"
#include "tests/common/host_fakes.h"
#include "tests/common/host_test_util.h"

namespace tgemm {
namespace {

using test::a16w16_problem;

const std::string kHeader = "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue";

std::string row(std::int64_t m, std::int64_t n = 4096, std::int64_t k = 4096) {
  return std::to_string(m) + "," + std::to_string(n) + "," + std::to_string(k) +
         ",False,torch.bfloat16,torch.bfloat16,False,False,none";
}

TEST(FormatUntunedRow, Columns) {
  EXPECT_EQ(format_untuned_row(a16w16_problem(16, 4096, 1024)),
            "16,4096,1024,False,torch.bfloat16,torch.bfloat16,False,False,none");
  GemmProblem p = a16w16_problem(1, 8, 32, /*bias=*/true);
  p.a_type = p.b_type = DType::kFloat16;
  p.out_type = DType::kFloat32;
  p.scale_ab = true;
  p.bpreshuffle = true;
  EXPECT_EQ(format_untuned_row(p), "1,8,32,True,torch.float16,torch.float32,True,True,none");
}

TEST(FormatUntunedRow, LeadingDimsAndAlignmentAreNotPartOfTheRow) {
  // The untuned table lists shapes to tune; layouts of one call do not make a new shape.
  GemmProblem a = a16w16_problem(16, 64, 64);
  GemmProblem b = a;
  b.lda = 128;
  b.align_a = 2;
  EXPECT_EQ(format_untuned_row(a), format_untuned_row(b));
}

TEST(Capture, WritesHeaderAndRowOnce) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  Capture c(path);
  EXPECT_EQ(c.path(), path);
  c.record(a16w16_problem(16, 4096, 4096));
  c.record(a16w16_problem(16, 4096, 4096));
  c.record(a16w16_problem(32, 4096, 4096));
  c.record(a16w16_problem(16, 4096, 4096));
  EXPECT_EQ(test::read_file(path), kHeader + "\n" + row(16) + "\n" + row(32) + "\n");
}

TEST(Capture, SecondObjectOnTheSameFileDoesNotDuplicate) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  {
    Capture first(path);
    first.record(a16w16_problem(16, 4096, 4096));
  }
  Capture second(path);
  second.record(a16w16_problem(16, 4096, 4096));
  second.record(a16w16_problem(8, 4096, 4096));
  EXPECT_EQ(test::read_lines(path), (std::vector<std::string>{kHeader, row(16), row(8)}));
}

TEST(Capture, TwoLiveObjectsInterleaved) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  Capture a(path);
  Capture b(path);
  a.record(a16w16_problem(1, 64, 64));
  b.record(a16w16_problem(1, 64, 64));  // b has not seen it, but the file has
  b.record(a16w16_problem(2, 64, 64));
  a.record(a16w16_problem(2, 64, 64));  // a has not seen it, but the file has
  EXPECT_EQ(test::read_lines(path),
            (std::vector<std::string>{kHeader, row(1, 64, 64), row(2, 64, 64)}));
}

TEST(Capture, RowsAlreadyInTheFileAreNotAppended) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  test::write_file(path, kHeader + "\r\n" + row(16) + "\r\n");  // written on another system
  Capture c(path);
  c.record(a16w16_problem(16, 4096, 4096));
  EXPECT_EQ(test::read_file(path), kHeader + "\r\n" + row(16) + "\r\n");
}

TEST(Capture, MissingTrailingNewlineIsAddedBeforeTheNewRow) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  test::write_file(path, kHeader + "\n" + row(16));  // cut after the last row
  Capture c(path);
  c.record(a16w16_problem(16, 4096, 4096));  // already there: nothing written
  EXPECT_EQ(test::read_file(path), kHeader + "\n" + row(16));
  c.record(a16w16_problem(32, 4096, 4096));
  EXPECT_EQ(test::read_file(path), kHeader + "\n" + row(16) + "\n" + row(32) + "\n");
}

TEST(Capture, EmptyExistingFileGetsTheHeader) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  test::write_file(path, "");
  Capture c(path);
  c.record(a16w16_problem(4, 64, 64));
  EXPECT_EQ(test::read_file(path), kHeader + "\n" + row(4, 64, 64) + "\n");
}

TEST(Capture, UnwritablePathIsOneWarningNeverAnError) {
  test::TempDir dir;
  test::LogCapture log;
  const std::string path = dir.file("no/such/dir/u.csv");
  Capture c(path);
  EXPECT_NO_THROW(c.record(a16w16_problem(1, 64, 64)));
  EXPECT_NO_THROW(c.record(a16w16_problem(2, 64, 64)));
  auto w = log.warnings();
  ASSERT_EQ(w.size(), 1u) << log.dump();
  EXPECT_TRUE(test::contains(w[0], path)) << w[0];
  EXPECT_TRUE(test::contains(w[0], "TGEMM_TUNE_GEMM")) << w[0];
}

TEST(Capture, AnEndlessFileIsOneWarningAndNoUnboundedRead) {
  // The file is re-read before each append; /dev/zero has no newline and no end. Through a link,
  // so the lock file lands in the scratch directory.
  test::TempDir dir;
  test::LogCapture log;
  const std::string path = dir.file("u.csv");
  ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0);
  Capture c(path);
  c.record(a16w16_problem(1, 64, 64));
  c.record(a16w16_problem(2, 64, 64));
  ASSERT_EQ(log.warnings().size(), 1u) << log.dump();
  EXPECT_EQ(log.warnings()[0], "TGEMM_TUNE_GEMM: '" + path +
                                   "': line 1 is longer than 65536 bytes; untuned shapes are not being recorded");
}

TEST(Capture, ThreadsSharingOneObject) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  Capture c(path);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&c, t] {
      for (int i = 0; i < 40; ++i) c.record(a16w16_problem(1 + (i + t * 5) % 40, 64, 64));
    });
  }
  for (auto& th : threads) th.join();
  std::vector<std::string> lines = test::read_lines(path);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], kHeader);
  std::set<std::string> rows(lines.begin() + 1, lines.end());
  EXPECT_EQ(rows.size(), lines.size() - 1) << "duplicated rows";
  EXPECT_EQ(rows.size(), 40u);
}

// Several processes (as with torchrun or a server's worker pool) recording at once: header once,
// each distinct problem once, every line whole.
TEST(Capture, ConcurrentProcessesWriteTheUnionOnce) {
  test::TempDir dir;
  const std::string path = dir.file("u.csv");
  constexpr int kChildren = 4;
  constexpr int kShared = 50;
  constexpr int kOwn = 10;

  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      ::close(go[1]);
      char byte;
      // Start together: block until the parent closes the pipe.
      while (::read(go[0], &byte, 1) > 0) {
      }
      Capture capture(path);
      for (int i = 0; i < kShared; ++i) {
        int s = (i + c * 13) % kShared;  // each child in a different order
        capture.record(a16w16_problem(1 + s, 4096, 4096));
        // kOwn problems no other child has, interleaved with the shared ones.
        if (i % (kShared / kOwn) == 0) {
          capture.record(a16w16_problem(1000 + c * kOwn + i / (kShared / kOwn), 4096, 4096));
        }
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child " << pid << " status " << status;
  }

  std::set<std::string> expected;
  for (int s = 0; s < kShared; ++s) expected.insert(row(1 + s));
  for (int c = 0; c < kChildren; ++c) {
    for (int j = 0; j < kOwn; ++j) expected.insert(row(1000 + c * kOwn + j));
  }
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kShared + kChildren * kOwn));

  const std::string text = test::read_file(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::vector<std::string> lines = test::read_lines(path);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], kHeader);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), kHeader), 1);
  std::set<std::string> got(lines.begin() + 1, lines.end());
  EXPECT_EQ(got.size(), lines.size() - 1) << "some row was written twice:\n" << text;
  EXPECT_EQ(got, expected);
  for (const auto& l : lines) {
    auto fields = csv::split_line(l);
    ASSERT_TRUE(fields.has_value()) << l;
    EXPECT_EQ(fields->size(), 9u) << "torn line: " << l;
  }
}

}  // namespace
}  // namespace tgemm
