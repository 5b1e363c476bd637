// The embedding sum (kernels/embedding.h) for the op harness (test/common/op_case.h): gradient
// checks w.r.t. the three tables with repeated ids at a small odd shape and at ELECTRA-Small's
// (E = 128); GPU parity (the forward bit for bit: the f32 sum rounded once; the sorted backward
// within the tolerance and the same bits when run again) with many repeated ids, one id over most
// tokens and a single id; benchmarks at Small, Base and Large with Zipf-like ids. Bad ids:
// embedding_gpu_test.cpp; hand values and refusals: embedding_test.cpp.
#include <memory>
#include <set>

#include "kernels/embedding.h"
#include "test/common/op_case.h"

namespace electra::test {
namespace {

struct Sizes {
  int64_t batch, len, e, vocab, positions = 512, segments = 2;
};

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

OpCase embedding(const std::string& shape, const Sizes& s, const Ids& ids, unsigned modes,
                 size_t max_checks = 0) {
  const int64_t b = s.batch, t = s.len, e = s.e;
  const int64_t ws_floats =
      static_cast<int64_t>(embedding_backward_workspace_bytes(b, t, s.segments, e) / 4);
  return OpCase{
      .op = "embedding",
      .shape = shape,
      .tensors = {input("ids", {b, t}, {.make = [ids](size_t, uint64_t) { return *ids; }},
                        Kind::kI32),
                  input("segment_ids", {b, t}, {.lo = 0, .hi = static_cast<double>(s.segments - 1)},
                        Kind::kI32),
                  param("word", {s.vocab, e}), param("position", {s.positions, e}),
                  param("segment", {s.segments, e}),
                  // Three f32 rows added in order, rounded once to the activation dtype.
                  output("out", {b, t, e}).bits(), upstream("dout", "out", {b, t, e}),
                  grad_acc("dword", "word", {s.vocab, e}),
                  grad_acc("dposition", "position", {s.positions, e}),
                  grad_acc("dsegment", "segment", {s.segments, e}),
                  workspace("workspace", ws_floats)},
      .forward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, EmbeddingForward{.ids = a["ids"],
                                         .segment_ids = a["segment_ids"],
                                         .word = a["word"],
                                         .position = a["position"],
                                         .segment = a["segment"],
                                         .out = Out(a["out"])});
          },
      .backward =
          [](Context& ctx, const Args& a) {
            run_op(ctx, EmbeddingBackward{.dout = a["dout"],
                                          .ids = a["ids"],
                                          .segment_ids = a["segment_ids"],
                                          .dword = Out(a["dword"]),
                                          .dposition = Out(a["dposition"]),
                                          .dsegment = Out(a["dsegment"]),
                                          .workspace = Out(a["workspace"])});
          },
      .modes = modes,
      .max_checks = max_checks,
      // Forward: both ids and one f32 word row read and one output row written per token.
      // Backward: dout read, each touched word row read and written once, both ids read.
      .bench_bytes =
          [ids, b, t, e](DType dtype, bool backward) {
            const double tokens = static_cast<double>(b * t), act = dtype_size(dtype);
            if (!backward) return tokens * e * (4.0 + act) + tokens * 8.0;
            const double touched =
                static_cast<double>(std::set<double>(ids->begin(), ids->end()).size());
            return tokens * e * act + touched * e * 8.0 + tokens * 8.0;
          },
  };
}

OpCase embedding(const std::string& shape, const Sizes& s, unsigned modes, size_t max_checks = 0) {
  return embedding(shape, s, runs_of_zero(s, static_cast<uint64_t>(s.batch * s.len + 1)), modes,
                   max_checks);
}

}  // namespace

std::vector<OpCase> op_cases() {
  const unsigned all = kGradcheck | kGpu;
  const Sizes small{128, 128, 128, 30522}, base{32, 512, 768, 30522}, large{32, 512, 1024, 30522};
  return {
      embedding("3x5x7_V11_P9_S3", {3, 5, 7, 11, 9, 3}, all),
      embedding("small_2x128x128_V257", {2, 128, 128, 257}, kGradcheck, 97),
      embedding("small_8x128x128", {8, 128, 128, 30522}, kGpu),
      embedding("base_2x512x768", {2, 512, 768, 30522}, kGpu),
      // 4096 tokens over 50 ids: long runs; one id: a run across every 64-key segment.
      embedding("32x128x256_V50", {32, 128, 256, 50}, kGpu),
      embedding("4x128x64_V1", {4, 128, 64, 1}, kGpu),
      embedding("1x100x100_V1000", {1, 100, 100, 1000}, kGpu),
      embedding("1x1x1000_V3", {1, 1, 1000, 3}, kGpu),
      embedding("small_128x128x128", small, zipf_like(small, 1), kBench),
      embedding("base_32x512x768", base, zipf_like(base, 1), kBench),
      embedding("large_32x512x1024", large, zipf_like(large, 1), kBench),
  };
}

}  // namespace electra::test
