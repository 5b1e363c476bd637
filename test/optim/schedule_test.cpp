#include <catch2/catch.hpp>

#include "engine/error.h"
#include "optim/schedule.h"

using namespace electra;

TEST_CASE("the official linear schedule multiplies warm-up and decay", "[schedule]") {
  const LrSchedule s{ScheduleKind::kLinear, 5e-4, 10000, 1000000};
  CHECK(s.at(0) == 0.0);
  // t = 5000: warm-up 0.5, decay 1 - 0.005 = 0.995.
  CHECK(s.at(5000) == Approx(5e-4 * 0.5 * 0.995).epsilon(1e-12));
  // Peak at the end of warm-up is already decayed by 1%: the official code multiplies the two.
  CHECK(s.at(10000) == Approx(5e-4 * 0.99).epsilon(1e-12));
  CHECK(s.at(500000) == Approx(2.5e-4).epsilon(1e-12));
  CHECK(s.at(1000000) == 0.0);
  CHECK(s.at(2000000) == 0.0);
}

TEST_CASE("constant and cosine schedules; no warm-up", "[schedule]") {
  const LrSchedule constant{ScheduleKind::kConstant, 1e-3, 100, 1000};
  CHECK(constant.at(50) == Approx(5e-4));
  CHECK(constant.at(999) == Approx(1e-3));
  const LrSchedule cosine{ScheduleKind::kCosine, 1e-3, 0, 1000};
  CHECK(cosine.at(0) == Approx(1e-3));
  CHECK(cosine.at(500) == Approx(5e-4));
  CHECK(cosine.at(1000) == Approx(0.0).margin(1e-15));
  CHECK(parse_schedule_kind("cosine") == ScheduleKind::kCosine);
  CHECK_THROWS_WITH(parse_schedule_kind("step"), Catch::Contains("unknown schedule 'step'"));
}
