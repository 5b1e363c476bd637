// cast f32 -> bf16 at the size of ELECTRA-Base's parameter buffer (~110M values), ours against a
// plain one-element-per-thread kernel as the baseline.
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/cast.h"
#include "test/common/device_util.h"

using namespace electra;

namespace {
__global__ void naive_cast(const float* in, __nv_bfloat16* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}
}  // namespace

int main() {
  Context ctx = Context::cuda(0);
  const int64_t n = 110'000'000;
  Arena arena("bench", Device::CUDA, size_t{n} * 8 + (1 << 20));
  Tensor x = arena.alloc<float>({n});
  Tensor y = arena.alloc<bf16>({n});
  std::vector<float> host(n);
  for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.001f - 0.5f;
  copy_tensor(ctx.stream(), x, Tensor::view_of(host.data(), Device::CPU, {n}));
  run_op(ctx, Cast{.in = x, .out = Out(y)});
  const std::vector<bf16> got = test::download<bf16>(ctx, y);
  for (int64_t i = 0; i < n; i += 9973) {
    if (got[i].bits != float_to_bf16(host[i]).bits) {
      std::printf("FAILED validation at %ld\n", static_cast<long>(i));
      return 1;
    }
  }
  const double bytes = 6.0 * n;
  const double ours =
      bench::time_median_ms(ctx, [&] { run_op(ctx, Cast{.in = x, .out = Out(y)}); });
  bench::report(ctx, "cast_f32_bf16", "110M", "ours", ours, bytes, 0);
  const double base = bench::time_median_ms(ctx, [&] {
    naive_cast<<<(n + 255) / 256, 256, 0, ctx.stream()>>>(x.ptr<float>(),
                                                          static_cast<__nv_bfloat16*>(y.data), n);
  });
  bench::report(ctx, "cast_f32_bf16", "110M", "baseline_naive", base, bytes, 0);
  return 0;
}
