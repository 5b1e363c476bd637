// reinforce (kernels/reinforce.h) for the op harness (test/common/op_case.h). The op rewrites
// softmax_xent's gradient in place into the policy gradient, and baseline_grad over the baseline
// (the aliasing the contract allows); each case's forward copies its inputs into those buffers, and
// the scale is read from device memory.
//   gradient check (2 x 3 slots, V = 7 padded to 9; a slot whose sample is its label, an unused
//     one): x -> softmax_xent's gradient (scale 1, in f64 on the host) -> reinforce, with the loss
//     s sum_i (-sg(A_i) log p_G(x^_i) + baseline_loss_i), i.e. the upstream of log_prob is the
//     constant -s A_i (A from the same inputs, in f64): dlogits against central differences
//     w.r.t. x, baseline_grad w.r.t. u;
//   GPU parity (64 x 7 slots over a 1000-word vocabulary padded to 1024, every 11th slot unused,
//     every 5th sample its label): a plausible softmax gradient w (p - e_y) given as input, so
//     both sides rewrite the same (rounded) values.
// Hand values, the sign of the update and the baseline's fixed point: reinforce_test.cpp.
#include <algorithm>
#include <cmath>

#include "kernels/reinforce.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

// The slots of a case (the gradient check's upstream is a function of them).
struct Slots {
  int64_t batch, slots, seq, vocab, stride;
  std::vector<double> labels{}, samples{}, weights{}, positions{}, token_loss{}, u{};
  float scale;
  int64_t rows() const { return batch * slots; }
};

double softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

// -s A_i = -s w (R - softplus(-u)): the weight of log_prob in the gradient check's loss.
std::vector<double> minus_scaled_advantage(const Slots& s) {
  std::vector<double> out(s.rows());
  for (int64_t i = 0; i < s.rows(); ++i) {
    const double r = s.token_loss[(i / s.slots) * s.seq + static_cast<int64_t>(s.positions[i])];
    out[i] = -s.scale * s.weights[i] * (r - softplus(-s.u[i]));
  }
  return out;
}

// Where the softmax gradient comes from: computed from logits x (the gradient check), or given.
enum class Source { kSoftmax, kGiven };

// softmax_xent's gradient with scale 1 (kernels/softmax_xent.h), w (softmax(x) - e_y) over the
// first `vocab` columns and 0 in the padding, in f64 on the host: the gradient check's x -> dlogits
// (an unused row's label is not read).
void softmax_gradient(const Tensor& x, const Tensor& labels, const Tensor& weights, int64_t vocab,
                      const Tensor& out) {
  ELECTRA_CHECK(x.device == Device::CPU, "reinforce case: the host softmax needs a CPU run");
  // Checked as the op checks its own (the harness's contract check hands it wrong shapes).
  check_same_shape(x, out, "reinforce case: x and dlogits");
  check_shape(labels, {x.dim(0)}, "reinforce case: labels");
  check_shape(weights, {x.dim(0)}, "reinforce case: weights");
  const int64_t stride = x.dim(1);
  for (int64_t i = 0; i < x.dim(0); ++i) {
    const double* z = x.ptr<double>() + i * stride;
    double* d = out.ptr<double>() + i * stride;
    const double w = weights.ptr<float>()[i];
    const double top = *std::max_element(z, z + vocab);
    double sum = 0;
    for (int64_t j = 0; j < vocab; ++j) sum += std::exp(z[j] - top);
    for (int64_t j = 0; j < stride; ++j) {
      if (j >= vocab || w == 0) {
        d[j] = 0.0;
        continue;
      }
      const double y = j == labels.ptr<int32_t>()[i] ? 1.0 : 0.0;
      d[j] = w * (std::exp(z[j] - top) / sum - y);
    }
  }
}

OpCase reinforce(const std::string& shape, const Slots& s, Source source, Fill given = {}) {
  const int64_t m = s.rows();
  const bool softmax = source == Source::kSoftmax;
  // f32 outputs from the same (rounded) inputs: a few ulps apart; the reward is a copy.
  const Tol f32_out{1e-5, 1e-5};
  std::vector<TensorSpec> tensors = {
      input("labels", {m}, fixed(s.labels), Kind::kI32),
      input("samples", {m}, fixed(s.samples), Kind::kI32),
      input("weights", {m}, fixed(s.weights), Kind::kF32),
      input("positions", {s.batch, s.slots}, fixed(s.positions), Kind::kI32),
      input("token_loss", {s.batch * s.seq}, fixed(s.token_loss), Kind::kParam),
      input("u", {m}, fixed(s.u)),
      input("scale", {1}, constant(s.scale), Kind::kF32)
          .any_shape("read through a DeviceScalar's pointer, which has no shape"),
      output("reward", {m}, Kind::kParam).relative({1e-6, 1e-6}),
      output("advantage", {m}, Kind::kParam).relative(f32_out),
      output("log_prob", {m}, Kind::kParam).relative(f32_out),
      output("baseline_loss", {m}, Kind::kParam).relative(f32_out),
      // What is stored in the activation dtype: bf16 rounds it once (2^-9).
      grad("baseline_grad", "u", {m}).relative({1e-5, 2e-2}),
  };
  if (softmax) {
    tensors.push_back(input("x", {m, s.stride}, {.lo = -2, .hi = 2}));
    tensors.push_back(grad("logits", "x", {m, s.stride}).relative({1e-5, 2e-2}));
    tensors.push_back(
        upstream("dlog_prob", "log_prob", {m}, Kind::kParam, fixed(minus_scaled_advantage(s))));
    tensors.push_back(
        upstream("dbaseline_loss", "baseline_loss", {m}, Kind::kParam, constant(s.scale)));
  } else {
    tensors.push_back(input("dlogits_in", {m, s.stride}, std::move(given)));
    tensors.push_back(output("logits", {m, s.stride}).relative({1e-5, 2e-2}));
  }
  return OpCase{
      .op = "reinforce",
      .shape = shape,
      .tensors = std::move(tensors),
      .forward =
          [softmax, vocab = s.vocab](Context& ctx, const Args& a) {
            if (softmax) {
              softmax_gradient(a["x"], a["labels"], a["weights"], vocab, a["logits"]);
            } else {
              copy_tensor(ctx.stream(), a["logits"], a["dlogits_in"]);
            }
            copy_tensor(ctx.stream(), a["baseline_grad"], a["u"]);
            run_op(
                ctx,
                Reinforce{.dlogits = Out(a["logits"]),
                          .labels = a["labels"],
                          .samples = a["samples"],
                          .weights = a["weights"],
                          .token_loss = a["token_loss"],
                          .positions = a["positions"],
                          .baseline = a["baseline_grad"],
                          .params = {.vocab = vocab,
                                     .scale = DeviceScalar<float>::in(a["scale"].ptr<float>())},
                          .baseline_grad = Out(a["baseline_grad"]),
                          .out = {a["reward"], a["advantage"], a["log_prob"], a["baseline_loss"]}});
          },
      .modes = softmax ? unsigned{kGradcheck} : unsigned{kGpu},
  };
}

std::vector<double> doubles(const std::vector<int32_t>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

std::vector<OpCase> op_cases() {
  // Slot 1's sample is its label; slot 5 is unused (its label and sample are not read).
  const Slots hand{
      .batch = 2,
      .slots = 3,
      .seq = 5,
      .vocab = 7,
      .stride = 9,
      .labels = {1, 4, 6, 0, 2, 3},
      .samples = {5, 4, 0, 0, 6, 1},
      .weights = {1, 1, 1, 1, 1, 0},
      .positions = {0, 2, 4, 1, 3, 0},
      .token_loss = random_vector<double>(2 * 5, 6, 0.05, 3),
      .u = random_vector<double>(6, 7, -3, 3),
      .scale = 0.37f,
  };

  const int64_t b = 64, n = 7, t = 32, v = 1000, m = b * n;
  Slots big{.batch = b, .slots = n, .seq = t, .vocab = v, .stride = 1024, .scale = 0.125f};
  big.labels = doubles(random_ints(m, 32, 0, v - 1));
  std::vector<int32_t> samples = random_ints(m, 33, 0, v - 1);
  for (int64_t i = 0; i < m; i += 5) samples[i] = static_cast<int32_t>(big.labels[i]);
  big.samples = doubles(samples);
  big.weights.assign(m, 1.0);
  for (int64_t i = 3; i < m; i += 11) big.weights[i] = 0.0;
  big.positions = doubles(random_ints(m, 34, 0, t - 1));
  big.token_loss = random_vector<double>(b * t, 35, 0.01, 4.0);
  big.u = random_vector<double>(m, 36, -4, 4);
  // A plausible gradient row: w (p - e_y) with p = a uniform value / V; padding 0.
  const Fill gradient_rows{.make = [big](size_t count, uint64_t seed) {
    std::vector<double> d = random_vector<double>(count, seed, 0.0, 1.0);
    const size_t stride = static_cast<size_t>(big.stride);
    for (size_t k = 0; k < count; ++k) {
      const size_t i = k / stride, j = k % stride;
      d[k] = j >= static_cast<size_t>(big.vocab)
                 ? 0.0
                 : big.weights[i] *
                       (d[k] / big.vocab - (static_cast<double>(j) == big.labels[i] ? 1.0 : 0.0));
    }
    return d;
  }};
  return {
      reinforce("2x3_V7_stride9", hand, Source::kSoftmax),
      reinforce("64x7_V1000_stride1024", big, Source::kGiven, gradient_rows),
  };
}

}  // namespace electra::test
