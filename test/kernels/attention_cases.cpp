// attention (kernels/attention.h) for the op harness (test/common/op_case.h). GPU parity of the
// three implementations, version 1 (cuBLASLt GEMMs around the fused softmax kernels), flash (the
// f32 parity kernels and the bf16 mma.sync kernels) and flash with the dS GEMM (kFlashDsGemm:
// flash's dK, dV blocks write dS, cuBLASLt computes dQ; "flash_ds_" cases), in f32 and bf16,
// and kFlashShort (one block per head each way at bf16, T <= 128, d = 64: its forward and its
// one-pass backward; "flash_short_" cases, bf16 at T = 128, 77, 16 and 1 with 1 and 4 heads, out,
// L and dqkv checked, and one shape it hands to v2's kernels, in f32 and bf16)
// against the CPU reference run in f64 on the same (bf16-rounded where the GPU reads bf16) inputs,
// with padding, dropout 0.1 (outputs agree only if the dropout masks are identical) and 0:
// ELECTRA-Small, Base at T = 512,
// T = 37 with d = 32, partial tiles (T = 77, 129; d = 128 at T = 129), head dims 128, 24 (16-byte
// tile loads), 20 (element-wise tile loads) and 16, and a sequence of padding only; each run twice
// gives the same bits, every output and workspace poisoned before each run (flash has no atomics).
// Gradient checks in f64 at a small odd shape and at ELECTRA-Small (47 sampled coordinates).
// Benchmarks in bf16 (bench/attention_bench.cu): flash, version 1 its baseline, at the head counts
// of Small (4), Base (12) and Large (16), T = 128 and 512, 16384 tokens per call, under the
// RESULT names bench/attention_sdpa_baseline.py pairs with; and at the same shapes kFlashDsGemm
// with flash as its baseline (RESULT op attention_flash_ds_fwd / _bwd), at T = 128 kFlashShort
// (its own forward and backward) with flash as its baseline (RESULT op attention_flash_short_fwd /
// _bwd). Hand values, masks,
// all-padding rows on the CPU, flash's shape limits and refusals: attention_test.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels/attention.h"
#include "kernels/dropout_mask.h"
#include "test/common/op_case.h"
#include "test/kernels/attention_errors.h"

namespace electra::test {
namespace {

constexpr Tol kTol = {1e-5, 2e-2};

// "_p0.1", "_p0": the dropout probability in a case's name.
std::string p_suffix(float p) {
  char name[16];
  std::snprintf(name, sizeof name, "_p%g", static_cast<double>(p));
  return name;
}

struct Shape {
  std::string label;  // names the case: <impl>_<label>_p<p>
  int64_t b, t, h, heads;
};

// Q and K uniform in [-1, 1), V in [0.1, 1): out and dV are then sums of positive terms (with the
// positive dout), not cancellations whose elementwise error says nothing about the kernel
// (matmul_gpu_test.cpp). The positive V and dout give dPd = dout V^T a large common offset that
// the softmax backward subtracts: version 1 keeps dPd in f32 for that reason (attention.h).
Fill positive_v(int64_t h) {
  return {.make = [h](size_t n, uint64_t seed) {
    std::vector<double> qkv = random_vector<double>(n, seed, -1, 1);
    const std::vector<double> v = random_vector<double>(n / 3, seed + 1, 0.1, 1);
    for (size_t row = 0; row < n / (3 * h); ++row) {
      for (int64_t c = 0; c < h; ++c) qkv[row * 3 * h + 2 * h + c] = v[row * h + c];
    }
    return qkv;
  }};
}

// 1 = real key. Sequence 0 is full, sequence bi > 0 ends in 1 + (13 bi) % max(T / 2, 1) padded
// keys (all of its one key at T = 1); the last one is all padding when `empty` (rows without a
// real key).
Fill tail_padding(int64_t b, int64_t t, bool empty) {
  return {.make = [=](size_t, uint64_t) {
    std::vector<double> mask(b * t, 1.0);
    const int64_t span = std::max<int64_t>(t / 2, 1);
    for (int64_t bi = 1; bi < b; ++bi) {
      for (int64_t j = t - 1 - (bi * 13) % span; j < t; ++j) mask[bi * t + j] = 0;
    }
    if (empty) std::fill(mask.end() - t, mask.end(), 0.0);
    return mask;
  }};
}

// The odd sequences' last T/4 keys padded, as bench/attention_sdpa_baseline.py pads them.
Fill odd_padded(int64_t b, int64_t t) {
  return {.make = [=](size_t, uint64_t) {
    std::vector<double> mask(b * t, 1.0);
    for (int64_t bi = 1; bi < b; bi += 2) {
      for (int64_t j = t - t / 4; j < t; ++j) mask[bi * t + j] = 0;
    }
    return mask;
  }};
}

// Whether the last of the b sequences in `got` is exactly 0, where it is padding only.
bool padding_only_zero(const std::vector<double>& got, int64_t b, bool empty_last) {
  const auto last = got.end() - static_cast<std::ptrdiff_t>(got.size() / b);
  return !empty_last || std::all_of(last, got.end(), [](double v) { return v == 0; });
}

// dqkv: dQ and dK normwise, dV elementwise (attention_errors.h says why); with `empty_last`, the
// last sequence (rows without a real key) exactly 0.
TensorSpec::Check dqkv_check(int64_t b, int64_t h, bool empty_last) {
  return [=](const std::vector<double>& got, const std::vector<double>& want, double tol) {
    const AttentionGradErrors e = attention_grad_errors(got, want, h);
    std::string why;
    // `!(err < tol)`: a NaN error fails.
    for (const auto& [err, what] :
         {std::pair{e.dq, "dQ normwise "}, std::pair{e.dk, "dK normwise "},
          std::pair{e.dv, "dV relative "}}) {
      if (!(err < tol)) why += what + std::to_string(err) + " >= " + std::to_string(tol) + "; ";
    }
    if (!padding_only_zero(got, b, empty_last)) why += "the sequence of padding only is not 0";
    return why;
  };
}

// out elementwise; with `empty_last`, the last sequence exactly 0.
TensorSpec::Check out_check(int64_t b, bool empty_last) {
  return [=](const std::vector<double>& got, const std::vector<double>& want, double tol) {
    const double err = max_relative_error(got, want);
    if (!(err < tol)) return "relative error " + std::to_string(err) + " >= " + std::to_string(tol);
    return std::string(
        padding_only_zero(got, b, empty_last) ? "" : "the sequence of padding only is not 0");
  };
}

// Flash's L against the reference's: +inf where the row has no real key, elsewhere
// |got - L| / max(1, |L|).
std::string lse_check(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      if (!(std::isinf(got[i]) && got[i] > 0)) return "element " + std::to_string(i) + " not +inf";
    } else {
      const double err = std::abs(got[i] - want[i]) / std::max(1.0, std::abs(want[i]));
      if (!(err < tol)) return "element " + std::to_string(i) + ": error " + std::to_string(err);
    }
  }
  return {};
}

// L [B, heads, T] in f64 (attention.h): log sum_j exp(S_ij) over the real keys j, +inf for a row
// without one, from the f64 reference's qkv and mask into its lse.
void reference_lse(const Args& a, int64_t heads) {
  const Tensor &qkv = a["qkv"], &mask = a["mask"];
  const int64_t b = qkv.dim(0), t = qkv.dim(1), h = qkv.dim(2) / 3, d = h / heads;
  const double* x = qkv.ptr<double>();
  const int32_t* real = mask.ptr<int32_t>();
  double* lse = a["lse"].ptr<double>();
  std::vector<double> s(t);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < heads; ++hi) {
      for (int64_t i = 0; i < t; ++i) {
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < t; ++j) {
          if (real[bi * t + j] == 0) continue;
          s[j] = 0;
          for (int64_t c = 0; c < d; ++c) {
            s[j] += x[(bi * t + i) * 3 * h + hi * d + c] * x[(bi * t + j) * 3 * h + h + hi * d + c];
          }
          s[j] /= std::sqrt(static_cast<double>(d));
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          if (real[bi * t + j] != 0) sum += std::exp(s[j] - max);
        }
        lse[(bi * heads + hi) * t + i] =
            sum > 0 ? max + std::log(sum) : std::numeric_limits<double>::infinity();
      }
    }
  }
}

// The keep bits the bf16 flash forward saves (attention.h: `keep`), from the CPU's draws: bit
// flash_layout::keep_at(T, i, j) of head bh's words for every (query i, key j) inside T (the bits
// outside T are unspecified: keep_check passes them over).
void reference_keep(const Args& a, const AttentionArgs& args) {
  const Tensor& keep = a["keep"];
  const int64_t t = a["qkv"].dim(1), per_head = flash_layout::keep_words_per_head(t);
  auto* words = static_cast<uint32_t*>(keep.data);
  std::fill(words, words + keep.numel(), 0u);
  const uint64_t site = dropout_site_offset(args.site);
  for (int64_t bh = 0; bh < keep.dim(0); ++bh) {
    for (int i = 0; i < t; ++i) {
      for (int j = 0; j < t; ++j) {
        if (!attention_keep(args.rng, attention_mask_index(site, bh, t, i, j), args.dropout_p)) {
          continue;
        }
        const flash_layout::KeepAt at = flash_layout::keep_at(t, i, j);
        words[bh * per_head + at.word] |= 1u << at.bit;
      }
    }
  }
}

// The saved keep bits of every (query, key) inside T bit for bit; a failure names the first
// (head, query, key) whose bit differs (the C fragment element each word's bit stands for:
// flash_layout::keep_tile_word).
TensorSpec::Check keep_check(int64_t t) {
  return [t](const std::vector<double>& got, const std::vector<double>& want, double) {
    const int64_t per_head = flash_layout::keep_words_per_head(t);
    const int64_t key_tiles = flash_layout::keep_key_tiles(t);
    int64_t differ = 0;
    std::string first;
    for (size_t w = 0; w < want.size(); ++w) {
      const auto g = static_cast<uint32_t>(static_cast<int64_t>(got[w]));
      const auto x = static_cast<uint32_t>(static_cast<int64_t>(want[w]));
      for (int lane = 0; lane < 32; ++lane) {
        if (((g ^ x) >> lane & 1u) == 0) continue;
        const int64_t in_head = static_cast<int64_t>(w) % per_head, tile = in_head / 4;
        const flash_layout::Coord c = flash_layout::mma_c(lane, static_cast<int>(in_head % 4));
        const int64_t i = 16 * (tile / key_tiles) + c.row, j = 8 * (tile % key_tiles) + c.col;
        if (i >= t || j >= t || differ++ > 0) continue;
        first = str_cat("head ", static_cast<int64_t>(w) / per_head, ", query ", i, ", key ", j,
                        ": ", (g >> lane & 1u) != 0 ? "kept" : "dropped", ", the CPU's ",
                        (x >> lane & 1u) != 0 ? "kept" : "dropped");
      }
    }
    return differ == 0
               ? std::string()
               : str_cat(differ, " keep bits differ from the CPU's draws; first at ", first);
  };
}

struct Setup {
  AttentionImpl impl;
  float p;
  Fill qkv, dout, mask;
  bool empty_last = false;  // the mask's last sequence is padding only
};

// The name of an implementation's cases: <prefix><label>_p<p>.
const char* impl_prefix(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::kFlash:
      return "flash_";
    case AttentionImpl::kFlashDsGemm:
      return "flash_ds_";
    case AttentionImpl::kFlashShort:
      return "flash_short_";
    case AttentionImpl::kAuto:
      return "auto_";
    case AttentionImpl::kUnfused:
      break;
  }
  return "v1_";
}

// One case of `impl` at `shape`. The saved state and the scratch on each side (attention.h):
// "probs" [B, heads, T, T] in qkv's dtype (version 1's and the CPU's P: compared for version 1;
// in flash cases a workspace, on the GPU kFlashDsGemm's dS scratch and the benchmark's version-1
// baseline's P), "scratch" [B, heads, T, T] (f32 on the GPU, the CPU's in qkv's dtype; flash's
// [B, heads, T], which flash leaves untouched, is its prefix) and, for flash and kFlashDsGemm,
// their L "lse" [B, heads, T] and "keep" (attention.h; given to the GPU where the call takes it,
// bf16; at p > 0 compared bit for bit with the CPU's draws in bf16 runs, a workspace at p = 0).
OpCase attention(const Shape& shape, Setup s, unsigned modes) {
  const int64_t b = shape.b, t = shape.t, h = shape.h, heads = shape.heads;
  const bool flash = s.impl != AttentionImpl::kUnfused;
  const int64_t d = h / heads;
  // A failure's locus names the batch, the row, the Q, K or V part, the head and the column.
  std::vector<TensorSpec> tensors = {
      input("qkv", {b, t, 3 * h}, s.qkv),
      input("mask", {b, t}, s.mask, Kind::kI32),
      output("out", {b, t, h})
          .checked(out_check(b, flash && s.empty_last))
          .located_as({b, t, heads, d}),
      upstream("dout", "out", {b, t, h}, Kind::kAct, s.dout),
      grad("dqkv", "qkv", {b, t, 3 * h})
          .checked(dqkv_check(b, h, flash && s.empty_last))
          .located_as({b, t, 3, heads, d}),
      workspace("scratch", {b, heads, t, t}, Kind::kParam),
  };
  if (flash) {
    tensors.push_back(output("lse", {b, heads, t}, Kind::kParam).checked(lse_check));
    tensors.push_back(workspace("probs", {b, heads, t, t}, Kind::kAct));
    const std::vector<int64_t> keep_dims = {b * heads, flash_layout::keep_query_tiles(t),
                                            flash_layout::keep_key_tiles(t), 4};
    tensors.push_back(
        s.p > 0 ? output("keep", keep_dims, Kind::kI32).only_in(DType::BF16).checked(keep_check(t))
                : workspace("keep", keep_dims, Kind::kI32));
  } else {
    tensors.push_back(output("probs", {b, heads, t, t}).relative(kTol));
  }
  // The forward's saved state and the scratch on ctx's device.
  const auto state = [flash, impl = s.impl](const Context& ctx, const Args& a) {
    if (ctx.device() == Device::CPU || !flash) return std::pair{a["probs"], a["scratch"]};
    const Tensor& lse = a["lse"];
    if (impl == AttentionImpl::kFlashDsGemm) return std::pair{lse, a["probs"]};
    const Tensor scratch = a["scratch"].reshape({a["scratch"].numel()}).rows(0, lse.numel());
    return std::pair{lse, scratch.reshape({lse.dim(0), lse.dim(1), lse.dim(2)})};
  };
  const auto args = [heads, s](const Context& ctx) {
    return AttentionArgs{heads, s.p, ctx.rng(RngPurpose::kDropout, 5), 3, s.impl};
  };
  // The keep bits where the call takes them (bf16 flash on the GPU), else none.
  const auto keep = [args](const Context& ctx, const Args& a) {
    const Tensor& qkv = a["qkv"];
    const bool takes =
        attention_state(ctx.device(), args(ctx), qkv.dim(0), qkv.dim(1), qkv.dim(2) / 3, qkv.dtype)
            .keep_words;
    return takes ? a["keep"] : Tensor{};
  };
  const Run forward = [state, args, keep](Context& ctx, const Args& a) {
    const auto [saved, scratch] = state(ctx, a);
    run_op(ctx, AttentionForward{.qkv = a["qkv"],
                                 .mask = a["mask"],
                                 .args = args(ctx),
                                 .saved = Out(saved),
                                 .scratch = Out(scratch),
                                 .out = Out(a["out"]),
                                 .keep = Out(keep(ctx, a))});
  };
  const Run backward = [state, args, keep](Context& ctx, const Args& a) {
    const auto [saved, scratch] = state(ctx, a);
    run_op(ctx, AttentionBackward{.qkv = a["qkv"],
                                  .mask = a["mask"],
                                  .args = args(ctx),
                                  .saved = saved,
                                  .dout = a["dout"],
                                  .scratch = Out(scratch),
                                  .dqkv = Out(a["dqkv"]),
                                  .out = a["out"],
                                  .keep = keep(ctx, a)});
  };
  OpCase c{
      .op = "attention",
      .shape = impl_prefix(s.impl) + shape.label + p_suffix(s.p),
      .tensors = std::move(tensors),
      .forward = forward,
      .backward = backward,
      .modes = modes,
      .tol = kTol,
      .tol_reason =
          "f32 within 1e-5, bf16 within 2e-2 of the f64 reference on the same inputs; "
          "out, P and dV elementwise (positive V and dout: sums of positive terms), dQ "
          "and dK normwise ||got - ref||_2 / ||ref||_2 (sums of dS whose rows sum to "
          "zero: the CPU's own f32 dQ is 4e-4 off elementwise, 8e-7 normwise)",
      .seed = 77,
      .reference_f64 = true,
  };
  if (flash) {
    c.reference = [forward, backward, heads, args, p = s.p](Context& ctx, const Args& a) {
      forward(ctx, a);
      backward(ctx, a);
      reference_lse(a, heads);
      // Whatever the GPU's dtype (the f64 reference's act() is F64): `keep` is compared in bf16
      // runs only.
      if (p > 0) reference_keep(a, args(ctx));
    };
  }
  return c;
}

// The gradient check's case: qkv in [-1.5, 1.5), the loss's weights in [-1, 1).
OpCase gradcheck(const Shape& shape, Fill mask, float p, size_t max_checks) {
  OpCase c =
      attention(shape, {AttentionImpl::kUnfused, p, {.lo = -1.5, .hi = 1.5}, {}, std::move(mask)},
                kGradcheck);
  c.shape = c.shape.substr(3);  // "v1_": the CPU reference has one implementation
  c.max_checks = max_checks;
  return c;
}

// The benchmark at a model's width and heads, T = t, 16384 tokens, bf16: `impl` timed, `baseline`
// beside it as "baseline_<baseline_name>", both validated at batch 2 first. Flash's case has the
// RESULT names bench/attention_sdpa_baseline.py pairs with (op attention_fwd / _bwd);
// kFlashDsGemm's has op attention_flash_ds_fwd / _bwd, kFlashShort's attention_flash_short_fwd /
// _bwd, at the same shape names.
OpCase bench(const std::string& model, int64_t h, int64_t heads, int64_t t, float p,
             AttentionImpl impl, AttentionImpl baseline, const std::string& baseline_name) {
  const int64_t b = 16384 / t;
  auto at = [=](int64_t batch, AttentionImpl impl) {
    const Shape shape{
        model + "_B" + std::to_string(batch) + "_T" + std::to_string(t) + "_H" + std::to_string(h),
        batch, t, h, heads};
    return attention(shape, {impl, p, positive_v(h), {.lo = 0.1, .hi = 1}, odd_padded(batch, t)},
                     kBench);
  };
  OpCase c = at(b, impl);
  // The names bench/attention_sdpa_baseline.py gives its rows.
  c.shape = model + "_B" + std::to_string(b) + "_T" + std::to_string(t) + "_H" + std::to_string(h) +
            p_suffix(p);
  c.bench_op = impl == AttentionImpl::kFlashDsGemm  ? "attention_flash_ds"
               : impl == AttentionImpl::kFlashShort ? "attention_flash_short"
                                                    : "attention";
  c.bench_validation = [at, impl] { return at(2, impl); };
  c.baseline_impl = "baseline_" + baseline_name;
  c.baseline_case = [at, baseline] { return at(2, baseline); };
  // The useful math of every version, 4 products in the backward (flash's backward computes 7,
  // S and dPd in both roles; kFlashDsGemm's 5, S recomputed; kFlashShort's 5, each once).
  c.bench_flops = [](const Args& a, bool backward) {
    return detail::attention_flops(a["qkv"], backward);
  };
  // Flash's traffic: qkv and out forward, qkv, dout, out and dqkv backward, plus the rows' L in
  // f32 (D never leaves the backward's blocks); bench/attention_sdpa_baseline.py counts the same.
  // kFlashDsGemm's rows count the same ideal bytes (its dS, 2 B h T^2 bytes written and read
  // again, is its own overhead, as version 1's T^2 tensors are).
  c.bench_bytes = [=](DType dtype, bool backward) {
    const double qkv = 3.0 * b * t * h * dtype_size(dtype), out = qkv / 3,
                 rows = 4.0 * b * heads * t;
    return backward ? 2 * qkv + 2 * out + rows : qkv + out + rows;
  };
  return c;
}

}  // namespace

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases = {
      gradcheck({"2x5x12_h3", 2, 5, 12, 3}, fixed({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}), 0.0f, 0),
      gradcheck({"2x5x12_h3", 2, 5, 12, 3}, fixed({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}), 0.1f, 0),
  };
  // 47 coordinates asked (48 checked): the stride 98304 / 47 walks over Q, K and V columns of every
  // head. The harness's step 1e-5 and compensated loss keep the difference quotient's rounding
  // noise far below 1e-6 here (the former test needed h = 1e-4 with a plain sum of 32768 terms).
  for (float p : {0.0f, 0.1f}) {
    cases.push_back(gradcheck({"small_1x128x256_h4", 1, 128, 256, 4},
                              {.make =
                                   [](size_t n, uint64_t) {
                                     std::vector<double> mask(n, 1.0);
                                     std::fill(mask.begin() + 100, mask.end(), 0.0);
                                     return mask;
                                   }},
                              p, 47));
  }
  const std::vector<std::pair<Shape, bool>> shapes = {
      {{"small_8x128x256_h4", 8, 128, 256, 4}, false},
      {{"base_2x512x768_h12", 2, 512, 768, 12}, false},
      {{"3x37x64_h2", 3, 37, 64, 2}, false},  // d = 32
      {{"3x77x128_h2", 3, 77, 128, 2}, false},
      {{"2x129x64_h2", 2, 129, 64, 2}, false},
      {{"2x129x256_h2", 2, 129, 256, 2}, false},  // d = 128, partial tiles
      {{"2x100x256_h2", 2, 100, 256, 2}, false},  // d = 128
      {{"2x65x48_h2", 2, 65, 48, 2}, false},      // d = 24: 16-byte tile loads (24 % 8 == 0)
      {{"2x65x40_h2", 2, 65, 40, 2}, false},      // d = 20: element-wise tile loads
      {{"3x33x64_h4", 3, 33, 64, 4}, false},      // d = 16
      {{"empty_3x70x128_h2", 3, 70, 128, 2}, true},
  };
  // kFlashDsGemm at the same tolerance as flash: its dQ multiplies the same bf16-rounded dS (the
  // dK product's operand; f32 in an f32 run) by K with f32 accumulation and rounds the result
  // once, as flash's dQ blocks do, only in cuBLASLt's order of the T products.
  for (const auto& [shape, empty] : shapes) {
    for (AttentionImpl impl :
         {AttentionImpl::kUnfused, AttentionImpl::kFlash, AttentionImpl::kFlashDsGemm}) {
      for (float p : {0.1f, 0.0f}) {
        cases.push_back(attention(shape,
                                  {impl,
                                   p,
                                   positive_v(shape.h),
                                   {.lo = 0.1, .hi = 1},
                                   tail_padding(shape.b, shape.t, empty),
                                   empty},
                                  kGpu));
      }
    }
  }
  // kFlashShort's forward and one-pass backward: bf16 only (f32 runs v2's kernels), d = 64,
  // T = 128 (the longest they take: 8 warps of 16 queries), 77 (a partial warp, warps past T
  // idle), 16 (one warp) and 1, each with 1 and 4 heads, the last sequence padding only (its rows:
  // out and dqkv exactly 0, L +inf); the same tolerance and checks as flash: out elementwise, L
  // (lse_check; the backward's P is exp(S - L) with the forward's L, so dqkv checks it again) and
  // dqkv (it rounds the same operands to bf16 at the same points: Pd, dS, the outputs). And one
  // shape it hands to v2's kernels (T = 129), in f32 and bf16.
  const std::vector<Shape> short_shapes = {
      {"4x128x256_h4", 4, 128, 256, 4}, {"3x128x64_h1", 3, 128, 64, 1},
      {"3x77x256_h4", 3, 77, 256, 4},   {"3x77x64_h1", 3, 77, 64, 1},
      {"3x16x256_h4", 3, 16, 256, 4},   {"2x16x64_h1", 2, 16, 64, 1},
      {"3x1x256_h4", 3, 1, 256, 4},     {"2x1x64_h1", 2, 1, 64, 1},
  };
  for (const Shape& shape : short_shapes) {
    for (float p : {0.1f, 0.0f}) {
      OpCase c = attention(shape,
                           {AttentionImpl::kFlashShort,
                            p,
                            positive_v(shape.h),
                            {.lo = 0.1, .hi = 1},
                            tail_padding(shape.b, shape.t, true),
                            true},
                           kGpu);
      c.dtypes = {DType::BF16};
      cases.push_back(std::move(c));
    }
  }
  for (float p : {0.1f, 0.0f}) {
    cases.push_back(attention({"fallback_2x129x64_h2", 2, 129, 64, 2},
                              {AttentionImpl::kFlashShort,
                               p,
                               positive_v(64),
                               {.lo = 0.1, .hi = 1},
                               tail_padding(2, 129, true),
                               true},
                              kGpu));
  }
  for (const auto& [model, h, heads] :
       {std::tuple{"small", 256, 4}, std::tuple{"base", 768, 12}, std::tuple{"large", 1024, 16}}) {
    for (int64_t t : {128, 512}) {
      for (float p : {0.1f, 0.0f}) {
        cases.push_back(bench(model, h, heads, t, p, AttentionImpl::kFlash, AttentionImpl::kUnfused,
                              "v1_unfused"));
        cases.push_back(bench(model, h, heads, t, p, AttentionImpl::kFlashDsGemm,
                              AttentionImpl::kFlash, "flash_recompute"));
        // At T = 512 kFlashShort's kernels are v2's: no row of its own.
        if (t <= kFlashShortMaxSeqLen) {
          cases.push_back(bench(model, h, heads, t, p, AttentionImpl::kFlashShort,
                                AttentionImpl::kFlash, "flash_recompute"));
        }
      }
    }
  }
  return cases;
}

}  // namespace electra::test
