// OpProfiler: where the time of an update goes, op by op (bench/train_step --profile). Installed
// as the op observer (engine/op_observer.h) around the work to profile; every op call is timed,
// on the GPU by a pair of CUDA events around it on the context's stream, on the CPU by the wall
// clock. Rows are (model part, op, label): a GEMM's label is its shape, so every cuBLASLt call
// shape has its own row. zero_tensor's memsets are counted, not timed (their time is part of the
// update's time outside the ops).
//
// The events are recorded between the kernels of an eager run (a CUDA graph replay has no op
// calls to observe): profile eagerly. collect() waits for the stream; nothing else synchronises.
// A GPU op's time runs from the event before it to the event after it on the stream, so it also
// holds any time the GPU waited for the host to launch the op's kernels: where an update is
// launch-bound, small ops show their launch cost, not their kernels' run time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/op_observer.h"
#include "engine/timer.h"

namespace electra {

class OpProfiler final : public OpObserver {
 public:
  explicit OpProfiler(const Context& ctx);
  ~OpProfiler() override;
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  bool before(Context& ctx, const OpCall& call) override;
  void after(Context& ctx, const OpCall& call) override;
  void memset(size_t bytes) override;

  // Waits for the calls observed so far and adds their times to their rows.
  void collect();

  struct Row {
    std::string part, op, label;
    int64_t calls = 0;
    double ms = 0;
    double flops = 0, bytes = 0;  // summed over the calls (0: not stated)
    Launches launches{};          // summed over the calls
  };
  const std::vector<Row>& rows() const { return rows_; }
  double op_ms() const;
  Launches launches() const;
  // Per part, then per row by decreasing time: calls, launches, total time, share of update_ms,
  // and the achieved GB/s (bytes stated or the op's tensors) and TFLOP/s (where FLOPs are stated).
  std::string table(double update_ms) const;

 private:
  size_t row_of(const char* part, const char* op, const std::string& label);

  bool cuda_;
  cudaStream_t stream_;
  std::vector<Row> rows_;
  size_t current_ = 0;  // the row of the call between before() and after()
  Stopwatch watch_;
  // CUDA: one timer per call since the last collect(), reused afterwards.
  std::vector<std::unique_ptr<CudaEventTimer>> timers_;
  std::vector<size_t> timed_rows_;  // the row of timers_[i], i < timed_rows_.size()
};

}  // namespace electra
