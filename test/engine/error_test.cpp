#include <catch2/catch.hpp>

#include "engine/error.h"

using namespace electra;

TEST_CASE("ELECTRA_CHECK throws Error with the condition, file, line and message", "[error]") {
  const int rows = 3;
  try {
    ELECTRA_CHECK(rows == 4, "expected 4 rows, got ", rows);
    FAIL("no throw");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("error_test.cpp:"));
    CHECK_THAT(what, Catch::Contains("rows == 4"));
    CHECK_THAT(what, Catch::Contains("expected 4 rows, got 3"));
  }
}

TEST_CASE("ELECTRA_USER_CHECK throws UserError with only the user's message", "[error]") {
  auto failing = [] { ELECTRA_USER_CHECK(false, "config.yaml:3: unknown key '", "lr_peak", "'"); };
  CHECK_THROWS_AS(failing(), UserError);
  CHECK_THROWS_WITH(failing(), "config.yaml:3: unknown key 'lr_peak'");
  CHECK_NOTHROW([] { ELECTRA_USER_CHECK(true, "never"); }());
}

TEST_CASE("API failures name the library, the call, the code and the detail", "[error]") {
  CHECK_THROWS_WITH(throw_api_failure("CUDA", "cudaMalloc(&p, n)", 2, "cudaErrorMemoryAllocation",
                                      "out of memory", "arena.cpp", 17),
                    "arena.cpp:17: CUDA call `cudaMalloc(&p, n)` failed: "
                    "cudaErrorMemoryAllocation (2): out of memory");
}
