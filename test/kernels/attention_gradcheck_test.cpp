// Gradient checks in f64 of attention_backward against central differences of
// loss = sum(W * attention_forward(qkv)); the dropout mask is a fixed function of the stream.
#include <catch2/catch.hpp>

#include "kernels/attention.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// Max relative error of dqkv over `max_checks` evenly spaced coordinates (0 = all), central
// differences with step `step`.
double check_attention(int64_t b, int64_t t, int64_t h, int64_t heads,
                       const std::vector<int32_t>& mask_values, float p, size_t max_checks,
                       double step) {
  Context ctx = Context::cpu();
  std::vector<double> qkv = test::random_vector<double>(b * t * 3 * h, 81, -1.5, 1.5);
  std::vector<double> w = test::random_vector<double>(b * t * h, 82);
  std::vector<int32_t> mask = mask_values;
  std::vector<double> probs(b * heads * t * t), scratch(probs.size()), out(b * t * h);
  const AttentionArgs args{heads, p, RngStream{2024, RngPurpose::kDropout, 11, 0}, 7};
  const Tensor qkv_t = test::view(qkv, {b, t, 3 * h}), mask_t = test::view(mask, {b, t});
  const Tensor probs_t = test::view(probs, {b, heads, t, t}),
               scratch_t = test::view(scratch, {b, heads, t, t});
  const auto loss = [&] {
    run_op(ctx, AttentionForward{.qkv = qkv_t,
                                 .mask = mask_t,
                                 .args = args,
                                 .saved = Out(probs_t),
                                 .scratch = Out(scratch_t),
                                 .out = Out(test::view(out, {b, t, h}))});
    return test::weighted_sum(out, w);
  };
  loss();
  std::vector<double> dqkv(qkv.size(), std::nan(""));
  run_op(ctx, AttentionBackward{.qkv = qkv_t,
                                .mask = mask_t,
                                .args = args,
                                .saved = probs_t,
                                .dout = test::view(w, {b, t, h}),
                                .scratch = Out(scratch_t),
                                .dqkv = Out(test::view(dqkv, {b, t, 3 * h}))});
  const test::GradcheckResult r = test::gradcheck(qkv, dqkv, loss, step, max_checks);
  REQUIRE(r.checked >= std::min<size_t>(max_checks == 0 ? qkv.size() : max_checks, qkv.size()));
  return r.max_relative_error;
}

}  // namespace

TEST_CASE("gradcheck attention dqkv at a small odd shape with padding, p = 0 and p = 0.1",
          "[attention]") {
  const std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  for (float p : {0.0f, 0.1f}) {
    INFO("p " << p);
    CHECK(check_attention(2, 5, 12, 3, mask, p, 0, 1e-6) < 1e-6);
  }
}

TEST_CASE("gradcheck attention dqkv at the ELECTRA-Small shape (sampled coordinates)",
          "[attention]") {
  std::vector<int32_t> mask(128, 1);
  for (int j = 100; j < 128; ++j) mask[j] = 0;
  // 47 coordinates: the stride 98304 / 47 walks over Q, K and V columns of every head. The loss
  // sums 32768 outputs, so at h = 1e-6 the rounding noise of the difference quotient (about
  // eps * sum |terms| / h) reaches 5e-5 relative; h = 1e-4 keeps it and the h^2 truncation
  // error near 1e-7.
  for (float p : {0.0f, 0.1f}) {
    INFO("p " << p);
    CHECK(check_attention(1, 128, 256, 4, mask, p, 47, 1e-4) < 1e-6);
  }
}
