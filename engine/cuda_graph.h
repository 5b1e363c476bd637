// CudaGraph: work enqueued on a context's stream, recorded once (stream capture) and replayed by
// one launch. Used by the Trainer (train/trainer.h) for a pre-training micro-batch and for the
// optimizer step: their kernels read every per-step value from device memory, so the same graph
// is valid for every update (docs/ARCHITECTURE.md, "One pre-training update").
//
// What a captured body may do (checked by CUDA at capture or launch, or by reading the code):
// enqueue kernels, cudaMemsetAsync and device-to-device copies on ctx's stream only; no
// allocation, no synchronisation, no host read of device memory, no pageable copy, no default
// (legacy) stream work. The capture mode is thread-local: an illegal call on this thread fails the
// capture with the CUDA error instead of silently recording something else.
//
// On the CPU there is nothing to record: CudaGraph is only constructed for CUDA contexts (an
// Error otherwise, and in a CPU-only build).
#pragma once

#include <functional>

#include "engine/context.h"

struct CUgraphExec_st;
typedef struct CUgraphExec_st* cudaGraphExec_t;

namespace electra {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  bool captured() const { return exec_ != nullptr; }
  // Records what `body` enqueues on ctx's stream (nothing runs) and instantiates it. Throws Error
  // naming the failing CUDA call when the body does something capture forbids.
  void capture(Context& ctx, const std::function<void()>& body);
  // Enqueues the recorded work on ctx's stream (after the work queued before it).
  void launch(Context& ctx) const;

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace electra
