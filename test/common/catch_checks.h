// Test helpers that report through Catch2 (INFO / CHECK): include only from Catch2 test sources.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "test/common/test_util.h"

namespace electra::test {

// Central differences with step 1e-5 over `max_checks` evenly spaced coordinates of `input` (0 =
// all) agree with `analytic` to 1e-6 relative; the failure names the input.
inline void expect_gradient(const char* name, std::vector<double>& input,
                            const std::vector<double>& analytic,
                            const std::function<double()>& loss, size_t max_checks) {
  INFO("gradient w.r.t. " << name);
  const GradcheckResult r = gradcheck(input, analytic, loss, 1e-5, max_checks);
  CHECK(r.checked > 0);
  CHECK(r.max_relative_error < 1e-6);
}

}  // namespace electra::test
