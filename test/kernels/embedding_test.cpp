// embedding on the CPU: forward equals hand-computed sums, backward accumulates repeated ids
// (+=), out-of-range ids are UserErrors naming the position, bad shapes and dtypes are refused.
#include <catch2/catch.hpp>

#include "kernels/embedding.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Tables {
  // E = 2; word rows v -> (v, 10 v), position rows t -> (100 t, 0.5), segment s -> (1000 s, -s).
  std::vector<float> word = {0, 0, 1, 10, 2, 20, 3, 30, 4, 40};
  std::vector<float> position = {0, 0.5f, 100, 0.5f, 200, 0.5f};
  std::vector<float> segment = {0, 0, 1000, -1};
  Tensor w() { return Tensor::view_of(word.data(), Device::CPU, {5, 2}); }
  Tensor p() { return Tensor::view_of(position.data(), Device::CPU, {3, 2}); }
  Tensor s() { return Tensor::view_of(segment.data(), Device::CPU, {2, 2}); }
};

}  // namespace

TEST_CASE("embedding forward is word + position + segment computed by hand", "[embedding]") {
  Context ctx = Context::cpu();
  Tables tables;
  std::vector<int32_t> ids = {3, 1, 3, 4, 0, 2}, sids = {0, 0, 1, 0, 1, 1};
  std::vector<float> out(2 * 3 * 2);
  run_op(ctx, EmbeddingForward{.ids = Tensor::view_of(ids.data(), Device::CPU, {2, 3}),
                               .segment_ids = Tensor::view_of(sids.data(), Device::CPU, {2, 3}),
                               .word = tables.w(),
                               .position = tables.p(),
                               .segment = tables.s(),
                               .out = Out(Tensor::view_of(out.data(), Device::CPU, {2, 3, 2}))});
  const std::vector<float> expect = {3, 30.5f, 101,  10.5f, 1203, 29.5f,
                                     4, 40.5f, 1100, -0.5f, 1202, 19.5f};
  CHECK(out == expect);
}

TEST_CASE("embedding backward accumulates every table summing repeated ids", "[embedding]") {
  Context ctx = Context::cpu();
  std::vector<int32_t> ids = {3, 1, 3, 4, 0, 3}, sids = {0, 0, 1, 0, 1, 1};
  std::vector<float> dout = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> dword(10, 0.5f), dpos(6, 0.25f), dseg(4, 0.0f);
  run_op(ctx, EmbeddingBackward{.dout = Tensor::view_of(dout.data(), Device::CPU, {2, 3, 2}),
                                .ids = Tensor::view_of(ids.data(), Device::CPU, {2, 3}),
                                .segment_ids = Tensor::view_of(sids.data(), Device::CPU, {2, 3}),
                                .dword = Out(Tensor::view_of(dword.data(), Device::CPU, {5, 2})),
                                .dposition = Out(Tensor::view_of(dpos.data(), Device::CPU, {3, 2})),
                                .dsegment = Out(Tensor::view_of(dseg.data(), Device::CPU, {2, 2})),
                                .workspace = Out(Tensor{})});
  // id 3 at tokens 0, 2, 5; id 1 at 1; id 4 at 3; id 0 at 4; id 2 nowhere.
  CHECK(dword == std::vector<float>{9.5f, 10.5f, 3.5f, 4.5f, 0.5f, 0.5f, 17.5f, 20.5f, 7.5f, 8.5f});
  CHECK(dpos == std::vector<float>{8.25f, 10.25f, 12.25f, 14.25f, 16.25f, 18.25f});
  // segment 0 at tokens 0, 1, 3; segment 1 at 2, 4, 5.
  CHECK(dseg == std::vector<float>{11, 14, 25, 28});
}

TEST_CASE("embedding refuses out-of-range ids with the position and value", "[embedding]") {
  Context ctx = Context::cpu();
  Tables tables;
  std::vector<int32_t> ids = {3, 1, 5, 4, 0, 2}, sids = {0, 0, 1, 0, 1, 1};
  std::vector<float> out(12);
  auto forward = [&] {
    run_op(ctx, EmbeddingForward{.ids = Tensor::view_of(ids.data(), Device::CPU, {2, 3}),
                                 .segment_ids = Tensor::view_of(sids.data(), Device::CPU, {2, 3}),
                                 .word = tables.w(),
                                 .position = tables.p(),
                                 .segment = tables.s(),
                                 .out = Out(Tensor::view_of(out.data(), Device::CPU, {2, 3, 2}))});
  };
  CHECK_THROWS_WITH(forward(), Catch::Contains("token id 5 at position (batch 0, token 2)"));
  ids[2] = 2;
  sids[4] = -1;
  CHECK_THROWS_WITH(forward(), Catch::Contains("segment id -1 at position (batch 1, token 1)"));
  CHECK_THROWS_AS(forward(), UserError);
}

TEST_CASE("embedding refuses a sequence longer than the position table and bad dtypes",
          "[embedding]") {
  Context ctx = Context::cpu();
  Tables tables;
  std::vector<int32_t> ids(8, 1), sids(8, 0);
  std::vector<float> out(16);
  CHECK_THROWS_WITH(
      run_op(ctx,
             EmbeddingForward{.ids = Tensor::view_of(ids.data(), Device::CPU, {2, 4}),
                              .segment_ids = Tensor::view_of(sids.data(), Device::CPU, {2, 4}),
                              .word = tables.w(),
                              .position = tables.p(),
                              .segment = tables.s(),
                              .out = Out(Tensor::view_of(out.data(), Device::CPU, {2, 4, 2}))}),
      Catch::Contains("exceeds the position table"));
  std::vector<float> float_ids(6, 1.0f);
  CHECK_THROWS_AS(
      run_op(ctx,
             EmbeddingForward{.ids = Tensor::view_of(float_ids.data(), Device::CPU, {2, 3}),
                              .segment_ids = Tensor::view_of(sids.data(), Device::CPU, {2, 3}),
                              .word = tables.w(),
                              .position = tables.p(),
                              .segment = tables.s(),
                              .out = Out(Tensor::view_of(out.data(), Device::CPU, {2, 3, 2}))}),
      Error);
  std::vector<double> out64(12);
  CHECK_THROWS_AS(
      run_op(ctx,
             EmbeddingForward{.ids = Tensor::view_of(ids.data(), Device::CPU, {2, 3}),
                              .segment_ids = Tensor::view_of(sids.data(), Device::CPU, {2, 3}),
                              .word = tables.w(),
                              .position = tables.p(),
                              .segment = tables.s(),
                              .out = Out(Tensor::view_of(out64.data(), Device::CPU, {2, 3, 2}))}),
      Error);
}
