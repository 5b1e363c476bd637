// LaunchCounter: what a piece of work launches on a GPU (kernels, cuBLASLt calls, memsets), per
// model part (engine/op_observer.h) and per op, from the ops' own declarations (kernels/op_call.h),
// so that fusion work is measurable on a machine without a GPU.
//
// A dry run counts the ops without running them: a CPU context with the GPU's precision then
// counts a whole ELECTRA update at its real size in milliseconds, with its tensors planned and
// never written (zero_tensor's memsets still run). Nothing may read the results of such a run.
//
//   LaunchCounter counter(/*dry_run=*/true);
//   { const ObserveOps observe(&counter); trainer.update(); }
//   std::printf("%s", counter.table().c_str());
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/op_observer.h"

namespace electra {

class LaunchCounter final : public OpObserver {
 public:
  explicit LaunchCounter(bool dry_run) : dry_run_(dry_run) {}

  bool before(Context& ctx, const OpCall& call) override;
  void after(Context&, const OpCall&) override {}
  void memset(size_t bytes) override;

  // Per part, in the order the parts were first seen.
  const std::vector<std::pair<std::string, Launches>>& parts() const { return parts_; }
  // Per (part, op name): calls and launches, in first-seen order.
  struct OpCount {
    std::string part, op;
    int64_t calls = 0;
    Launches launches{};
  };
  const std::vector<OpCount>& ops() const { return ops_; }
  Launches total() const;
  // Launches of `part` (zero when it was never seen).
  Launches part(const std::string& name) const;
  // One line per part and a total, then one line per (part, op).
  std::string table() const;

 private:
  void count(const char* part, const char* op, const Launches& launches);

  bool dry_run_;
  std::vector<std::pair<std::string, Launches>> parts_;
  std::vector<OpCount> ops_;
};

}  // namespace electra
