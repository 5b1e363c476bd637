// embedding on the GPU with bad ids: NaN rows in the forward (sum and y), skipped by the backward
// (on the keys the forward sorted); and a vocabulary too large for the 32-bit sort keys (checks the
// op harness cannot express; parity with the CPU: embedding_cases.cpp).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/embedding.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

// Named as the harness's GPU tests are: <op>/<what>/<dtype>.
TEST_CASE("embedding/bad_ids_give_nan_rows_and_are_skipped/f32", "[embedding][gpu]") {
  Context gpu = Context::cuda(0);
  Arena arena("embedding", Device::CUDA, 16 << 20);
  const int64_t e = 8;
  std::vector<int32_t> ids = {1, 7, -2, 1}, sids = {0, 0, 1, 2};
  std::vector<float> word = test::random_vector<float>(5 * e, 1);
  std::vector<float> position = test::random_vector<float>(4 * e, 2);
  std::vector<float> segment = test::random_vector<float>(2 * e, 3);
  const Tensor gid = test::upload(gpu, arena, ids, {1, 4});
  const Tensor gsid = test::upload(gpu, arena, sids, {1, 4});
  const Tensor gsum = arena.alloc<float>({1, 4, e}), gy = arena.alloc<float>({1, 4, e});
  const std::vector<float> ones(e, 1.0f), zeros(e, 0.0f);
  const Tensor ws = arena.alloc(
      DType::F32, {static_cast<int64_t>(embedding_backward_workspace_bytes(1, 4, 2, e) / 4)});
  run_op(gpu, EmbeddingForward{.ids = gid,
                               .segment_ids = gsid,
                               .word = test::upload(gpu, arena, word, {5, e}),
                               .position = test::upload(gpu, arena, position, {4, e}),
                               .segment = test::upload(gpu, arena, segment, {2, e}),
                               .norm = {.gamma = test::upload(gpu, arena, ones, {e}),
                                        .beta = test::upload(gpu, arena, zeros, {e}),
                                        .eps = 1e-12f},
                               .sum = Out(gsum),
                               .y = Out(gy),
                               .mean = Out(arena.alloc<float>({1, 4})),
                               .rstd = Out(arena.alloc<float>({1, 4})),
                               .workspace = Out(ws)});
  const std::vector<float> out = test::download<float>(gpu, gsum);
  const std::vector<float> y = test::download<float>(gpu, gy);
  for (int64_t j = 0; j < e; ++j) {
    CHECK(out[j] == word[e + j] + position[j] + segment[j]);
    CHECK(std::isfinite(y[j]));
    for (int64_t token = 1; token < 4; ++token) {  // id 7 >= V, id -2, segment 2 >= S
      CHECK(std::isnan(out[token * e + j]));
      CHECK(std::isnan(y[token * e + j]));
    }
  }
  std::vector<float> dout = test::random_vector<float>(4 * e, 4), zeros5(5 * e, 0.0f),
                     zeros4(4 * e, 0.0f), zeros2(2 * e, 0.0f);
  const Tensor gdword = test::upload(gpu, arena, zeros5, {5, e});
  const Tensor gdseg = test::upload(gpu, arena, zeros2, {2, e});
  run_op(gpu, EmbeddingBackward{.dout = test::upload(gpu, arena, dout, {1, 4, e}),
                                .ids = gid,
                                .segment_ids = gsid,
                                .dword = Out(gdword),
                                .dposition = Out(test::upload(gpu, arena, zeros4, {4, e})),
                                .dsegment = Out(gdseg),
                                .workspace = Out(ws)});
  const std::vector<float> dword = test::download<float>(gpu, gdword);
  const std::vector<float> dseg = test::download<float>(gpu, gdseg);
  for (int64_t j = 0; j < e; ++j) {
    CHECK(dword[e + j] == dout[j] + dout[3 * e + j]);  // id 1 at tokens 0 and 3
    CHECK(dword[j] == 0.0f);
    CHECK(dseg[j] == dout[j] + dout[e + j]);  // segment 0 at tokens 0 and 1
    CHECK(dseg[e + j] == dout[2 * e + j]);    // segment 1 at token 2; segment 2 skipped
  }
}

// Sort keys are id << 15 | token within a tile of 32768 tokens: ids up to V (the skipped tokens'
// id) must fit 17 bits. V = 131071 fits (embedding_cases.cpp checks its values); V = 131072 is an
// Error before anything is launched, never a silently wrong gradient.
TEST_CASE("embedding/vocabulary_too_large_for_the_sort_keys_is_an_error/f32", "[embedding][gpu]") {
  Context gpu = Context::cuda(0);
  Arena arena("embedding", Device::CUDA, 64 << 20);
  const int64_t b = 64, t = 512, e = 4, v = 131072;
  const Tensor ids = arena.alloc(DType::I32, {b, t});
  const Tensor ws = arena.alloc(
      DType::F32, {static_cast<int64_t>(embedding_backward_workspace_bytes(b, t, 2, e) / 4)});
  CHECK_THROWS_WITH(run_op(gpu, EmbeddingBackward{.dout = arena.alloc<float>({b, t, e}),
                                                  .ids = ids,
                                                  .segment_ids = ids,
                                                  .dword = Out(arena.alloc<float>({v, e})),
                                                  .dposition = Out(arena.alloc<float>({t, e})),
                                                  .dsegment = Out(arena.alloc<float>({2, e})),
                                                  .workspace = Out(ws)}),
                    Catch::Contains("do not fit the 32-bit sort keys"));
  // The forward, which sorts the keys, refuses them first.
  CHECK_THROWS_WITH(run_op(gpu, EmbeddingForward{.ids = ids,
                                                 .segment_ids = ids,
                                                 .word = arena.alloc<float>({v, e}),
                                                 .position = arena.alloc<float>({t, e}),
                                                 .segment = arena.alloc<float>({2, e}),
                                                 .norm = {.gamma = arena.alloc<float>({e}),
                                                          .beta = arena.alloc<float>({e}),
                                                          .eps = 1e-12f},
                                                 .sum = Out(arena.alloc<float>({b, t, e})),
                                                 .y = Out(arena.alloc<float>({b, t, e})),
                                                 .mean = Out(arena.alloc<float>({b, t})),
                                                 .rstd = Out(arena.alloc<float>({b, t})),
                                                 .workspace = Out(ws)}),
                    Catch::Contains("do not fit the 32-bit sort keys"));
}
