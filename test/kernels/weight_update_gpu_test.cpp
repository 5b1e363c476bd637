// GPU vs CPU for grad_norm, AdamW and LAMB over a flat buffer with many segments (large ones
// spanning several chunks, tiny ones, gaps, an empty one).
//
// Tolerance 1e-5 relative on norms, moments and parameters. The two sides do not round alike: the
// CPU sums norms in f64 element by element while the GPU sums chunks in f32 first (relative error
// ~1e-7 at these sizes), and nvcc contracts the moment updates into FMAs while the host does not
// (-ffp-contract=off), a difference of an ulp or two per operation over two steps.
#include <catch2/catch.hpp>
#include <vector>

#include "kernels/weight_update.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

std::vector<ParamSegment> make_segments(int64_t& total) {
  std::vector<ParamSegment> segs;
  int64_t offset = 0;
  const int64_t sizes[] = {3 * kOptimChunk + 17, 256, 1, 0, kOptimChunk, 128 * 256 + 5, 7, 999};
  int s = 0;
  for (int64_t size : sizes) {
    // Segment 0 (several blocks, decayed) is frozen: lr_mult 0 (kernels/weight_update.h).
    segs.push_back({offset, size, s % 2 == 0, s == 0 ? 0.0f : 1.0f - 0.1f * s});
    offset += size + (s % 3 == 0 ? 5 : 0);  // gaps after some segments
    ++s;
  }
  total = offset + 3;
  return segs;
}

}  // namespace

TEST_CASE("grad_norm on the GPU matches the CPU and is deterministic", "[weight_update][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  int64_t total = 0;
  const std::vector<ParamSegment> segs = make_segments(total);
  Arena cpu_arena("table", Device::CPU, segment_table_bytes(segs));
  Arena arena("optimizer", Device::CUDA, 32 << 20);
  const SegmentTable cpu_table = make_segment_table(cpu, cpu_arena, segs, total);
  const SegmentTable table = make_segment_table(gpu, arena, segs, total);
  std::vector<float> g = test::random_vector<float>(total, 5, -2, 2);
  std::vector<float> norm(1), seg_norms(segs.size());
  run_op(cpu, GradNorm{.grads = test::view(g),
                       .table = cpu_table,
                       .workspace = Out(Tensor{}),
                       .norm = Out(test::view(norm)),
                       .segment_norms = Out(test::view(seg_norms))});
  const Tensor dg = test::upload(gpu, arena, g, {total});
  const Tensor dnorm = arena.alloc<float>({1});
  const Tensor dseg = arena.alloc<float>({table.num_segments});
  const Tensor workspace = arena.alloc<float>({grad_norm_workspace_size(table)});
  poison_tensor(gpu.stream(), dnorm);
  poison_tensor(gpu.stream(), dseg);
  poison_tensor(gpu.stream(), workspace);
  run_op(gpu, GradNorm{.grads = dg,
                       .table = table,
                       .workspace = Out(workspace),
                       .norm = Out(dnorm),
                       .segment_norms = Out(dseg)});
  const std::vector<float> got = test::download<float>(gpu, dnorm);
  CHECK(test::max_relative_error(got, norm) < 1e-5);
  CHECK(test::max_relative_error(test::download<float>(gpu, dseg), seg_norms) < 1e-5);
  run_op(gpu, GradNorm{.grads = dg,
                       .table = table,
                       .workspace = Out(workspace),
                       .norm = Out(dnorm),
                       .segment_norms = Out(Tensor{})});
  CHECK(test::download<float>(gpu, dnorm) == got);
}

TEST_CASE("adamw and lamb on the GPU match the CPU over two steps", "[weight_update][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  int64_t total = 0;
  const std::vector<ParamSegment> segs = make_segments(total);
  Arena cpu_arena("table", Device::CPU, segment_table_bytes(segs));
  Arena arena("optimizer", Device::CUDA, 32 << 20);
  const SegmentTable cpu_table = make_segment_table(cpu, cpu_arena, segs, total);
  const SegmentTable table = make_segment_table(gpu, arena, segs, total);
  for (bool lamb : {false, true}) {
    for (bool bias_correction : {false, true}) {
      INFO("lamb " << lamb << " bias_correction " << bias_correction);
      const size_t mark = arena.mark();
      std::vector<float> p = test::random_vector<float>(total, 6, -1, 1);
      std::vector<float> m = test::random_vector<float>(total, 7, -0.1, 0.1);
      std::vector<float> v = test::random_vector<float>(total, 8, 1e-3, 1e-2);
      const std::vector<float> p0 = p, m0 = m, v0 = v;
      const Tensor dp = test::upload(gpu, arena, p, {total});
      const Tensor dm = test::upload(gpu, arena, m, {total});
      const Tensor dv = test::upload(gpu, arena, v, {total});
      const Tensor dg = arena.alloc<float>({total});
      const Tensor dnorm = arena.alloc<float>({1});
      const Tensor dhyper = arena.alloc<float>({kNumHyper});
      const Tensor workspace = arena.alloc<float>({lamb_workspace_size(table)});
      std::vector<float> norm(1);
      for (int step = 1; step <= 2; ++step) {
        std::vector<float> g = test::random_vector<float>(total, 10 + step, -1, 1);
        OptimHyperValues h;
        h.lr = 1e-2f;
        h.step = static_cast<float>(step);
        std::array<float, kNumHyper> hyper = h.packed();  // max_norm 1: clipping is active
        copy_tensor(gpu.stream(), dg, test::view(g));
        copy_tensor(gpu.stream(), dhyper, Tensor::view_of(hyper.data(), Device::CPU, {kNumHyper}));
        poison_tensor(gpu.stream(), workspace);
        poison_tensor(gpu.stream(), dnorm);
        run_op(gpu, GradNorm{.grads = dg,
                             .table = table,
                             .workspace = Out(workspace),
                             .norm = Out(dnorm),
                             .segment_norms = Out(Tensor{})});
        run_op(cpu, GradNorm{.grads = test::view(g),
                             .table = cpu_table,
                             .workspace = Out(Tensor{}),
                             .norm = Out(test::view(norm)),
                             .segment_norms = Out(Tensor{})});
        REQUIRE(norm[0] > 1.0f);
        const Tensor hyper_cpu = Tensor::view_of(hyper.data(), Device::CPU, {kNumHyper});
        run_op(gpu, AdamStep{.params = Out(dp),
                             .grads = dg,
                             .m = Out(dm),
                             .v = Out(dv),
                             .table = table,
                             .hyper = dhyper,
                             .norm = dnorm,
                             .bias_correction = bias_correction,
                             .lamb = lamb,
                             .workspace = Out(workspace)});
        run_op(cpu, AdamStep{.params = Out(test::view(p)),
                             .grads = test::view(g),
                             .m = Out(test::view(m)),
                             .v = Out(test::view(v)),
                             .table = cpu_table,
                             .hyper = hyper_cpu,
                             .norm = test::view(norm),
                             .bias_correction = bias_correction,
                             .lamb = lamb,
                             .workspace = Out(Tensor{})});
        CHECK(test::download<float>(gpu, dg) == g);  // gradients untouched
        CHECK(test::max_relative_error(test::download<float>(gpu, dm), m) < 1e-5);
        CHECK(test::max_relative_error(test::download<float>(gpu, dv), v) < 1e-5);
        CHECK(test::max_relative_error(test::download<float>(gpu, dp), p) < 1e-5);
      }
      // The frozen segment: parameters and moments bit-identical on the GPU (weight decay on).
      const ParamSegment& frozen = segs[0];
      REQUIRE((frozen.lr_mult == 0.0f && frozen.decay && frozen.size > kOptimChunk));
      const std::vector<float> gp = test::download<float>(gpu, dp);
      const std::vector<float> gm = test::download<float>(gpu, dm);
      const std::vector<float> gv = test::download<float>(gpu, dv);
      for (int64_t i = frozen.offset; i < frozen.offset + frozen.size; ++i) {
        REQUIRE((gp[i] == p0[i] && gm[i] == m0[i] && gv[i] == v0[i]));
      }
      arena.rewind(mark);
    }
  }
}
