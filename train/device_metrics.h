// DeviceMetrics: what pre-training (Trainer) and fine-tuning (apps FinetuneEpoch) share between
// their optimizer updates: the f64 accumulator of training metrics (its rows: models/metric_rows.h)
// that the device adds to during updates, and the non-finite guard that reads it.
//
// An update adds its losses and the optimizer's gradient norm to the accumulator on the device;
// the host reads it back (one download) only when it needs the values: logging, an evaluation,
// the end of an epoch, a checkpoint. Between two reads nothing is lost: the accumulator counts
// the non-finite losses and gradient norms (kMetricNonFinite), and the optimizer's kernels skip an
// update whose gradient norm is not finite (optim/optimizer.h), so the guard can check the count
// when it reads.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/arena.h"
#include "engine/context.h"
#include "kernels/weight_update.h"

namespace electra {

class DeviceMetrics {
 public:
  explicit DeviceMetrics(Context& ctx);

  // f64 [kTrainMetrics], for the kernels that accumulate into it.
  const Tensor& values() const { return values_; }
  // Starts a new window of the averaged rows [0, kMetricNonFinite) (zeroes them on the device);
  // the non-finite count runs on until it is read.
  void restart(Context& ctx);
  // Those rows, for a kernel that zeroes them itself (the trainer's next_micro_step at an
  // update's first micro-batch: restart() without a launch of its own).
  Tensor window() const;
  // Where an optimizer step records its gradient norm (Optimizer::step; the norm's row and the
  // non-finite count).
  NormRecord grad_norm_record() const;
  // Downloads the accumulator (the one transfer; synchronises) and restarts the non-finite count.
  std::vector<double> read(Context& ctx);

 private:
  Arena arena_;
  Tensor values_;
};

// The guard: how many losses or gradient norms were not finite in the window that `values` (a
// read()) covers; the caller reports them as its one-line error.
int64_t non_finite_count(const std::vector<double>& values);

}  // namespace electra
