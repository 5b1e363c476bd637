// The SIMT emulator's CUDA runtime (docs/ARCHITECTURE.md, "The SIMT emulator"): the subset of
// libcudart the engine calls, on the host. One device, "SIMT emulator", that reports an H100's
// compute capability (9.0), SM count and shared-memory limit. Device memory is host memory,
// filled with 0xff bytes when allocated (NaN in f32 and bf16, so an unwritten output shows).
// Streams run their work when it is submitted, in the host's order, which is one valid order of
// every stream's work; a captured stream (and a stream that waits on an event recorded in the
// capture) records its work instead, and a graph launch replays it in that order. While a thread
// captures in a mode other than relaxed, its potentially unsafe calls (those that may allocate or
// synchronise: cudaMalloc, cudaFree, their host versions, cudaMemcpy, cudaMemset,
// cudaDeviceSynchronize) fail with cudaErrorStreamCaptureUnsupported, as the runtime refuses them
// (cudaThreadExchangeStreamCaptureMode's documentation), so an op that would allocate or
// synchronise inside a CUDA graph fails here too. cudaStreamCaptureModeGlobal is treated as
// ThreadLocal: other threads' calls are not refused.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/simt/simt_host.h"

namespace {

constexpr int kSmCount = 132;
constexpr size_t kSharedOptin = size_t{227} << 10;
constexpr size_t kMemory = size_t{80} << 30;

struct Node {
  std::function<void()> work;
  cudaGraphNodeType type;
  std::string name;  // a kernel node's (simt::submit's), "" for none
};

}  // namespace

struct CUgraph_st {
  std::vector<Node> nodes;
  // While capturing: the thread that began it, and whether its mode refuses that thread's
  // potentially unsafe calls (every mode but relaxed).
  std::thread::id owner{};
  bool refuses_unsafe = false;
};
struct CUgraphExec_st {
  std::vector<Node> nodes;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
  std::shared_ptr<CUgraph_st> capture;  // the graph it was recorded into, if any
};
struct CUstream_st {
  int unused = 0;
};

namespace {

thread_local cudaError_t last_error = cudaSuccess;

std::mutex& capture_mutex() {
  static std::mutex m;
  return m;
}

// The graph each capturing stream records into.
std::map<cudaStream_t, std::shared_ptr<CUgraph_st>>& captures() {
  static std::map<cudaStream_t, std::shared_ptr<CUgraph_st>> c;
  return c;
}

std::shared_ptr<CUgraph_st> capture_of(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(capture_mutex());
  const auto it = captures().find(stream);
  return it == captures().end() ? nullptr : it->second;
}

// Whether this thread captures in a mode that refuses its potentially unsafe calls.
bool unsafe_calls_refused() {
  std::lock_guard<std::mutex> lock(capture_mutex());
  for (const auto& entry : captures()) {
    if (entry.second->refuses_unsafe && entry.second->owner == std::this_thread::get_id()) {
      return true;
    }
  }
  return false;
}

struct ErrorText {
  cudaError_t error;
  const char* name;
  const char* text;
};

// The errors the emulator returns, named as the runtime names them.
ErrorText error_text(cudaError_t error) {
  static constexpr ErrorText kTexts[] = {
      {cudaSuccess, "cudaSuccess", "no error (SIMT emulator)"},
      {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument (SIMT emulator)"},
      {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
       "invalid configuration argument (SIMT emulator)"},
      {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported (SIMT emulator)"},
      {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal (SIMT emulator)"},
      {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory (SIMT emulator)"},
      {cudaErrorIllegalState, "cudaErrorIllegalState", "illegal state (SIMT emulator)"},
      {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
       "operation not permitted when stream is capturing (SIMT emulator)"}};
  for (const ErrorText& t : kTexts) {
    if (t.error == error) return t;
  }
  return {error, "cudaError (SIMT emulator)", "error (SIMT emulator)"};
}

cudaError_t fail(cudaError_t error) {
  last_error = error;
  return error;
}

CUresult kernel_node_params(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* params) {
  const Node* n = reinterpret_cast<const Node*>(node);
  if (n->type != cudaGraphNodeTypeKernel) return CUDA_ERROR_INVALID_VALUE;
  *params = CUDA_KERNEL_NODE_PARAMS{};
  params->func = reinterpret_cast<CUfunction>(const_cast<Node*>(n));
  return CUDA_SUCCESS;
}

CUresult function_name(const char** name, CUfunction function) {
  const Node* n = reinterpret_cast<const Node*>(function);
  if (n->name.empty()) return CUDA_ERROR_NOT_FOUND;
  *name = n->name.c_str();
  return CUDA_SUCCESS;
}

// No CUkernel exists here (kernel_node_params sets func, never kern).
CUresult library_kernel_name(const char**, CUkernel) {
  return CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace

namespace simt {

void submit(cudaStream_t stream, std::function<void()> work, cudaGraphNodeType type,
            std::string name) {
  if (const auto graph = capture_of(stream)) {
    graph->nodes.push_back({std::move(work), type, std::move(name)});
  } else {
    work();
  }
}

void set_last_error(cudaError_t error) {
  last_error = error;
}

}  // namespace simt

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof(*prop));
  std::strncpy(prop->name, "SIMT emulator", sizeof(prop->name) - 1);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = kSmCount;
  prop->totalGlobalMem = kMemory;
  prop->sharedMemPerBlock = size_t{48} << 10;
  prop->sharedMemPerBlockOptin = kSharedOptin;
  prop->maxThreadsPerBlock = 1024;
  prop->warpSize = 32;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = kSmCount;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(kSharedOptin);
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return cudaSuccess;
    default:
      return fail(cudaErrorInvalidValue);
  }
}
cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  *free = *total = kMemory;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}
// The driver API functions the tests ask for: a kernel node's function and its name. A graph
// node's CUfunction is the node itself (the emulator has no functions apart from their launches).
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int,
                                             unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  static const std::map<std::string, void*> kFunctions = {
      {"cuGraphKernelNodeGetParams", reinterpret_cast<void*>(&kernel_node_params)},
      {"cuFuncGetName", reinterpret_cast<void*>(&function_name)},
      {"cuKernelGetName", reinterpret_cast<void*>(&library_kernel_name)}};
  const auto it = kFunctions.find(symbol);
  *fn = it == kFunctions.end() ? nullptr : it->second;
  if (status != nullptr) {
    *status = *fn != nullptr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  }
  return *fn != nullptr ? cudaSuccess : fail(cudaErrorNotSupported);
}

const char* cudaGetErrorString(cudaError_t error) {
  return error_text(error).text;
}
const char* cudaGetErrorName(cudaError_t error) {
  return error_text(error).name;
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() {
  return last_error;
}

// Exactly `bytes` (256-byte aligned, as the runtime's): under AddressSanitizer an access past the
// end fails as compute-sanitizer's memcheck reports it.
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (unsafe_calls_refused()) return fail(cudaErrorStreamCaptureUnsupported);
  if (posix_memalign(p, 256, std::max<size_t>(bytes, 1)) != 0) {
    *p = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  std::memset(*p, 0xff, bytes);
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (unsafe_calls_refused()) return fail(cudaErrorStreamCaptureUnsupported);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return cudaMalloc(p, bytes);
}
cudaError_t cudaFreeHost(void* p) {
  if (unsafe_calls_refused()) return fail(cudaErrorStreamCaptureUnsupported);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  simt::submit(
      stream, [=] { std::memmove(dst, src, bytes); }, cudaGraphNodeTypeMemcpy);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (unsafe_calls_refused()) return fail(cudaErrorStreamCaptureUnsupported);
  return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  simt::submit(
      stream, [=] { std::memset(p, value, bytes); }, cudaGraphNodeTypeMemset);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (unsafe_calls_refused()) return fail(cudaErrorStreamCaptureUnsupported);
  return cudaMemsetAsync(p, value, bytes, nullptr);
}
cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || static_cast<size_t>(value) > kSharedOptin) return fail(cudaErrorInvalidValue);
  simt::set_max_dynamic_shared(kernel, static_cast<size_t>(value));
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  *stream = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return capture_of(stream) ? fail(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  return unsafe_calls_refused() ? fail(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  return cudaEventCreate(event);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  event->capture = capture_of(stream);
  simt::submit(
      stream, [event] { event->at = std::chrono::steady_clock::now(); },
      cudaGraphNodeTypeEventRecord);
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) {
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}
// A stream that waits on an event recorded in a capture joins that capture (CUDA's fork).
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (event->capture != nullptr && !capture_of(stream)) {
    std::lock_guard<std::mutex> lock(capture_mutex());
    captures()[stream] = event->capture;
  }
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (capture_of(stream)) return fail(cudaErrorIllegalState);
  auto graph = std::make_shared<CUgraph_st>();
  graph->owner = std::this_thread::get_id();
  graph->refuses_unsafe = mode != cudaStreamCaptureModeRelaxed;
  std::lock_guard<std::mutex> lock(capture_mutex());
  captures()[stream] = std::move(graph);
  return cudaSuccess;
}
// Ends the capture of `stream` and of every stream that joined it.
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  const auto captured = capture_of(stream);
  if (!captured) return fail(cudaErrorIllegalState);
  std::lock_guard<std::mutex> lock(capture_mutex());
  for (auto it = captures().begin(); it != captures().end();) {
    it = it->second == captured ? captures().erase(it) : std::next(it);
  }
  *graph = new CUgraph_st{captured->nodes};
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long) {
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  for (const Node& n : exec->nodes) simt::submit(stream, n.work, n.type, n.name);
  return cudaSuccess;
}
// A node is the address of the graph's Node.
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (nodes != nullptr) {
    for (size_t i = 0; i < std::min(*count, graph->nodes.size()); ++i) {
      nodes[i] = reinterpret_cast<cudaGraphNode_t>(reinterpret_cast<uintptr_t>(&graph->nodes[i]));
    }
  }
  *count = graph->nodes.size();
  return cudaSuccess;
}
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  *type = reinterpret_cast<const Node*>(node)->type;
  return cudaSuccess;
}

}  // extern "C"
