// attention forward and backward on the GPU against the CPU reference run in f64 on the same
// inputs (bf16-rounded where the GPU reads bf16), with padding and dropout p = 0.1: probabilities
// and outputs agree only if the dropout masks are identical. f32 within 1e-5, bf16 within 2e-2.
// V and dout are positive so that out and dV are not cancellations (see matmul_gpu_test.cpp).
// dQ and dK are compared normwise (||got - ref|| / ||ref||): they are sums of dS = P (dP - rowsum)
// whose rows sum to zero, so an element near zero carries the rounding of much larger terms; the
// CPU's own f32 result differs from its f64 one by 4e-4 elementwise but 8e-7 normwise there.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine/arena.h"
#include "kernels/attention.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct Case {
  const char* name;
  int64_t b, t, h, heads;
};

// The Q, K or V columns (part 0, 1, 2) of a [rows, 3H] array.
template <class T>
std::vector<double> part_of(const std::vector<T>& qkv, int64_t h, int part) {
  std::vector<double> out;
  for (size_t row = 0; row < qkv.size() / (3 * h); ++row) {
    for (int64_t c = 0; c < h; ++c) out.push_back(qkv[row * 3 * h + part * h + c]);
  }
  return out;
}

double normwise_relative_error(const std::vector<double>& got, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

void check_case(const Case& c, DType dtype) {
  INFO(c.name << " " << dtype_name(dtype));
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  const int64_t b = c.b, t = c.t, h = c.h, heads = c.heads;
  const double tol = dtype == DType::F32 ? 1e-5 : 2e-2;
  std::vector<float> qkv = test::random_vector<float>(b * t * 3 * h, 91, -1, 1);
  const std::vector<float> v = test::random_vector<float>(b * t * h, 92, 0.1, 1);
  for (int64_t row = 0; row < b * t; ++row) {
    for (int64_t col = 0; col < h; ++col) qkv[row * 3 * h + 2 * h + col] = v[row * h + col];
  }
  qkv = test::as_dtype(qkv, dtype);
  const std::vector<float> dout =
      test::as_dtype(test::random_vector<float>(b * t * h, 93, 0.1, 1), dtype);
  // Sequence 0 is full, the others end in padding of different lengths.
  std::vector<int32_t> mask(b * t, 1);
  for (int64_t bi = 1; bi < b; ++bi) {
    for (int64_t j = t - 1 - (bi * 13) % (t / 2); j < t; ++j) mask[bi * t + j] = 0;
  }
  const AttentionArgs args{heads, 0.1f, RngStream{77, RngPurpose::kDropout, 5, 0}, 3};

  std::vector<double> hqkv(qkv.begin(), qkv.end()), hdout(dout.begin(), dout.end());
  std::vector<double> probs(b * heads * t * t), scratch(probs.size()), out(b * t * h);
  std::vector<double> dqkv(hqkv.size());
  attention_forward(cpu, test::view(hqkv, {b, t, 3 * h}), test::view(mask, {b, t}), args,
                    test::view(probs, {b, heads, t, t}), test::view(scratch, {b, heads, t, t}),
                    test::view(out, {b, t, h}));
  attention_backward(cpu, test::view(hqkv, {b, t, 3 * h}), test::view(mask, {b, t}), args,
                     test::view(probs, {b, heads, t, t}), test::view(hdout, {b, t, h}),
                     test::view(scratch, {b, heads, t, t}), test::view(dqkv, {b, t, 3 * h}));

  Arena arena("attention", Device::CUDA, size_t{256} << 20);
  const Tensor gqkv = test::upload_as(gpu, arena, qkv, dtype, {b, t, 3 * h});
  const Tensor gdout = test::upload_as(gpu, arena, dout, dtype, {b, t, h});
  const Tensor gmask = test::upload(gpu, arena, mask, {b, t});
  const Tensor gprobs = arena.alloc(dtype, {b, heads, t, t});
  const Tensor gscratch = arena.alloc(dtype, {b, heads, t, t});
  const Tensor gout = arena.alloc(dtype, {b, t, h});
  const Tensor gdqkv = arena.alloc(dtype, {b, t, 3 * h});
  for (const Tensor* x : {&gprobs, &gscratch, &gout, &gdqkv}) poison_tensor(gpu.stream(), *x);
  attention_forward(gpu, gqkv, gmask, args, gprobs, gscratch, gout);
  CHECK(test::max_relative_error(test::download_f32(gpu, gprobs), probs) < tol);
  CHECK(test::max_relative_error(test::download_f32(gpu, gout), out) < tol);
  poison_tensor(gpu.stream(), gscratch);
  attention_backward(gpu, gqkv, gmask, args, gprobs, gdout, gscratch, gdqkv);
  const std::vector<float> got = test::download_f32(gpu, gdqkv);
  CHECK(normwise_relative_error(part_of(got, h, 0), part_of(dqkv, h, 0)) < tol);
  CHECK(normwise_relative_error(part_of(got, h, 1), part_of(dqkv, h, 1)) < tol);
  CHECK(test::max_relative_error(part_of(got, h, 2), part_of(dqkv, h, 2)) < tol);
}

}  // namespace

TEST_CASE("attention GPU forward and backward equal CPU: ELECTRA-Small shape", "[attention][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) check_case({"small", 8, 128, 256, 4}, dtype);
}

TEST_CASE("attention GPU forward and backward equal CPU: ELECTRA-Base shape", "[attention][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) check_case({"base", 2, 512, 768, 12}, dtype);
}

TEST_CASE("attention GPU forward and backward equal CPU: T = 37, d = 32", "[attention][gpu]") {
  for (DType dtype : {DType::F32, DType::BF16}) check_case({"awkward", 3, 37, 64, 2}, dtype);
}
