// Graph-replay timing, the streaming-read floor kernel and the copy-bandwidth probe used by the
// bench and the tuner. The floor kernel reads 16 bytes per load with 4 loads in flight per
// thread and folds them so the compiler cannot drop the loads.
#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "runtime/timing.h"

namespace tgemm {
namespace {

struct EventGuard {
  cudaEvent_t e = nullptr;
  EventGuard() { TGEMM_CUDA_CHECK(cudaEventCreate(&e), "time_graph"); }
  ~EventGuard() { cudaEventDestroy(e); }
};

__global__ void stream_read_kernel(const uint4* __restrict__ data, std::size_t n, uint4 tail_mask,
                                   unsigned* sink) {
  constexpr int kInFlight = 4;
  unsigned acc = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < n; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) v[j] = __ldcs(data + i + j * stride);
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n; i += stride) {
    uint4 v = __ldcs(data + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  // Never true for real data patterns in practice, but the compiler cannot know that.
  if (acc == 0x9e3779b9u && tail_mask.x == 0x12345678u) *sink = acc;
}

// Device-to-device copy with 16-byte loads and stores, 4 in flight per thread.
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v0 = __ldcs(src + i), v1 = __ldcs(src + i + stride), v2 = __ldcs(src + i + 2 * stride),
          v3 = __ldcs(src + i + 3 * stride);
    __stcs(dst + i, v0);
    __stcs(dst + i + stride, v1);
    __stcs(dst + i + 2 * stride, v2);
    __stcs(dst + i + 3 * stride, v3);
  }
  for (; i < n; i += stride) __stcs(dst + i, __ldcs(src + i));
}

}  // namespace

namespace {

// One captured, instantiated graph of a launcher, replayable on the stream it was captured on
// (owned by the caller, an OwnedStream that outlives it).
class CapturedGraph {
 public:
  CapturedGraph(const std::function<void(int, Stream)>& launch, int launches, cudaStream_t stream) : stream_(stream) {
    cudaGraph_t graph = nullptr;
    TGEMM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "time_graph");
    try {
      for (int i = 0; i < launches; ++i) launch(i, reinterpret_cast<Stream>(stream_));
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    cudaError_t err = cudaStreamEndCapture(stream_, &graph);
    if (err == cudaSuccess) {
      err = cudaGraphInstantiate(&exec_, graph, 0);
      cudaGraphDestroy(graph);
    }
    TGEMM_CUDA_CHECK(err, "time_graph: capture");
  }
  ~CapturedGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  // Per-replay times in microseconds.
  std::vector<double> replay(int warmup, int replays) {
    for (int i = 0; i < warmup; ++i) TGEMM_CUDA_CHECK(cudaGraphLaunch(exec_, stream_), "time_graph");
    std::vector<EventGuard> events(static_cast<std::size_t>(replays) + 1);
    TGEMM_CUDA_CHECK(cudaEventRecord(events[0].e, stream_), "time_graph");
    for (int i = 0; i < replays; ++i) {
      TGEMM_CUDA_CHECK(cudaGraphLaunch(exec_, stream_), "time_graph");
      TGEMM_CUDA_CHECK(cudaEventRecord(events[static_cast<std::size_t>(i) + 1].e, stream_), "time_graph");
    }
    TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream_), "time_graph");
    std::vector<double> out;
    for (int i = 0; i < replays; ++i) {
      float ms = 0;
      TGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, events[static_cast<std::size_t>(i)].e,
                                            events[static_cast<std::size_t>(i) + 1].e),
                       "time_graph");
      out.push_back(ms * 1000.0);
    }
    return out;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// A non-blocking stream for CapturedGraphs: one per graph, or one for all of them
// (TimingOptions::shared_stream).
class OwnedStream {
 public:
  OwnedStream() { TGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "time_graph"); }
  ~OwnedStream() {
    if (s_) cudaStreamDestroy(s_);
  }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

TimingStats stats_of(std::vector<double> per_call) {
  std::sort(per_call.begin(), per_call.end());
  auto pct = [&](double q) {
    double idx = q * static_cast<double>(per_call.size() - 1);
    auto lo = static_cast<std::size_t>(idx);
    std::size_t hi = std::min(lo + 1, per_call.size() - 1);
    return per_call[lo] + (per_call[hi] - per_call[lo]) * (idx - static_cast<double>(lo));
  };
  TimingStats st;
  st.median_us = pct(0.5);
  st.p10_us = pct(0.1);
  st.p90_us = pct(0.9);
  st.min_us = per_call.front();
  st.samples = static_cast<int>(per_call.size());
  return st;
}

}  // namespace

TimingStats time_graph(const std::function<void(int, Stream)>& launch, const TimingOptions& o) {
  return time_graphs_interleaved({launch}, o, 1).front();
}

std::vector<TimingStats> time_graphs_interleaved(const std::vector<std::function<void(int, Stream)>>& launches,
                                                 const TimingOptions& o, int rounds,
                                                 std::vector<std::vector<double>>* round_medians) {
  TGEMM_CHECK(o.replays >= 1 && o.launches_per_graph >= 1 && rounds >= 1 && o.settle_rounds >= 0, "time_graph",
              "replays, launches_per_graph and rounds must be >= 1 and settle_rounds >= 0, got ", o.replays, ", ",
              o.launches_per_graph, ", ", rounds, " and ", o.settle_rounds);
  const std::size_t n = launches.size();
  std::vector<std::unique_ptr<OwnedStream>> streams;  // declared first: outlives the graphs
  std::vector<std::unique_ptr<CapturedGraph>> graphs(n);
  // Captured in the order the round replays them (reversed on odd rounds when recapturing), each
  // time on new streams unless they are shared.
  auto capture_all = [&](bool reversed) {
    for (auto& g : graphs) g.reset();
    if (!o.shared_stream || streams.empty()) {
      streams.clear();
      for (std::size_t j = 0; j < (o.shared_stream ? 1 : n); ++j) streams.push_back(std::make_unique<OwnedStream>());
    }
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t g = reversed ? n - 1 - j : j;
      graphs[g] = std::make_unique<CapturedGraph>(launches[g], o.launches_per_graph, streams[o.shared_stream ? 0 : g]->get());
    }
  };
  capture_all(false);
  std::vector<std::vector<double>> samples(n);
  if (round_medians) round_medians->assign(n, std::vector<double>(static_cast<std::size_t>(rounds), 0.0));
  std::vector<std::size_t> order(n);
  std::mt19937 rng(12345);
  // The settle rounds (discarded), then the timed ones; each round in ABBA order (reversed on odd
  // rounds, counted from the first of its kind), the timed ones shuffled instead on request.
  for (int i = 0; i < o.settle_rounds + rounds; ++i) {
    const bool timed = i >= o.settle_rounds;
    const int r = timed ? i - o.settle_rounds : i;
    if (timed && o.recapture && r > 0) capture_all(r % 2 == 1);
    for (std::size_t j = 0; j < n; ++j) order[j] = (r % 2 == 0) ? j : n - 1 - j;
    if (timed && o.shuffle_order) std::shuffle(order.begin(), order.end(), rng);
    for (const std::size_t g : order) {
      std::vector<double> times = graphs[g]->replay(o.warmup_replays, o.replays);
      if (!timed) continue;
      for (double& t : times) t /= o.launches_per_graph;
      samples[g].insert(samples[g].end(), times.begin(), times.end());
      if (round_medians) (*round_medians)[g][static_cast<std::size_t>(r)] = stats_of(std::move(times)).median_us;
    }
  }
  std::vector<TimingStats> out;
  for (auto& s : samples) out.push_back(stats_of(std::move(s)));
  return out;
}

int rotation_count(std::size_t bytes_per_set, std::size_t l2_bytes, double factor, int max_sets,
                   std::size_t memory_budget, int min_sets) {
  if (bytes_per_set == 0) return 1;
  auto want = std::max(static_cast<std::size_t>(factor * static_cast<double>(l2_bytes) / static_cast<double>(bytes_per_set)) + 1,
                       static_cast<std::size_t>(std::max(min_sets, 1)));
  std::size_t fit = std::max<std::size_t>(1, memory_budget / bytes_per_set);
  return static_cast<int>(std::max<std::size_t>(1, std::min({want, fit, static_cast<std::size_t>(max_sets)})));
}

void stream_read(const void* data, std::size_t bytes, int blocks, int threads, void* sink, Stream s) {
  TGEMM_CHECK(reinterpret_cast<std::uintptr_t>(data) % 16 == 0, "stream_read",
              "data must be 16-byte aligned, got ", data);
  stream_read_kernel<<<blocks, threads, 0, reinterpret_cast<cudaStream_t>(s)>>>(
      static_cast<const uint4*>(data), bytes / 16, uint4{0, 0, 0, 0}, static_cast<unsigned*>(sink));
  TGEMM_CUDA_CHECK_LAUNCH("stream_read");
}

double measure_copy_tbps(std::size_t bytes) {
  void* src = nullptr;
  void* dst = nullptr;
  TGEMM_CUDA_CHECK(cudaMalloc(&src, bytes), "measure_copy_tbps");
  cudaError_t err = cudaMalloc(&dst, bytes);
  if (err != cudaSuccess) cudaFree(src);
  TGEMM_CUDA_CHECK(err, "measure_copy_tbps");
  cudaMemset(src, 1, bytes);
  TimingOptions o;
  o.launches_per_graph = 4;
  o.replays = 10;
  TimingStats st;
  try {
    const int sms = cuda_device_info(cuda_current_device()).sm_count;
    st = time_graph([&](int, Stream s) {
      copy_kernel<<<sms * 8, 512, 0, reinterpret_cast<cudaStream_t>(s)>>>(static_cast<const uint4*>(src),
                                                                         static_cast<uint4*>(dst), bytes / 16);
      TGEMM_CUDA_CHECK_LAUNCH("measure_copy_tbps");
    }, o);
  } catch (...) {
    cudaFree(src);
    cudaFree(dst);
    throw;
  }
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * static_cast<double>(bytes) / (st.median_us * 1e-6) / 1e12;
}

}  // namespace tgemm
