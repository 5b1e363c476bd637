#include "test/common/launch_capture.h"

#if ELECTRA_WITH_CUDA

#include <cuda_runtime.h>

#include "engine/context.h"
#include "engine/cuda_check.h"
#include "engine/str.h"
#include "test/common/kernel_node_name.h"

namespace electra::test {
namespace {

// Whether a kernel is this project's: in namespace electra. The driver names a kernel by its
// mangled name (namespace electra is "7electra" in it), the SIMT emulator by the source's, with
// the launching function's namespace ("electra::{anonymous}::k<2>").
bool ours(const std::string& name) {
  return name.find("7electra") != std::string::npos || name.starts_with("electra::");
}

struct NodeCounts {
  int64_t ours = 0;     // kernels in namespace electra
  int64_t library = 0;  // other nodes: the libraries' kernels, memsets and copies
  int64_t unnamed = 0;  // kernels whose name the driver did not give
};

NodeCounts count_nodes(cudaGraph_t graph) {
  size_t n = 0;
  ELECTRA_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  ELECTRA_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  NodeCounts c;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    ELECTRA_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) {
      ++c.library;  // no op of ours enqueues a memset or a copy
      continue;
    }
    const std::string name = kernel_node_name(node);
    if (name.empty()) {
      ++c.unnamed;
    } else if (ours(name)) {
      ++c.ours;
    } else {
      ++c.library;
    }
  }
  return c;
}

}  // namespace

bool LaunchCapture::before(Context& ctx, const OpCall& call) {
  declared.before(ctx, call);
  ELECTRA_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal));
  return true;
}

void LaunchCapture::after(Context& ctx, const OpCall& call) {
  cudaGraph_t graph = nullptr;
  ELECTRA_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph));
  const NodeCounts nodes = count_nodes(graph);
  const Launches& l = call.launches;
  const bool ok = nodes.unnamed == 0 && nodes.ours == l.kernels &&
                  nodes.library >= l.library_calls &&
                  (nodes.library == 0) == (l.library_calls == 0);
  if (!ok) {
    mismatches.push_back(
        str_cat(call.part, " ", call.name, " ", call.label, ": declares ", l.kernels,
                " kernels and ", l.library_calls, " library calls; the graph has ", nodes.ours,
                " of ours, ", nodes.library, " other nodes, ", nodes.unnamed, " unnamed kernels"));
  }
  library_calls += l.library_calls;
  library_nodes += nodes.library;
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiateWithFlags(&exec, graph, 0);
  cudaGraphDestroy(graph);
  ELECTRA_CUDA_CHECK(status);
  ELECTRA_CUDA_CHECK(cudaGraphLaunch(exec, ctx.stream()));
  ELECTRA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  cudaGraphExecDestroy(exec);
}

}  // namespace electra::test

#endif
