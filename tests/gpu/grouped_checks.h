// Reference checks of the grouped GEMMs shared by their GPU tests (test_gmm.cpp, test_grouped.cpp)
// and the concurrency test (test_concurrency_families.cpp): per op a case, its device data (inputs
// uniform(-1, 1), outputs NaN-poisoned), the call on a given stream, and the comparison with a
// float64 host reference of the documented device-side rules (a gtest failure on mismatch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/common/grouped_test_util.h"
#include "tgemm/tensor.h"

namespace tgemm::test {

// ---- gmm

struct GmmCase {
  std::int64_t m = 64, n = 48, k = 40;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool transpose_rhs = false;
  bool bias = false;
  std::vector<std::int32_t> sizes;
  std::string describe() const {
    return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
           " G=" + std::to_string(sizes.size()) + " transpose_rhs=" + (transpose_rhs ? "1" : "0") +
           " bias=" + (bias ? "1" : "0") + " in=" + std::string(dtype_short_name(in)) +
           " out=" + std::string(dtype_short_name(out));
  }
};

struct GmmData {
  GmmCase c;
  DeviceBuffer lhs, rhs, sizes, out, bias;
  TensorView lv, rv, sv, ov, bv;
};

GmmData make_gmm(const GmmCase& c, std::uint64_t seed);
void run_gmm(const GmmData& d, Stream stream);
// out after gmm with these group sizes (the documented rule: negative sizes count as 0, offsets
// clamped to M, rows past the sum zero).
void expect_gmm_matches(const GmmData& d, const std::vector<std::int32_t>& sizes);

// Sets (or, with a null value, unsets) an environment variable for its lifetime, then restores it;
// reload_config() after each change, since the library reads its variables only then.
class EnvScope {
 public:
  EnvScope(const char* name, const char* value);
  ~EnvScope();
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;

 private:
  std::string name_, previous_;
  bool had_ = false;
};

// TGEMM_GROUPED_BACKEND ("tile", "cutlass", "auto") for its lifetime, as EnvScope.
class GroupedBackendScope {
 public:
  explicit GroupedBackendScope(const std::string& backend) : env_("TGEMM_GROUPED_BACKEND", backend.c_str()) {}

 private:
  EnvScope env_;
};

// Whether gmm runs this case on a CUTLASS grouped instance on the current device under
// TGEMM_GROUPED_BACKEND=cutlass (an instance of its dtype and rhs layout built and loadable, the
// shape one the kernel takes).
bool cutlass_takes(const GmmCase& c);

// ---- ptgmm / nptgmm

struct TgmmCase {
  std::int64_t m = 96, k = 40, n = 72;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool col_major = false;  // lhs stored [M, K] row-major, passed as its [K, M] transpose
  bool bias_grad = false;
  bool accumulate = false;
  bool persistent = true;
  std::vector<std::int32_t> sizes;
  std::string describe() const {
    return "M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n) +
           " G=" + std::to_string(sizes.size()) + " col_major=" + std::to_string(col_major) +
           " bias_grad=" + std::to_string(bias_grad) + " accumulate=" + std::to_string(accumulate) +
           " persistent=" + std::to_string(persistent) + " in=" + std::string(dtype_short_name(in)) +
           " out=" + std::string(dtype_short_name(out));
  }
};

struct TgmmData {
  TgmmCase c;
  Buffer lhs, rhs, sizes, out, bias_grad;
  std::vector<float> out_before;  // what accumulate adds to
  TensorView lv, rv, sv, ov, bv;
};

TgmmData make_tgmm(const TgmmCase& c, std::uint64_t seed);
void run_tgmm(const TgmmData& d, Stream stream);
// out and bias_grad after ptgmm/nptgmm with these group sizes; with accumulate, out_before is what
// the call added to.
void expect_tgmm_matches(const TgmmData& d, const std::vector<std::int32_t>& sizes);

// ---- grouped_gemm

struct GatherCase {
  std::int64_t t = 40, topk = 2, h = 64, n = 72, e = 8;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool x_per_slot = false;
  bool transpose = false;
  bool weighted = false;
  DType weight_type = DType::kFloat32;
  std::vector<std::int32_t> ids;  // [T * topk]
  std::string describe() const {
    return "T=" + std::to_string(t) + " topk=" + std::to_string(topk) + " H=" + std::to_string(h) +
           " N=" + std::to_string(n) + " E=" + std::to_string(e) + " x_per_slot=" + std::to_string(x_per_slot) +
           " transpose=" + std::to_string(transpose) + " weighted=" + std::to_string(weighted) +
           " in=" + std::string(dtype_short_name(in)) + " out=" + std::string(dtype_short_name(out));
  }
};

struct GatherData {
  GatherCase c;
  Buffer x, w, ids, topk_weights, out;
  TensorView xv, wv, iv, tv, ov;
};

GatherData make_gather(const GatherCase& c, std::uint64_t seed);
void run_gather(const GatherData& d, Stream stream);
// out after grouped_gemm with these expert ids (an id out of range gives a zero row).
void expect_gather_matches(const GatherData& d, const std::vector<std::int32_t>& ids);

// ---- m_grouped_gemm_masked

struct MaskedCase {
  std::int64_t g = 4, max_m = 128, n = 72, k = 64;
  std::vector<std::int32_t> masked_m;
  std::string describe() const {
    return "G=" + std::to_string(g) + " max_m=" + std::to_string(max_m) + " N=" + std::to_string(n) +
           " K=" + std::to_string(k);
  }
};

struct MaskedData {
  MaskedCase c;
  Buffer x, w, masked_m, out;
  TensorView xv, wv, mv, ov;
};

MaskedData make_masked(const MaskedCase& c, std::uint64_t seed);
// Rows below m_g match the reference; rows at or past it are untouched (still the NaN poison).
void expect_masked_matches(const MaskedData& d, const std::vector<std::int32_t>& masked_m);

}  // namespace tgemm::test
