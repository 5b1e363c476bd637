// unigram_sample kernel: one thread per sample; each reads its two Philox words and binary-searches
// the cdf (log2 V reads of a table that stays in L2). O(M log V): negligible next to the
// discriminator.
#include "kernels/cuda_common.cuh"
#include "kernels/unigram_sample.h"

namespace electra::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void unigram_sample_kernel(const double* cdf, int64_t vocab, RngStream stream_arg,
                                      int32_t* samples, int64_t m) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const RngStream stream = stream_arg.resolved();  // the step may live in device memory
  samples[i] = unigram_draw(cdf, vocab, stream, i);
}

}  // namespace

}  // namespace electra::cuda

namespace electra {

void UnigramSample::cuda(Context& ctx) const {
  const int64_t m = samples.numel();
  cuda::unigram_sample_kernel<<<static_cast<unsigned>(cuda::ceil_div(m, cuda::kThreads)),
                                cuda::kThreads, 0, ctx.stream()>>>(
      cdf.ptr<double>(), cdf.numel(), stream, samples.ptr<int32_t>(), m);
  ELECTRA_CUDA_CHECK_LAUNCH();
}

}  // namespace electra
