#include "optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"

namespace electra {

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (name == "linear") return ScheduleKind::kLinear;
  if (name == "constant") return ScheduleKind::kConstant;
  if (name == "cosine") return ScheduleKind::kCosine;
  throw UserError(str_cat("unknown schedule '", name, "' (use linear, constant or cosine)"));
}

double LrSchedule::at(int64_t step) const {
  const double t = static_cast<double>(step);
  const double warm = warmup_steps > 0 ? std::min(1.0, t / static_cast<double>(warmup_steps)) : 1.0;
  const double progress =
      total_steps > 0 ? std::min(1.0, t / static_cast<double>(total_steps)) : 1.0;
  switch (kind) {
    case ScheduleKind::kLinear:
      return peak * warm * std::max(0.0, 1.0 - progress);
    case ScheduleKind::kConstant:
      return peak * warm;
    case ScheduleKind::kCosine:
      return peak * warm * 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  return 0.0;
}

}  // namespace electra
