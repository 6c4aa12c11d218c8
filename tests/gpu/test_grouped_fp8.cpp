// m_grouped_gemm_fp8_contiguous and m_grouped_gemm_fp8_masked against a float64 host reference of
// the dequantized operands (include/tgemm/grouped_fp8.h): random group sizes with zeros, one group
// holding every row, rows not multiples of 64 or 128, interleaved and padding (-1, >= G) indices,
// partial K and N scale blocks, row-major and MN-major x_scale, both staging paths (16-byte and
// element loads), masked_m of 0, max_m and beyond; outputs poisoned with NaN (every contiguous
// row must be written, masked rows past m_g must stay NaN); CUDA graphs replayed after the indices
// or masks change on the device. Every case runs on the tile kernel (TGEMM_GROUPED_BACKEND=tile)
// and under TGEMM_GROUPED_BACKEND=cutlass, where the CUTLASS blockwise-scaled grouped kernel takes
// the cases it can (K a multiple of 128, aligned operands) and the rest fall back to the tile
// kernel; Fp8Cutlass.* checks that it does take them, and that unsorted indices still give the
// right answer through the device flag (src/grouped/fp8_cutlass.h).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/validate_grouped_fp8.h"
#include "cuda/device.h"
#include "grouped/fp8_cutlass.h"
#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tests/gpu/grouped_checks.h"
#include "tgemm/error.h"
#include "tgemm/grouped_fp8.h"

namespace tgemm {
namespace {

constexpr std::int64_t kBlock = 128;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

template <typename T>
DeviceBuffer upload(const std::vector<T>& h) {
  DeviceBuffer d(std::max<std::size_t>(h.size() * sizeof(T), 16));
  EXPECT_EQ(cudaMemcpy(d.data(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

// One problem, contiguous (planes = 1, rows = M) or masked (planes = G, rows = max_m).
struct Fp8Case {
  bool masked = false;
  std::int64_t g = 4, rows = 200, n = 200, k = 272;  // K: 2 full scale blocks and a partial one
  bool mn_major_scale = false;                       // x_scale MN-major (column stride rows rounded to 4)
  bool element_loads = false;                        // x at an address that is not 16-byte aligned
  // Error allowed per unit of sum_b sum_k |x w| x_scale w_scale: 2^-14 for the tile kernel (exact
  // fp32 block sums); the CUTLASS kernel's FP8 WGMMA adds with about 14 mantissa bits inside each
  // 128-wide block before its fp32 promotion (DeepSeek-V3 report, 3.3.2), so 2^-12 there.
  int magnitude_exp = -14;
  std::string describe() const {
    std::ostringstream s;
    s << (masked ? "masked" : "contiguous") << " G=" << g << (masked ? " max_m=" : " M=") << rows << " N=" << n
      << " K=" << k << (mn_major_scale ? " mn-major x_scale" : "") << (element_loads ? " element loads" : "");
    return s.str();
  }
};

struct Fp8Data {
  Fp8Case c;
  std::int64_t planes = 1, kb = 0, nb = 0, xs_ld = 0, xs_plane = 0, x_offset = 0;
  std::vector<std::uint8_t> x, w;  // codes: x [planes, rows, K] after x_offset bytes, w [G, N, K]
  std::vector<float> xs, ws;       // x_scale planes as stored, w_scale [G, nb, kb]
  DeviceBuffer xd, xsd, wd, wsd, outd, indexd;
  TensorView xv, xsv, wv, wsv, ov, iv;

  float x_scale(std::int64_t p, std::int64_t r, std::int64_t b) const {
    return xs[p * xs_plane + (c.mn_major_scale ? b * xs_ld + r : r * kb + b)];
  }
  // The float64 reference of one output element and sum_b sum_k |x w| x_scale w_scale.
  void reference(std::int64_t p, std::int64_t r, std::int64_t g, std::int64_t col, double& ref, double& mag) const {
    ref = mag = 0.0;
    for (std::int64_t b = 0; b < kb; ++b) {
      double s = 0.0, a = 0.0;
      for (std::int64_t kk = b * kBlock; kk < std::min(c.k, (b + 1) * kBlock); ++kk) {
        const double v = test::fp8_e4m3_value(x[x_offset + (p * c.rows + r) * c.k + kk]) *
                         test::fp8_e4m3_value(w[(g * c.n + col) * c.k + kk]);
        s += v;
        a += std::fabs(v);
      }
      const double scale = static_cast<double>(x_scale(p, r, b)) * ws[(g * nb + col / kBlock) * kb + b];
      ref += s * scale;
      mag += a * scale;
    }
  }
};

// Whether the op runs d's call on the CUTLASS kernel here, under the current TGEMM_GROUPED_BACKEND.
bool runs_on_cutlass(const Fp8Data& d) {
  const Fp8GroupedCall call = d.c.masked
                                  ? validate_fp8_masked(d.xv, d.xsv, d.wv, d.wsv, d.ov, d.iv, d.c.rows / 2, "test")
                                  : validate_fp8_contiguous(d.xv, d.xsv, d.wv, d.wsv, d.ov, d.iv, "test");
  return fp8_cutlass::uses_cutlass(call, cuda_current_device());
}

Fp8Data make_fp8(const Fp8Case& c, const std::vector<std::int32_t>& index, std::uint64_t seed) {
  Fp8Data d;
  d.c = c;
  d.planes = c.masked ? c.g : 1;
  d.kb = ceil_div(c.k, kBlock);
  d.nb = ceil_div(c.n, kBlock);
  d.x_offset = c.element_loads ? 8 : 0;
  std::mt19937_64 rng(seed);
  auto scale = [&] { return std::ldexp(1.0f + static_cast<float>(rng() % 8) / 8.0f, static_cast<int>(rng() % 5) - 3); };
  d.x.resize(static_cast<std::size_t>(d.x_offset + d.planes * c.rows * c.k));
  for (auto& v : d.x) v = test::draw_8bit(rng, DType::kFloat8E4M3);
  d.w.resize(static_cast<std::size_t>(c.g * c.n * c.k));
  for (auto& v : d.w) v = test::draw_8bit(rng, DType::kFloat8E4M3);
  d.xs_ld = c.mn_major_scale ? (c.rows + 3) / 4 * 4 : d.kb;
  d.xs_plane = c.mn_major_scale ? d.kb * d.xs_ld : c.rows * d.kb;
  d.xs.resize(static_cast<std::size_t>(std::max<std::int64_t>(d.planes * d.xs_plane, 1)));
  for (auto& v : d.xs) v = scale();
  d.ws.resize(static_cast<std::size_t>(c.g * d.nb * d.kb));
  for (auto& v : d.ws) v = scale();

  d.xd = upload(d.x);
  d.xsd = upload(d.xs);
  d.wd = upload(d.w);
  d.wsd = upload(d.ws);
  d.indexd = upload(index);
  const std::int64_t out_count = d.planes * c.rows * c.n;
  d.outd = DeviceBuffer(static_cast<std::size_t>(out_count * 2));
  fill_nan(d.outd.data(), DType::kBFloat16, out_count, nullptr);

  void* x0 = static_cast<std::uint8_t*>(d.xd.data()) + d.x_offset;
  TensorView xs2;
  if (c.masked) {
    d.xv = TensorView::contiguous(x0, DType::kFloat8E4M3, {c.g, c.rows, c.k});
    d.ov = TensorView::contiguous(d.outd.data(), DType::kBFloat16, {c.g, c.rows, c.n});
    d.xsv = TensorView::contiguous(d.xsd.data(), DType::kFloat32, {c.g, c.rows, d.kb});
    if (c.mn_major_scale) {
      d.xsv.strides[0] = d.xs_plane;
      d.xsv.strides[1] = 1;
      d.xsv.strides[2] = d.xs_ld;
    }
  } else {
    d.xv = TensorView::contiguous(x0, DType::kFloat8E4M3, {c.rows, c.k});
    d.ov = TensorView::contiguous(d.outd.data(), DType::kBFloat16, {c.rows, c.n});
    d.xsv = TensorView::contiguous(d.xsd.data(), DType::kFloat32, {c.rows, d.kb});
    if (c.mn_major_scale) {
      d.xsv.strides[0] = 1;
      d.xsv.strides[1] = d.xs_ld;
    }
  }
  d.wv = TensorView::contiguous(d.wd.data(), DType::kFloat8E4M3, {c.g, c.n, c.k});
  d.wsv = TensorView::contiguous(d.wsd.data(), DType::kFloat32, {c.g, d.nb, d.kb});
  d.iv = TensorView::contiguous(d.indexd.data(), DType::kInt32, {static_cast<std::int64_t>(index.size())});
  if (runs_on_cutlass(d)) d.c.magnitude_exp = std::max(d.c.magnitude_exp, -12);
  return d;
}

void run(const Fp8Data& d, Stream stream) {
  if (d.c.masked) {
    m_grouped_gemm_fp8_masked(d.xv, d.xsv, d.wv, d.wsv, d.ov, d.iv, d.c.rows / 2, stream);
  } else {
    m_grouped_gemm_fp8_contiguous(d.xv, d.xsv, d.wv, d.wsv, d.ov, d.iv, stream);
  }
}

// Checks out against the reference under `index` (m_indices or masked_m): computed rows within
// 2 bf16 ulps of |ref| plus 2^-14 of the scaled magnitude sum (fp32 accumulation), contiguous
// padding rows exactly 0, masked rows past m_g untouched (NaN). (The tolerance's magnitude term:
// Fp8Case::magnitude_exp.)
void expect_matches(const Fp8Data& d, const std::vector<std::int32_t>& index) {
  const Fp8Case& c = d.c;
  const std::int64_t count = d.planes * c.rows * c.n;
  std::vector<std::uint16_t> raw(static_cast<std::size_t>(count));
  ASSERT_EQ(cudaMemcpy(raw.data(), d.outd.data(), raw.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  auto value = [&](std::int64_t i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(raw[static_cast<std::size_t>(i)]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  std::int64_t bad = 0, checked = 0;
  std::string first;
  for (std::int64_t p = 0; p < d.planes; ++p) {
    const std::int64_t m_g =
        c.masked ? std::min<std::int64_t>(std::max<std::int32_t>(index[static_cast<std::size_t>(p)], 0), c.rows)
                 : c.rows;
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const std::int64_t g = c.masked ? p : index[static_cast<std::size_t>(r)];
      for (std::int64_t col = 0; col < c.n; ++col) {
        const float o = value((p * c.rows + r) * c.n + col);
        bool ok;
        double ref = 0.0, mag = 0.0;
        if (c.masked && r >= m_g) {
          ok = std::isnan(o);
        } else if (!c.masked && (g < 0 || g >= c.g)) {
          ok = o == 0.0f;
        } else {
          d.reference(p, r, g, col, ref, mag);
          ok = std::fabs(o - ref) <= std::ldexp(std::fabs(ref), -7) + std::ldexp(mag, c.magnitude_exp);
        }
        ++checked;
        if (!ok && bad++ == 0) {
          std::ostringstream s;
          s << "plane " << p << " row " << r << " col " << col << " (group " << g << "): out " << o << " ref " << ref
            << " magnitude " << mag;
          first = s.str();
        }
      }
    }
  }
  EXPECT_EQ(bad, 0) << c.describe() << ": " << bad << " of " << checked << " elements wrong; first: " << first;
}

// m_indices of the contiguous layout from group sizes: group g's rows consecutive, in order.
std::vector<std::int32_t> indices_from_sizes(const std::vector<std::int32_t>& sizes) {
  std::vector<std::int32_t> idx;
  for (std::size_t g = 0; g < sizes.size(); ++g)
    idx.insert(idx.end(), static_cast<std::size_t>(sizes[g]), static_cast<std::int32_t>(g));
  return idx;
}

void check(const Fp8Case& c, const std::vector<std::int32_t>& index, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  Fp8Data d = make_fp8(c, index, seed);
  run(d, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_matches(d, index);
}

// The existing cases under each backend setting: "tile", and "cutlass" (the CUTLASS kernel where
// it takes the case, the tile kernel elsewhere).
class Fp8Backends : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { backend_ = std::make_unique<test::GroupedBackendScope>(GetParam()); }
  void TearDown() override { backend_.reset(); }

 private:
  std::unique_ptr<test::GroupedBackendScope> backend_;
};

class Fp8Contiguous : public Fp8Backends {};
class Fp8Masked : public Fp8Backends {};

TEST_P(Fp8Contiguous, RandomGroupSizesWithZeros) {
  TGEMM_REQUIRE_GPU();
  for (int g : {1, 5, 16}) {
    Fp8Case c;
    c.g = g;
    c.rows = 333;  // not a multiple of 64 or 128
    const auto idx = indices_from_sizes(test::random_group_sizes(g, c.rows, 100 + g));
    check(c, idx, 200 + static_cast<std::uint64_t>(g));
    c.mn_major_scale = true;
    check(c, idx, 300 + static_cast<std::uint64_t>(g));
  }
}

TEST_P(Fp8Contiguous, OneGroupHoldsEveryRow) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c;
  c.g = 6;
  c.rows = 257;
  c.n = 384;
  c.k = 512;
  check(c, std::vector<std::int32_t>(static_cast<std::size_t>(c.rows), 4), 400);
}

// DeepGEMM's layout: groups padded to 128 rows with -1; plus indices >= G, interleaved rows of
// several groups in one tile, and the element-load path.
TEST_P(Fp8Contiguous, PaddingAndInterleavedIndices) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c;
  c.g = 3;
  std::vector<std::int32_t> idx;
  for (int g = 0; g < 3; ++g) {
    const int live = 50 + 30 * g;  // 50, 80, 110 rows, each padded to 128
    idx.insert(idx.end(), static_cast<std::size_t>(live), g);
    idx.insert(idx.end(), static_cast<std::size_t>(128 - live), -1);
  }
  c.rows = static_cast<std::int64_t>(idx.size());
  check(c, idx, 500);

  std::mt19937_64 rng(501);
  c.rows = 150;
  c.n = 96;
  c.k = 144;
  idx.assign(static_cast<std::size_t>(c.rows), 0);
  for (auto& v : idx) v = static_cast<std::int32_t>(rng() % 5) - 1;  // -1 .. 3, 3 >= G
  check(c, idx, 502);
  c.element_loads = true;
  check(c, idx, 503);
}

TEST_P(Fp8Masked, MasksOfZeroMaxAndBeyond) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c;
  c.masked = true;
  c.g = 6;
  c.rows = 130;
  check(c, {0, 130, 1, 65, 500, -7}, 600);  // 500 clamps to max_m, -7 to 0
  c.mn_major_scale = true;
  c.element_loads = true;
  c.n = 70;
  c.k = 96;
  check(c, {3, 64, 129, 0, 17, 130}, 601);
}

TEST_P(Fp8Masked, ManyGroupsDecodeSizes) {
  TGEMM_REQUIRE_GPU();
  for (std::int64_t g : {1, 32, 128}) {
    Fp8Case c;
    c.masked = true;
    c.g = g;
    c.rows = 16;
    c.n = 256;
    c.k = 384;
    std::mt19937_64 rng(static_cast<std::uint64_t>(g));
    std::vector<std::int32_t> masks(static_cast<std::size_t>(g));
    for (auto& m : masks) m = static_cast<std::int32_t>(rng() % 17);
    check(c, masks, 700 + static_cast<std::uint64_t>(g));
  }
}

// One captured graph, replayed with new device data: the kernel reads them on every replay.
void replay_with(const Fp8Case& c, const std::vector<std::vector<std::int32_t>>& indices, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  Fp8Data d = make_fp8(c, indices.front(), seed);
  test::GraphReplay graph([&](Stream stream) { run(d, stream); });
  ASSERT_TRUE(graph.ok());
  for (const auto& index : indices) {
    ASSERT_EQ(cudaMemcpyAsync(d.indexd.data(), index.data(), index.size() * 4, cudaMemcpyHostToDevice,
                              static_cast<cudaStream_t>(graph.stream())),
              cudaSuccess);
    fill_nan(d.outd.data(), DType::kBFloat16, d.planes * c.rows * c.n, graph.stream());
    graph.replay();
    expect_matches(d, index);
  }
}

TEST_P(Fp8Contiguous, CapturedGraphFollowsIndicesChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c;
  c.g = 4;
  c.rows = 192;
  std::vector<std::vector<std::int32_t>> indices = {
      indices_from_sizes({48, 48, 48, 48}), indices_from_sizes({0, 192, 0, 0}), indices_from_sizes({7, 0, 100, 85})};
  indices.push_back(std::vector<std::int32_t>(192, -1));
  replay_with(c, indices, 800);
}

TEST_P(Fp8Masked, CapturedGraphFollowsMasksChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c;
  c.masked = true;
  c.g = 4;
  c.rows = 96;
  replay_with(c, {{96, 96, 96, 96}, {0, 0, 0, 0}, {1, 95, 96, 1000}, {50, -1, 7, 64}}, 900);
}

INSTANTIATE_TEST_SUITE_P(Backends, Fp8Contiguous, ::testing::Values("tile", "cutlass"));
INSTANTIATE_TEST_SUITE_P(Backends, Fp8Masked, ::testing::Values("tile", "cutlass"));

// ---- The CUTLASS kernel, forced, on cases it takes: K multiples of 128, 16-byte aligned x, w and
// out. Each case first checks that the op does run it on the CUTLASS kernel where this build has
// the instance (sm_90a target, TGEMM_TEST_FP8_CUTLASS) and the device loads it; elsewhere the
// test is skipped.

class Fp8Cutlass : public ::testing::Test {
 protected:
  void SetUp() override { backend_ = std::make_unique<test::GroupedBackendScope>("cutlass"); }
  void TearDown() override { backend_.reset(); }

  static Fp8Case aligned(bool masked, std::int64_t g, std::int64_t rows, std::int64_t n, std::int64_t k) {
    Fp8Case c;
    c.masked = masked;
    c.g = g;
    c.rows = rows;
    c.n = n;
    c.k = k;
    return c;
  }

  // Checks that the CUTLASS kernel takes c (skips where the build or the device has none), runs
  // it under `index` and compares with the reference.
  static void run_cutlass(const Fp8Case& c, const std::vector<std::int32_t>& index, std::uint64_t seed) {
    SCOPED_TRACE(c.describe());
    Fp8Data d = make_fp8(c, index, seed);
    if (!cutlass_expected()) GTEST_SKIP() << "no FP8 grouped CUTLASS instance in this build or on this device";
    ASSERT_TRUE(runs_on_cutlass(d)) << "the CUTLASS kernel should take " << c.describe();
    run(d, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_matches(d, index);
  }

  static bool cutlass_expected() {
#if defined(TGEMM_TEST_FP8_CUTLASS)
    return is_sm90a_device(cuda_current_device());
#else
    return false;
#endif
  }

 private:
  std::unique_ptr<test::GroupedBackendScope> backend_;
};

TEST_F(Fp8Cutlass, SortedGroupsWithZerosBothScaleLayouts) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c = aligned(false, 5, 333, 256, 256);
  const auto idx = indices_from_sizes({0, 120, 0, 200, 13});
  run_cutlass(c, idx, 1100);
  c.mn_major_scale = true;
  run_cutlass(c, idx, 1101);
  c.n = 200;  // a partial 128-wide weight-scale block along N
  run_cutlass(c, idx, 1102);
  c = aligned(false, 6, 257, 384, 512);  // one group holds every row
  run_cutlass(c, std::vector<std::int32_t>(257, 4), 1103);
}

// DeepGEMM's layout: each group's rows one segment, padded to 128 with -1 (zeros in out); the
// padding also at the start and between empty groups.
TEST_F(Fp8Cutlass, DeepGemmPaddingRows) {
  TGEMM_REQUIRE_GPU();
  std::vector<std::int32_t> idx(37, -1);
  for (int g = 0; g < 4; ++g) {
    const int live = g == 2 ? 0 : 50 + 30 * g;
    idx.insert(idx.end(), static_cast<std::size_t>(live), g);
    idx.insert(idx.end(), static_cast<std::size_t>(128 - live), -1);
  }
  Fp8Case c = aligned(false, 4, static_cast<std::int64_t>(idx.size()), 128, 384);
  c.mn_major_scale = true;
  run_cutlass(c, idx, 1200);
}

// Rows of a group split in two runs, interleaved groups, indices >= G: the device flag hands the
// call to the tile kernel, launched behind it.
TEST_F(Fp8Cutlass, UnsortedIndicesFallBackOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c = aligned(false, 3, 300, 256, 256);
  std::vector<std::int32_t> idx = indices_from_sizes({100, 100, 100});
  std::swap(idx[10], idx[150]);  // groups 0 and 1 each in two runs
  run_cutlass(c, idx, 1300);
  std::mt19937_64 rng(1301);
  for (auto& v : idx) v = static_cast<std::int32_t>(rng() % 5) - 1;  // -1 .. 3, 3 >= G
  run_cutlass(c, idx, 1302);
}

TEST_F(Fp8Cutlass, MasksOfZeroMaxAndBeyond) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c = aligned(true, 6, 200, 256, 256);
  run_cutlass(c, {0, 200, 1, 129, 500, -7}, 1400);  // 500 clamps to max_m, -7 to 0
  c.mn_major_scale = true;
  c.n = 136;
  run_cutlass(c, {3, 64, 199, 0, 17, 128}, 1401);
  run_cutlass(c, {0, 0, 0, 0, 0, 0}, 1402);
}

// One graph, replayed with indices sorted, unsorted, all padding, then sorted again: the flag and
// the shapes are read on the device at every replay.
TEST_F(Fp8Cutlass, CapturedGraphFollowsSortedAndUnsortedIndices) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c = aligned(false, 4, 256, 128, 256);
  Fp8Data probe = make_fp8(c, std::vector<std::int32_t>(256, 0), 1500);
  if (!cutlass_expected()) GTEST_SKIP() << "no FP8 grouped CUTLASS instance in this build or on this device";
  ASSERT_TRUE(runs_on_cutlass(probe));
  std::vector<std::int32_t> interleaved(256);
  for (std::size_t r = 0; r < interleaved.size(); ++r) interleaved[r] = static_cast<std::int32_t>(r % 4);
  replay_with(c,
              {indices_from_sizes({64, 64, 64, 64}), interleaved, std::vector<std::int32_t>(256, -1),
               indices_from_sizes({0, 256, 0, 0})},
              1501);
  Fp8Case m = aligned(true, 4, 128, 128, 256);
  replay_with(m, {{128, 128, 128, 128}, {0, 0, 0, 0}, {1, 127, 128, 1000}}, 1502);
}

// Cases the CUTLASS kernel cannot take run on the tile kernel under the forced setting.
TEST_F(Fp8Cutlass, UntakenCasesRunOnTheTileKernel) {
  TGEMM_REQUIRE_GPU();
  Fp8Case partial_k = aligned(false, 3, 150, 128, 272);
  Fp8Case unaligned = aligned(false, 3, 150, 128, 256);
  unaligned.element_loads = true;
  for (const Fp8Case& c : {partial_k, unaligned}) {
    SCOPED_TRACE(c.describe());
    const auto idx = indices_from_sizes({50, 50, 50});
    Fp8Data d = make_fp8(c, idx, 1600);
    EXPECT_FALSE(runs_on_cutlass(d));
    run(d, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_matches(d, idx);
  }
  test::GroupedBackendScope tile("tile");
  Fp8Data d = make_fp8(aligned(true, 2, 64, 128, 256), {64, 64}, 1601);
  EXPECT_FALSE(runs_on_cutlass(d));
}

// Bad input the host can check: an Error before anything is launched, no sticky CUDA error.
TEST(Fp8GroupedErrors, HostChecksThrowAndLeaveNoCudaError) {
  TGEMM_REQUIRE_GPU();
  Fp8Case c;
  c.masked = true;
  Fp8Data d = make_fp8(c, {1, 2, 3, 4}, 1000);
  EXPECT_THROW(m_grouped_gemm_fp8_masked(d.xv, d.xsv, d.wv, d.wsv, d.ov, d.iv, -1, nullptr), Error);
  TensorView bad_ws = d.wsv;
  bad_ws.sizes[1] = 1;
  EXPECT_THROW(m_grouped_gemm_fp8_masked(d.xv, d.xsv, d.wv, bad_ws, d.ov, d.iv, 8, nullptr), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm
