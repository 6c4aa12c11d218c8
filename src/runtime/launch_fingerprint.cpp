// launch_fingerprint: capture, then read the graph back through the driver API (the runtime's
// kernel-node query refuses kernels that a library launched through the driver, as cuBLASLt
// does). Driver entry points come from cudaGetDriverEntryPointByVersion: no link against
// libcuda, and a driver without one of them yields nullopt rather than a load failure.
#include "runtime/launch_fingerprint.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>
#include <vector>

namespace tgemm {
namespace {

struct DriverApi {
  decltype(&::cuGraphGetNodes) get_nodes = nullptr;
  decltype(&::cuGraphGetEdges) get_edges = nullptr;
  decltype(&::cuGraphNodeGetType) node_type = nullptr;
  decltype(&::cuGraphKernelNodeGetParams) kernel_params = nullptr;
  decltype(&::cuGraphKernelNodeGetAttribute) kernel_attribute = nullptr;
  decltype(&::cuGraphMemsetNodeGetParams) memset_params = nullptr;
  decltype(&::cuFuncGetParamInfo) func_param_info = nullptr;
  decltype(&::cuKernelGetParamInfo) kernel_param_info = nullptr;
  bool ok = false;
};

const DriverApi& driver() {
  static const DriverApi api = [] {
    DriverApi a;
    auto load = [](const char* symbol, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
      // The ABI of this build's headers (cuda.h's CUDA_VERSION): the struct layouts used below.
      if (cudaGetDriverEntryPointByVersion(symbol, &p, CUDA_VERSION, cudaEnableDefault, &q) != cudaSuccess ||
          q != cudaDriverEntryPointSuccess || p == nullptr) {
        cudaGetLastError();
        return false;
      }
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      return true;
    };
    a.ok = load("cuGraphGetNodes", a.get_nodes) && load("cuGraphGetEdges", a.get_edges) &&
           load("cuGraphNodeGetType", a.node_type) && load("cuGraphKernelNodeGetParams", a.kernel_params) &&
           load("cuGraphKernelNodeGetAttribute", a.kernel_attribute) &&
           load("cuGraphMemsetNodeGetParams", a.memset_params) && load("cuFuncGetParamInfo", a.func_param_info) &&
           load("cuKernelGetParamInfo", a.kernel_param_info);
    return a;
  }();
  return api;
}

class Writer {
 public:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
  }
  void bytes(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// The kernel's arguments: each one's size and bytes (kernelParams), or the packed buffer
// (extra). False when they cannot be told apart from another launch's.
bool put_arguments(const DriverApi& d, const CUDA_KERNEL_NODE_PARAMS& k, Writer& w) {
  if (k.kernelParams != nullptr) {
    std::size_t count = 0;
    for (; count < 4096; ++count) {
      std::size_t offset = 0, size = 0;
      const CUresult r = k.func != nullptr ? d.func_param_info(k.func, count, &offset, &size)
                                           : d.kernel_param_info(k.kern, count, &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      if (r != CUDA_SUCCESS) return false;
      w.put(size);
      w.bytes(k.kernelParams[count], size);
    }
    // No parameter described although arguments were given: the layout is unknown here.
    return count > 0 && count < 4096;
  }
  if (k.extra != nullptr) {
    const void* buffer = nullptr;
    std::size_t size = 0;
    bool have_size = false;
    for (std::size_t i = 0; i < 64 && k.extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (k.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = k.extra[i + 1];
      else if (k.extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = *static_cast<const std::size_t*>(k.extra[i + 1]);
        have_size = true;
      } else {
        return false;  // an option this code does not know
      }
    }
    if (buffer == nullptr || !have_size) return false;
    w.put(size);
    w.bytes(buffer, size);
    return true;
  }
  w.put(std::size_t{0});  // a kernel without arguments
  return true;
}

bool put_kernel(const DriverApi& d, CUgraphNode node, Writer& w) {
  CUDA_KERNEL_NODE_PARAMS k{};
  if (d.kernel_params(node, &k) != CUDA_SUCCESS) return false;
  w.put(reinterpret_cast<std::uintptr_t>(k.func));
  w.put(reinterpret_cast<std::uintptr_t>(k.func != nullptr ? nullptr : k.kern));
  for (unsigned v : {k.gridDimX, k.gridDimY, k.gridDimZ, k.blockDimX, k.blockDimY, k.blockDimZ, k.sharedMemBytes}) w.put(v);
  // Launch attributes that change what runs or where: each one's value (zero-filled first, so the
  // union's unused bytes compare equal), or the error code where the node does not keep it.
  for (CUkernelNodeAttrID id :
       {CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        CU_LAUNCH_ATTRIBUTE_PRIORITY, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
        CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION}) {
    CUkernelNodeAttrValue v;
    std::memset(&v, 0, sizeof v);
    const CUresult r = d.kernel_attribute(node, id, &v);
    w.put(static_cast<int>(id));
    w.put(static_cast<int>(r));
    if (r == CUDA_SUCCESS) w.put(v);
  }
  return put_arguments(d, k, w);
}

}  // namespace

std::optional<std::string> launch_fingerprint(const std::function<void(Stream)>& enqueue) {
  const DriverApi& d = driver();
  if (!d.ok) return std::nullopt;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  struct Cleanup {
    cudaStream_t s;
    cudaGraph_t g = nullptr;
    ~Cleanup() {
      if (g != nullptr) cudaGraphDestroy(g);
      cudaStreamDestroy(s);
      cudaGetLastError();  // nothing of a refused capture may outlive this call
    }
  } cleanup{stream};
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return std::nullopt;
  bool threw = false;
  try {
    enqueue(reinterpret_cast<Stream>(stream));
  } catch (...) {
    threw = true;
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &cleanup.g);
  if (threw || ended != cudaSuccess || cleanup.g == nullptr) return std::nullopt;

  const auto graph = reinterpret_cast<CUgraph>(cleanup.g);
  std::size_t n = 0;
  if (d.get_nodes(graph, nullptr, &n) != CUDA_SUCCESS) return std::nullopt;
  std::vector<CUgraphNode> nodes(n);
  if (n > 0 && d.get_nodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return std::nullopt;
  nodes.resize(n);
  Writer w;
  w.put(n);
  std::map<CUgraphNode, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) {
    index[nodes[i]] = i;
    CUgraphNodeType type{};
    if (d.node_type(nodes[i], &type) != CUDA_SUCCESS) return std::nullopt;
    w.put(static_cast<int>(type));
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
      if (!put_kernel(d, nodes[i], w)) return std::nullopt;
    } else if (type == CU_GRAPH_NODE_TYPE_MEMSET) {
      CUDA_MEMSET_NODE_PARAMS m{};
      if (d.memset_params(nodes[i], &m) != CUDA_SUCCESS) return std::nullopt;
      w.put(m.dst);
      w.put(m.pitch);
      w.put(m.value);
      w.put(m.elementSize);
      w.put(m.width);
      w.put(m.height);
    } else if (type != CU_GRAPH_NODE_TYPE_EMPTY) {
      return std::nullopt;  // copies, events, host nodes, ...: not compared here
    }
  }
  std::size_t e = 0;
  if (d.get_edges(graph, nullptr, nullptr, nullptr, &e) != CUDA_SUCCESS) return std::nullopt;
  std::vector<CUgraphNode> from(e), to(e);
  std::vector<CUgraphEdgeData> data(e);
  if (e > 0 && d.get_edges(graph, from.data(), to.data(), data.data(), &e) != CUDA_SUCCESS) return std::nullopt;
  std::vector<std::tuple<std::size_t, std::size_t, int, int, int>> edges;
  for (std::size_t i = 0; i < e; ++i) {
    auto f = index.find(from[i]), t = index.find(to[i]);
    if (f == index.end() || t == index.end()) return std::nullopt;
    edges.emplace_back(f->second, t->second, data[i].from_port, data[i].to_port, data[i].type);
  }
  std::sort(edges.begin(), edges.end());
  w.put(edges.size());
  for (const auto& [f, t, from_port, to_port, type] : edges) {
    w.put(f);
    w.put(t);
    w.put(from_port);
    w.put(to_port);
    w.put(type);
  }
  return w.take();
}

}  // namespace tgemm
