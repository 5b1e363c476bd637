// LaunchCapture: an op observer (engine/op_observer.h) that records each observed op call into a
// CUDA graph of its own (a stream capture around the call), checks the graph's nodes against the
// launches the call declares (kernels/op_call.h), then launches the graph and waits for it, so
// the call computes what it computes eagerly. Of the graph's nodes, the kernels of this project
// (in namespace electra) must number the declared kernels exactly; the other nodes (cuBLASLt's
// kernels, a memset of its own) must be at least the declared library calls, and none where none
// is declared. Ops with nothing to do (an empty tensor) may launch less, so the op harness does
// not observe a case with an empty tensor.
//
// Used by launch_count_gpu_test (every op call of an update) and the op harness's parity runs
// (every op case on a GPU, test/common/op_case.cpp). The call before the observed one must have
// run eagerly: plans, kernel attributes and other lazily built state exist before a capture.
#pragma once

#if ELECTRA_WITH_CUDA

#include <cstdint>
#include <string>
#include <vector>

#include "engine/launch_counter.h"
#include "engine/op_observer.h"

namespace electra::test {

class LaunchCapture final : public OpObserver {
 public:
  // The observed calls' declarations, per part and op (launch_count_gpu_test's table).
  LaunchCounter declared{/*dry_run=*/false};
  // One line per call whose graph is not what it declares: part, op, label, both counts.
  std::vector<std::string> mismatches;
  // The declared cuBLASLt calls, and the graphs' nodes that are not ours (what they ran).
  int64_t library_calls = 0, library_nodes = 0;

  bool before(Context& ctx, const OpCall& call) override;
  void after(Context& ctx, const OpCall& call) override;
  void memset(size_t bytes) override { declared.memset(bytes); }
};

}  // namespace electra::test

#endif
