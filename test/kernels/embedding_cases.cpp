// The embedding block (kernels/embedding.h: the sum of the three tables, the LayerNorm and its
// dropout; backward layernorm_backward with its dy_dropout, then the lookup gradient, as
// models/embeddings.cpp runs them) for the op harness (test/common/op_case.h): gradient checks
// w.r.t. the three tables, gamma and beta with repeated ids at a small odd shape and at
// ELECTRA-Small's (E = 128); GPU parity (the sum bit for bit: f32 rows added in order, rounded
// once; y within the tolerance with the CPU's dropout mask, the statistics to f32 rounding; the
// sorted backward within the tolerance and the same bits when run again) with many repeated ids,
// one id over most tokens and a single id, at ELECTRA-Small's 128 x 128 tokens and Base's 64 x 512
// (one full sort tile) with ELECTRA-like ids (padding id 0 over each sequence's last quarter,
// [MASK] on 15% of the rest, V = 30522 > the keys), across two sort tiles, an odd width (the
// one-column path) and the largest vocabulary whose keys fit 32 bits; the inference forward (no
// sort) and p = 0; benchmarks at Small, Base and Large with Zipf-like ids. Bad ids and too large a
// vocabulary: embedding_gpu_test.cpp; hand values and refusals: embedding_test.cpp.
#include <memory>
#include <set>

#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

struct Sizes {
  int64_t batch, len, e, vocab, positions = 512, segments = 2;
};

constexpr float kEps = 1e-12f;  // ELECTRA's

// The statistics are f32 in every run and computed from the same (rounded) sums, so they agree to
// f32 rounding of row sums of length E whatever the activation dtype.
constexpr Tol kStatTol = {1e-5, 1e-5};

// The dropout site of a case: the context's dropout stream at site 3, shifted by one (an
// unaligned start for the 4-element Philox words); p = 0: no dropout (an inference-like pass).
// bench/embedding_bench.cu's baselines use the same site.
DropoutSite site_of(const Context& ctx, float p) {
  return DropoutSite{ctx.rng(RngPurpose::kDropout, 5), dropout_site_offset(3) + 1, p};
}

// The ids of a case, made once: the benchmark's bytes depend on which word rows they touch.
using Ids = std::shared_ptr<const std::vector<double>>;

// Uniform ids with every third token 0 (one long run, as a padding id makes).
Ids runs_of_zero(const Sizes& s, uint64_t seed) {
  const std::vector<int32_t> ints =
      random_ints(s.batch * s.len, seed, 0, static_cast<int32_t>(s.vocab - 1));
  auto ids = std::make_shared<std::vector<double>>(ints.begin(), ints.end());
  for (size_t i = 0; i < ids->size(); i += 3) (*ids)[i] = 0;
  return ids;
}

// Zipf-like ids: small ids are frequent, as in real text.
Ids zipf_like(const Sizes& s, uint64_t seed) {
  const int64_t tokens = s.batch * s.len;
  const std::vector<int32_t> ints = random_ints(tokens, seed, 0, static_cast<int32_t>(s.vocab - 1));
  auto ids = std::make_shared<std::vector<double>>(tokens);
  for (int64_t i = 0; i < tokens; ++i) (*ids)[i] = ints[i] % (1 + ints[(i * 7) % tokens] % 2000);
  return ids;
}

// ELECTRA-like ids: padding (id 0) over the last quarter of every sequence, [MASK] (id 103) on
// 15% of the other tokens, one of the three highest ids on 5%, Zipf-like ids elsewhere: two long
// runs across many segments of sorted keys, the top bits of the ids, and a vocabulary larger than
// the keys.
Ids electra_like(const Sizes& s, uint64_t seed) {
  const Ids zipf = zipf_like(s, seed);
  const std::vector<int32_t> draw = random_ints(s.batch * s.len, seed + 1, 0, 99);
  auto ids = std::make_shared<std::vector<double>>(*zipf);
  for (int64_t i = 0; i < s.batch * s.len; ++i) {
    if (i % s.len >= s.len * 3 / 4) {
      (*ids)[i] = 0;
    } else if (draw[i] < 15) {
      (*ids)[i] = 103;
    } else if (draw[i] < 20) {
      (*ids)[i] = static_cast<double>(s.vocab - 1 - draw[i] % 3);
    }
  }
  return ids;
}

// y, mean, rstd = dropout(layernorm(sum)): the forward's LayerNorm and dropout steps, run again
// on the reference's sum after it was rounded as the GPU stores it.
void normalise(Context& ctx, const Args& a, float p) {
  const Tensor& sum = a["sum"];
  const int64_t e = sum.dim(2), rows = sum.numel() / e;
  run_op(ctx, LayerNormForward{.x = sum.reshape({rows, e}),
                               .gamma = a["gamma"],
                               .beta = a["beta"],
                               .eps = kEps,
                               .y = Out(a["y"].reshape({rows, e})),
                               .mean = Out(a["mean"].reshape({rows})),
                               .rstd = Out(a["rstd"].reshape({rows}))});
  run_op(ctx, Dropout{.x = a["y"], .site = site_of(ctx, p), .y = Out(a["y"])});
}

// `sort`: the training forward (the backward's keys sorted in the forward's launch) and the
// backward; else the inference forward alone.
OpCase embedding(const std::string& shape, const Sizes& s, const Ids& ids, unsigned modes,
                 size_t max_checks = 0, float p = 0.1f, bool sort = true) {
  const int64_t b = s.batch, t = s.len, e = s.e;
  const int64_t ws_floats =
      static_cast<int64_t>(embedding_backward_workspace_bytes(b, t, s.segments, e) / 4);
  std::vector<TensorSpec> tensors = {
      input("ids", {b, t}, {.make = [ids](size_t, uint64_t) { return *ids; }}, Kind::kI32),
      input("segment_ids", {b, t}, {.lo = 0, .hi = static_cast<double>(s.segments - 1)},
            Kind::kI32),
      param("word", {s.vocab, e}), param("position", {s.positions, e}),
      param("segment", {s.segments, e}), param("gamma", {e}, {.lo = 0.5, .hi = 1.5}),
      param("beta", {e}),
      // Three f32 rows added in order, rounded once to the activation dtype.
      output("sum", {b, t, e}).bits(),
      // The CPU's mask: exact zeros in the same places.
      output("y", {b, t, e}).zeros_agree(), output("mean", {b, t}, Kind::kParam).with_tol(kStatTol),
      output("rstd", {b, t}, Kind::kParam).with_tol(kStatTol)};
  if (sort) {
    for (TensorSpec spec :
         {upstream("dy", "y", {b, t, e}), grad_acc("dword", "word", {s.vocab, e}),
          grad_acc("dposition", "position", {s.positions, e}),
          grad_acc("dsegment", "segment", {s.segments, e}), grad_acc("dgamma", "gamma", {e}),
          grad_acc("dbeta", "beta", {e}), workspace("workspace", ws_floats),
          workspace("norm_workspace", layernorm_backward_workspace_floats(b * t, e)),
          // The gradient of the sum, in the activation dtype as models/embeddings.cpp keeps it.
          workspace("dsum", {b, t, e}, Kind::kAct)}) {
      tensors.push_back(std::move(spec));
    }
  }
  auto forward = [p, sort](Context& ctx, const Args& a) {
    run_op(
        ctx,
        EmbeddingForward{
            .ids = a["ids"],
            .segment_ids = a["segment_ids"],
            .word = a["word"],
            .position = a["position"],
            .segment = a["segment"],
            .norm = {.gamma = a["gamma"], .beta = a["beta"], .eps = kEps, .site = site_of(ctx, p)},
            .sum = Out(a["sum"]),
            .y = Out(a["y"]),
            .mean = Out(a["mean"]),
            .rstd = Out(a["rstd"]),
            .workspace = Out(sort ? a["workspace"] : Tensor{})});
  };
  // The backward in its two launches: the LayerNorm's (with the dropout's) into dsum, then the
  // lookup gradient.
  auto norm_backward = [p](Context& ctx, const Args& a) {
    const Tensor& sum = a["sum"];
    const int64_t e = sum.dim(2), rows = sum.numel() / e;
    run_op(ctx, LayerNormBackward{.dy = a["dy"].reshape({rows, e}),
                                  .x = sum.reshape({rows, e}),
                                  .gamma = a["gamma"],
                                  .mean = a["mean"].reshape({rows}),
                                  .rstd = a["rstd"].reshape({rows}),
                                  .dy_dropout = site_of(ctx, p),
                                  .dx = Out(a["dsum"].reshape({rows, e})),
                                  .dgamma = Out(a["dgamma"]),
                                  .dbeta = Out(a["dbeta"]),
                                  .workspace = Out(a["norm_workspace"])});
  };
  auto lookup_backward = [](Context& ctx, const Args& a) {
    run_op(ctx, EmbeddingBackward{.dout = a["dsum"],
                                  .ids = a["ids"],
                                  .segment_ids = a["segment_ids"],
                                  .dword = Out(a["dword"]),
                                  .dposition = Out(a["dposition"]),
                                  .dsegment = Out(a["dsegment"]),
                                  .workspace = Out(a["workspace"])});
  };
  Run backward{};
  if (sort) {
    backward = [norm_backward, lookup_backward](Context& ctx, const Args& a) {
      norm_backward(ctx, a);
      lookup_backward(ctx, a);
    };
  }
  return OpCase{
      .op = "embedding",
      .shape = shape,
      .tensors = std::move(tensors),
      .forward = forward,
      .backward = backward,
      // The GPU stores the sum in the activation dtype and normalises that rounded sum, and the
      // LayerNorm backward reads it and writes dsum in that dtype: so does the reference.
      .reference =
          [forward, norm_backward, lookup_backward, p, sort](Context& ctx, const Args& a) {
            forward(ctx, a);
            round_to_act(a["sum"], a.act());
            normalise(ctx, a, p);
            if (!sort) return;
            norm_backward(ctx, a);
            round_to_act(a["dsum"], a.act());
            lookup_backward(ctx, a);
          },
      .modes = modes,
      .tol_reason =
          "f32: a few ulps of reordered f32 sums (the LayerNorm's row sums, the gradients' sums "
          "over tokens); bf16: y rounded to 8 bits (2^-9 relative) from an f32 value within f32 "
          "ulps of the reference's, and dsum likewise (its rounding may flip by one bf16 ulp, "
          "2^-8 relative, on a few elements of the gradients' sums)",
      .seed = 29,
      .max_checks = max_checks,
      // Forward: both ids and one f32 word row read, sum and y written, the statistics written per
      // token. Backward: dy and the sum read, dsum written and read, each touched word row read
      // and written once, both ids read.
      .bench_bytes =
          [ids, b, t, e](DType dtype, bool backward) {
            const double tokens = static_cast<double>(b * t), act = dtype_size(dtype);
            if (!backward) return tokens * e * (4.0 + 2 * act) + tokens * 16.0;
            const double touched =
                static_cast<double>(std::set<double>(ids->begin(), ids->end()).size());
            return tokens * e * 4 * act + touched * e * 8.0 + tokens * 16.0;
          },
  };
}

OpCase embedding(const std::string& shape, const Sizes& s, unsigned modes, size_t max_checks = 0,
                 float p = 0.1f, bool sort = true) {
  return embedding(shape, s, runs_of_zero(s, static_cast<uint64_t>(s.batch * s.len + 1)), modes,
                   max_checks, p, sort);
}

}  // namespace

std::vector<OpCase> op_cases() {
  const unsigned all = kGradcheck | kGpu;
  const Sizes small{128, 128, 128, 30522}, base{32, 512, 768, 30522}, large{32, 512, 1024, 30522};
  // kEmbeddingSortTileKeys = 32768 tokens a sort tile: base_64x512 fills one; 80 x 512 is a full
  // tile and a partial one. V = 131071 (17 bits) with 15 bits of tokens: the largest vocabulary
  // whose keys fit 32 bits.
  const Sizes electra_small{128, 128, 128, 30522}, electra_base{64, 512, 768, 30522},
      two_tiles{80, 512, 64, 30522}, widest{64, 512, 16, 131071};
  return {
      embedding("3x5x7_V11_P9_S3", {3, 5, 7, 11, 9, 3}, all),
      // Without dropout (p = 0: the mask's words are not drawn) and the inference forward (no
      // sort: 8 tokens a 256-thread block; the odd width takes the one-column path).
      embedding("3x5x7_V11_P9_S3_p0", {3, 5, 7, 11, 9, 3}, all, 0, 0.0f),
      embedding("inference_8x128x128", {8, 128, 128, 30522}, kGpu, 0, 0.0f, false),
      embedding("inference_5x9x33_p0.1", {5, 9, 33, 50}, kGpu, 0, 0.1f, false),
      embedding("small_2x128x128_V257", {2, 128, 128, 257}, kGradcheck, 97),
      embedding("small_8x128x128", {8, 128, 128, 30522}, kGpu),
      embedding("base_2x512x768", {2, 512, 768, 30522}, kGpu),
      // 4096 tokens over 50 ids: long runs; one id: a run across every 64-key segment.
      embedding("32x128x256_V50", {32, 128, 256, 50}, kGpu),
      embedding("4x128x64_V1", {4, 128, 64, 1}, kGpu),
      embedding("1x100x100_V1000", {1, 100, 100, 1000}, kGpu),
      embedding("1x1x1000_V3", {1, 1, 1000, 3}, kGpu),
      // E = 33: one column a lane, two column chunks, runs over many segments.
      embedding("16x128x33_V5", {16, 128, 33, 5}, kGpu),
      embedding("electra_small_128x128x128", electra_small, electra_like(electra_small, 2), kGpu),
      embedding("electra_base_64x512x768", electra_base, electra_like(electra_base, 3),
                kGpu | kBench),
      embedding("two_tiles_80x512x64", two_tiles, electra_like(two_tiles, 4), kGpu),
      embedding("V131071_64x512x16", widest, electra_like(widest, 5), kGpu),
      embedding("small_128x128x128", small, zipf_like(small, 1), kBench),
      embedding("base_32x512x768", base, zipf_like(base, 1), kBench),
      embedding("large_32x512x1024", large, zipf_like(large, 1), kBench),
  };
}

}  // namespace electra::test
