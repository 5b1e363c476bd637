#include "train/device_metrics.h"

#include "models/host_transfer.h"
#include "models/metric_rows.h"

namespace electra {

DeviceMetrics::DeviceMetrics(Context& ctx) : arena_("metrics", ctx.device(), Arena::kAlignment) {
  values_ = arena_.alloc(DType::F64, {kTrainMetrics});
  zero_tensor(ctx.stream(), values_);
}

void DeviceMetrics::restart(Context& ctx) {
  zero_tensor(ctx.stream(), window());
}

Tensor DeviceMetrics::window() const {
  return values_.rows(0, kMetricNonFinite);
}

NormRecord DeviceMetrics::grad_norm_record() const {
  return {.acc = Out(values_), .row = kMetricGradNorm, .non_finite = kMetricNonFinite};
}

std::vector<double> DeviceMetrics::read(Context& ctx) {
  std::vector<double> values = download_as<double>(ctx, values_);
  zero_tensor(ctx.stream(), values_.rows(kMetricNonFinite, kTrainMetrics));
  return values;
}

int64_t non_finite_count(const std::vector<double>& values) {
  return static_cast<int64_t>(values.at(kMetricNonFinite));
}

}  // namespace electra
