// The batched skinny backend (src/backends/skinny/skinny_batched.*, kernels/sm90/
// sm90_batched_skinny.cuh): every tile that accepts a problem, run directly, against a float64
// host product of the same bf16/fp16 inputs, into NaN-poisoned outputs whose padding must stay
// NaN: the batched suite's decode shapes (DeepSeek MLA's absorbed projections in both layouts of
// b, a lora-shrink-like product), random odd shapes (M = 1..16, N and K not multiples of 8 where a
// kernel accepts them, broadcast and padded batches, bias, every output dtype); and a tuned table
// row naming a tile routes batched_gemm to it; the tuner races the tiles; a declined problem is
// refused before any launch. The sanitizer line of scripts/gpu-check runs the
// suite-shape test under compute-sanitizer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/skinny/skinny_batched.h"
#include "core/csv.h"
#include "core/platform.h"
#include "core/table.h"
#include "core/validate.h"
#include "cuda/device.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "tests/common/batched_test_util.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/batched.h"
#include "tgemm/config.h"
#include "tgemm/error.h"
#include "tuner/race.h"

namespace tgemm {
namespace {

using test::BatchLayout;
using test::BatchOperand;
using test::to_host_floats;

struct Case {
  std::int64_t batch = 4, m = 1, n = 64, k = 64;
  bool transpose_a = false, transpose_b = false;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool bias = false;
  DType bias_type = DType::kBFloat16;
  std::int64_t a_row_pad = 0, b_row_pad = 0, out_row_pad = 0;
  BatchLayout a_batch = BatchLayout::kDense, b_batch = BatchLayout::kDense;

  std::string describe() const {
    std::ostringstream os;
    os << "B=" << batch << " M=" << m << " N=" << n << " K=" << k << " ta=" << transpose_a << " tb=" << transpose_b
       << " in=" << dtype_short_name(in) << " out=" << dtype_short_name(out)
       << " bias=" << (bias ? dtype_short_name(bias_type) : "none") << " a=" << test::layout_name(a_batch) << "+"
       << a_row_pad << " b=" << test::layout_name(b_batch) << "+" << b_row_pad << " out_pad=" << out_row_pad;
    return os.str();
  }
};

struct Data {
  Case c;
  BatchOperand a, b, out;
  DeviceBuffer abuf, bbuf, obuf, biasbuf;
  TensorView av, bv, ov, biasv;
  std::vector<double> ref;  // [B, M, N]
};

Data make_data(const Case& c, std::uint64_t seed) {
  Data d;
  d.c = c;
  // Padded batches 16 elements past the matrix: 16-byte aligned batch strides stay so.
  d.a = c.transpose_a ? test::batch_operand(c.batch, c.k, c.m, c.a_row_pad, c.a_batch, 16)
                      : test::batch_operand(c.batch, c.m, c.k, c.a_row_pad, c.a_batch, 16);
  d.b = c.transpose_b ? test::batch_operand(c.batch, c.n, c.k, c.b_row_pad, c.b_batch, 16)
                      : test::batch_operand(c.batch, c.k, c.n, c.b_row_pad, c.b_batch, 16);
  d.out = test::batch_operand(c.batch, c.m, c.n, c.out_row_pad, BatchLayout::kDense, 0);
  const std::size_t es = dtype_size(c.in);
  d.abuf = DeviceBuffer(static_cast<std::size_t>(d.a.elems) * es);
  d.bbuf = DeviceBuffer(static_cast<std::size_t>(d.b.elems) * es);
  d.obuf = DeviceBuffer(static_cast<std::size_t>(d.out.elems) * dtype_size(c.out));
  d.biasbuf = DeviceBuffer(static_cast<std::size_t>(c.n) * dtype_size(c.bias_type));
  fill_uniform(d.abuf.data(), c.in, d.a.elems, seed * 3 + 1, -1.0f, 1.0f, nullptr);
  fill_uniform(d.bbuf.data(), c.in, d.b.elems, seed * 3 + 2, -1.0f, 1.0f, nullptr);
  fill_uniform(d.biasbuf.data(), c.bias_type, c.n, seed * 3 + 3, -1.0f, 1.0f, nullptr);
  d.av = test::batch_view(d.abuf.data(), c.in, c.batch, d.a);
  d.bv = test::batch_view(d.bbuf.data(), c.in, c.batch, d.b);
  d.ov = test::batch_view(d.obuf.data(), c.out, c.batch, d.out);
  d.biasv = TensorView::contiguous(d.biasbuf.data(), c.bias_type, {c.n});

  const std::vector<float> a = to_host_floats(d.abuf.data(), c.in, d.a.elems);
  const std::vector<float> b = to_host_floats(d.bbuf.data(), c.in, d.b.elems);
  const std::vector<float> bias = to_host_floats(d.biasbuf.data(), c.bias_type, c.n);
  d.ref.assign(static_cast<std::size_t>(c.batch * c.m * c.n), 0.0);
  for (std::int64_t i = 0; i < c.batch; ++i) {
    const float* ai = a.data() + i * d.a.batch_stride;
    const float* bi = b.data() + i * d.b.batch_stride;
    for (std::int64_t r = 0; r < c.m; ++r) {
      for (std::int64_t col = 0; col < c.n; ++col) {
        double s = c.bias ? bias[static_cast<std::size_t>(col)] : 0.0;
        for (std::int64_t kk = 0; kk < c.k; ++kk) {
          const float x = c.transpose_a ? ai[kk * d.a.ld + r] : ai[r * d.a.ld + kk];
          const float w = c.transpose_b ? bi[col * d.b.ld + kk] : bi[kk * d.b.ld + col];
          s += static_cast<double>(x) * w;
        }
        d.ref[static_cast<std::size_t>((i * c.m + r) * c.n + col)] = s;
      }
    }
  }
  return d;
}

// Runs every batched skinny solution that accepts the case; returns how many ran.
int run_every_solution(const Case& c, std::uint64_t seed) {
  Data d = make_data(c, seed);
  const TensorView* bias = c.bias ? &d.biasv : nullptr;
  const GemmCall call = validate_batched(d.av, d.bv, d.ov, c.transpose_a, c.transpose_b, bias);
  int ran = 0;
  for (const SolutionPtr& s : batched_skinny_solutions()) {
    if (!s->can_implement(call.problem)) continue;
    fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
    s->run(call.problem, call.args, Workspace{}, nullptr);
    device_synchronize();
    test::expect_batched_out(to_host_floats(d.obuf.data(), c.out, d.out.elems), d.out, c.batch, c.m, c.n, d.ref,
                             gemm_tolerance(c.out, c.k, c.bias), s->name() + " " + c.describe());
    ++ran;
  }
  return ran;
}

// The tiles of a layout with m_max >= m, of the dtypes this build instantiates.
int tiles_for(skinny::BatchedLayout layout, std::int64_t m) {
  int n = 0;
  for (const auto& t : skinny::batched_tiles()) n += t.layout == layout && t.m_max >= m ? 1 : 0;
  return n;
}

TEST(BatchedSkinny, SuiteDecodeShapesInBothLayouts) {
  TGEMM_REQUIRE_GPU();
  if (!is_sm90a_device(0)) GTEST_SKIP() << "the batched skinny kernels are built for sm_90a";
  struct Shape {
    std::int64_t batch, m, n, k;
  };
  // DeepSeek MLA's absorbed projections (B = 16 or 128 heads, M = 1) and a lora-shrink-like N = 16.
  const Shape shapes[] = {{16, 1, 512, 128}, {16, 1, 128, 512}, {128, 1, 512, 128}, {8, 16, 16, 4096}};
  std::uint64_t seed = 100;
  for (const Shape& s : shapes) {
    for (bool tb : {false, true}) {
      Case c;
      c.batch = s.batch;
      c.m = s.m;
      c.n = s.n;
      c.k = s.k;
      c.transpose_b = tb;
      SCOPED_TRACE(c.describe());
      const int ran = run_every_solution(c, seed++);
      const auto layout = tb ? skinny::BatchedLayout::kNK : skinny::BatchedLayout::kKN;
      // Every tile of the layout that covers M (the bf16 instances are in every build).
      EXPECT_EQ(ran, tiles_for(layout, c.m)) << c.describe();
    }
  }
}

// A solution asked to run a problem it declines throws before any launch and writes nothing.
TEST(BatchedSkinny, RunRefusesWhatItDeclines) {
  TGEMM_REQUIRE_GPU();
  Case c;
  c.m = 9;  // above every kn tile's token count
  Data d = make_data(c, 21);
  const GemmCall call = validate_batched(d.av, d.bv, d.ov, false, false, nullptr);
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  int refused = 0;
  for (const SolutionPtr& s : batched_skinny_solutions()) {
    EXPECT_FALSE(s->can_implement(call.problem)) << s->name();
    EXPECT_THROW(s->run(call.problem, call.args, Workspace{}, nullptr), Error) << s->name();
    ++refused;
  }
  device_synchronize();
  const std::vector<float> out = to_host_floats(d.obuf.data(), c.out, d.out.elems);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); }));
  EXPECT_EQ(refused, static_cast<int>(skinny::batched_tiles().size()));
}

Case random_case(std::mt19937_64& rng, int index) {
  Case c;
  c.transpose_b = (index & 1) != 0;
  c.batch = test::log_uniform(rng, 1, 64);
  // The kn tiles cover M <= 8, the nk tiles M <= 16.
  c.m = 1 + static_cast<std::int64_t>(rng() % (c.transpose_b ? 16 : 8));
  c.n = test::log_uniform(rng, 1, 700);
  c.k = test::log_uniform(rng, 1, 1500);
  if (rng() % 4 != 0) c.n |= 1;
  if (rng() % 4 != 0) c.k |= 1;
  // At most 2^22 multiply-adds, to keep the host product quick: shrink B first.
  while (c.batch * c.m * c.n * c.k > (1 << 22)) {
    if (c.batch > 1)
      c.batch = (c.batch + 1) / 2;
    else
      c.k = std::max<std::int64_t>(c.k / 2, 1) | 1;
  }
  // kn reads a by elements: either transpose; nk reads a's rows as 16-byte chunks.
  c.transpose_a = !c.transpose_b && (index & 2) != 0;
  c.in = (index & 4) ? DType::kFloat16 : DType::kBFloat16;
  const int out_pick = static_cast<int>(rng() % 3);
  c.out = out_pick == 0 ? c.in : out_pick == 1 ? DType::kFloat32 : DType::kBFloat16;
  c.bias = rng() % 2 == 0;
  c.bias_type = rng() % 2 == 0 ? c.in : c.out;
  const BatchLayout layouts[] = {BatchLayout::kDense, BatchLayout::kBroadcast, BatchLayout::kPadded};
  c.a_batch = layouts[rng() % 3];
  c.b_batch = layouts[rng() % 3];
  // Rows of b and (nk) of a padded to whole 16-byte chunks where K or N is odd: the strides the
  // kernels accept, with the odd size itself a tail of the last chunk.
  auto chunk_pad = [](std::int64_t cols) { return (8 - cols % 8) % 8; };
  c.b_row_pad = chunk_pad(c.transpose_b ? c.k : c.n) + 8 * static_cast<std::int64_t>(rng() % 2);
  c.a_row_pad = c.transpose_b ? chunk_pad(c.k) : static_cast<std::int64_t>(rng() % 3);
  c.out_row_pad = static_cast<std::int64_t>(rng() % 3);
  return c;
}

TEST(BatchedSkinny, RandomOddProblems) {
  TGEMM_REQUIRE_GPU();
  if (!is_sm90a_device(0)) GTEST_SKIP() << "the batched skinny kernels are built for sm_90a";
  std::mt19937_64 rng(4801);
  int ran = 0, cases = 0;
  for (int i = 0; i < 96; ++i) {
    const Case c = random_case(rng, i);
    SCOPED_TRACE(c.describe());
    const int r = run_every_solution(c, static_cast<std::uint64_t>(i));
    ran += r;
    cases += r > 0 ? 1 : 0;
    // bf16 cases have instances in every build, and every drawn layout is one a tile accepts.
    if (c.in == DType::kBFloat16) EXPECT_GT(r, 0) << c.describe();
    if (HasFailure()) break;
  }
  EXPECT_GE(cases, 48);
  EXPECT_GE(ran, 150);  // about 5.8 tiles a bf16 case accept (fewer at larger M)
}

// The tuner races every tile that accepts a batched problem (the registry's candidates), each
// screened and checked like cuBLASLt's.
TEST(BatchedSkinny, TheTunerRacesTheTiles) {
  TGEMM_REQUIRE_GPU();
  if (!is_sm90a_device(0)) GTEST_SKIP() << "the batched skinny kernels are built for sm_90a";
  Case c;
  c.batch = 16;
  c.n = 512;
  c.k = 128;
  const Data d = make_data(c, 5);
  const GemmProblem p = validate_batched(d.av, d.bv, d.ov, false, false, nullptr).problem;
  RaceOptions o;
  o.libtypes = {"cublaslt", std::string(skinny::kBatchedLibtype)};
  const RaceResult r = race_problem(p, o);
  int raced = 0;
  for (const CandidateResult& x : r.candidates) {
    if (x.libtype != skinny::kBatchedLibtype) continue;
    ++raced;
    EXPECT_TRUE(x.error.empty()) << x.name << ": " << x.error;
    EXPECT_GT(x.screen_us, 0) << x.name;
    if (x.err_ratio >= 0) EXPECT_TRUE(x.strict_ok) << x.name;
  }
  // The backend offers the tiles of the smallest token count that fits: the kn tiles of m_max 1.
  int offered = 0;
  for (const auto& t : skinny::batched_tiles())
    offered += t.layout == skinny::BatchedLayout::kKN && t.m_max == 1 ? 1 : 0;
  EXPECT_EQ(raced, offered);
  EXPECT_GT(raced, 0);
  EXPECT_GE(r.winner, 0);
}

class BatchedSkinnyTable : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv(std::string(family_info(OpFamily::kBatched).config_env).c_str());
    if (test::has_gpu()) reload_config();
  }
};

TEST_F(BatchedSkinnyTable, ARowNamingATileRoutesToIt) {
  TGEMM_REQUIRE_GPU();
  if (!is_sm90a_device(0)) GTEST_SKIP() << "the batched skinny kernels are built for sm_90a";
  Case c;
  c.batch = 16;
  c.m = 1;
  c.n = 512;
  c.k = 128;
  Data d = make_data(c, 77);
  const GemmCall call = validate_batched(d.av, d.bv, d.ov, false, false, nullptr);
  // Before the table: cuBLASLt's default (the backend offers none).
  EXPECT_NE(describe_batched_gemm(d.av, d.bv, d.ov, false, false).libtype, skinny::kBatchedLibtype);

  const std::string name = skinny::batched_skinny_name({skinny::BatchedLayout::kKN, 1, 8});
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  TableRow row;
  row.key = table_key(call.problem, dev.arch, dev.sm_count);
  row.m = c.m;
  row.libtype = std::string(skinny::kBatchedLibtype);
  row.kernel_name = name;
  row.us = 1.0;
  const std::string path = ::testing::TempDir() + "tgemm_batched_skinny_" + std::to_string(::getpid()) + ".csv";
  {
    std::ofstream out(path);
    out << csv::join(tuned_table_columns(OpFamily::kBatched)) << "\n" << format_tuned_row(row) << "\n";
  }
  setenv(std::string(family_info(OpFamily::kBatched).config_env).c_str(), path.c_str(), 1);
  reload_config();
  const DispatchInfo info = describe_batched_gemm(d.av, d.bv, d.ov, false, false);
  EXPECT_EQ(info.level, "exact");
  EXPECT_EQ(info.libtype, skinny::kBatchedLibtype);
  EXPECT_EQ(info.kernel_name, name);
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  batched_gemm(d.av, d.bv, d.ov, false, false, nullptr, nullptr);
  device_synchronize();
  test::expect_batched_out(to_host_floats(d.obuf.data(), c.out, d.out.elems), d.out, c.batch, c.m, c.n, d.ref,
                           gemm_tolerance(c.out, c.k, false), "batched_gemm through the row " + c.describe());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tgemm
