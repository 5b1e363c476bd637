#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/weight_update.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// Three segments with gaps: [0, 6) decays, [8, 13) does not (LayerNorm-like, lr x 0.5),
// [14, 20) decays with lr x 0.8. Elements 6, 7 and 13 belong to no segment.
const std::vector<ParamSegment> kSegments = {
    {0, 6, true, 1.0f}, {8, 5, false, 0.5f}, {14, 6, true, 0.8f}};
constexpr int64_t kParams = 20;

bool in_segment(int64_t i) {
  return i < 6 || (i >= 8 && i < 13) || i >= 14;
}

// One CPU adam_step (AdamW, or LAMB with lamb) over host vectors: p, m, v updated in place.
void cpu_adam_step(Context& ctx, const SegmentTable& table, std::vector<float>& p,
                   std::vector<float>& g, std::vector<float>& m, std::vector<float>& v,
                   std::array<float, kNumHyper>& hyper, std::vector<float>& norm,
                   bool bias_correction, bool lamb) {
  run_op(ctx, AdamStep{.params = Out(test::view(p)),
                       .grads = test::view(g),
                       .m = Out(test::view(m)),
                       .v = Out(test::view(v)),
                       .table = table,
                       .hyper = Tensor::view_of(hyper.data(), Device::CPU, {kNumHyper}),
                       .norm = test::view(norm),
                       .bias_correction = bias_correction,
                       .lamb = lamb,
                       .workspace = Out(Tensor{})});
}

// One CPU grad_norm over host vectors into norm [1], recording it into `record`.
void cpu_grad_norm(Context& ctx, const SegmentTable& table, std::vector<float>& g,
                   std::vector<float>& norm, const NormRecord& record) {
  run_op(ctx, GradNorm{.grads = test::view(g),
                       .table = table,
                       .workspace = Out(Tensor{}),
                       .norm = Out(test::view(norm)),
                       .segment_norms = Out(Tensor{}),
                       .schedule = no_schedule(),
                       .record = record});
}

// The reference update in f64, written out per element: returns the new p, m, v.
struct State {
  std::vector<double> p, m, v;
};

void reference_step(State& s, const std::vector<float>& g, const OptimHyperValues& h, double norm,
                    bool bias_correction, bool lamb) {
  const double clip = h.max_norm > 0 && norm > h.max_norm ? h.max_norm / norm : 1.0;
  for (const ParamSegment& seg : kSegments) {
    std::vector<double> update(seg.size);
    double p_sq = 0, u_sq = 0;
    for (int64_t k = 0; k < seg.size; ++k) {
      const int64_t i = seg.offset + k;
      const double gc = clip * g[i];
      s.m[i] = h.beta1 * s.m[i] + (1 - h.beta1) * gc;
      s.v[i] = h.beta2 * s.v[i] + (1 - h.beta2) * gc * gc;
      double mh = s.m[i], vh = s.v[i];
      if (bias_correction) {
        mh /= 1 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step));
        vh /= 1 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step));
      }
      update[k] = mh / (std::sqrt(vh) + h.eps) + (seg.decay ? h.weight_decay * s.p[i] : 0.0);
      p_sq += s.p[i] * s.p[i];
      u_sq += update[k] * update[k];
    }
    const double ratio = lamb && p_sq > 0 && u_sq > 0 ? std::sqrt(p_sq / u_sq) : 1.0;
    for (int64_t k = 0; k < seg.size; ++k) {
      s.p[seg.offset + k] -= static_cast<double>(h.lr) * seg.lr_mult * ratio * update[k];
    }
  }
}

template <class A, class B>
void require_close(const std::vector<A>& got, const std::vector<B>& expect, double tol) {
  REQUIRE(got.size() == expect.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(static_cast<double>(got[i]) ==
            Approx(static_cast<double>(expect[i])).epsilon(tol).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("segment table cuts segments into chunks and rejects overlaps", "[weight_update]") {
  Context ctx = Context::cpu();
  const std::vector<ParamSegment> segs = {
      {0, 10, true, 1.0f}, {10, 0, false, 1.0f}, {12, 2 * kOptimChunk + 1, false, 0.5f}};
  Arena arena("table", Device::CPU, segment_table_bytes(segs));
  const SegmentTable table = make_segment_table(ctx, arena, segs, 12 + 2 * kOptimChunk + 1);
  CHECK(table.num_segments == 3);
  CHECK(table.num_blocks == 4);
  const int32_t* f = table.segments.ptr<int32_t>();
  CHECK(f[2 * kSegFields + kSegFirstBlock] == 1);
  CHECK(f[2 * kSegFields + kSegBlockCount] == 3);
  CHECK(table.blocks.ptr<int32_t>()[3 * 2 + 1] == 2 * kOptimChunk);
  Arena more("table2", Device::CPU, 4096);
  CHECK_THROWS_WITH(make_segment_table(ctx, more, {{0, 10, true, 1.0f}, {5, 10, true, 1.0f}}, 20),
                    Catch::Contains("overlaps"));
  CHECK_THROWS_AS(make_segment_table(ctx, more, {{0, 30, true, 1.0f}}, 20), Error);
}

// The CUDA AdamW kernel's split of a chunk (vector_body) against a search over the aligned
// 4-element vectors inside it: every chunk start modulo 4, lengths 0 to 40 and chunks of
// kOptimChunk, near 0 and near the table's int32 limit.
TEST_CASE("vector_body is the run of whole aligned vectors inside a chunk", "[weight_update]") {
  int64_t chunks = 0;
  for (const int64_t base : {int64_t{0}, int64_t{12288}, (int64_t{1} << 31) - 2 * kOptimChunk}) {
    for (int64_t begin = base; begin < base + 8; ++begin) {
      std::vector<int64_t> lengths;
      for (int64_t n = 0; n <= 40; ++n) lengths.push_back(n);
      lengths.insert(lengths.end(), {kOptimChunk - 1, kOptimChunk});
      for (const int64_t n : lengths) {
        const int64_t end = begin + n;
        INFO("chunk [" << begin << ", " << end << ")");
        int64_t first = -1, last = -1;  // the first and the last aligned vector inside the chunk
        for (int64_t x = begin; x + 4 <= end; ++x) {
          if (x % 4 != 0) continue;
          if (first < 0) first = x;
          last = x;
        }
        const VectorBody body = vector_body(begin, end);
        if (first < 0) {
          CHECK(body.begin == end);
          CHECK(body.end == end);
          CHECK(n <= 6);  // all head
        } else {
          CHECK(body.begin == first);
          CHECK(body.end == last + 4);
          CHECK(body.begin - begin < 4);  // the scalar head
          CHECK(end - body.end < 4);      // the scalar tail
        }
        ++chunks;
      }
    }
  }
  CHECK(chunks == 3 * 8 * 43);
}

TEST_CASE("grad_norm equals the direct sum over the segments", "[weight_update]") {
  Context ctx = Context::cpu();
  Arena arena("table", Device::CPU, segment_table_bytes(kSegments));
  const SegmentTable table = make_segment_table(ctx, arena, kSegments, kParams);
  std::vector<float> g = test::random_vector<float>(kParams, 41, -2, 2);
  g[6] = g[7] = g[13] = 1e3f;  // outside every segment: not counted
  std::vector<float> norm(1), seg_norms(3);
  run_op(ctx, GradNorm{.grads = test::view(g),
                       .table = table,
                       .workspace = Out(Tensor{}),
                       .norm = Out(test::view(norm)),
                       .segment_norms = Out(test::view(seg_norms)),
                       .schedule = no_schedule(),
                       .record = no_record()});
  double total = 0;
  for (size_t s = 0; s < kSegments.size(); ++s) {
    double sq = 0;
    for (int64_t k = 0; k < kSegments[s].size; ++k) {
      sq += static_cast<double>(g[kSegments[s].offset + k]) * g[kSegments[s].offset + k];
    }
    total += sq;
    CHECK(seg_norms[s] == Approx(std::sqrt(sq)).epsilon(1e-6));
  }
  CHECK(norm[0] == Approx(std::sqrt(total)).epsilon(1e-6));
}

TEST_CASE("grad_norm advances the schedule: lr from the table, clamped at its end",
          "[weight_update]") {
  Context ctx = Context::cpu();
  Arena arena("table", Device::CPU, segment_table_bytes(kSegments));
  const SegmentTable table = make_segment_table(ctx, arena, kSegments, kParams);
  std::vector<float> g(kParams, 0.5f), norm(1);
  std::vector<float> lr_table = {1.0f, 0.25f, 0.125f};
  std::vector<int32_t> counter = {1};
  const std::array<float, kNumHyper> start = OptimHyperValues{}.packed();
  std::vector<float> hyper(start.begin(), start.end());
  // Counter 1, 2, 3: lr = table[1], table[2], then table[2] again (past the end); step t + 1.
  for (const auto& [lr, step] : {std::pair{0.25f, 2.0f}, {0.125f, 3.0f}, {0.125f, 4.0f}}) {
    run_op(ctx, GradNorm{.grads = test::view(g),
                         .table = table,
                         .workspace = Out(Tensor{}),
                         .norm = Out(test::view(norm)),
                         .segment_norms = Out(Tensor{}),
                         .schedule = {.lr_table = test::view(lr_table),
                                      .counter = Out(test::view(counter)),
                                      .hyper = Out(test::view(hyper))},
                         .record = no_record()});
    CHECK(hyper[kHyperLr] == lr);
    CHECK(hyper[kHyperStep] == step);
    for (int k = kHyperBeta1; k < kNumHyper; ++k) CHECK(hyper[k] == start[k]);  // untouched
  }
  CHECK(counter[0] == 4);
  int64_t counted = 0;
  for (const ParamSegment& s : kSegments) counted += s.size;
  CHECK(norm[0] == Approx(0.5 * std::sqrt(static_cast<double>(counted))).epsilon(1e-6));
  // A partial schedule is refused.
  CHECK_THROWS_AS(run_op(ctx, GradNorm{.grads = test::view(g),
                                       .table = table,
                                       .workspace = Out(Tensor{}),
                                       .norm = Out(test::view(norm)),
                                       .segment_norms = Out(Tensor{}),
                                       .schedule = {.lr_table = test::view(lr_table),
                                                    .counter = Out(Tensor{}),
                                                    .hyper = Out(Tensor{})},
                                       .record = no_record()}),
                  Error);
}

TEST_CASE("grad_norm records the norm: stored, a non-finite one counted", "[weight_update]") {
  Context ctx = Context::cpu();
  Arena arena("table", Device::CPU, segment_table_bytes(kSegments));
  const SegmentTable table = make_segment_table(ctx, arena, kSegments, kParams);
  std::vector<float> g(kParams, 0.0f), norm(1);
  g[0] = 3.0f;  // segment 0 starts at 0: the norm is 5
  g[1] = 4.0f;
  std::vector<double> acc = {7.0, 8.0, 9.0, 10.0};
  auto run = [&](const NormRecord& record) { cpu_grad_norm(ctx, table, g, norm, record); };
  const NormRecord record{.acc = Out(test::view(acc)), .row = 1, .non_finite = 2};
  run(record);
  CHECK(acc == std::vector<double>{7.0, 5.0, 9.0, 10.0});  // stored, not added; finite
  g[1] = INFINITY;
  run(record);
  CHECK(std::isinf(acc[1]));
  CHECK(acc[2] == 10.0);
  g[1] = NAN;
  run(record);
  CHECK(std::isnan(acc[1]));
  CHECK(acc[2] == 11.0);
  CHECK(acc[0] == 7.0);
  CHECK(acc[3] == 10.0);
  run({.acc = Out(test::view(acc)), .row = kNoRow, .non_finite = kNoRow});  // nothing recorded
  CHECK(std::isnan(acc[1]));
  CHECK(acc[2] == 11.0);
  // Refused: a row outside the accumulator (an accumulator that is not f64:
  // weight_update_contract_test).
  CHECK_THROWS_AS(run({.acc = Out(test::view(acc)), .row = 4, .non_finite = 2}), Error);
}

TEST_CASE("adamw first step on one element by hand", "[weight_update]") {
  Context ctx = Context::cpu();
  const std::vector<ParamSegment> segs = {{0, 1, true, 1.0f}};
  Arena arena("table", Device::CPU, segment_table_bytes(segs));
  const SegmentTable table = make_segment_table(ctx, arena, segs, 1);
  OptimHyperValues h;
  h.lr = 0.1f;
  h.max_norm = 0;  // no clipping
  std::array<float, kNumHyper> hyper = h.packed();
  for (bool bias_correction : {false, true}) {
    std::vector<float> p = {1.0f}, g = {0.5f}, m = {0.0f}, v = {0.0f}, norm = {0.5f};
    cpu_adam_step(ctx, table, p, g, m, v, hyper, norm, bias_correction, false);
    // The betas are f32 (1 - 0.999f = 0.00099998713), so the hand values use them as such.
    const double b1 = 0.9f, b2 = 0.999f, m1 = (1 - b1) * 0.5, v1 = (1 - b2) * 0.25;
    CHECK(m[0] == Approx(m1).epsilon(1e-6));
    CHECK(v[0] == Approx(v1).epsilon(1e-6));
    // Without bias correction the update is m / (sqrt(v) + eps) ~ 3.162; with it the first step
    // is 0.5 / (0.5 + 1e-6) ~ 1. Decay adds 0.01 * p = 0.01.
    const double update = bias_correction ? 0.5 / (0.5 + 1e-6) : m1 / (std::sqrt(v1) + 1e-6);
    CHECK(p[0] == Approx(1.0 - 0.1 * (update + 0.01)).epsilon(1e-6));
    CHECK(g[0] == 0.5f);
  }
}

// The CPU adamw_step runs whole SIMD vectors then a scalar tail; every element must have the bits
// of the shared scalar formula adam_update (the CUDA kernel's), whatever its lane.
TEST_CASE("adamw gives the bits of the scalar adam_update on every element", "[weight_update]") {
  Context ctx = Context::cpu();
  const std::vector<ParamSegment> segs = {{0, 37, true, 1.0f}, {40, 50, false, 0.5f}};
  const int64_t n = 90;
  Arena arena("table", Device::CPU, segment_table_bytes(segs));
  const SegmentTable table = make_segment_table(ctx, arena, segs, n);
  OptimHyperValues h;
  h.lr = 0.05f;
  h.step = 3;
  h.max_norm = 1;
  std::array<float, kNumHyper> hyper = h.packed();
  for (bool bias_correction : {false, true}) {
    std::vector<float> p = test::random_vector<float>(n, 71, -1, 1);
    std::vector<float> m = test::random_vector<float>(n, 72, -0.1, 0.1);
    std::vector<float> v = test::random_vector<float>(n, 73, 0.001, 0.01);
    const std::vector<float> g = test::random_vector<float>(n, 74, -3, 3);
    std::vector<float> norm = {4.0f};  // > max_norm: the gradient is clipped
    std::vector<float> ep = p, em = m, ev = v;
    const AdamCoeffs c = adam_coeffs(hyper.data(), norm[0], bias_correction);
    for (const ParamSegment& seg : segs) {
      for (int64_t i = seg.offset; i < seg.offset + seg.size; ++i) {
        ep[i] -= c.lr * seg.lr_mult * adam_update(c, ep[i], g[i], em[i], ev[i], seg.decay);
      }
    }
    std::vector<float> g_in = g;
    cpu_adam_step(ctx, table, p, g_in, m, v, hyper, norm, bias_correction, false);
    INFO("bias_correction " << bias_correction);
    CHECK(std::memcmp(p.data(), ep.data(), n * sizeof(float)) == 0);
    CHECK(std::memcmp(m.data(), em.data(), n * sizeof(float)) == 0);
    CHECK(std::memcmp(v.data(), ev.data(), n * sizeof(float)) == 0);
  }
}

TEST_CASE("adamw and lamb two steps match the f64 reference", "[weight_update]") {
  Context ctx = Context::cpu();
  Arena arena("table", Device::CPU, segment_table_bytes(kSegments));
  const SegmentTable table = make_segment_table(ctx, arena, kSegments, kParams);
  for (bool lamb : {false, true}) {
    for (bool bias_correction : {false, true}) {
      for (float max_norm : {0.0f, 1.0f}) {
        INFO("lamb " << lamb << " bias_correction " << bias_correction << " max_norm " << max_norm);
        std::vector<float> p = test::random_vector<float>(kParams, 51, -1, 1);
        std::vector<float> m = test::random_vector<float>(kParams, 52, -0.1, 0.1);
        std::vector<float> v = test::random_vector<float>(kParams, 53, 0.001, 0.01);
        State ref{std::vector<double>(p.begin(), p.end()), std::vector<double>(m.begin(), m.end()),
                  std::vector<double>(v.begin(), v.end())};
        const std::vector<float> outside = {p[6], p[7], p[13]}, m0 = m;
        std::vector<float> norm(1);
        for (int step = 1; step <= 2; ++step) {
          std::vector<float> g = test::random_vector<float>(kParams, 60 + step, -3, 3);
          const std::vector<float> g0 = g;
          cpu_grad_norm(ctx, table, g, norm, no_record());
          REQUIRE(norm[0] > 1.0f);  // so that max_norm = 1 clips
          OptimHyperValues h;
          h.lr = 0.05f;
          h.step = static_cast<float>(step);
          h.max_norm = max_norm;
          std::array<float, kNumHyper> hyper = h.packed();
          cpu_adam_step(ctx, table, p, g, m, v, hyper, norm, bias_correction, lamb);
          reference_step(ref, g, h, norm[0], bias_correction, lamb);
          CHECK(g == g0);
          require_close(m, ref.m, 1e-5);
          require_close(v, ref.v, 1e-5);
          require_close(p, ref.p, 1e-5);
        }
        CHECK(std::vector<float>{p[6], p[7], p[13]} == outside);
        for (int64_t i = 0; i < kParams; ++i) {
          if (!in_segment(i)) CHECK(m[i] == m0[i]);
        }
      }
    }
  }
}
