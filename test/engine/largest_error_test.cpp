#include "test/common/largest_error.h"

#include <catch2/catch.hpp>

using electra::test::parse_error_bound;

TEST_CASE("parse_error_bound reads Catch2's expansion of error < bound") {
  const auto e = parse_error_bound("0.000048088 < 0.00001");
  REQUIRE(e.has_value());
  CHECK(e->error == Approx(4.8088e-5));
  CHECK(e->bound == Approx(1e-5));
  CHECK(e->share() == Approx(4.8088));

  const auto le = parse_error_bound("0.0123f <= 0.02f");
  REQUIRE(le.has_value());
  CHECK(le->share() == Approx(0.615));

  CHECK(parse_error_bound("1.5e-07 < 1e-06")->share() == Approx(0.15));
}

TEST_CASE("parse_error_bound ignores what is not a numeric bound") {
  CHECK_FALSE(parse_error_bound("3 == 3").has_value());
  CHECK_FALSE(parse_error_bound("0.5 < -1.0").has_value());
  CHECK_FALSE(parse_error_bound("0.5 < 0.0").has_value());
  CHECK_FALSE(parse_error_bound("-0.5 < 1.0").has_value());
  CHECK_FALSE(parse_error_bound("\"abc\" < \"abd\"").has_value());
  CHECK_FALSE(parse_error_bound("0.1 < Approx( 0.2 )").has_value());
  CHECK_FALSE(parse_error_bound("true").has_value());
  CHECK_FALSE(parse_error_bound("1 << 2").has_value());
}
