#include "engine/cuda_graph.h"

#include "engine/error.h"

#if ELECTRA_WITH_CUDA
#include "engine/cuda_check.h"
#endif

namespace electra {

#if ELECTRA_WITH_CUDA

CudaGraph::~CudaGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
}

void CudaGraph::capture(Context& ctx, const std::function<void()>& body) {
  ELECTRA_CHECK(ctx.is_cuda(), "CudaGraph: a CUDA context is needed");
  ELECTRA_CHECK(exec_ == nullptr, "CudaGraph: already captured");
  ELECTRA_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(ctx.stream(), &graph);  // leaves the stream usable
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  ELECTRA_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph));
  const cudaError_t status = cudaGraphInstantiateWithFlags(&exec_, graph, 0);
  cudaGraphDestroy(graph);
  ELECTRA_CUDA_CHECK(status);
}

void CudaGraph::launch(Context& ctx) const {
  ELECTRA_CHECK(exec_ != nullptr, "CudaGraph: launch before capture");
  ELECTRA_CUDA_CHECK(cudaGraphLaunch(exec_, ctx.stream()));
}

#else

CudaGraph::~CudaGraph() = default;

void CudaGraph::capture(Context&, const std::function<void()>&) {
  ELECTRA_CHECK(false, "CudaGraph: this build has no CUDA");
}

void CudaGraph::launch(Context&) const {
  ELECTRA_CHECK(false, "CudaGraph: this build has no CUDA");
}

#endif

}  // namespace electra
