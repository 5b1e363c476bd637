// embedding on the CPU: the forward's sum equals hand-computed sums and its LayerNorm and dropout
// the bits of those ops, the backward accumulates repeated ids (+=), out-of-range ids are
// UserErrors naming the position, a sequence past the position table, eps <= 0 and p >= 1 are
// refused (wrong shapes and dtypes: embedding_contract_test).
#include <catch2/catch.hpp>

#include <algorithm>

#include "kernels/embedding.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Tables {
  // E = 2; word rows v -> (v, 10 v), position rows t -> (100 t, 0.5), segment s -> (1000 s, -s).
  std::vector<float> word = {0, 0, 1, 10, 2, 20, 3, 30, 4, 40};
  std::vector<float> position = {0, 0.5f, 100, 0.5f, 200, 0.5f};
  std::vector<float> segment = {0, 0, 1000, -1};
  std::vector<float> gamma = {2, 0.5f}, beta = {1, -1};
  Tensor w() { return Tensor::view_of(word.data(), Device::CPU, {5, 2}); }
  Tensor p() { return Tensor::view_of(position.data(), Device::CPU, {3, 2}); }
  Tensor s() { return Tensor::view_of(segment.data(), Device::CPU, {2, 2}); }
};

// The outputs of a forward over B x T tokens of E = 2.
struct Outputs {
  std::vector<float> sum, y, mean, rstd;
  Outputs(int64_t b, int64_t t) : sum(b * t * 2), y(b * t * 2), mean(b * t), rstd(b * t) {}
};

DropoutSite site_of(const Context& ctx, float p) {
  return DropoutSite{ctx.rng(RngPurpose::kDropout, 3), dropout_site_offset(2), p};
}

void forward(Context& ctx, Tables& tables, std::vector<int32_t>& ids, std::vector<int32_t>& sids,
             int64_t b, int64_t t, Outputs& o, float p = 0.0f, float eps = 1e-12f) {
  run_op(ctx, EmbeddingForward{.ids = test::view(ids, {b, t}),
                               .segment_ids = test::view(sids, {b, t}),
                               .word = tables.w(),
                               .position = tables.p(),
                               .segment = tables.s(),
                               .norm = {.gamma = test::view(tables.gamma),
                                        .beta = test::view(tables.beta),
                                        .eps = eps,
                                        .site = site_of(ctx, p)},
                               .sum = Out(test::view(o.sum, {b, t, 2})),
                               .y = Out(test::view(o.y, {b, t, 2})),
                               .mean = Out(test::view(o.mean, {b, t})),
                               .rstd = Out(test::view(o.rstd, {b, t}))});
}

}  // namespace

TEST_CASE("embedding forward sums word + position + segment computed by hand", "[embedding]") {
  Context ctx = Context::cpu();
  Tables tables;
  std::vector<int32_t> ids = {3, 1, 3, 4, 0, 2}, sids = {0, 0, 1, 0, 1, 1};
  Outputs o(2, 3);
  forward(ctx, tables, ids, sids, 2, 3, o);
  const std::vector<float> expect = {3, 30.5f, 101,  10.5f, 1203, 29.5f,
                                     4, 40.5f, 1100, -0.5f, 1202, 19.5f};
  CHECK(o.sum == expect);
  // Two columns: mean (a + b) / 2 and xhat = -+1 (up to rstd's rounding), y = xhat gamma + beta.
  CHECK(o.mean[0] == 16.75f);
  CHECK(o.rstd[0] == Approx(1 / 13.75).epsilon(1e-6));
  for (int64_t i = 0; i < 6; ++i) {
    const bool ascending = expect[2 * i] < expect[2 * i + 1];
    CHECK(o.y[2 * i] == Approx(ascending ? -1.0 : 3.0).epsilon(1e-5));
    CHECK(o.y[2 * i + 1] == Approx(ascending ? -0.5 : -1.5).epsilon(1e-5));
  }
}

// The CPU reference runs the three ops' CPU steps: the same bits as the ops run one by one.
TEST_CASE("embedding forward gives the bits of the lookup, layernorm_forward and dropout",
          "[embedding]") {
  Context ctx = Context::cpu(3);
  const int64_t b = 3, t = 40, e = 24, v = 50;
  std::vector<float> word = test::random_vector<float>(v * e, 1),
                     position = test::random_vector<float>(t * e, 2),
                     segment = test::random_vector<float>(2 * e, 3),
                     gamma = test::random_vector<float>(e, 4, 0.5, 1.5),
                     beta = test::random_vector<float>(e, 5);
  std::vector<int32_t> ids(b * t), sids(b * t);
  for (int64_t i = 0; i < b * t; ++i) {
    ids[i] = static_cast<int32_t>((i * 7) % v);
    sids[i] = static_cast<int32_t>(i % 3 == 0);
  }
  std::vector<float> sum(b * t * e), y(b * t * e), mean(b * t), rstd(b * t);
  std::vector<float> y_ops(b * t * e), mean_ops(b * t), rstd_ops(b * t);
  const DropoutSite site = site_of(ctx, 0.25f);
  run_op(ctx, EmbeddingForward{.ids = test::view(ids, {b, t}),
                               .segment_ids = test::view(sids, {b, t}),
                               .word = test::view(word, {v, e}),
                               .position = test::view(position, {t, e}),
                               .segment = test::view(segment, {2, e}),
                               .norm = {.gamma = test::view(gamma),
                                        .beta = test::view(beta),
                                        .eps = 1e-12f,
                                        .site = site},
                               .sum = Out(test::view(sum, {b, t, e})),
                               .y = Out(test::view(y, {b, t, e})),
                               .mean = Out(test::view(mean, {b, t})),
                               .rstd = Out(test::view(rstd, {b, t}))});
  for (int64_t i = 0; i < b * t; ++i) {
    for (int64_t j = 0; j < e; ++j) {
      REQUIRE(sum[i * e + j] ==
              word[ids[i] * e + j] + position[(i % t) * e + j] + segment[sids[i] * e + j]);
    }
  }
  run_op(ctx, LayerNormForward{.x = test::view(sum, {b * t, e}),
                               .gamma = test::view(gamma),
                               .beta = test::view(beta),
                               .eps = 1e-12f,
                               .y = Out(test::view(y_ops, {b * t, e})),
                               .mean = Out(test::view(mean_ops)),
                               .rstd = Out(test::view(rstd_ops))});
  run_op(ctx, Dropout{.x = test::view(y_ops), .site = site, .y = Out(test::view(y_ops))});
  CHECK(y == y_ops);
  CHECK(mean == mean_ops);
  CHECK(rstd == rstd_ops);
  CHECK(std::count(y.begin(), y.end(), 0.0f) > 0);  // the mask dropped some
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
  Outputs o(2, 3);
  CHECK_THROWS_WITH(forward(ctx, tables, ids, sids, 2, 3, o),
                    Catch::Contains("token id 5 at position (batch 0, token 2)"));
  ids[2] = 2;
  sids[4] = -1;
  CHECK_THROWS_WITH(forward(ctx, tables, ids, sids, 2, 3, o),
                    Catch::Contains("segment id -1 at position (batch 1, token 1)"));
  CHECK_THROWS_AS(forward(ctx, tables, ids, sids, 2, 3, o), UserError);
}

// Wrong shapes and dtypes of the tensors: embedding_contract_test.
TEST_CASE("embedding refuses a sequence longer than the position table, eps <= 0 and p >= 1",
          "[embedding]") {
  Context ctx = Context::cpu();
  Tables tables;
  std::vector<int32_t> ids(8, 1), sids(8, 0);
  Outputs o(2, 4);
  CHECK_THROWS_WITH(forward(ctx, tables, ids, sids, 2, 4, o),
                    Catch::Contains("exceeds the position table"));
  Outputs o3(2, 3);
  auto run = [&](float eps, float p) { forward(ctx, tables, ids, sids, 2, 3, o3, p, eps); };
  CHECK_NOTHROW(run(1e-12f, 0.1f));
  CHECK_THROWS_WITH(run(0.0f, 0.1f), Catch::Contains("eps must be positive"));
  CHECK_THROWS_WITH(run(1e-12f, 1.0f), Catch::Contains("dropout probability"));
}
