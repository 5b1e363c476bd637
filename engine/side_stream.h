// SideStream: a second CUDA stream for work that may run beside the work of a context's own
// stream (the generator's backward beside the discriminator's: models/stage_list.h). It owns a
// context of its own on the same device, so the two streams' kernels never share scratch: its own
// stream, cuBLASLt handle and workspace, and ticket counters (engine/ticket_counters.h: the
// one-launch reductions of both streams would otherwise take the same counters). fork() makes the
// side stream wait for what the main stream has queued, join() the main stream for what the side
// stream has queued; both are stream-ordered events, and inside a CUDA graph capture they become
// the graph's edges (the side stream joins the capture at fork() and must be joined before the
// capture ends).
//
// On a CPU context there is no second stream: ctx() is the main context and fork() and join() do
// nothing, so the side work runs inline, in program order (same results; what the CPU tests of
// the split backward check).
#pragma once

#include <optional>

#include "engine/context.h"
#include "engine/device.h"

namespace electra {

class SideStream {
 public:
  // For contexts like `main`: on a CUDA context a context of its own on the same device (32 MiB
  // of cuBLASLt workspace), two events; nothing on the CPU.
  explicit SideStream(const Context& main);
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  // The context the side work runs on: the side context with main's seed, rank and precision
  // (random streams keyed by them draw the same numbers on both), or main itself on the CPU.
  Context& ctx(Context& main);
  // The side stream waits for the work queued on main's stream so far.
  void fork(Context& main);
  // main's stream waits for the work queued on the side stream so far.
  void join(Context& main);

 private:
  std::optional<Context> side_;
  cudaEvent_t forked_ = nullptr;
  cudaEvent_t joined_ = nullptr;
};

}  // namespace electra
