// Random fills, NaN poisoning and reference comparison on the device. Used by tests/gpu, the
// bench and the tuner; tested through tests/gpu/test_device_utils.cu.
#include <cmath>
#include <limits>

#include "backends/reference/reference_backend.h"
#include "cuda/cuda_check.h"
#include "kernels/common/numeric.cuh"
#include "runtime/device_utils.h"

namespace tgemm {

bool cuda_device_available(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (err != cudaSuccess || count == 0) {
    if (why) *why = err != cudaSuccess ? cudaGetErrorString(err) : "no device";
    return false;
  }
  return true;
}
namespace {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__global__ void clear_sign_bits_kernel(std::uint8_t* dst, const std::uint8_t* src, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i] & 0x7f;
  }
}

template <typename T>
__global__ void fill_uniform_kernel(T* data, std::int64_t count, std::uint64_t seed, float lo,
                                    float hi) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t r = splitmix64(seed * 0x100000001b3ULL + static_cast<std::uint64_t>(i));
    float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    data[i] = from_float<T>(lo + (hi - lo) * u);
  }
}

template <typename T>
__global__ void fill_value_kernel(T* data, std::int64_t count, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    data[i] = from_float<T>(value);
  }
}

struct DeviceCompare {
  unsigned long long bad;
  unsigned long long nonfinite;
  unsigned long long first_bad;  // min index
  float max_abs_err;             // as ordered int bits (non-negative floats)
  float max_abs_ref;
  double sum_sq_ref;
};

template <typename T>
__global__ void compare_kernel(const T* out, std::int64_t ldo, const float* ref, std::int64_t ldr,
                               std::int64_t m, std::int64_t n, float rtol, float atol,
                               DeviceCompare* result) {
  std::int64_t total = m * n;
  unsigned long long bad = 0, nonfinite = 0, first = ~0ULL;
  float max_err = 0, max_ref = 0;
  double sum_sq = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t r = i / n, c = i % n;
    float o = to_float(out[r * ldo + c]);
    float e = ref[r * ldr + c];
    sum_sq += static_cast<double>(e) * e;
    max_ref = fmaxf(max_ref, fabsf(e));
    float err = fabsf(o - e);
    bool finite = isfinite(o);
    if (!finite) ++nonfinite;
    if (!finite || !(err <= atol + rtol * fabsf(e))) {
      ++bad;
      first = min(first, static_cast<unsigned long long>(i));
    }
    if (finite) max_err = fmaxf(max_err, err);
  }
  atomicAdd(&result->bad, bad);
  atomicAdd(&result->nonfinite, nonfinite);
  atomicMin(&result->first_bad, first);
  atomicMax(reinterpret_cast<int*>(&result->max_abs_err), __float_as_int(max_err));
  atomicMax(reinterpret_cast<int*>(&result->max_abs_ref), __float_as_int(max_ref));
  atomicAdd(&result->sum_sq_ref, sum_sq);
}

int grid_for(std::int64_t count) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>((count + 255) / 256, 8192)));
}

template <typename F>
void by_dtype(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kBFloat16: f(bf16{}); break;
    case DType::kFloat16: f(fp16{}); break;
    case DType::kFloat32: f(float{}); break;
    default: detail::throw_error(op, "unsupported dtype ", dtype_name(dtype));
  }
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) TGEMM_CUDA_CHECK(cudaMalloc(&data_, bytes), "DeviceBuffer");
}
DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
  o.data_ = nullptr;
  o.bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) cudaFree(data_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void fill_uniform(void* data, DType dtype, std::int64_t count, std::uint64_t seed, float lo,
                  float hi, Stream s) {
  if (count == 0) return;
  auto stream = reinterpret_cast<cudaStream_t>(s);
  by_dtype(dtype, "fill_uniform", [&](auto tag) {
    using T = decltype(tag);
    fill_uniform_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<T*>(data), count, seed, lo, hi);
  });
  TGEMM_CUDA_CHECK_LAUNCH("fill_uniform");
}

void fill_nan(void* data, DType dtype, std::int64_t count, Stream s) {
  if (count == 0) return;
  auto stream = reinterpret_cast<cudaStream_t>(s);
  by_dtype(dtype, "fill_nan", [&](auto tag) {
    using T = decltype(tag);
    fill_value_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<T*>(data), count,
                                                           std::numeric_limits<float>::quiet_NaN());
  });
  TGEMM_CUDA_CHECK_LAUNCH("fill_nan");
}

CompareResult compare_with_reference(const void* out, DType out_type, std::int64_t ldo,
                                     const float* ref, std::int64_t ldr, std::int64_t m,
                                     std::int64_t n, double rtol, double atol, Stream s) {
  CompareResult r;
  r.checked = m * n;
  if (r.checked == 0) return r;
  auto stream = reinterpret_cast<cudaStream_t>(s);
  DeviceBuffer buf(sizeof(DeviceCompare));
  DeviceCompare init{0, 0, ~0ULL, 0.0f, 0.0f, 0.0};
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(buf.data(), &init, sizeof(init), cudaMemcpyHostToDevice, stream),
                   "compare_with_reference");
  by_dtype(out_type, "compare_with_reference", [&](auto tag) {
    using T = decltype(tag);
    compare_kernel<<<grid_for(r.checked), 256, 0, stream>>>(
        static_cast<const T*>(out), ldo, ref, ldr, m, n, static_cast<float>(rtol),
        static_cast<float>(atol), buf.as<DeviceCompare>());
  });
  TGEMM_CUDA_CHECK_LAUNCH("compare_with_reference");
  DeviceCompare host{};
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(&host, buf.data(), sizeof(host), cudaMemcpyDeviceToHost, stream),
                   "compare_with_reference");
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream), "compare_with_reference");
  r.bad = static_cast<std::int64_t>(host.bad);
  r.nonfinite = static_cast<std::int64_t>(host.nonfinite);
  r.max_abs_err = host.max_abs_err;
  r.ref_max_abs = host.max_abs_ref;
  r.ref_rms = std::sqrt(host.sum_sq_ref / static_cast<double>(r.checked));
  if (host.first_bad != ~0ULL) {
    r.first_bad = static_cast<std::int64_t>(host.first_bad);
    std::int64_t row = r.first_bad / n, col = r.first_bad % n;
    float ref_v = 0;
    TGEMM_CUDA_CHECK(cudaMemcpy(&ref_v, ref + row * ldr + col, sizeof(float), cudaMemcpyDeviceToHost),
                     "compare_with_reference");
    r.first_bad_ref = ref_v;
    by_dtype(out_type, "compare_with_reference", [&](auto tag) {
      using T = decltype(tag);
      T v{};
      TGEMM_CUDA_CHECK(cudaMemcpy(&v, static_cast<const T*>(out) + row * ldo + col, sizeof(T),
                                  cudaMemcpyDeviceToHost),
                       "compare_with_reference");
      if constexpr (std::is_same_v<T, float>) r.first_bad_out = v;
      else if constexpr (std::is_same_v<T, bf16>) r.first_bad_out = __bfloat162float(v);
      else r.first_bad_out = __half2float(v);
    });
  }
  return r;
}

Tolerance gemm_tolerance(DType out_type, std::int64_t k, bool has_bias) {
  const double u = out_type == DType::kBFloat16 ? std::ldexp(1.0, -8)
                   : out_type == DType::kFloat16 ? std::ldexp(1.0, -11)
                                                 : std::ldexp(1.0, -24);
  const double kd = static_cast<double>(k);
  double atol = 1e-4 + 8e-8 * kd * std::sqrt(kd);
  if (has_bias && out_type != DType::kFloat32) atol += 2 * u;
  return {4 * u, atol};
}

double fp8_accumulation_atol(const GemmProblem& p, const GemmArgs& args, Stream s) {
  if (p.a_type != DType::kFloat8E4M3 || p.m == 0 || p.n == 0 || p.k == 0) return 0.0;
  auto stream = reinterpret_cast<cudaStream_t>(s);
  // The operands' spans (row and batch strides kept), one byte an element; the sums of every
  // product of a batch, one dense [M, N] after another.
  const std::int64_t x_bytes = (p.batch - 1) * p.batch_stride_a + (p.m - 1) * p.lda + p.k;
  const std::int64_t w_bytes = (p.batch - 1) * p.batch_stride_b + (p.n - 1) * p.ldb + p.k;
  DeviceBuffer ax(static_cast<std::size_t>(x_bytes)), aw(static_cast<std::size_t>(w_bytes));
  DeviceBuffer sums(static_cast<std::size_t>(p.batch * p.m * p.n) * sizeof(float));
  clear_sign_bits_kernel<<<grid_for(x_bytes), 256, 0, stream>>>(ax.as<std::uint8_t>(),
                                                                static_cast<const std::uint8_t*>(args.a), x_bytes);
  clear_sign_bits_kernel<<<grid_for(w_bytes), 256, 0, stream>>>(aw.as<std::uint8_t>(),
                                                                static_cast<const std::uint8_t*>(args.b), w_bytes);
  TGEMM_CUDA_CHECK_LAUNCH("fp8_accumulation_atol");
  GemmProblem plain = p;
  plain.epilogue = Epilogue::kNone;
  GemmArgs a = args;
  a.a = ax.data();
  a.b = aw.data();
  a.bias = nullptr;
  a.out = sums.data();
  run_reference_gemm_a8w8(plain, a, DType::kFloat32, p.n, s, p.m * p.n);
  const CompareResult r =
      compare_with_reference(sums.data(), DType::kFloat32, p.n, sums.as<float>(), p.n, p.batch * p.m, p.n, 0.0, 0.0, s);
  return std::ldexp(r.ref_max_abs, -11);
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  TGEMM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy_to_host");
}
void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  TGEMM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy_to_device");
}
void device_synchronize() { TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "device_synchronize"); }

}  // namespace tgemm
