// The kernel lab's harness (after llm.c's dev/cuda): every benchmark validates against the CPU
// reference first, then times with CUDA events, the L2 cache flushed before each repeat, and
// reports the median beside the roofline and a baseline measured by the same program.
//
// Output: one line per measurement, parsed by scripts/gpu_check.sh into its summary table:
//   RESULT op=<op> shape=<shape> impl=<ours|baseline name> ms=<median> gbps=<achieved GB/s>
//          tflops=<achieved TFLOP/s> roofline_pct=<% of measured roofline>
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/cuda_check.h"

namespace electra::bench {

// Overwrites a buffer larger than L2 so the next kernel starts with a cold cache.
class L2Flusher {
 public:
  L2Flusher() {
    int device = 0, l2 = 0;
    ELECTRA_CUDA_CHECK(cudaGetDevice(&device));
    ELECTRA_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    bytes_ = static_cast<size_t>(std::max(l2, 1 << 20)) * 2;
    ELECTRA_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
  }
  ~L2Flusher() { cudaFree(buffer_); }
  void flush(cudaStream_t stream) {
    ELECTRA_CUDA_CHECK(cudaMemsetAsync(buffer_, ++value_ & 0xff, bytes_, stream));
  }

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  int value_ = 0;
};

// Median milliseconds of `fn` over `repeats` runs after `warmup` runs, L2 flushed before each.
inline double time_median_ms(Context& ctx, const std::function<void()>& fn, int repeats = 25,
                             int warmup = 3) {
  static L2Flusher flusher;
  cudaEvent_t start, stop;
  ELECTRA_CUDA_CHECK(cudaEventCreate(&start));
  ELECTRA_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<float> times;
  for (int i = 0; i < repeats; ++i) {
    flusher.flush(ctx.stream());
    ELECTRA_CUDA_CHECK(cudaEventRecord(start, ctx.stream()));
    fn();
    ELECTRA_CUDA_CHECK(cudaEventRecord(stop, ctx.stream()));
    ELECTRA_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    ELECTRA_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  ELECTRA_CUDA_CHECK(cudaEventDestroy(start));
  ELECTRA_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Device-to-device copy bandwidth in GB/s (bytes read + bytes written), 1 GiB copied.
inline double measured_copy_gbps(Context& ctx) {
  static double cached = 0;
  if (cached > 0) return cached;
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  ELECTRA_CUDA_CHECK(cudaMalloc(&a, bytes));
  ELECTRA_CUDA_CHECK(cudaMalloc(&b, bytes));
  const double ms = time_median_ms(ctx, [&] {
    ELECTRA_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
  });
  cudaFree(a);
  cudaFree(b);
  cached = 2.0 * bytes / (ms * 1e-3) / 1e9;
  return cached;
}

// cuBLASLt bf16 GEMM rate in TFLOP/s (8192^3, f32 accumulation): the matmul roofline.
inline double measured_bf16_gemm_tflops(Context& ctx) {
  static double cached = 0;
  if (cached > 0) return cached;
  const int n = 8192;
  void *a, *b, *c;
  ELECTRA_CUDA_CHECK(cudaMalloc(&a, size_t{2} * n * n));
  ELECTRA_CUDA_CHECK(cudaMalloc(&b, size_t{2} * n * n));
  ELECTRA_CUDA_CHECK(cudaMalloc(&c, size_t{2} * n * n));
  ELECTRA_CUDA_CHECK(cudaMemsetAsync(a, 0, size_t{2} * n * n, ctx.stream()));
  ELECTRA_CUDA_CHECK(cudaMemsetAsync(b, 0, size_t{2} * n * n, ctx.stream()));
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t layout;
  ELECTRA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  ELECTRA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, n, n, n));
  const float alpha = 1, beta = 0;
  const double ms = time_median_ms(ctx, [&] {
    ELECTRA_CUBLAS_CHECK(cublasLtMatmul(ctx.cublaslt(), desc, &alpha, a, layout, b, layout, &beta,
                                        c, layout, c, layout, nullptr, ctx.cublaslt_workspace(),
                                        ctx.cublaslt_workspace_bytes(), ctx.stream()));
  });
  cublasLtMatrixLayoutDestroy(layout);
  cublasLtMatmulDescDestroy(desc);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cached = 2.0 * n * n * n / (ms * 1e-3) / 1e12;
  return cached;
}

// Prints one RESULT line. roofline_pct is bytes against the copy bandwidth for memory-bound ops
// (flops == 0) and flops against the bf16 GEMM rate otherwise.
inline void report(Context& ctx, const std::string& op, const std::string& shape,
                   const std::string& impl, double ms, double bytes, double flops) {
  const double gbps = bytes / (ms * 1e-3) / 1e9;
  const double tflops = flops / (ms * 1e-3) / 1e12;
  const double pct = flops > 0 ? 100.0 * tflops / measured_bf16_gemm_tflops(ctx)
                               : 100.0 * gbps / measured_copy_gbps(ctx);
  std::printf("RESULT op=%s shape=%s impl=%s ms=%.4f gbps=%.1f tflops=%.2f roofline_pct=%.1f\n",
              op.c_str(), shape.c_str(), impl.c_str(), ms, gbps, tflops, pct);
  std::fflush(stdout);
}

}  // namespace electra::bench
