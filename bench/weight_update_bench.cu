// The optimizer step over ELECTRA-Small (~14M) and Base (~110M) parameter buffers laid out like
// BERT (per layer: four H x H matrices, two H x 4H, biases and LayerNorm vectors): grad_norm,
// AdamW and LAMB (ours, segment table, device hyper-parameters) against a plain AdamW kernel
// with one thread per element, host-side hyper-parameters and no segments. Roofline bytes per
// parameter: grad_norm 4, AdamW 28 (p, g, m, v read; p, m, v written), LAMB 40 (two passes).
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/weight_update.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

__global__ void naive_adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr,
                            float b1, float b2, float eps, float wd) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  m[i] = b1 * m[i] + (1.0f - b1) * g[i];
  v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
  p[i] -= lr * (m[i] / (sqrtf(v[i]) + eps) + wd * p[i]);
}

// Embeddings (vocab x E, 512 x E, 2 x E, LayerNorm) then `layers` encoder layers of width h.
std::vector<ParamSegment> bert_layout(int64_t e, int64_t h, int layers, int64_t& total) {
  std::vector<ParamSegment> segs;
  auto add = [&](int64_t size, bool decay) {
    segs.push_back({total, size, decay, 1.0f});
    total += size;
  };
  add(30522 * e, true);
  add(512 * e, true);
  add(2 * e, true);
  add(e, false);
  add(e, false);
  if (e != h) add(e * h, true);
  for (int l = 0; l < layers; ++l) {
    for (int k = 0; k < 4; ++k) {  // q, k, v, attention output
      add(h * h, true);
      add(h, false);
    }
    add(h, false);  // LayerNorm
    add(h, false);
    add(h * 4 * h, true);
    add(4 * h, false);
    add(4 * h * h, true);
    add(h, false);
    add(h, false);
    add(h, false);
  }
  return segs;
}

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  Context cpu = Context::cpu();
  const struct {
    const char* name;
    int64_t e, h;
    int layers;
  } models[] = {{"small_14M", 128, 256, 12}, {"base_110M", 768, 768, 12}};
  for (const auto& model : models) {
    int64_t total = 0;
    const std::vector<ParamSegment> segs = bert_layout(model.e, model.h, model.layers, total);
    Arena arena("bench", Device::CUDA, static_cast<size_t>(total) * 24 + (64 << 20));
    const SegmentTable table = make_segment_table(ctx, arena, segs, total);
    const std::vector<float> host = test::random_vector<float>(total, 1, -1, 1);
    const Tensor p = test::upload(ctx, arena, host, {total});
    const Tensor g = test::upload(ctx, arena, host, {total});
    const Tensor m = arena.alloc<float>({total});
    const Tensor v = arena.alloc<float>({total});
    zero_tensor(ctx.stream(), m);
    zero_tensor(ctx.stream(), v);
    const Tensor norm = arena.alloc<float>({1});
    const Tensor workspace = arena.alloc<float>({lamb_workspace_size(table)});
    OptimHyperValues h;
    h.lr = 1e-4f;
    const std::array<float, kNumHyper> packed = h.packed();
    const Tensor hyper =
        test::upload(ctx, arena, std::vector<float>(packed.begin(), packed.end()), {kNumHyper});

    // Validation: the norm against the CPU (f64 sum) on the full buffer.
    run_op(ctx, GradNorm{.grads = g,
                         .table = table,
                         .workspace = Out(workspace),
                         .norm = Out(norm),
                         .segment_norms = Out(Tensor{})});
    Arena cpu_arena("table", Device::CPU, segment_table_bytes(segs));
    const SegmentTable cpu_table = make_segment_table(cpu, cpu_arena, segs, total);
    std::vector<float> ref(1), grads = host;
    run_op(cpu, GradNorm{.grads = Tensor::view_of(grads.data(), Device::CPU, {total}),
                         .table = cpu_table,
                         .workspace = Out(Tensor{}),
                         .norm = Out(Tensor::view_of(ref.data(), Device::CPU, {1})),
                         .segment_norms = Out(Tensor{})});
    if (test::max_relative_error(test::download<float>(ctx, norm), ref) > 1e-5) {
      std::printf("FAILED grad_norm validation against the CPU at %s\n", model.name);
      return 1;
    }
    std::printf("# %s: %ld parameters in %ld segments, %ld blocks\n", model.name,
                static_cast<long>(total), static_cast<long>(table.num_segments),
                static_cast<long>(table.num_blocks));

    const double n = static_cast<double>(total);
    const double t_norm = bench::time_median_ms(ctx, [&] {
      run_op(ctx, GradNorm{.grads = g,
                           .table = table,
                           .workspace = Out(workspace),
                           .norm = Out(norm),
                           .segment_norms = Out(Tensor{})});
    });
    bench::report(ctx, "grad_norm", model.name, "ours", t_norm, 4 * n, 0);
    auto adam_step = [&](bool lamb) {
      run_op(ctx, AdamStep{.params = Out(p),
                           .grads = g,
                           .m = Out(m),
                           .v = Out(v),
                           .table = table,
                           .hyper = hyper,
                           .norm = norm,
                           .bias_correction = false,
                           .lamb = lamb,
                           .workspace = Out(workspace)});
    };
    const double t_adamw = bench::time_median_ms(ctx, [&] { adam_step(false); });
    bench::report(ctx, "adamw", model.name, "ours", t_adamw, 28 * n, 0);
    const double t_naive = bench::time_median_ms(ctx, [&] {
      naive_adamw<<<(total + 255) / 256, 256, 0, ctx.stream()>>>(
          p.ptr<float>(), g.ptr<float>(), m.ptr<float>(), v.ptr<float>(), total, h.lr, h.beta1,
          h.beta2, h.eps, h.weight_decay);
      ELECTRA_CUDA_CHECK_LAUNCH();
    });
    bench::report(ctx, "adamw", model.name, "baseline_naive", t_naive, 28 * n, 0);
    const double t_lamb = bench::time_median_ms(ctx, [&] { adam_step(true); });
    bench::report(ctx, "lamb", model.name, "ours", t_lamb, 40 * n, 0);
  }
  return 0;
}
