// sparse_gemm (include/tgemm/sparse.h) against a float64 host reference of x @ W^T (+ bias), W
// read back from the device in the form the library was given: 2:4 weights (pruned on the device
// by prune_2_4, itself checked against the host's choice of the 2 largest of every 4) through
// cuSPARSELt, CSR weights at several densities with empty rows through cuSPARSE, and the dense
// path; M = 1, odd M, padded rows, cuSPARSELt's algorithm and split-K candidates, CUDA-graph
// capture; block-sparse (BSR) weights with empty block rows and fully dense blocks through
// cuSPARSE and the dense path; FP8 2:4 weights with per-tensor and per-token x per-channel scales
// against the dequantized operands; then the errors of weights that are not 2:4 and of bad CSR
// and BSR indices. Outputs are NaN-poisoned first, so an unwritten element fails.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/common/gpu_test_util.h"
#include "tgemm/a8w8.h"
#include "tgemm/error.h"
#include "tgemm/sparse.h"

namespace tgemm::test {
namespace {

void upload(void* dst, const void* src, std::size_t bytes) {
  ASSERT_EQ(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

// A sparse problem's host side: W dense [n, k] as floats (zeros where W has none), x [m, k],
// bias [n] (empty without one).
struct Host {
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<float> x, w, bias;
};

// Expects out [m, n] (ld ldo, dtype) to match the float64 reference. Tolerance: the output's
// rounding (unit roundoff u) of the product and, with a bias, of the product before the bias pass
// adds it (sparse_gemm's bias is a second rounding), plus fp32 accumulation in the libraries' own
// order, 1e-4 of sum |x w| (a dropped or misplaced term is off by ~0.25 on average, far above).
void expect_matches(const Host& h, const void* out, std::int64_t ldo, DType dtype) {
  const std::vector<float> got = to_host_floats(out, dtype, h.m * ldo - (ldo - h.n));
  const double u = dtype == DType::kBFloat16 ? 0x1p-8 : 0x1p-11;
  int failures = 0;
  for (std::int64_t i = 0; i < h.m; ++i) {
    for (std::int64_t j = 0; j < h.n; ++j) {
      double ref = 0.0, mag = 0.0;
      for (std::int64_t l = 0; l < h.k; ++l) {
        ref += static_cast<double>(h.x[i * h.k + l]) * h.w[j * h.k + l];
        mag += std::fabs(static_cast<double>(h.x[i * h.k + l]) * h.w[j * h.k + l]);
      }
      const double b = h.bias.empty() ? 0.0 : h.bias[j];
      const double tol = 2.0 * u * (std::fabs(ref) + std::fabs(b)) + 1e-4 * mag + 1e-6;
      const double v = got[i * ldo + j];
      if (!(std::fabs(v - (ref + b)) <= tol) && ++failures <= 5) {
        ADD_FAILURE() << "out[" << i << ", " << j << "] = " << v << ", reference " << ref + b << " (tolerance " << tol
                      << ")";
      }
    }
  }
  EXPECT_EQ(failures, 0) << "elements out of tolerance in [" << h.m << ", " << h.n << "]";
}

// Device x [m, k] with row stride ldx, uniform(-1, 1); its host copy (without padding) in h.x.
DeviceBuffer make_x(Host& h, std::int64_t ldx, DType dtype, std::uint64_t seed) {
  DeviceBuffer x(static_cast<std::size_t>(std::max<std::int64_t>(h.m * ldx, 1)) * 2);
  fill_uniform(x.data(), dtype, h.m * ldx, seed, -1.0f, 1.0f, nullptr);
  const std::vector<float> all = to_host_floats(x.data(), dtype, h.m * ldx);
  h.x.resize(static_cast<std::size_t>(h.m * h.k));
  for (std::int64_t i = 0; i < h.m; ++i) std::copy_n(&all[i * ldx], h.k, &h.x[i * h.k]);
  return x;
}

DeviceBuffer make_bias(Host& h, DType dtype, std::uint64_t seed) {
  DeviceBuffer b(static_cast<std::size_t>(h.n) * 2);
  fill_uniform(b.data(), dtype, h.n, seed, -1.0f, 1.0f, nullptr);
  h.bias = to_host_floats(b.data(), dtype, h.n);
  return b;
}

// ---- 2:4 ----

struct Weight24 {
  DeviceBuffer dense, compressed;
  std::optional<SparseWeight> weight;  // set once compressed
};

// A random [n, k] weight pruned to 2:4 by prune_2_4 (checked against the host's choice), then
// compressed; h.w holds the pruned weight.
Weight24 make_weight_24(Host& h, DType dtype, std::uint64_t seed) {
  Weight24 w;
  w.dense = DeviceBuffer(static_cast<std::size_t>(h.n * h.k) * 2);
  fill_uniform(w.dense.data(), dtype, h.n * h.k, seed, -1.0f, 1.0f, nullptr);
  const std::vector<float> before = to_host_floats(w.dense.data(), dtype, h.n * h.k);
  const TensorView dv = TensorView::contiguous(w.dense.data(), dtype, {h.n, h.k});
  prune_2_4(dv, dv);  // in place
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  h.w = to_host_floats(w.dense.data(), dtype, h.n * h.k);
  for (std::int64_t g = 0; g < h.n * h.k; g += 4) {
    // The host's choice: rank by |v|, ties to the lower index; keep ranks 0 and 1.
    for (int j = 0; j < 4; ++j) {
      int beaten_by = 0;
      for (int i = 0; i < 4; ++i) {
        const float ai = std::fabs(before[g + i]), aj = std::fabs(before[g + j]);
        if (i != j && (ai > aj || (ai == aj && i < j))) ++beaten_by;
      }
      const float expect = beaten_by < 2 ? before[g + j] : 0.0f;
      if (h.w[g + j] != expect) {
        ADD_FAILURE() << "prune_2_4: element " << g + j << " is " << h.w[g + j] << ", expected " << expect;
        return w;
      }
    }
  }
  const std::size_t bytes = sparse_compressed_bytes_2_4(h.n, h.k, dtype);
  w.compressed = DeviceBuffer(bytes);
  w.weight = SparseWeight::compress_2_4(
      dv, TensorView::contiguous(w.compressed.data(), DType::kInt8, {static_cast<std::int64_t>(bytes)}));
  w.weight->with_dense(dv);
  return w;
}

struct Case24 {
  std::int64_t m, n, k;
  DType dtype;
  bool bias;
  std::int64_t ldx_pad = 0, ldo_pad = 0;
  SparseBackend backend = SparseBackend::kDefault;
  int algorithm = -1, split_k = 0;
};

void run_case_24(const Case24& c, std::uint64_t seed) {
  SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " " +
               std::string(dtype_short_name(c.dtype)) + " backend=" + sparse_backend_name(c.backend) +
               " algorithm=" + std::to_string(c.algorithm) + " split_k=" + std::to_string(c.split_k));
  Host h{c.m, c.n, c.k, {}, {}, {}};
  Weight24 w = make_weight_24(h, c.dtype, seed);
  const std::int64_t ldx = c.k + c.ldx_pad, ldo = c.n + c.ldo_pad;
  DeviceBuffer x = make_x(h, ldx, c.dtype, seed + 1);
  DeviceBuffer bias;
  if (c.bias) bias = make_bias(h, c.dtype, seed + 2);
  DeviceBuffer out(static_cast<std::size_t>(c.m * ldo) * 2);
  fill_nan(out.data(), c.dtype, c.m * ldo, nullptr);
  const TensorView xv = TensorView::strided(x.data(), c.dtype, {c.m, c.k}, {ldx, 1});
  const TensorView ov = TensorView::strided(out.data(), c.dtype, {c.m, c.n}, {ldo, 1});
  const TensorView bv = TensorView::contiguous(bias.data(), c.dtype, {c.n});
  SparseGemmOptions o;
  if (c.bias) o.bias = &bv;
  o.backend = c.backend;
  o.algorithm = c.algorithm;
  o.split_k = c.split_k;
  ASSERT_TRUE(w.weight.has_value());
  sparse_gemm(xv, *w.weight, ov, o);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_matches(h, out.data(), ldo, c.dtype);
}

TEST(Sparse24, MatchesReference) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  std::uint64_t seed = 1;
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    for (std::int64_t m : {1, 7, 64, 333, 512}) {
      run_case_24({m, 128, 256, t, m % 2 == 1}, seed += 10);
    }
    run_case_24({96, 48, 1024, t, true}, seed += 10);
  }
}

TEST(Sparse24, PaddedRows) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  run_case_24({32, 64, 128, DType::kBFloat16, true, 8, 16}, 101);
  run_case_24({17, 64, 128, DType::kFloat16, false, 3, 5}, 102);
}

TEST(Sparse24, AlgorithmAndSplitKCandidates) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  Case24 c{256, 256, 512, DType::kBFloat16, true};
  c.algorithm = 0;
  run_case_24(c, 201);
  // Split-K on an explicit configuration, as the tuner races it. cuSPARSELt 0.8.0 refuses
  // CUSPARSELT_MATMUL_SPLIT_K = 2 here on an H200 ("invalid value", on its default selection and
  // on configuration 0): a refusal must be a tgemm::Error naming the attribute (the tuner drops
  // such candidates), and a library that takes it must match the reference.
  c.split_k = 2;
  try {
    run_case_24(c, 202);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUSPARSELT_MATMUL_SPLIT_K"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Sparse24, DensePath) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  Case24 c{64, 128, 256, DType::kBFloat16, true};
  c.backend = SparseBackend::kDense;
  run_case_24(c, 301);
}

TEST(Sparse24, CapturedInCudaGraph) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  Host h{13, 64, 128, {}, {}, {}};
  Weight24 w = make_weight_24(h, DType::kBFloat16, 401);
  DeviceBuffer x = make_x(h, h.k, DType::kBFloat16, 402);
  DeviceBuffer out(static_cast<std::size_t>(h.m * h.n) * 2);
  const TensorView xv = TensorView::contiguous(x.data(), DType::kBFloat16, {h.m, h.k});
  const TensorView ov = TensorView::contiguous(out.data(), DType::kBFloat16, {h.m, h.n});
  ASSERT_TRUE(w.weight.has_value());
  GraphReplay graph([&](Stream s) { sparse_gemm(xv, *w.weight, ov, {}, s); });
  ASSERT_TRUE(graph.ok());
  // New input and a poisoned output between capture and replay: the replay must recompute.
  fill_uniform(x.data(), DType::kBFloat16, h.m * h.k, 403, -1.0f, 1.0f, graph.stream());
  fill_nan(out.data(), DType::kBFloat16, h.m * h.n, graph.stream());
  graph.replay();
  h.x = to_host_floats(x.data(), DType::kBFloat16, h.m * h.k);
  expect_matches(h, out.data(), h.n, DType::kBFloat16);
}

TEST(Sparse24, RejectsAWeightThatIsNot24) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  const std::int64_t n = 32, k = 64;
  DeviceBuffer w(static_cast<std::size_t>(n * k) * 2);
  fill_uniform(w.data(), DType::kBFloat16, n * k, 501, 0.5f, 1.0f, nullptr);  // dense: no zeros
  const std::size_t bytes = sparse_compressed_bytes_2_4(n, k, DType::kBFloat16);
  DeviceBuffer compressed(bytes);
  try {
    SparseWeight::compress_2_4(
        TensorView::contiguous(w.data(), DType::kBFloat16, {n, k}),
        TensorView::contiguous(compressed.data(), DType::kInt8, {static_cast<std::int64_t>(bytes)}));
    FAIL() << "no tgemm::Error for a dense weight";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("SparseWeight::compress_2_4: the weight is not 2:4 sparse: row 0, columns [0, 4)"),
              std::string::npos)
        << msg;
  }
}

// ---- CSR ----

struct CsrCase {
  std::int64_t m, n, k;
  double density;  // of the nonzero rows
  DType dtype;
  bool bias;
};

void run_case_csr(const CsrCase& c, std::uint64_t seed) {
  SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
               " density=" + std::to_string(c.density) + " " + std::string(dtype_short_name(c.dtype)));
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(c.density), empty_row(0.2);
  std::vector<std::int32_t> offsets = {0}, cols;
  for (std::int64_t r = 0; r < c.n; ++r) {
    if (!empty_row(rng)) {
      for (std::int64_t j = 0; j < c.k; ++j) {
        if (keep(rng)) cols.push_back(static_cast<std::int32_t>(j));
      }
    }
    offsets.push_back(static_cast<std::int32_t>(cols.size()));
  }
  const auto nnz = static_cast<std::int64_t>(cols.size());
  DeviceBuffer d_offsets(offsets.size() * 4), d_cols(std::max<std::size_t>(cols.size(), 1) * 4),
      d_values(static_cast<std::size_t>(std::max<std::int64_t>(nnz, 1)) * 2);
  upload(d_offsets.data(), offsets.data(), offsets.size() * 4);
  if (nnz > 0) upload(d_cols.data(), cols.data(), cols.size() * 4);
  fill_uniform(d_values.data(), c.dtype, nnz, seed + 1, -1.0f, 1.0f, nullptr);
  Host h{c.m, c.n, c.k, {}, std::vector<float>(static_cast<std::size_t>(c.n * c.k), 0.0f), {}};
  const std::vector<float> values = to_host_floats(d_values.data(), c.dtype, nnz);
  for (std::int64_t r = 0; r < c.n; ++r) {
    for (std::int32_t i = offsets[r]; i < offsets[r + 1]; ++i) h.w[r * c.k + cols[i]] = values[i];
  }
  const SparseWeight w = SparseWeight::csr(TensorView::contiguous(d_offsets.data(), DType::kInt32, {c.n + 1}),
                                           TensorView::contiguous(d_cols.data(), DType::kInt32, {nnz}),
                                           TensorView::contiguous(d_values.data(), c.dtype, {nnz}), c.n, c.k);
  DeviceBuffer x = make_x(h, c.k, c.dtype, seed + 2);
  DeviceBuffer bias;
  if (c.bias) bias = make_bias(h, c.dtype, seed + 3);
  DeviceBuffer out(static_cast<std::size_t>(c.m * c.n) * 2);
  fill_nan(out.data(), c.dtype, c.m * c.n, nullptr);
  const TensorView bv = TensorView::contiguous(bias.data(), c.dtype, {c.n});
  SparseGemmOptions o;
  if (c.bias) o.bias = &bv;
  sparse_gemm(TensorView::contiguous(x.data(), c.dtype, {c.m, c.k}), w,
              TensorView::contiguous(out.data(), c.dtype, {c.m, c.n}), o);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_matches(h, out.data(), c.n, c.dtype);
}

TEST(SparseCsr, MatchesReferenceAtSeveralDensities) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1000;
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    for (double density : {0.01, 0.05, 0.3}) {
      for (std::int64_t m : {1, 13, 256}) run_case_csr({m, 96, 500, density, t, m != 13}, seed += 10);
    }
  }
}

TEST(SparseCsr, NoNonzerosWritesTheBias) {
  TGEMM_REQUIRE_GPU();
  run_case_csr({9, 40, 64, 0.0, DType::kBFloat16, true}, 2000);
  run_case_csr({9, 40, 64, 0.0, DType::kBFloat16, false}, 2001);
}

TEST(SparseCsr, RejectsUnsortedIndices) {
  TGEMM_REQUIRE_GPU();
  const std::vector<std::int32_t> offsets = {0, 2, 3}, cols = {5, 1, 0};
  DeviceBuffer d_offsets(offsets.size() * 4), d_cols(cols.size() * 4), d_values(cols.size() * 2);
  upload(d_offsets.data(), offsets.data(), offsets.size() * 4);
  upload(d_cols.data(), cols.data(), cols.size() * 4);
  try {
    SparseWeight::csr(TensorView::contiguous(d_offsets.data(), DType::kInt32, {3}),
                      TensorView::contiguous(d_cols.data(), DType::kInt32, {3}),
                      TensorView::contiguous(d_values.data(), DType::kBFloat16, {3}), 2, 8);
    FAIL() << "no tgemm::Error for unsorted indices";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("SparseWeight::csr: col_indices of row 0 must be sorted and distinct"), std::string::npos)
        << msg;
  }
}

// ---- block (BSR) ----

struct BlockCase {
  std::int64_t m, n, k, bs;
  double density;  // of the blocks, block row 1 always empty
  DType dtype;
  bool bias;
  SparseBackend backend = SparseBackend::kDefault;
};

void run_case_block(const BlockCase& c, std::uint64_t seed) {
  SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
               " bs=" + std::to_string(c.bs) + " density=" + std::to_string(c.density) + " " +
               std::string(dtype_short_name(c.dtype)) + " backend=" + sparse_backend_name(c.backend));
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(c.density);
  const std::int64_t rows = c.n / c.bs, bcols = c.k / c.bs, area = c.bs * c.bs;
  std::vector<std::int32_t> offsets = {0}, cols;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < bcols; ++j) {
      if (r != 1 && (keep(rng) || (r == 0 && j == 0))) cols.push_back(static_cast<std::int32_t>(j));
    }
    offsets.push_back(static_cast<std::int32_t>(cols.size()));
  }
  const auto nnzb = static_cast<std::int64_t>(cols.size());
  DeviceBuffer d_offsets(offsets.size() * 4), d_cols(std::max<std::size_t>(cols.size(), 1) * 4),
      d_values(static_cast<std::size_t>(std::max<std::int64_t>(nnzb * area, 1)) * 2),
      d_dense(static_cast<std::size_t>(c.n * c.k) * 2);
  upload(d_offsets.data(), offsets.data(), offsets.size() * 4);
  if (nnzb > 0) upload(d_cols.data(), cols.data(), cols.size() * 4);
  fill_uniform(d_values.data(), c.dtype, nnzb * area, seed + 1, -1.0f, 1.0f, nullptr);
  Host h{c.m, c.n, c.k, {}, std::vector<float>(static_cast<std::size_t>(c.n * c.k), 0.0f), {}};
  const std::vector<float> values = to_host_floats(d_values.data(), c.dtype, nnzb * area);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int32_t b = offsets[r]; b < offsets[r + 1]; ++b) {
      for (std::int64_t i = 0; i < c.bs; ++i) {
        for (std::int64_t j = 0; j < c.bs; ++j) {
          h.w[(r * c.bs + i) * c.k + cols[b] * c.bs + j] = values[b * area + i * c.bs + j];
        }
      }
    }
  }
  // The dense copy, for the dense path: the host matrix in the weight's dtype (every value is one
  // already, so the conversion is exact).
  std::vector<std::uint16_t> dense_bits(h.w.size());
  for (std::size_t i = 0; i < h.w.size(); ++i) {
    if (c.dtype == DType::kBFloat16) {
      const __nv_bfloat16 v = __float2bfloat16(h.w[i]);
      std::memcpy(&dense_bits[i], &v, 2);
    } else {
      const __half v = __float2half(h.w[i]);
      std::memcpy(&dense_bits[i], &v, 2);
    }
  }
  upload(d_dense.data(), dense_bits.data(), dense_bits.size() * 2);
  SparseWeight w =
      SparseWeight::bsr(TensorView::contiguous(d_offsets.data(), DType::kInt32, {rows + 1}),
                        TensorView::contiguous(d_cols.data(), DType::kInt32, {nnzb}),
                        TensorView::contiguous(d_values.data(), c.dtype, {nnzb, c.bs, c.bs}), c.n, c.k, c.bs);
  w.with_dense(TensorView::contiguous(d_dense.data(), c.dtype, {c.n, c.k}));
  EXPECT_EQ(w.nnz(), nnzb * area);
  DeviceBuffer x = make_x(h, c.k, c.dtype, seed + 2);
  DeviceBuffer bias;
  if (c.bias) bias = make_bias(h, c.dtype, seed + 3);
  DeviceBuffer out(static_cast<std::size_t>(c.m * c.n) * 2);
  fill_nan(out.data(), c.dtype, c.m * c.n, nullptr);
  const TensorView bv = TensorView::contiguous(bias.data(), c.dtype, {c.n});
  SparseGemmOptions o;
  if (c.bias) o.bias = &bv;
  o.backend = c.backend;
  sparse_gemm(TensorView::contiguous(x.data(), c.dtype, {c.m, c.k}), w,
              TensorView::contiguous(out.data(), c.dtype, {c.m, c.n}), o);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_matches(h, out.data(), c.n, c.dtype);
}

TEST(SparseBlock, MatchesReference) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 3000;
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    for (std::int64_t bs : {16, 32, 64}) {
      for (double density : {0.1, 0.5, 1.0}) {
        for (std::int64_t m : {1, 7, 128}) run_case_block({m, 4 * bs, 6 * bs, bs, density, t, m != 7}, seed += 10);
      }
    }
  }
}

TEST(SparseBlock, DensePathAndNoBlocks) {
  TGEMM_REQUIRE_GPU();
  BlockCase c{33, 128, 256, 32, 0.3, DType::kBFloat16, true};
  c.backend = SparseBackend::kDense;
  run_case_block(c, 3500);
  // Density 0 keeps only block (0, 0): every other block row holds nothing.
  run_case_block({5, 128, 128, 64, 0.0, DType::kFloat16, true}, 3501);
}

TEST(SparseBlock, RejectsUnsortedBlockIndices) {
  TGEMM_REQUIRE_GPU();
  const std::vector<std::int32_t> offsets = {0, 2, 2}, cols = {1, 1};
  DeviceBuffer d_offsets(offsets.size() * 4), d_cols(cols.size() * 4), d_values(2 * 16 * 16 * 2);
  upload(d_offsets.data(), offsets.data(), offsets.size() * 4);
  upload(d_cols.data(), cols.data(), cols.size() * 4);
  try {
    SparseWeight::bsr(TensorView::contiguous(d_offsets.data(), DType::kInt32, {3}),
                      TensorView::contiguous(d_cols.data(), DType::kInt32, {2}),
                      TensorView::contiguous(d_values.data(), DType::kBFloat16, {2, 16, 16}), 32, 64, 16);
    FAIL() << "no tgemm::Error for duplicate block indices";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("SparseWeight::bsr: col_indices of row 0 must be sorted and distinct"), std::string::npos)
        << msg;
  }
}

// ---- FP8 2:4 ----

struct Fp8Case {
  std::int64_t m, n, k;
  bool per_token;  // x_scale [M] and w_scale [N], else one scale each
  DType out;
  bool bias;
};

void run_case_fp8(const Fp8Case& c, std::uint64_t seed) {
  SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
               (c.per_token ? " per-token x per-channel" : " per-tensor") + " out " +
               std::string(dtype_short_name(c.out)));
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> wq(static_cast<std::size_t>(c.n * c.k)), xq(static_cast<std::size_t>(c.m * c.k));
  for (std::int64_t g = 0; g < c.n * c.k; g += 4) {
    const int zero_a = static_cast<int>(rng() % 4), zero_b = (zero_a + 1 + static_cast<int>(rng() % 3)) % 4;
    for (int j = 0; j < 4; ++j) wq[g + j] = (j == zero_a || j == zero_b) ? 0 : draw_8bit(rng, DType::kFloat8E4M3);
  }
  for (auto& v : xq) v = draw_8bit(rng, DType::kFloat8E4M3);
  std::uniform_real_distribution<float> scale(0.25f, 2.0f), unit(-1.0f, 1.0f);
  std::vector<float> xs(c.per_token ? c.m : 1), ws(c.per_token ? c.n : 1), bias(c.bias ? c.n : 0);
  for (auto& v : xs) v = scale(rng);
  for (auto& v : ws) v = scale(rng);
  for (auto& v : bias) v = unit(rng);
  DeviceBuffer d_w(wq.size()), d_x(std::max<std::size_t>(xq.size(), 1)), d_xs(xs.size() * 4), d_ws(ws.size() * 4),
      d_bias(std::max<std::size_t>(bias.size(), 1) * 4);
  upload(d_w.data(), wq.data(), wq.size());
  if (!xq.empty()) upload(d_x.data(), xq.data(), xq.size());
  upload(d_xs.data(), xs.data(), xs.size() * 4);
  upload(d_ws.data(), ws.data(), ws.size() * 4);
  if (c.bias) upload(d_bias.data(), bias.data(), bias.size() * 4);
  const TensorView wv = TensorView::contiguous(d_w.data(), DType::kFloat8E4M3, {c.n, c.k});
  const std::size_t bytes = sparse_compressed_bytes_2_4(c.n, c.k, DType::kFloat8E4M3);
  DeviceBuffer compressed(bytes);
  SparseWeight w = SparseWeight::compress_2_4(
      wv, TensorView::contiguous(compressed.data(), DType::kInt8, {static_cast<std::int64_t>(bytes)}));
  w.with_dense(wv);
  const std::size_t osize = dtype_size(c.out);
  for (SparseBackend backend : {SparseBackend::kDefault, SparseBackend::kDense}) {
    SCOPED_TRACE(sparse_backend_name(backend));
    DeviceBuffer out(static_cast<std::size_t>(c.m * c.n) * osize);
    fill_nan(out.data(), c.out, c.m * c.n, nullptr);
    const TensorView bv = TensorView::contiguous(d_bias.data(), DType::kFloat32, {c.n});
    SparseGemmOptions o;
    if (c.bias) o.bias = &bv;
    o.backend = backend;
    const TensorView xsv = c.per_token ? TensorView::contiguous(d_xs.data(), DType::kFloat32, {c.m, 1})
                                       : TensorView::contiguous(d_xs.data(), DType::kFloat32, {1});
    const TensorView wsv = c.per_token ? TensorView::contiguous(d_ws.data(), DType::kFloat32, {c.n, 1})
                                       : TensorView::contiguous(d_ws.data(), DType::kFloat32, {1});
    sparse_gemm_a8w8(TensorView::contiguous(d_x.data(), DType::kFloat8E4M3, {c.m, c.k}), w, xsv, wsv,
                     TensorView::contiguous(out.data(), c.out, {c.m, c.n}), o);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = to_host_floats(out.data(), c.out, c.m * c.n);
    // Each e4m3 product is exact in fp32, but Hopper's FP8 tensor cores add them at reduced
    // precision (the bound the a8w8 tests take: 2^-11 of sum |x w|), then one rounding to out
    // (2u of the value, u = 2^-8 for bf16, 2^-24 for fp32).
    const double u = c.out == DType::kBFloat16 ? 0x1p-8 : c.out == DType::kFloat16 ? 0x1p-11 : 0x1p-24;
    int failures = 0;
    for (std::int64_t i = 0; i < c.m; ++i) {
      for (std::int64_t j = 0; j < c.n; ++j) {
        double acc = 0, mag = 0;
        for (std::int64_t l = 0; l < c.k; ++l) {
          const double p = fp8_e4m3_value(xq[i * c.k + l]) * fp8_e4m3_value(wq[j * c.k + l]);
          acc += p;
          mag += std::fabs(p);
        }
        const double s = static_cast<double>(xs[c.per_token ? i : 0]) * ws[c.per_token ? j : 0];
        const double ref = acc * s + (c.bias ? bias[j] : 0.0);
        const double tol = 2.0 * u * std::fabs(ref) + 0x1p-11 * mag * s + 1e-6;
        const double v = got[i * c.n + j];
        if (!(std::fabs(v - ref) <= tol) && ++failures <= 5) {
          ADD_FAILURE() << "out[" << i << ", " << j << "] = " << v << ", reference " << ref << " (tolerance " << tol
                        << ")";
        }
      }
    }
    EXPECT_EQ(failures, 0);
  }
}

TEST(Sparse24Fp8, MatchesDequantizedReference) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  std::uint64_t seed = 4000;
  for (std::int64_t m : {1, 7, 64, 256}) {
    run_case_fp8({m, 128, 256, false, DType::kBFloat16, m == 7}, seed += 10);
    run_case_fp8({m, 96, 512, true, DType::kBFloat16, true}, seed += 10);
  }
  run_case_fp8({33, 64, 128, true, DType::kFloat32, false}, seed += 10);
  run_case_fp8({32, 64, 128, false, DType::kFloat16, true}, seed += 10);
}

TEST(Sparse24Fp8, RejectsNot24AndMisusedWeights) {
  TGEMM_REQUIRE_GPU();
  if (!has_cusparselt()) GTEST_SKIP() << "no cuSPARSELt in this build or process";
  const std::int64_t n = 32, k = 64;
  std::vector<std::uint8_t> dense(static_cast<std::size_t>(n * k), 0x38);  // every element 1.0
  DeviceBuffer w(dense.size());
  upload(w.data(), dense.data(), dense.size());
  const std::size_t bytes = sparse_compressed_bytes_2_4(n, k, DType::kFloat8E4M3);
  DeviceBuffer compressed(bytes);
  const TensorView cv = TensorView::contiguous(compressed.data(), DType::kInt8, {static_cast<std::int64_t>(bytes)});
  try {
    SparseWeight::compress_2_4(TensorView::contiguous(w.data(), DType::kFloat8E4M3, {n, k}), cv);
    FAIL() << "no tgemm::Error for a dense FP8 weight";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not 2:4 sparse: row 0, columns [0, 4)"), std::string::npos) << e.what();
  }
  // An FP8 weight through sparse_gemm (no scales) is refused, naming sparse_gemm_a8w8.
  const SparseWeight fp8 = SparseWeight::from_compressed_2_4(cv, n, k, DType::kFloat8E4M3);
  DeviceBuffer x(static_cast<std::size_t>(4 * k)), out(static_cast<std::size_t>(4 * n) * 2);
  try {
    sparse_gemm(TensorView::contiguous(x.data(), DType::kFloat8E4M3, {4, k}), fp8,
                TensorView::contiguous(out.data(), DType::kFloat8E4M3, {4, n}));
    FAIL() << "no tgemm::Error for an FP8 weight in sparse_gemm";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sparse_gemm_a8w8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tgemm::test
