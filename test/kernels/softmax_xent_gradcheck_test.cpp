#include <catch2/catch.hpp>
#include <vector>

#include "kernels/softmax_xent.h"
#include "test/common/test_util.h"

using namespace electra;

// d(scale * sum_i loss_i) / dx equals the in-place dlogits, including zeros for padding rows and
// for the padded columns V..V_stride-1 (which therefore take no part in the softmax).
TEST_CASE("softmax_xent dlogits match central differences in f64", "[softmax_xent][gradcheck]") {
  const int64_t m = 5, v = 97, stride = 100;
  Context ctx = Context::cpu();
  std::vector<double> x = test::random_vector<double>(m * stride, 21, -3, 3);
  std::vector<int32_t> labels = {4, 96, -1, 0, 33};
  std::vector<float> weights = {1.0f, 0.5f, 0.0f, 2.0f, 1.0f};
  SoftmaxXentParams params;
  params.vocab = v;
  params.scale = 1.0f / 4.5f;
  params.stream = RngStream{1, RngPurpose::kGumbel, 0, 0};
  std::vector<double> loss(m), scratch(m * stride);
  std::vector<int32_t> sample(m), argmax(m);
  // Runs the op on a copy of x: returns scale * sum(loss) and leaves the dlogits in scratch.
  auto evaluate = [&] {
    scratch = x;
    run_op(ctx,
           SoftmaxXent{.logits = Out(Tensor::view_of(scratch.data(), Device::CPU, {m, stride})),
                       .labels = Tensor::view_of(labels.data(), Device::CPU, {m}),
                       .weights = Tensor::view_of(weights.data(), Device::CPU, {m}),
                       .params = params,
                       .loss = Out(Tensor::view_of(loss.data(), Device::CPU, {m})),
                       .sample = Out(Tensor::view_of(sample.data(), Device::CPU, {m})),
                       .argmax = Out(Tensor::view_of(argmax.data(), Device::CPU, {m}))});
    double total = 0;
    for (double l : loss) total += l;
    return total * static_cast<double>(params.scale.get());
  };
  evaluate();
  const std::vector<double> analytic = scratch;
  for (int64_t j = v; j < stride; ++j) CHECK(analytic[j] == 0.0);
  // h = 1e-4: the summed loss is O(5), so rounding noise is ~1e-15 / 2h and truncation ~h^2 / 6.
  const test::GradcheckResult result = test::gradcheck(x, analytic, evaluate, 1e-4);
  CHECK(result.checked == static_cast<size_t>(m * stride));
  CHECK(result.max_relative_error < 1e-6);
}
