// masking at the pre-training shape B = 128, T = 128 (and B = 32, T = 512): ours (one block per
// sequence) against a plain kernel with one thread per sequence that picks the k smallest keys by
// k linear scans. Roofline bytes: ids read, masked ids and the three slot arrays written.
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/cuda_common.cuh"
#include "kernels/masking.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// Same outputs as ours (positions ascending, then [MASK]/keep), serially per sequence.
__global__ void naive_masking(const int32_t* ids, int batch, int seq, int slots,
                              MaskingParams params, uint32_t threshold, int32_t* masked,
                              int32_t* positions, int32_t* original, float* weights) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const int32_t* row = ids + static_cast<int64_t>(b) * seq;
  int non_pad = 0, candidates = 0;
  for (int t = 0; t < seq; ++t) {
    const int32_t id = row[t];
    non_pad += id != params.pad_id;
    candidates += id != params.pad_id && id != params.cls_id && id != params.sep_id;
    masked[static_cast<int64_t>(b) * seq + t] = id;
  }
  const int k =
      min(min(slots, candidates), max(1, masking_target_count(params.mask_prob.value, non_pad)));
  // The j-th smallest (key, t) above the previous pick, k times; then mark and order by position.
  uint32_t last_key = 0;
  int last_t = -1;
  for (int j = 0; j < slots; ++j) weights[b * slots + j] = 0.0f;
  for (int j = 0; j < k; ++j) {
    uint32_t best_key = UINT32_MAX;
    int best_t = seq;
    for (int t = 0; t < seq; ++t) {
      const int32_t id = row[t];
      if (id == params.pad_id || id == params.cls_id || id == params.sep_id) continue;
      const uint32_t key = params.stream.bits(static_cast<uint64_t>(b) * seq + t);
      const bool after = last_t < 0 || key > last_key || (key == last_key && t > last_t);
      const bool before = key < best_key || (key == best_key && t < best_t);
      if (after && before) best_key = key, best_t = t;
    }
    last_key = best_key, last_t = best_t;
    masked[static_cast<int64_t>(b) * seq + best_t] = -1 - best_t;  // marks a chosen position
  }
  int slot = 0;
  for (int t = 0; t < seq; ++t) {
    const int64_t index = static_cast<int64_t>(b) * seq + t;
    if (masked[index] != -1 - t) continue;
    positions[b * slots + slot] = t;
    original[b * slots + slot] = row[t];
    weights[b * slots + slot] = 1.0f;
    ++slot;
    const uint32_t bits = params.stream.bits(kMaskingDecisionOffset + index);
    masked[index] = bits < threshold ? params.mask_id : row[t];
  }
  for (; slot < slots; ++slot) positions[b * slots + slot] = original[b * slots + slot] = 0;
}

}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("bench", Device::CUDA, size_t{16} << 20);
  const struct {
    const char* name;
    int64_t b, t;
  } shapes[] = {{"128x128", 128, 128}, {"32x512", 32, 512}};
  MaskingParams params;
  params.stream = ctx.rng(RngPurpose::kMasking, 1);
  for (const auto& shape : shapes) {
    const int64_t b = shape.b, t = shape.t;
    const int64_t n = max_predictions(params.mask_prob.value, static_cast<int>(t));
    const size_t mark = arena.mark();
    std::vector<int32_t> ids = test::random_ints(b * t, 1, 1000, 30000);
    const std::vector<int32_t> lengths = test::random_ints(b, 2, 8, static_cast<int>(t));
    for (int64_t s = 0; s < b; ++s) {
      ids[s * t] = params.cls_id;
      ids[s * t + lengths[s] - 1] = params.sep_id;
      for (int64_t i = lengths[s]; i < t; ++i) ids[s * t + i] = params.pad_id;
    }
    const Tensor d_ids = test::upload(ctx, arena, ids, {b, t});
    const Tensor masked = arena.alloc(DType::I32, {b, t});
    const Tensor positions = arena.alloc(DType::I32, {b, n});
    const Tensor original = arena.alloc(DType::I32, {b, n});
    const Tensor weights = arena.alloc<float>({b, n});
    run_op(ctx, MaskTokens{.ids = d_ids,
                           .params = params,
                           .masked_ids = Out(masked),
                           .positions = Out(positions),
                           .original = Out(original),
                           .weights = Out(weights)});
    std::vector<int32_t> ref_masked(b * t), ref_positions(b * n), ref_original(b * n);
    std::vector<float> ref_weights(b * n);
    run_op(cpu,
           MaskTokens{.ids = Tensor::view_of(ids.data(), Device::CPU, {b, t}),
                      .params = params,
                      .masked_ids = Out(Tensor::view_of(ref_masked.data(), Device::CPU, {b, t})),
                      .positions = Out(Tensor::view_of(ref_positions.data(), Device::CPU, {b, n})),
                      .original = Out(Tensor::view_of(ref_original.data(), Device::CPU, {b, n})),
                      .weights = Out(Tensor::view_of(ref_weights.data(), Device::CPU, {b, n}))});
    if (test::download<int32_t>(ctx, masked) != ref_masked ||
        test::download<int32_t>(ctx, positions) != ref_positions ||
        test::download<float>(ctx, weights) != ref_weights) {
      std::printf("FAILED validation against the CPU at %s\n", shape.name);
      return 1;
    }
    const double bytes = b * t * 8.0 + b * n * 12.0;
    const double ours = bench::time_median_ms(ctx, [&] {
      run_op(ctx, MaskTokens{.ids = d_ids,
                             .params = params,
                             .masked_ids = Out(masked),
                             .positions = Out(positions),
                             .original = Out(original),
                             .weights = Out(weights)});
    });
    bench::report(ctx, "masking", shape.name, "ours", ours, bytes, 0);
    const double base = bench::time_median_ms(ctx, [&] {
      naive_masking<<<(b + 127) / 128, 128, 0, ctx.stream()>>>(
          d_ids.ptr<int32_t>(), static_cast<int>(b), static_cast<int>(t), static_cast<int>(n),
          params, probability_threshold(params.mask_token_prob), masked.ptr<int32_t>(),
          positions.ptr<int32_t>(), original.ptr<int32_t>(), weights.ptr<float>());
      ELECTRA_CUDA_CHECK_LAUNCH();
    });
    bench::report(ctx, "masking", shape.name, "baseline_thread_per_sequence", base, bytes, 0);
    arena.rewind(mark);
  }
  return 0;
}
