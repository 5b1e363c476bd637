// Gradient checks (f64, central differences) of the embedding sum w.r.t. the word, position and
// segment tables, with repeated ids, at a small odd shape and at ELECTRA-Small's (E = 128).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/embedding.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

Tensor view(std::vector<double>& v, std::initializer_list<int64_t> dims) {
  return Tensor::view_of(v.data(), Device::CPU, dims);
}

// sum_i w_i y_i, Neumaier-compensated in long double. Callers subtract the unperturbed loss before
// rounding to double: |loss| ~ 5e2 would otherwise leave ~1e-13 of rounding in each evaluation,
// 5e-9 after dividing by the 2e-5 step, against a tolerance of 1e-6 relative.
long double loss_of(const std::vector<double>& y, const std::vector<double>& w) {
  long double sum = 0, carry = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const long double term = static_cast<long double>(y[i]) * w[i];
    const long double next = sum + term;
    carry += std::fabs(sum) >= std::fabs(term) ? (sum - next) + term : (term - next) + sum;
    sum = next;
  }
  return sum + carry;
}

void expect_gradient(const char* name, std::vector<double>& input,
                     const std::vector<double>& analytic, const std::function<double()>& loss,
                     size_t max_checks) {
  INFO("gradient w.r.t. " << name);
  const test::GradcheckResult r = test::gradcheck(input, analytic, loss, 1e-5, max_checks);
  CHECK(r.checked > 0);
  CHECK(r.max_relative_error < 1e-6);
}

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
  const Tensor id_t = Tensor::view_of(ids.data(), Device::CPU, {batch, len});
  const Tensor sid_t = Tensor::view_of(sids.data(), Device::CPU, {batch, len});
  long double base = 0;
  auto run = [&] {
    embedding_forward(ctx, id_t, sid_t, view(word, {vocab, e}), view(position, {positions, e}),
                      view(segment, {segments, e}), view(out, {batch, len, e}));
    return static_cast<double>(loss_of(out, w) - base);
  };
  run();
  base = loss_of(out, w);
  std::vector<double> dout = w, dword(vocab * e, 0.0), dposition(positions * e, 0.0),
                      dsegment(segments * e, 0.0);
  embedding_backward(ctx, view(dout, {batch, len, e}), id_t, sid_t, view(dword, {vocab, e}),
                     view(dposition, {positions, e}), view(dsegment, {segments, e}), Tensor{});
  expect_gradient("word", word, dword, run, max_checks);
  expect_gradient("position", position, dposition, run, max_checks);
  expect_gradient("segment", segment, dsegment, run, max_checks);
}

}  // namespace

TEST_CASE("embedding gradients - small odd shape", "[embedding][gradcheck]") {
  check_embedding(3, 5, 7, 11, 9, 3, 0);
}

TEST_CASE("embedding gradients - ELECTRA-Small shape B=2 T=128 E=128", "[embedding][gradcheck]") {
  check_embedding(2, 128, 128, 257, 512, 2, 97);
}
