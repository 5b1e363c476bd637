// A hook on every op call (run_op, kernels/dispatch.h) and every zero_tensor memset, for the tools
// that look at a whole update: the profiler (engine/op_profiler.h), the launch counter
// (engine/launch_counter.h) and tests that read an op's tensors as it runs (kernels/op_call.h,
// op_of). Nothing is observed unless an ObserveOps scope is alive on the thread: run_op then costs
// one thread-local load and a branch on a null pointer, and a training step neither synchronises
// nor allocates for it.
//
// Model parts: a ModelPart scope names the part of the work that the op calls inside it belong to
// (the innermost scope wins); calls outside every scope belong to kOtherPart. The models and the
// optimizer mark theirs with one line at the top of a forward, backward or step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace electra {

class Context;

// What work on a GPU costs in launches: our kernels, library calls (cuBLASLt: each may run more
// than one kernel of its own, counted as one call) and memsets (cudaMemsetAsync).
struct Launches {
  int64_t kernels = 0;
  int64_t library_calls = 0;
  int64_t memsets = 0;

  int64_t total() const { return kernels + library_calls + memsets; }
  Launches& operator+=(const Launches& o) {
    kernels += o.kernels;
    library_calls += o.library_calls;
    memsets += o.memsets;
    return *this;
  }
  bool operator==(const Launches&) const = default;
};

// One op call, as run_op describes it to an observer (kernels/op_call.h).
struct OpCall {
  const char* name = "";  // Op::kName
  std::string label;      // what tells two calls of one op apart in a profile (a GEMM's shape)
  Launches launches;      // what the op's CUDA member launches (its declaration)
  double flops = 0;       // 0: the op states none
  double bytes = 0;       // the bytes of the op's tensors, or what the op states
  const char* part = "";  // current_model_part() at the call
  // The op itself, of the type whose kName is `name`, for an observer that reads its tensors (a
  // test's probe; kernels/op_call.h, op_of); valid inside before() and after() only.
  const void* op = nullptr;
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // Before the op runs; returns whether to run it (false: the call is observed, not run).
  virtual bool before(Context& ctx, const OpCall& call) = 0;
  // After a call that ran (before() returned true).
  virtual void after(Context& ctx, const OpCall& call) = 0;
  // zero_tensor on the current part's behalf: one memset of `bytes` (it still runs).
  virtual void memset(size_t bytes) = 0;
};

constexpr const char* kOtherPart = "other";

namespace detail {
inline thread_local OpObserver* tls_op_observer = nullptr;
inline thread_local const char* tls_model_part = nullptr;
}  // namespace detail

// The observer of this thread's op calls, or null.
inline OpObserver* op_observer() {
  return detail::tls_op_observer;
}

inline const char* current_model_part() {
  return detail::tls_model_part != nullptr ? detail::tls_model_part : kOtherPart;
}

// Installs `observer` (null: none) for this thread while it lives; restores the previous one.
// run_op sets none while an observed op runs, so that the ops it calls itself (attention's GEMMs)
// are counted in its own declaration and timed in its own time, not twice.
class ObserveOps {
 public:
  explicit ObserveOps(OpObserver* observer) : previous_(detail::tls_op_observer) {
    detail::tls_op_observer = observer;
  }
  ~ObserveOps() { detail::tls_op_observer = previous_; }
  ObserveOps(const ObserveOps&) = delete;
  ObserveOps& operator=(const ObserveOps&) = delete;

 private:
  OpObserver* previous_;
};

// The op calls of this thread belong to `part` while it lives (a string literal).
class ModelPart {
 public:
  explicit ModelPart(const char* part) : previous_(detail::tls_model_part) {
    detail::tls_model_part = part;
  }
  ~ModelPart() { detail::tls_model_part = previous_; }
  ModelPart(const ModelPart&) = delete;
  ModelPart& operator=(const ModelPart&) = delete;

 private:
  const char* previous_;
};

}  // namespace electra
