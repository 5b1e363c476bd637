// disc_head over every token of a batch (B x T: Small 128 x 128, Base 256 x 512), bf16 logits:
// ours (deterministic two-pass counts) against a plain one-thread-per-token kernel that adds the
// counts with float atomics (non-deterministic order). Roofline bytes: logits, labels, weights
// read; loss and dlogits written.
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/cuda_common.cuh"
#include "kernels/disc_head.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

__global__ void naive_disc_head(const __nv_bfloat16* logits, const int32_t* labels,
                                const float* weights, float scale, int64_t n, float* loss,
                                __nv_bfloat16* dlogits, float* counts) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float z = __bfloat162float(logits[i]), w = weights[i];
  const bool actual = labels[i] == 1, predicted = z > 0.0f;
  const float y = actual ? 1.0f : 0.0f;
  const float l = w * (fmaxf(z, 0.0f) - y * z + log1pf(expf(-fabsf(z))));
  loss[i] = l;
  dlogits[i] = __float2bfloat16_rn(w * scale * (1.0f / (1.0f + expf(-z)) - y));
  atomicAdd(&counts[kDiscCorrect], predicted == actual ? w : 0.0f);
  atomicAdd(&counts[kDiscTruePositive], predicted && actual ? w : 0.0f);
  atomicAdd(&counts[kDiscPredictedPositive], predicted ? w : 0.0f);
  atomicAdd(&counts[kDiscActualPositive], actual ? w : 0.0f);
  atomicAdd(&counts[kDiscWeight], w);
  atomicAdd(&counts[kDiscLoss], l);
}

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("bench", Device::CUDA, size_t{64} << 20);
  const struct {
    const char* name;
    int64_t n;
  } shapes[] = {{"small_128x128", 128 * 128}, {"base_256x512", 256 * 512}};
  for (const auto& shape : shapes) {
    const int64_t n = shape.n;
    const size_t mark = arena.mark();
    std::vector<float> z = test::random_vector<float>(n, 1, -6, 6);
    for (float& f : z) f = bf16_to_float(float_to_bf16(f));
    std::vector<int32_t> labels = test::random_ints(n, 2, 0, 1);
    std::vector<float> weights(n, 1.0f);
    const Tensor logits = test::upload_bf16(ctx, arena, z, {n});
    const Tensor dl = test::upload(ctx, arena, labels, {n});
    const Tensor dw = test::upload(ctx, arena, weights, {n});
    const Tensor loss = arena.alloc<float>({n});
    const Tensor dz = arena.alloc(DType::BF16, {n});
    const Tensor counts = arena.alloc<float>({kDiscCounts});
    const Tensor workspace = arena.alloc<float>({disc_head_workspace_size(n)});
    const float scale = 1.0f / n;
    run_op(ctx, DiscHead{.logits = logits,
                         .labels = dl,
                         .weights = dw,
                         .scale = scale,
                         .loss = Out(loss),
                         .dlogits = Out(dz),
                         .counts = Out(counts),
                         .workspace = Out(workspace)});
    std::vector<float> ref_loss(n), ref_dz(n), ref_counts(kDiscCounts);
    run_op(cpu,
           DiscHead{.logits = Tensor::view_of(z.data(), Device::CPU, {n}),
                    .labels = Tensor::view_of(labels.data(), Device::CPU, {n}),
                    .weights = Tensor::view_of(weights.data(), Device::CPU, {n}),
                    .scale = scale,
                    .loss = Out(Tensor::view_of(ref_loss.data(), Device::CPU, {n})),
                    .dlogits = Out(Tensor::view_of(ref_dz.data(), Device::CPU, {n})),
                    .counts = Out(Tensor::view_of(ref_counts.data(), Device::CPU, {kDiscCounts})),
                    .workspace = Out(Tensor{})});
    const std::vector<float> got_counts = test::download<float>(ctx, counts);
    if (test::max_relative_error(test::download<float>(ctx, loss), ref_loss) > 1e-5 ||
        test::max_relative_error(test::download_f32(ctx, dz), ref_dz) > 2e-2 ||
        got_counts[kDiscCorrect] != ref_counts[kDiscCorrect] ||
        got_counts[kDiscWeight] != ref_counts[kDiscWeight]) {
      std::printf("FAILED validation against the CPU at %s\n", shape.name);
      return 1;
    }
    const double bytes = n * (2.0 + 4 + 4 + 4 + 2);
    const double ours = bench::time_median_ms(ctx, [&] {
      run_op(ctx, DiscHead{.logits = logits,
                           .labels = dl,
                           .weights = dw,
                           .scale = scale,
                           .loss = Out(loss),
                           .dlogits = Out(dz),
                           .counts = Out(counts),
                           .workspace = Out(workspace)});
    });
    bench::report(ctx, "disc_head_bf16", shape.name, "ours", ours, bytes, 0);
    const double base = bench::time_median_ms(ctx, [&] {
      ELECTRA_CUDA_CHECK(cudaMemsetAsync(counts.data, 0, counts.nbytes(), ctx.stream()));
      naive_disc_head<<<(n + 255) / 256, 256, 0, ctx.stream()>>>(
          static_cast<const __nv_bfloat16*>(logits.data), dl.ptr<int32_t>(), dw.ptr<float>(), scale,
          n, loss.ptr<float>(), static_cast<__nv_bfloat16*>(dz.data), counts.ptr<float>());
      ELECTRA_CUDA_CHECK_LAUNCH();
    });
    bench::report(ctx, "disc_head_bf16", shape.name, "baseline_atomics", base, bytes, 0);
    arena.rewind(mark);
  }
  return 0;
}
