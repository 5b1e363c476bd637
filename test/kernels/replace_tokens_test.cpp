// replace_tokens on the CPU: weighted samples scattered and real replacements labelled by hand,
// out-of-range and repeated positions refused naming the slot (wrong shapes and dtypes:
// replace_tokens_contract_test).
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/replace_tokens.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("replace_tokens scatters weighted samples and labels real replacements", "[replace]") {
  Context ctx = Context::cpu();
  // Two sequences of 5; sequence 0 has slots at 1 (sample differs), 3 (sample equals the
  // original: not replaced); sequence 1 has one weighted slot and an empty slot at position 0.
  std::vector<int32_t> ids = {2, 10, 11, 12, 3, 2, 20, 21, 3, 0};
  std::vector<int32_t> positions = {1, 3, 2, 0};
  std::vector<float> weights = {1, 1, 1, 0};
  std::vector<int32_t> samples = {50, 12, 60, 99};
  std::vector<int32_t> replaced(10, -1), labels(10, -1);
  run_op(ctx, ReplaceTokens{.ids = test::view(ids, {2, 5}),
                            .positions = test::view(positions, {2, 2}),
                            .weights = test::view(weights, {2, 2}),
                            .samples = test::view(samples),
                            .replaced = Out(test::view(replaced, {2, 5})),
                            .labels = Out(test::view(labels, {2, 5}))});
  CHECK(replaced == std::vector<int32_t>{2, 50, 11, 12, 3, 2, 20, 60, 3, 0});
  CHECK(labels == std::vector<int32_t>{0, 1, 0, 0, 0, 0, 0, 1, 0, 0});
}

TEST_CASE("replace_tokens refuses out-of-range and repeated positions, naming the slot",
          "[replace]") {
  Context ctx = Context::cpu();
  std::vector<int32_t> ids = {2, 10, 11, 3};
  std::vector<float> weights = {1, 1};
  std::vector<int32_t> samples = {5, 6};
  std::vector<int32_t> replaced(4), labels(4);
  // Position 4 in slot 1 is outside T = 4; position 2 repeats in slot 1.
  for (const auto& [bad, message] :
       {std::pair{std::vector<int32_t>{1, 4}, "position 4 at (batch 0, slot 1) is outside"},
        std::pair{std::vector<int32_t>{2, 2}, "position 2 repeats at (batch 0, slot 1)"}}) {
    std::vector<int32_t> positions = bad;
    CHECK_THROWS_WITH(run_op(ctx, ReplaceTokens{.ids = test::view(ids, {1, 4}),
                                                .positions = test::view(positions, {1, 2}),
                                                .weights = test::view(weights, {1, 2}),
                                                .samples = test::view(samples),
                                                .replaced = Out(test::view(replaced, {1, 4})),
                                                .labels = Out(test::view(labels, {1, 4}))}),
                      Catch::Contains(message));
  }
}
