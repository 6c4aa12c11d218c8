// A program built against the tgemm package (see CMakeLists.txt beside it). It needs no GPU: it
// shows that the package's include directory holds the public headers only, that a bad call
// throws tgemm::Error before anything reaches the device, and where the library finds its shipped
// tables. Prints one "key: value" line per fact; exits non-zero when one is wrong.
#include <tgemm/tgemm.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

// A tgemm user sees include/ only: the library's private headers stay out of its include path.
#if __has_include("core/problem.h") || __has_include("kernels/common/numeric.cuh")
#error "src/ or kernels/ headers are on a tgemm user's include path: only include/ may be"
#endif

#ifndef TGEMM_PACKAGE_VERSION
#define TGEMM_PACKAGE_VERSION "unknown"
#endif

int main() {
  std::printf("version: %s\n", TGEMM_PACKAGE_VERSION);

  // x is [4, 64] but w is [32, 48]: K disagrees, which the argument checks reject by name. Host
  // buffers are fine here: the checks run before any pointer is dereferenced or a kernel launched.
  std::vector<std::uint16_t> x(4 * 64), w(32 * 48), y(4 * 32);
  const auto xv = tgemm::TensorView::contiguous(x.data(), tgemm::DType::kBFloat16, {4, 64});
  const auto wv = tgemm::TensorView::contiguous(w.data(), tgemm::DType::kBFloat16, {32, 48});
  const auto yv = tgemm::TensorView::contiguous(y.data(), tgemm::DType::kBFloat16, {4, 32});
  try {
    tgemm::gemm_a16w16(xv, wv, yv);
    std::fprintf(stderr, "gemm_a16w16 accepted w [32, 48] for x [4, 64]\n");
    return 1;
  } catch (const tgemm::Error& e) {
    const std::string what = e.what();
    std::printf("error: %s\n", what.c_str());
    if (what.find("w.size(1) must equal x.size(-1)") == std::string::npos) {
      std::fprintf(stderr, "unexpected message for a K mismatch\n");
      return 1;
    }
  }

  std::printf("dtype: %s\n", std::string(tgemm::dtype_name(xv.dtype)).c_str());
  std::printf("config_dir: %s\n", tgemm::shipped_config_dir().c_str());
  for (const std::string& file : tgemm::a16w16_table_files()) std::printf("table: %s\n", file.c_str());
  return 0;
}
