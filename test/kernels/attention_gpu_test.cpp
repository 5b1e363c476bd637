// attention forward and backward on the GPU, both implementations (version 1, unfused, and the
// flash kernels), against the CPU reference run in f64 on the same inputs (bf16-rounded where the
// GPU reads bf16), with padding, and with dropout p = 0.1 (outputs agree only if the dropout masks
// are identical) and p = 0. f32 within 1e-5, bf16 within 2e-2.
// V and dout are positive so that out and dV are not cancellations (see matmul_gpu_test.cpp).
// dQ and dK are compared normwise (test/kernels/attention_errors.h). The positive V and dout give
// dPd = dout V^T a large common offset that the softmax backward subtracts: version 1 keeps dPd
// in f32 for that reason (kernels/attention.h; in bf16 it was 2-4% off, bf16_emulation_test).
// Flash saves no probabilities: its row logsumexp L is checked against one computed here in f64.
// The two implementations are also compared with each other, and the flash backward is run twice
// and must give the same bits (it has no atomics).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "engine/arena.h"
#include "kernels/attention.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"
#include "test/kernels/attention_errors.h"

using namespace electra;

namespace {

struct Case {
  const char* name;
  int64_t b, t, h, heads;
  bool empty_sequence = false;  // the last sequence is all padding (rows with no real key)
};

// L [B, heads, T] in f64: log sum_j exp(S_ij) over the real keys j, +inf for a row without one.
std::vector<double> reference_lse(const std::vector<double>& qkv, const std::vector<int32_t>& mask,
                                  int64_t b, int64_t t, int64_t h, int64_t heads) {
  const int64_t d = h / heads;
  std::vector<double> lse(b * heads * t), s(t);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < heads; ++hi) {
      for (int64_t i = 0; i < t; ++i) {
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < t; ++j) {
          if (mask[bi * t + j] == 0) continue;
          s[j] = 0;
          for (int64_t c = 0; c < d; ++c) {
            s[j] +=
                qkv[(bi * t + i) * 3 * h + hi * d + c] * qkv[(bi * t + j) * 3 * h + h + hi * d + c];
          }
          s[j] /= std::sqrt(static_cast<double>(d));
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          if (mask[bi * t + j] != 0) sum += std::exp(s[j] - max);
        }
        lse[(bi * heads + hi) * t + i] =
            sum > 0 ? max + std::log(sum) : std::numeric_limits<double>::infinity();
      }
    }
  }
  return lse;
}

// What one GPU implementation produced.
struct GpuResult {
  std::vector<float> saved, out, dqkv;
};

GpuResult run_gpu(Context& gpu, const std::vector<float>& qkv, const std::vector<float>& dout,
                  const std::vector<int32_t>& mask, const Case& c, DType dtype,
                  const AttentionArgs& args) {
  const int64_t b = c.b, t = c.t, h = c.h;
  const AttentionState state = attention_state(Device::CUDA, args, b, t, h, dtype);
  REQUIRE(state.flash == (args.impl == AttentionImpl::kFlash));
  Arena arena("attention", Device::CUDA, size_t{256} << 20);
  const Tensor gqkv = test::upload_as(gpu, arena, qkv, dtype, {b, t, 3 * h});
  const Tensor gdout = test::upload_as(gpu, arena, dout, dtype, {b, t, h});
  const Tensor gmask = test::upload(gpu, arena, mask, {b, t});
  const Tensor gsaved = state.view(arena.alloc(state.dtype, {state.numel()}));
  const Tensor gscratch = state.scratch_view(arena.alloc(state.scratch_dtype, {state.numel()}));
  const Tensor gout = arena.alloc(dtype, {b, t, h});
  const Tensor gdqkv = arena.alloc(dtype, {b, t, 3 * h});
  for (const Tensor* x : {&gsaved, &gscratch, &gout, &gdqkv}) poison_tensor(gpu.stream(), *x);
  run_op(gpu, AttentionForward{.qkv = gqkv,
                               .mask = gmask,
                               .args = args,
                               .saved = Out(gsaved),
                               .scratch = Out(gscratch),
                               .out = Out(gout)});
  GpuResult r{test::download_f32(gpu, gsaved), test::download_f32(gpu, gout), {}};
  poison_tensor(gpu.stream(), gscratch);
  run_op(gpu, AttentionBackward{.qkv = gqkv,
                                .mask = gmask,
                                .args = args,
                                .saved = gsaved,
                                .dout = gdout,
                                .scratch = Out(gscratch),
                                .dqkv = Out(gdqkv),
                                .out = gout});
  r.dqkv = test::download_f32(gpu, gdqkv);
  if (state.flash) {  // deterministic: a second backward gives the same bits
    poison_tensor(gpu.stream(), gdqkv);
    poison_tensor(gpu.stream(), gscratch);
    run_op(gpu, AttentionBackward{.qkv = gqkv,
                                  .mask = gmask,
                                  .args = args,
                                  .saved = gsaved,
                                  .dout = gdout,
                                  .scratch = Out(gscratch),
                                  .dqkv = Out(gdqkv),
                                  .out = gout});
    CHECK(test::download_f32(gpu, gdqkv) == r.dqkv);
  }
  return r;
}

void check_gradients(const std::vector<float>& got, const std::vector<double>& ref, int64_t h,
                     double tol) {
  const test::AttentionGradErrors e = test::attention_grad_errors(got, ref, h);
  CHECK(e.dq < tol);
  CHECK(e.dk < tol);
  CHECK(e.dv < tol);
}

void check_case(const Case& c, DType dtype, float p) {
  INFO(c.name << " " << dtype_name(dtype) << " p = " << p);
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
  // Sequence 0 is full, the others end in padding of different lengths (the last one is all
  // padding in an empty_sequence case).
  std::vector<int32_t> mask(b * t, 1);
  for (int64_t bi = 1; bi < b; ++bi) {
    for (int64_t j = t - 1 - (bi * 13) % (t / 2); j < t; ++j) mask[bi * t + j] = 0;
  }
  if (c.empty_sequence) std::fill(mask.end() - t, mask.end(), 0);
  AttentionArgs args{heads, p, RngStream{77, RngPurpose::kDropout, 5, 0}, 3};

  std::vector<double> hqkv(qkv.begin(), qkv.end()), hdout(dout.begin(), dout.end());
  std::vector<double> probs(b * heads * t * t), scratch(probs.size()), out(b * t * h);
  std::vector<double> dqkv(hqkv.size());
  run_op(cpu, AttentionForward{.qkv = test::view(hqkv, {b, t, 3 * h}),
                               .mask = test::view(mask, {b, t}),
                               .args = args,
                               .saved = Out(test::view(probs, {b, heads, t, t})),
                               .scratch = Out(test::view(scratch, {b, heads, t, t})),
                               .out = Out(test::view(out, {b, t, h}))});
  run_op(cpu, AttentionBackward{.qkv = test::view(hqkv, {b, t, 3 * h}),
                                .mask = test::view(mask, {b, t}),
                                .args = args,
                                .saved = test::view(probs, {b, heads, t, t}),
                                .dout = test::view(hdout, {b, t, h}),
                                .scratch = Out(test::view(scratch, {b, heads, t, t})),
                                .dqkv = Out(test::view(dqkv, {b, t, 3 * h}))});

  args.impl = AttentionImpl::kUnfused;
  const GpuResult v1 = run_gpu(gpu, qkv, dout, mask, c, dtype, args);
  {
    INFO("version 1 (unfused)");
    CHECK(test::max_relative_error(v1.saved, probs) < tol);
    CHECK(test::max_relative_error(v1.out, out) < tol);
    check_gradients(v1.dqkv, dqkv, h, tol);
  }

  args.impl = AttentionImpl::kFlash;
  const GpuResult v2 = run_gpu(gpu, qkv, dout, mask, c, dtype, args);
  {
    INFO("version 2 (flash)");
    const std::vector<double> lse = reference_lse(hqkv, mask, b, t, h, heads);
    double worst = 0;
    for (size_t i = 0; i < lse.size(); ++i) {
      if (std::isinf(lse[i])) {
        CHECK(std::isinf(v2.saved[i]));
        CHECK(v2.saved[i] > 0);
      } else {
        worst = std::max(worst, std::abs(v2.saved[i] - lse[i]) / std::max(1.0, std::abs(lse[i])));
      }
    }
    CHECK(worst < tol);
    CHECK(test::max_relative_error(v2.out, out) < tol);
    check_gradients(v2.dqkv, dqkv, h, tol);
    if (c.empty_sequence) {  // rows without a real key: out and every gradient exactly zero
      for (int64_t i = (b - 1) * t * h; i < b * t * h; ++i) REQUIRE(v2.out[i] == 0.0f);
      for (int64_t i = (b - 1) * t * 3 * h; i < b * t * 3 * h; ++i) REQUIRE(v2.dqkv[i] == 0.0f);
    }
  }

  INFO("flash against unfused on the same inputs (each is within tol of the reference)");
  const std::vector<double> v1_dqkv(v1.dqkv.begin(), v1.dqkv.end());
  CHECK(test::max_relative_error(v2.out, v1.out) < 3 * tol);
  check_gradients(v2.dqkv, v1_dqkv, h, 3 * tol);
}

void check_all(const Case& c) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (float p : {0.1f, 0.0f}) check_case(c, dtype, p);
  }
}

}  // namespace

TEST_CASE("attention GPU forward and backward equal CPU: ELECTRA-Small shape", "[attention][gpu]") {
  check_all({"small", 8, 128, 256, 4});
}

TEST_CASE("attention GPU forward and backward equal CPU: ELECTRA-Base shape, T = 512",
          "[attention][gpu]") {
  check_all({"base", 2, 512, 768, 12});
}

TEST_CASE("attention GPU forward and backward equal CPU: T = 37, d = 32", "[attention][gpu]") {
  check_all({"awkward", 3, 37, 64, 2});
}

TEST_CASE("attention GPU forward and backward equal CPU: T = 77 and 129, partial tiles",
          "[attention][gpu]") {
  check_all({"t77", 3, 77, 128, 2});
  check_all({"t129", 2, 129, 64, 2});
}

TEST_CASE("attention GPU forward and backward equal CPU: head dims 128, 24, 20 and 16",
          "[attention][gpu]") {
  check_all({"d128", 2, 100, 256, 2});
  check_all({"d24 (16-byte tile loads: 24 % 8 == 0)", 2, 65, 48, 2});
  check_all({"d20 (scalar tile loads: 20 % 8 != 0)", 2, 65, 40, 2});
  check_all({"d16", 3, 33, 64, 4});
}

TEST_CASE("attention GPU: a sequence that is all padding gives zeros", "[attention][gpu]") {
  check_all({"empty", 3, 70, 128, 2, true});
}

TEST_CASE("attention: flash takes T <= 512 and d <= 128, kAuto falls back, kFlash throws",
          "[attention][gpu]") {
  AttentionArgs args{12, 0.1f, RngStream{}, 0};
  CHECK(attention_uses_flash(Device::CUDA, args, 512, 768));
  CHECK_FALSE(attention_uses_flash(Device::CUDA, args, 513, 768));
  CHECK_FALSE(attention_uses_flash(Device::CPU, args, 128, 768));
  args.heads = 2;
  CHECK_FALSE(attention_uses_flash(Device::CUDA, args, 128, 768));  // d = 384
  args.impl = AttentionImpl::kFlash;
  CHECK_THROWS_WITH(attention_uses_flash(Device::CUDA, args, 128, 768),
                    Catch::Contains("flash needs T <= 512"));
  args.impl = AttentionImpl::kUnfused;
  args.heads = 12;
  CHECK_FALSE(attention_uses_flash(Device::CUDA, args, 128, 768));
}
