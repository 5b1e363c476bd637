// masking at the pre-training shape B = 128, T = 128 (and B = 32, T = 512): the cases of
// test/kernels/masking_cases.cpp run by bench/op_bench.cuh, ours (one block per sequence) against
// a plain kernel with one thread per sequence that picks the k smallest keys by k linear scans.
// Roofline bytes: ids read, masked ids and the three slot arrays written.
#include "kernels/cuda_common.cuh"
#include "kernels/masking.h"
#include "op_bench.cuh"

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
  const std::vector<bench::Baseline> baselines = {
      {"masking", bench::Pass::kForward, "baseline_thread_per_sequence",
       [](Context& ctx, const test::Args& a) {
         const Tensor &ids = a["ids"], &positions = a["positions"];
         // The parameters of test/kernels/masking_cases.cpp's benchmark cases.
         MaskingParams params;
         params.stream = ctx.rng(RngPurpose::kMasking, static_cast<uint32_t>(ids.dim(1)));
         const int b = static_cast<int>(ids.dim(0));
         naive_masking<<<(b + 127) / 128, 128, 0, ctx.stream()>>>(
             ids.ptr<int32_t>(), b, static_cast<int>(ids.dim(1)),
             static_cast<int>(positions.dim(1)), params,
             probability_threshold(params.mask_token_prob), a["masked_ids"].ptr<int32_t>(),
             positions.ptr<int32_t>(), a["original"].ptr<int32_t>(), a["weights"].ptr<float>());
         ELECTRA_CUDA_CHECK_LAUNCH();
       }},
  };
  return bench::run_op_benchmarks(test::op_cases(), baselines);
}
