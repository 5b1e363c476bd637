// reinforce against its contract computed independently in f64: the per-slot values from the
// softmax of the logits (not recovered from the gradient), unused rows all zero, the direction of
// the update and the baseline's fixed point. dlogits and baseline_grad against central differences
// of s (-sg(A) log softmax(z)_x^ + baseline loss(u)), and the GPU: reinforce_cases.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "kernels/reinforce.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

constexpr int64_t kBatch = 2, kSlots = 3, kSeq = 5, kVocab = 7, kStride = 9;
constexpr int64_t kRows = kBatch * kSlots;

double log_softmax_at(const std::vector<double>& z, int64_t row, int32_t j) {
  double m = -INFINITY, s = 0;
  for (int64_t k = 0; k < kVocab; ++k) m = std::max(m, z[row * kStride + k]);
  for (int64_t k = 0; k < kVocab; ++k) s += std::exp(z[row * kStride + k] - m);
  return z[row * kStride + j] - m - std::log(s);
}

struct Case {
  std::vector<double> z = test::random_vector<double>(kRows * kStride, 5, -2, 2);
  std::vector<int32_t> labels = {1, 4, 6, 0, 2, 3};
  std::vector<int32_t> samples = {5, 4, 0, 0, 6, 1};  // rows 1: sample == label
  std::vector<float> weights = {1, 1, 1, 1, 1, 0};
  std::vector<int32_t> positions = {0, 2, 4, 1, 3, 0};
  std::vector<double> token_loss = test::random_vector<double>(kBatch * kSeq, 6, 0.05, 3);
  std::vector<double> u = test::random_vector<double>(kRows, 7, -3, 3);
  double scale = 0.37;

  // softmax_xent's gradient with scale 1: w (p - e_y); padding columns 0.
  std::vector<double> dlogits_in() const {
    std::vector<double> d(z.size(), 0.0);
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kVocab; ++j) {
        const double p = std::exp(log_softmax_at(z, i, static_cast<int32_t>(j)));
        d[i * kStride + j] = weights[i] * (p - (j == labels[i] ? 1.0 : 0.0));
      }
    }
    return d;
  }
  double reward(int64_t i) const { return token_loss[(i / kSlots) * kSeq + positions[i]]; }
};

struct Result {
  std::vector<double> dlogits, du, reward, advantage, log_prob, baseline_loss;
};

Result run(Case& c) {
  Context ctx = Context::cpu(1, Precision::F64);
  Result r;
  r.dlogits = c.dlogits_in();
  r.du.assign(kRows, -9);
  for (auto* v : {&r.reward, &r.advantage, &r.log_prob, &r.baseline_loss}) v->assign(kRows, -9);
  ReinforceParams params;
  params.vocab = kVocab;
  params.scale = static_cast<float>(c.scale);
  c.scale = static_cast<float>(c.scale);
  run_op(ctx,
         Reinforce{.dlogits = Out(test::view(r.dlogits, {kRows, kStride})),
                   .labels = test::view(c.labels),
                   .samples = test::view(c.samples),
                   .weights = test::view(c.weights),
                   .token_loss = test::view(c.token_loss),
                   .positions = test::view(c.positions, {kBatch, kSlots}),
                   .baseline = test::view(c.u),
                   .params = params,
                   .baseline_grad = Out(test::view(r.du)),
                   .out = ReinforceSlots{test::view(r.reward), test::view(r.advantage),
                                         test::view(r.log_prob), test::view(r.baseline_loss)}});
  return r;
}

}  // namespace

TEST_CASE("reinforce: reward, baseline, advantage and log p of the sample", "[reinforce]") {
  Case c;
  const Result r = run(c);
  for (int64_t i = 0; i < kRows; ++i) {
    INFO("row " << i);
    if (c.weights[i] == 0) {
      CHECK(r.reward[i] == 0);
      CHECK(r.advantage[i] == 0);
      CHECK(r.log_prob[i] == 0);
      CHECK(r.baseline_loss[i] == 0);
      CHECK(r.du[i] == 0);
      for (int64_t j = 0; j < kStride; ++j) CHECK(r.dlogits[i * kStride + j] == 0);
      continue;
    }
    const double rew = c.reward(i), b = -std::log(1 / (1 + std::exp(-c.u[i])));
    const double q = std::exp(-rew), sig = 1 / (1 + std::exp(-c.u[i]));
    CHECK(r.reward[i] == Approx(rew).epsilon(1e-14));
    CHECK(r.advantage[i] == Approx(rew - b).epsilon(1e-12));
    CHECK(r.log_prob[i] == Approx(log_softmax_at(c.z, i, c.samples[i])).epsilon(1e-12));
    CHECK(r.baseline_loss[i] ==
          Approx(-q * std::log(sig) - (1 - q) * std::log(1 - sig)).epsilon(1e-12));
    for (int64_t j = kVocab; j < kStride; ++j) CHECK(r.dlogits[i * kStride + j] == 0);
  }
}

TEST_CASE("reinforce: a positive advantage moves the logits towards the sample", "[reinforce]") {
  Case c;
  for (double& x : c.token_loss) x = 20;  // R far above any baseline: A > 0
  const Result r = run(c);
  for (int64_t i = 0; i < kRows; ++i) {
    if (c.weights[i] == 0) continue;
    CHECK(r.advantage[i] > 0);
    // Gradient descent lowers z where dlogits > 0: only the sample's column has dlogits < 0.
    for (int64_t j = 0; j < kVocab; ++j) {
      CHECK((r.dlogits[i * kStride + j] < 0) == (j == c.samples[i]));
    }
  }
}

TEST_CASE("reinforce: the baseline's gradient vanishes where it predicts the reward",
          "[reinforce]") {
  Case c;
  for (int64_t i = 0; i < kRows; ++i) c.u[i] = -std::log(std::expm1(c.reward(i)));  // b = R
  const Result r = run(c);
  for (int64_t i = 0; i < kRows; ++i) {
    CHECK(r.du[i] == Approx(0).margin(1e-12));
    CHECK(r.advantage[i] == Approx(0).margin(1e-12));
    for (int64_t j = 0; j < kStride; ++j)
      CHECK(r.dlogits[i * kStride + j] == Approx(0).margin(1e-12));
  }
}
