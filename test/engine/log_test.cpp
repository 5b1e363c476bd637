#include <catch2/catch.hpp>

#include "engine/error.h"
#include "engine/log.h"

using namespace electra;

TEST_CASE("log levels parse and unknown names are user errors", "[log]") {
  CHECK(parse_log_level("debug") == LogLevel::kDebug);
  CHECK(parse_log_level("error") == LogLevel::kError);
  CHECK_THROWS_WITH(parse_log_level("verbose"), Catch::Contains("'verbose'"));
  const LogLevel saved = log_level();
  set_log_level(LogLevel::kWarn);
  CHECK(log_level() == LogLevel::kWarn);
  set_log_level(saved);
}
