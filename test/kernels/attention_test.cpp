// attention on the CPU: the forward against the per-head formula (padding, dropout), padded keys
// and all-padding sequences, the refused arguments, the flash choice, kFlashDsGemm's and
// kFlashShort's state and launches, and the parity checks of attention_cases.cpp (wrong shapes and
// dtypes: attention_contract_test).
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/dropout_mask.h"
#include "test/common/op_case.h"
#include "test/common/test_util.h"
#include "test/kernels/attention_errors.h"

using namespace electra;

namespace {

struct Naive {
  std::vector<double> probs, out;
};

// The textbook formula per (batch, head): slice out Q_h, K_h, V_h, S = Q_h K_h^T / sqrt(d) with
// padded keys at -inf, P = softmax(S), out_h = dropout(P) V_h, heads concatenated.
Naive naive_attention(const std::vector<double>& qkv, const std::vector<int32_t>& mask, int64_t b,
                      int64_t t, int64_t h, int64_t heads, float p, const RngStream& rng,
                      uint32_t site) {
  const int64_t d = h / heads;
  Naive r{std::vector<double>(b * heads * t * t), std::vector<double>(b * t * h)};
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < heads; ++hi) {
      std::vector<double> q(t * d), k(t * d), v(t * d);
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t c = 0; c < d; ++c) {
          const int64_t base = (bi * t + i) * 3 * h + hi * d + c;
          q[i * d + c] = qkv[base];
          k[i * d + c] = qkv[base + h];
          v[i * d + c] = qkv[base + 2 * h];
        }
      }
      for (int64_t i = 0; i < t; ++i) {
        std::vector<double> s(t);
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          s[j] = -INFINITY;
          if (mask[bi * t + j] == 0) continue;
          s[j] = 0;
          for (int64_t c = 0; c < d; ++c) s[j] += q[i * d + c] * k[j * d + c];
          s[j] /= std::sqrt(static_cast<double>(d));
          max = std::max(max, s[j]);
        }
        for (int64_t j = 0; j < t; ++j) sum += std::exp(s[j] - max);
        for (int64_t j = 0; j < t; ++j) {
          const int64_t at = ((bi * heads + hi) * t + i) * t + j;
          const double prob = std::exp(s[j] - max) / sum;
          r.probs[at] = prob;
          const bool keep = attention_keep(
              rng, attention_mask_index(dropout_site_offset(site), bi * heads + hi, t, i, j), p);
          const double dropped = keep ? prob / (1.0 - static_cast<double>(p)) : 0.0;
          for (int64_t c = 0; c < d; ++c) {
            r.out[(bi * t + i) * h + hi * d + c] += dropped * v[j * d + c];
          }
        }
      }
    }
  }
  return r;
}

// The forward on the CPU, its probabilities and scratch [b, heads, t, t] (heads of `args`).
template <class T>
void forward(Context& ctx, std::vector<T>& qkv, std::vector<int32_t>& mask, int64_t b, int64_t t,
             int64_t h, const AttentionArgs& args, std::vector<T>& probs, std::vector<T>& scratch,
             std::vector<T>& out) {
  const int64_t heads = args.heads;
  run_op(ctx, AttentionForward{.qkv = test::view(qkv, {b, t, 3 * h}),
                               .mask = test::view(mask, {b, t}),
                               .args = args,
                               .saved = Out(test::view(probs, {b, heads, t, t})),
                               .scratch = Out(test::view(scratch, {b, heads, t, t})),
                               .out = Out(test::view(out, {b, t, h}))});
}

}  // namespace

TEST_CASE("attention forward equals the per-head formula, with padding and dropout",
          "[attention]") {
  Context ctx = Context::cpu();
  const int64_t b = 2, t = 6, h = 12, heads = 3;
  std::vector<double> qkv = test::random_vector<double>(b * t * 3 * h, 71, -2, 2);
  std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  for (float p : {0.0f, 0.25f}) {
    const AttentionArgs args{heads, p, RngStream{99, RngPurpose::kDropout, 3, 0}, 5};
    std::vector<double> probs(b * heads * t * t), scratch(probs.size()), out(b * t * h);
    forward(ctx, qkv, mask, b, t, h, args, probs, scratch, out);
    const Naive expect = naive_attention(qkv, mask, b, t, h, heads, p, args.rng, args.site);
    INFO("p " << p);
    CHECK(test::max_relative_error(probs, expect.probs) < 1e-13);
    CHECK(test::max_relative_error(out, expect.out) < 1e-13);
    if (p > 0) {
      int dropped = 0;
      for (size_t i = 0; i < probs.size(); ++i) dropped += probs[i] > 0 && scratch[i] == 0;
      CHECK(dropped > 10);  // the mask really drops (about a quarter of 144 real entries)
    }
  }
}

TEST_CASE("attention gives padded keys exactly zero probability and rows that sum to one",
          "[attention]") {
  Context ctx = Context::cpu();
  const int64_t b = 3, t = 5, h = 8, heads = 2;
  std::vector<float> qkv = test::random_vector<float>(b * t * 3 * h, 72, -3, 3);
  // Sequence 2 is all padding: its rows must be zeros, not NaN.
  std::vector<int32_t> mask = {1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0};
  std::vector<float> probs(b * heads * t * t), scratch(probs.size()), out(b * t * h);
  forward(ctx, qkv, mask, b, t, h, AttentionArgs{heads, 0.0f, RngStream{}, 0}, probs, scratch, out);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t row = 0; row < heads * t; ++row) {
      double sum = 0;
      for (int64_t j = 0; j < t; ++j) {
        const float prob = probs[(bi * heads * t + row) * t + j];
        if (mask[bi * t + j] == 0) REQUIRE(prob == 0.0f);
        if (mask[bi * t + j] != 0) REQUIRE(prob > 0.0f);
        sum += prob;
      }
      CHECK(sum == Approx(bi == 2 ? 0.0 : 1.0).margin(1e-6));
    }
  }
  for (int64_t i = 2 * t * h; i < b * t * h; ++i) REQUIRE(out[i] == 0.0f);
}

// Wrong shapes and dtypes of the tensors: attention_contract_test.
TEST_CASE("attention refuses heads that do not divide the hidden size and p >= 1", "[attention]") {
  Context ctx = Context::cpu();
  const int64_t b = 2, t = 4, h = 6;
  std::vector<float> qkv(b * t * 3 * h, 1.0f), probs(b * 4 * t * t), scratch(probs.size());
  std::vector<float> out(b * t * h);
  std::vector<int32_t> mask(b * t, 1);
  const auto run = [&](int64_t heads, float p) {
    forward(ctx, qkv, mask, b, t, h, AttentionArgs{heads, p, RngStream{}, 0}, probs, scratch, out);
  };
  CHECK_NOTHROW(run(2, 0.1f));
  CHECK_THROWS_WITH(run(4, 0.1f), Catch::Contains("hidden 6 is not divisible by 4 heads"));
  CHECK_THROWS_WITH(run(2, 1.0f), Catch::Contains("dropout p"));
}

// attention_uses_flash is host logic: which calls run the flash kernels (no GPU needed to ask).
TEST_CASE("attention: flash takes T <= 512 and d <= 128, kAuto falls back, kFlash throws",
          "[attention]") {
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

// kFlashDsGemm's state and launches are host logic too: flash's L saved, dS [B, heads, T, T] in
// qkv's dtype as the scratch, one kernel and min(heads, B) dQ GEMMs backward; the other choices'
// states unchanged, and the CPU ignores impl.
TEST_CASE("attention: kFlashDsGemm saves L, plans dS as its scratch and counts its dQ GEMMs",
          "[attention]") {
  const int64_t b = 3, t = 70, h = 128, heads = 4;
  AttentionArgs args{heads, 0.1f, RngStream{}, 0, AttentionImpl::kFlashDsGemm};
  for (DType dtype : {DType::BF16, DType::F32}) {
    INFO(dtype_name(dtype));
    const AttentionState s = attention_state(Device::CUDA, args, b, t, h, dtype);
    CHECK(s.flash);
    CHECK(s.ds_scratch);
    CHECK(s.dtype == DType::F32);
    CHECK(s.scratch_dtype == dtype);
    CHECK(s.numel() == b * heads * t);
    CHECK(s.scratch_numel() == b * heads * t * t);
    std::vector<double> storage(s.scratch_numel());  // as wide as either dtype needs
    const Tensor flat = Tensor::view_of(storage.data(), dtype, Device::CPU, {s.scratch_numel()});
    const Tensor scratch = s.scratch_view(flat);
    CHECK(scratch.rank == 4);
    CHECK(scratch.dim(3) == t);
    CHECK_NOTHROW(s.check_scratch(scratch, "scratch"));
    CHECK_THROWS(s.check_scratch(flat.rows(0, b * heads * t).reshape({b, heads, t}), "scratch"));
    const AttentionState cpu = attention_state(Device::CPU, args, b, t, h, dtype);
    CHECK_FALSE(cpu.flash);
    CHECK_FALSE(cpu.ds_scratch);
    CHECK(cpu.scratch_dtype == dtype);
    CHECK(cpu.numel() == cpu.scratch_numel());
  }
  for (AttentionImpl impl : {AttentionImpl::kAuto, AttentionImpl::kFlash}) {
    args.impl = impl;
    const AttentionState s = attention_state(Device::CUDA, args, b, t, h, DType::BF16);
    CHECK(s.flash);
    CHECK_FALSE(s.ds_scratch);
    CHECK(s.scratch_dtype == DType::F32);
    CHECK(s.scratch_numel() == b * heads * t);
  }

  std::vector<float> x(b * t * 3 * h);
  const Tensor qkv = Tensor::view_of(x.data(), Device::CPU, {b, t, 3 * h});
  args.impl = AttentionImpl::kFlashDsGemm;
  const Launches fwd = detail::attention_launches(qkv, args, false);
  const Launches bwd = detail::attention_launches(qkv, args, true);
  CHECK(fwd.kernels == 1);
  CHECK(fwd.library_calls == 0);
  CHECK(bwd.kernels == 1);
  CHECK(bwd.library_calls == 3);  // min(heads 4, B 3) batched GEMMs
  args.heads = 2;                 // d = 64: min(2, 3)
  CHECK(detail::attention_launches(qkv, args, true).library_calls == 2);
  args.impl = AttentionImpl::kFlash;
  CHECK(detail::attention_launches(qkv, args, true).library_calls == 0);

  args.impl = AttentionImpl::kFlashDsGemm;  // d = 384 at 768 / 2: no fallback
  CHECK_THROWS_WITH(attention_uses_flash(Device::CUDA, args, 128, 768),
                    Catch::Contains("flash needs T <= 512"));
  CHECK_FALSE(attention_uses_ds_gemm(Device::CPU, args, 128, 128));
}

// kFlashShort is host logic too: v2's state (L saved, the [B, heads, T] f32 scratch unused) and
// launches (one kernel each way) whichever kernels run; its own kernels, the forward and the
// one-pass backward alike (attention_uses_short: AttentionForward::cuda and AttentionBackward::cuda
// both branch on it), only for bf16 at T <= 128 and d = 64, on CUDA; kAuto takes them there too
// (measured faster than v2's, bench/RESULTS.md 2026-11-28), kFlash and kFlashDsGemm never; a shape
// flash does not support throws, as for kFlash.
TEST_CASE(
    "attention: kFlashShort keeps v2's state and launches, its own forward and backward only for "
    "bf16 at T <= 128, d = 64",
    "[attention]") {
  const int64_t b = 3, t = 128, h = 256, heads = 4;  // ELECTRA-Small: d = 64
  AttentionArgs args{heads, 0.1f, RngStream{}, 0, AttentionImpl::kFlashShort};
  for (DType dtype : {DType::BF16, DType::F32}) {
    INFO(dtype_name(dtype));
    const AttentionState s = attention_state(Device::CUDA, args, b, t, h, dtype);
    args.impl = AttentionImpl::kFlash;
    const AttentionState flash = attention_state(Device::CUDA, args, b, t, h, dtype);
    args.impl = AttentionImpl::kFlashShort;
    CHECK(s.flash);
    CHECK_FALSE(s.ds_scratch);
    CHECK(s.dtype == flash.dtype);
    CHECK(s.scratch_dtype == DType::F32);
    CHECK(s.numel() == b * heads * t);
    CHECK(s.scratch_numel() == flash.scratch_numel());
    CHECK_FALSE(attention_state(Device::CPU, args, b, t, h, dtype).flash);
  }
  CHECK(attention_uses_short(Device::CUDA, args, t, h, DType::BF16));
  for (int64_t short_t : {1, 16, 77, 127}) {
    CHECK(attention_uses_short(Device::CUDA, args, short_t, h, DType::BF16));
  }
  CHECK(attention_uses_short(Device::CUDA,
                             AttentionArgs{1, 0.0f, RngStream{}, 0, AttentionImpl::kFlashShort}, t,
                             64, DType::BF16));
  CHECK_FALSE(attention_uses_short(Device::CUDA, args, t, h, DType::F32));
  CHECK_FALSE(attention_uses_short(Device::CUDA, args, 129, h, DType::BF16));
  CHECK_FALSE(attention_uses_short(Device::CUDA, args, t, 128, DType::BF16));  // d 32
  CHECK_FALSE(attention_uses_short(Device::CUDA, args, t, 512, DType::BF16));  // d 128
  CHECK_FALSE(attention_uses_short(Device::CPU, args, t, h, DType::BF16));
  CHECK_FALSE(attention_uses_short(Device::CUDA, args, t, 192, DType::BF16));  // d 48
  for (AttentionImpl impl : {AttentionImpl::kAuto, AttentionImpl::kFlash,
                             AttentionImpl::kFlashDsGemm, AttentionImpl::kUnfused}) {
    const AttentionArgs other{heads, 0.1f, RngStream{}, 0, impl};
    INFO("impl " << static_cast<int>(impl));
    CHECK(attention_uses_short(Device::CUDA, other, t, h, DType::BF16) ==
          (impl == AttentionImpl::kAuto));
    CHECK_FALSE(attention_uses_short(Device::CUDA, other, t, h, DType::F32));
    CHECK_FALSE(attention_uses_short(Device::CUDA, other, 129, h, DType::BF16));
  }
  // Every T from 1 to 128 (partial warps, a single query) at the heads of every ELECTRA size
  // (d = 64), in both directions (one predicate), and none past 128.
  for (const auto& [hidden, n] :
       {std::pair<int64_t, int64_t>{256, 4}, {768, 12}, {1024, 16}, {64, 1}}) {
    const AttentionArgs size_args{n, 0.1f, RngStream{}, 0, AttentionImpl::kFlashShort};
    int64_t taken = 0;
    for (int64_t short_t = 1; short_t <= kFlashShortMaxSeqLen + 8; ++short_t) {
      taken += attention_uses_short(Device::CUDA, size_args, short_t, hidden, DType::BF16) ? 1 : 0;
    }
    CHECK(taken == kFlashShortMaxSeqLen);
    CHECK_FALSE(attention_uses_short(Device::CUDA, size_args, kFlashShortMaxSeqLen + 1, hidden,
                                     DType::BF16));
  }
  // Elsewhere its forward and backward are v2's: still flash.
  CHECK(attention_uses_flash(Device::CUDA, args, 512, h));
  CHECK_FALSE(attention_uses_short(Device::CUDA, args, 512, h, DType::BF16));
  CHECK_FALSE(attention_uses_ds_gemm(Device::CUDA, args, t, h));

  std::vector<float> x(b * t * 3 * h);
  const Tensor qkv = Tensor::view_of(x.data(), Device::CPU, {b, t, 3 * h});
  args.impl = AttentionImpl::kFlashShort;
  for (bool backward : {false, true}) {
    const Launches l = detail::attention_launches(qkv, args, backward);
    CHECK(l.kernels == 1);
    CHECK(l.library_calls == 0);
  }
  args.heads = 2;  // d = 384 at 768 / 2: no fallback
  CHECK_THROWS_WITH(attention_uses_flash(Device::CUDA, args, 128, 768),
                    Catch::Contains("flash needs T <= 512"));
  CHECK_THROWS(attention_uses_short(Device::CUDA, args, 128, 768, DType::BF16));
}

namespace {

// The case of attention_cases.cpp named `name`.
test::OpCase attention_case(const std::string& name) {
  for (const test::OpCase& c : test::op_cases()) {
    if (c.name() == name) return c;
  }
  FAIL("no case " << name);
  return {};
}

}  // namespace

// The GPU parity checks of attention_cases.cpp that the harness does not have (dqkv in parts,
// flash's L, rows without a real key) pass the reference itself and fail where they should.
TEST_CASE("attention: only the bf16 flash calls take keep bits, 1 bit an element", "[attention]") {
  const int64_t b = 3, h = 256, heads = 4;
  for (AttentionImpl impl : {AttentionImpl::kAuto, AttentionImpl::kFlash,
                             AttentionImpl::kFlashDsGemm, AttentionImpl::kFlashShort}) {
    const AttentionArgs args{heads, 0.1f, RngStream{}, 0, impl};
    for (int64_t t : {1, 77, 128, 512}) {
      INFO("impl " << static_cast<int>(impl) << ", T = " << t);
      const AttentionState s = attention_state(Device::CUDA, args, b, t, h, DType::BF16);
      CHECK(s.keep_words);
      const int64_t tiles = (t + 15) / 16 * ((t + 7) / 8);  // 16 queries x 8 keys, 4 words each
      CHECK(s.keep_numel() == b * heads * 4 * tiles);
      if (t % 16 == 0) CHECK(s.keep_numel() * 32 == b * heads * t * t);
      std::vector<int32_t> flat(static_cast<size_t>(s.keep_numel()));
      const Tensor keep = s.keep_view(test::view(flat, {s.keep_numel()}));
      REQUIRE(keep.rank == 4);
      CHECK(keep.dim(0) == b * heads);
      CHECK(keep.dim(1) == (t + 15) / 16);
      CHECK(keep.dim(2) == (t + 7) / 8);
      CHECK(keep.dim(3) == 4);
      CHECK_FALSE(attention_state(Device::CUDA, args, b, t, h, DType::F32).keep_words);
      CHECK_FALSE(attention_state(Device::CPU, args, b, t, h, DType::BF16).keep_words);
    }
    // Past flash's T, kAuto runs version 1: no keep bits.
    if (impl == AttentionImpl::kAuto) {
      CHECK_FALSE(attention_state(Device::CUDA, args, b, 513, h, DType::BF16).keep_words);
    }
  }
  const AttentionArgs unfused{heads, 0.1f, RngStream{}, 0, AttentionImpl::kUnfused};
  CHECK_FALSE(attention_state(Device::CUDA, unfused, b, 128, h, DType::BF16).keep_words);
  CHECK(attention_state(Device::CPU, unfused, b, 128, h, DType::BF16).keep_numel() == 0);

  // A call that takes none refuses one (the CPU reference, here).
  Context ctx = Context::cpu();
  const int64_t t = 6, hh = 12;
  std::vector<float> qkv(b * t * 3 * hh, 0.5f), probs(b * 3 * t * t), out(b * t * hh);
  std::vector<int32_t> mask(b * t, 1), words(64);
  const AttentionArgs args{3, 0.1f, RngStream{}, 0};
  CHECK_THROWS_WITH(run_op(ctx, AttentionForward{.qkv = test::view(qkv, {b, t, 3 * hh}),
                                                 .mask = test::view(mask, {b, t}),
                                                 .args = args,
                                                 .saved = Out(test::view(probs, {b, 3, t, t})),
                                                 .scratch = Out(test::view(probs, {b, 3, t, t})),
                                                 .out = Out(test::view(out, {b, t, hh})),
                                                 .keep = Out(test::view(words, {64}))}),
                    Catch::Contains("keep bits") && Catch::Contains("saves none"));
}

TEST_CASE("attention's parity checks fail where they should", "[attention]") {
  const test::OpCase c = attention_case("attention/flash_empty_3x70x128_h2_p0.1");
  const int64_t b = 3, t = 70, h = 128, heads = 2;
  const double tol = c.tol.bf16;
  const auto& dqkv = c.spec("dqkv").check;
  std::vector<double> want = test::random_vector<double>(b * t * 3 * h, 5, 0.1, 1);
  std::fill(want.end() - t * 3 * h, want.end(), 0.0);  // the sequence of padding only
  CHECK(dqkv(want, want, tol).empty());
  std::vector<double> got = want;
  for (int64_t row = 0; row < b * t; ++row) {
    for (int64_t col = 0; col < h; ++col) got[row * 3 * h + col] *= 1 + 1.5 * tol;  // dQ
  }
  CHECK_THAT(dqkv(got, want, tol), Catch::StartsWith("dQ normwise"));
  got = want;
  got[5 * 3 * h + 2 * h + 7] *= 1 + 1.5 * tol;  // one element of dV
  CHECK_THAT(dqkv(got, want, tol), Catch::StartsWith("dV relative"));
  got = want;
  got[h + 3] = std::nan("");
  CHECK_THAT(dqkv(got, want, tol), Catch::StartsWith("dK normwise"));
  got = want;
  got.back() = 1e-30;
  CHECK_THAT(dqkv(got, want, tol), Catch::Contains("padding only"));

  // At T = 1 the reference's dQ and dK are exactly 0: measured against dV's norm.
  const test::OpCase c1 = attention_case("attention/flash_short_3x1x256_h4_p0.1");
  const auto& one_key = c1.spec("dqkv").check;
  const int64_t h1 = 256;
  std::vector<double> want1 = test::random_vector<double>(3 * 3 * h1, 8, 0.1, 1);
  for (int64_t row = 0; row < 3; ++row) std::fill_n(want1.begin() + row * 3 * h1, 2 * h1, 0.0);
  std::fill(want1.end() - 3 * h1, want1.end(), 0.0);  // the sequence of padding only
  CHECK(one_key(want1, want1, tol).empty());
  std::vector<double> got1 = want1;
  got1[1] = 0.1 * tol * want1[2 * h1];  // dQ rounding: far below dV's norm
  CHECK(one_key(got1, want1, tol).empty());
  got1[h1 + 1] =
      2 * tol * test::l2_norm(test::qkv_part(want1, h1, 2));  // dK as large as tol x ||dV||
  CHECK_THAT(one_key(got1, want1, tol), Catch::StartsWith("dK normwise"));

  const auto& out = c.spec("out").check;
  std::vector<double> o = test::random_vector<double>(b * t * h, 6, 0.1, 1);
  std::fill(o.end() - t * h, o.end(), 0.0);
  CHECK(out(o, o, tol).empty());
  std::vector<double> o2 = o;
  o2.back() = -1e-30;
  CHECK_THAT(out(o2, o, tol), Catch::Contains("padding only"));

  const auto& lse = c.spec("lse").check;
  std::vector<double> l = test::random_vector<double>(b * heads * t, 7, 2, 6);
  std::fill(l.end() - heads * t, l.end(), INFINITY);
  CHECK(lse(l, l, tol).empty());
  std::vector<double> l2 = l;
  l2[4] += 0.5 * tol * l[4];  // within |got - L| / max(1, |L|) < tol
  CHECK(lse(l2, l, tol).empty());
  l2[4] = l[4] * (1 + 1.5 * tol);
  CHECK_FALSE(lse(l2, l, tol).empty());
  l2 = l;
  l2[9] = std::nan("");
  CHECK_FALSE(lse(l2, l, tol).empty());
  l2 = l;
  l2.back() = 1e30;  // finite where the row has no real key
  CHECK_THAT(lse(l2, l, tol), Catch::Contains("not +inf"));
}
