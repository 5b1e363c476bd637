// Learning-rate schedules (the official ELECTRA schedule: linear warm-up, then linear decay). Step
// t counts optimizer updates from 0.
//
//   linear (official ELECTRA): lr(t) = peak * min(1, t / warmup) * max(0, 1 - t / total)
//                              (warmup and decay multiplied, as in the official optimization.py)
//   constant:                  lr(t) = peak * min(1, t / warmup)
//   cosine:                    lr(t) = peak * min(1, t / warmup) * 0.5 * (1 + cos(pi * min(1, t /
//   total)))
// warmup = 0 means no warm-up.
#pragma once

#include <cstdint>
#include <string>

namespace electra {

enum class ScheduleKind : uint8_t { kLinear, kConstant, kCosine };

// Parses "linear", "constant" or "cosine"; throws UserError naming the value otherwise.
ScheduleKind parse_schedule_kind(const std::string& name);

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::kLinear;
  double peak = 5e-4;
  int64_t warmup_steps = 10000;
  int64_t total_steps = 1000000;

  double at(int64_t step) const;
};

}  // namespace electra
