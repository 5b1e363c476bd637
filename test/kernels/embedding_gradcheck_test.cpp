// Gradient checks (f64, central differences) of the embedding sum w.r.t. the word, position and
// segment tables, with repeated ids, at a small odd shape and at ELECTRA-Small's (E = 128).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/embedding.h"
#include "test/common/catch_checks.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

void check_embedding(int64_t batch, int64_t len, int64_t e, int64_t vocab, int64_t positions,
                     int64_t segments, size_t max_checks) {
  Context ctx = Context::cpu();
  std::vector<int32_t> ids = test::random_ints(batch * len, 41, 0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> sids =
      test::random_ints(batch * len, 42, 0, static_cast<int32_t>(segments - 1));
  std::vector<double> word = test::random_vector<double>(vocab * e, 43);
  std::vector<double> position = test::random_vector<double>(positions * e, 44);
  std::vector<double> segment = test::random_vector<double>(segments * e, 45);
  const std::vector<double> w = test::random_vector<double>(batch * len * e, 46);
  std::vector<double> out(batch * len * e);
  const Tensor id_t = test::view(ids, {batch, len});
  const Tensor sid_t = test::view(sids, {batch, len});
  long double base = 0;
  auto run = [&] {
    run_op(ctx, EmbeddingForward{.ids = id_t,
                                 .segment_ids = sid_t,
                                 .word = test::view(word, {vocab, e}),
                                 .position = test::view(position, {positions, e}),
                                 .segment = test::view(segment, {segments, e}),
                                 .out = Out(test::view(out, {batch, len, e}))});
    return static_cast<double>(test::compensated_weighted_sum(out, w) - base);
  };
  run();
  base = test::compensated_weighted_sum(out, w);
  std::vector<double> dout = w, dword(vocab * e, 0.0), dposition(positions * e, 0.0),
                      dsegment(segments * e, 0.0);
  run_op(ctx, EmbeddingBackward{.dout = test::view(dout, {batch, len, e}),
                                .ids = id_t,
                                .segment_ids = sid_t,
                                .dword = Out(test::view(dword, {vocab, e})),
                                .dposition = Out(test::view(dposition, {positions, e})),
                                .dsegment = Out(test::view(dsegment, {segments, e})),
                                .workspace = Out(Tensor{})});
  test::expect_gradient("word", word, dword, run, max_checks);
  test::expect_gradient("position", position, dposition, run, max_checks);
  test::expect_gradient("segment", segment, dsegment, run, max_checks);
}

}  // namespace

TEST_CASE("embedding gradients - small odd shape", "[embedding][gradcheck]") {
  check_embedding(3, 5, 7, 11, 9, 3, 0);
}

TEST_CASE("embedding gradients - ELECTRA-Small shape B=2 T=128 E=128", "[embedding][gradcheck]") {
  check_embedding(2, 128, 128, 257, 512, 2, 97);
}
