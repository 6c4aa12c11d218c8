// libFuzzer target: an untuned CSV (the capture file `tgemm tune -i` reads) through read_untuned.
// The reader takes a path, so the input is handed to it as an in-memory file (memfd), with no
// disk I/O per input. Malformed input must be refused with tgemm::Error; anything else escaping,
// a crash or a sanitizer report is a finding. Every problem read must have positive M, N, K, an
// a8w8 one its scale recipe and K a multiple of 16, a batched one its batch and 16-bit operands.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "tgemm/error.h"
#include "tuner/tune_job.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = memfd_create("untuned.csv", 0);
  TGEMM_FUZZ_REQUIRE(fd >= 0, "memfd_create failed");
  TGEMM_FUZZ_REQUIRE(ftruncate(fd, 0) == 0, "ftruncate failed");
  std::size_t written = 0;
  while (written < size) {
    const ssize_t n = pwrite(fd, data + written, size - written, static_cast<off_t>(written));
    TGEMM_FUZZ_REQUIRE(n > 0, "pwrite failed");
    written += static_cast<std::size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const std::vector<tgemm::UntunedProblem> problems = tgemm::read_untuned(path);
    for (const tgemm::UntunedProblem& p : problems) {
      TGEMM_FUZZ_REQUIRE(p.m > 0 && p.n > 0 && p.k > 0, "problem read with M=%lld N=%lld K=%lld",
                         static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k));
      // An a8w8 problem carries a scale recipe and 16-byte rows (validate.cpp's rule); a16w16 none;
      // block scales only FP8 (a8w8_blockscale).
      TGEMM_FUZZ_REQUIRE(tgemm::quantized_family(p.family()) == (p.a_scale != tgemm::ScaleGranularity::kNone),
                         "family and scales disagree");
      TGEMM_FUZZ_REQUIRE(p.a_scale != tgemm::ScaleGranularity::kBlock || p.dtype == tgemm::DType::kFloat8E4M3,
                         "block scales on a non-FP8 problem");
      TGEMM_FUZZ_REQUIRE(!tgemm::quantized_family(p.family()) || p.k % 16 == 0, "a8w8 problem with K=%lld",
                         static_cast<long long>(p.k));
      // A batched problem (a B column) carries its batch and 16-bit operands.
      TGEMM_FUZZ_REQUIRE((p.family() == tgemm::OpFamily::kBatched) == (p.batch > 0), "family and batch disagree");
      TGEMM_FUZZ_REQUIRE(p.family() != tgemm::OpFamily::kBatched || p.dtype == tgemm::DType::kBFloat16 ||
                             p.dtype == tgemm::DType::kFloat16,
                         "batched problem of an 8-bit dtype");
      (void)p.describe();
    }
  } catch (const tgemm::Error&) {
    // A refused file: the message names the line; nothing else may escape.
  }
  return 0;
}
