// MoE routing (include/tgemm/moe.h): topk_softmax and DeepSeek-V3's grouped_topk, one CTA of 128
// threads per token row. The row's scores live in shared memory; each choice (a group, then each of
// the k experts) is a block-wide argmax over what is still available, in a strict total order
// (larger first, NaN below every number, ties to the lower index), so every row gets k distinct
// in-range ids whatever the logits hold. Thread e % 128 owns expert e (and group e % 128): it is
// the only one to read or write that entry's flag, so marking a winner needs no barrier.
// Preconditions: a validated RoutingCall with T > 0, k > 0 (launch_routing).
// Tested by tests/gpu/test_moe.cpp (Routing.*) and tests/python/test_moe.py; benched inside
// bench/moe_bench.py's layer timings.
#include <cstdint>

#include "cuda/cuda_check.h"
#include "kernels/common/numeric.cuh"
#include "moe/moe_launch.h"

namespace tgemm {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

struct Candidate {
  float v;
  int i;  // -1: none
};

// Whether a ranks above b: any candidate above none, a number above NaN, then the larger value,
// then the lower index.
__device__ __forceinline__ bool ranks_above(Candidate a, Candidate b) {
  if (a.i < 0) return false;
  if (b.i < 0) return true;
  const bool a_nan = isnan(a.v), b_nan = isnan(b.v);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a.v != b.v) return a.v > b.v;
  return a.i < b.i;
}

// The best candidate of the block, returned to every thread. red: kWarps entries of shared memory.
__device__ Candidate block_best(Candidate c, Candidate* red) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const Candidate o{__shfl_xor_sync(0xffffffffu, c.v, off), __shfl_xor_sync(0xffffffffu, c.i, off)};
    if (ranks_above(o, c)) c = o;
  }
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = c;
  __syncthreads();
  Candidate best = red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) {
    if (ranks_above(red[w], best)) best = red[w];
  }
  __syncthreads();  // red is reused by the next call
  return best;
}

// Block-wide max (fmaxf: NaN ignored unless every value is NaN) or sum, returned to every thread.
template <bool kMax>
__device__ float block_reduce(float v, float* red) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) r = kMax ? fmaxf(r, red[w]) : r + red[w];
  __syncthreads();
  return r;
}

// Picks `rounds` winners among values[0, count) whose taken flag is 0, marking each; winner r is
// handed to on_pick(r, index) on thread 0.
template <typename OnPick>
__device__ void pick_best(const float* values, unsigned char* taken, int count, int rounds, Candidate* red,
                          OnPick&& on_pick) {
  for (int r = 0; r < rounds; ++r) {
    Candidate c{0.0f, -1};
    for (int e = threadIdx.x; e < count; e += kThreads) {
      const Candidate o{values[e], e};
      if (!taken[e] && ranks_above(o, c)) c = o;
    }
    const Candidate best = block_best(c, red);
    // The host checked that k winners exist; max() keeps an index in bounds regardless.
    const int win = max(best.i, 0);
    if (win % kThreads == static_cast<int>(threadIdx.x)) taken[win] = 1;
    if (threadIdx.x == 0) on_pick(r, win);
  }
}

struct RoutingParams {
  const void* gating;
  const float* bias;
  float* weights;
  std::int32_t* ids;
  std::int64_t ld_gating;
  int experts, topk, n_group, topk_group;
  bool sigmoid, renormalize;
  float routed_scaling;
};

template <typename In>
__global__ void __launch_bounds__(kThreads) routing_kernel(RoutingParams p) {
  extern __shared__ float smem[];
  float* score = smem;                                                      // [E] softmax or sigmoid of the logits
  float* choice = score + p.experts;                                        // [E] what ranks: logit, or score + bias
  float* group_score = choice + p.experts;                                  // [n_group]
  auto* taken = reinterpret_cast<unsigned char*>(group_score + p.n_group);  // [E]
  unsigned char* group_taken = taken + p.experts;                           // [n_group]
  __shared__ Candidate red[kWarps];
  __shared__ float red_f[kWarps];

  const std::int64_t row = blockIdx.x;
  const In* logits = static_cast<const In*>(p.gating) + row * p.ld_gating;
  // choice starts as the logit: softmax and sigmoid are increasing, so without a bias the logits
  // rank the experts as the scores do, and distinct logits never tie after rounding.
  float local_max = -INFINITY;
  for (int e = threadIdx.x; e < p.experts; e += kThreads) {
    choice[e] = to_float(logits[e]);
    local_max = fmaxf(local_max, choice[e]);
    taken[e] = 0;
  }
  if (p.sigmoid) {
    for (int e = threadIdx.x; e < p.experts; e += kThreads) score[e] = 1.0f / (1.0f + expf(-choice[e]));
  } else {
    const float m = block_reduce<true>(local_max, red_f);
    float local_sum = 0.0f;
    for (int e = threadIdx.x; e < p.experts; e += kThreads) {
      score[e] = expf(choice[e] - m);
      local_sum += score[e];
    }
    const float sum = block_reduce<false>(local_sum, red_f);
    for (int e = threadIdx.x; e < p.experts; e += kThreads) score[e] /= sum;
  }
  if (p.bias != nullptr) {
    for (int e = threadIdx.x; e < p.experts; e += kThreads) choice[e] = score[e] + p.bias[e];
  }

  if (p.topk_group < p.n_group) {
    const int group_size = p.experts / p.n_group;
    __syncthreads();
    for (int g = threadIdx.x; g < p.n_group; g += kThreads) {
      // With the bias: the sum of the group's two best choices; without: its best (vLLM's rule).
      Candidate first{0.0f, -1}, second{0.0f, -1};
      for (int e = g * group_size; e < (g + 1) * group_size; ++e) {
        const Candidate o{choice[e], e};
        if (ranks_above(o, first)) {
          second = first;
          first = o;
        } else if (ranks_above(o, second)) {
          second = o;
        }
      }
      group_score[g] = p.bias != nullptr && second.i >= 0 ? first.v + second.v : first.v;
      group_taken[g] = 0;
    }
    __syncthreads();
    pick_best(group_score, group_taken, p.n_group, p.topk_group, red, [](int, int) {});
    __syncthreads();
    // Experts of the groups not chosen are out of the race.
    for (int e = threadIdx.x; e < p.experts; e += kThreads) taken[e] = group_taken[e / group_size] ? 0 : 1;
  }
  __syncthreads();

  float* weights = p.weights + row * p.topk;
  std::int32_t* ids = p.ids + row * p.topk;
  float picked_sum = 0.0f;
  pick_best(choice, taken, p.experts, p.topk, red, [&](int r, int e) {
    ids[r] = e;
    weights[r] = score[e];
    picked_sum += score[e];
  });
  if (threadIdx.x == 0) {
    const float scale = (p.renormalize ? 1.0f / picked_sum : 1.0f) * p.routed_scaling;
    for (int r = 0; r < p.topk; ++r) weights[r] *= scale;
  }
}

template <typename In>
void launch_typed(const RoutingProblem& p, const RoutingParams& rp, Stream stream, const char* op) {
  const std::size_t smem = static_cast<std::size_t>(p.experts) * (2 * sizeof(float) + 1) +
                           static_cast<std::size_t>(p.n_group) * (sizeof(float) + 1);
  routing_kernel<In><<<static_cast<unsigned>(p.tokens), kThreads, smem, stream>>>(rp);
  TGEMM_CUDA_CHECK_LAUNCH(op);
}

}  // namespace

void launch_routing(const RoutingProblem& p, const RoutingArgs& args, Stream stream, const char* op) {
  RoutingParams rp{};
  rp.gating = args.gating;
  rp.bias = args.correction_bias;
  rp.weights = args.topk_weights;
  rp.ids = args.topk_ids;
  rp.ld_gating = p.ld_gating;
  rp.experts = static_cast<int>(p.experts);
  rp.topk = static_cast<int>(p.topk);
  rp.n_group = static_cast<int>(p.n_group);
  rp.topk_group = static_cast<int>(p.topk_group);
  rp.sigmoid = p.scoring == MoeScoring::kSigmoid;
  rp.renormalize = p.renormalize;
  rp.routed_scaling = static_cast<float>(p.routed_scaling);
  switch (p.gating_type) {
    case DType::kBFloat16: launch_typed<bf16>(p, rp, stream, op); break;
    case DType::kFloat16: launch_typed<fp16>(p, rp, stream, op); break;
    default: launch_typed<float>(p, rp, stream, op); break;
  }
}

}  // namespace tgemm
