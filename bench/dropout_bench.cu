// dropout forward (bf16 activations, p = 0.1) at ELECTRA-Small, Base and Large activation sizes,
// ours against a one-thread-per-element kernel that draws one Philox block per element.
#include <cstdio>
#include <vector>

#include "bench_common.cuh"
#include "engine/arena.h"
#include "kernels/dropout.h"
#include "test/common/device_util.h"

using namespace electra;

namespace {

__global__ void naive_dropout(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n,
                              DropoutSite site) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const bool keep = dropout_keep(site.stream, site.offset + i, site.p);
  y[i] = __float2bfloat16_rn(keep ? __bfloat162float(x[i]) / (1.0f - site.p) : 0.0f);
}

struct BenchShape {
  const char* name;
  int64_t n;
};

}  // namespace

int main() {
  Context ctx = Context::cuda(0, 1);
  Context cpu = Context::cpu(1);
  const BenchShape shapes[] = {{"small_128x128x256", 128 * 128 * 256},
                               {"base_32x512x768", 32 * 512 * 768},
                               {"large_32x512x1024", 32 * 512 * 1024}};
  for (const BenchShape& s : shapes) {
    Arena arena("bench", Device::CUDA, static_cast<size_t>(s.n) * 4 + (1 << 20));
    const DropoutSite site{ctx.rng(RngPurpose::kDropout, 3), dropout_site_offset(2), 0.1f};
    std::vector<float> host(s.n);
    for (int64_t i = 0; i < s.n; ++i)
      host[i] = bf16_to_float(float_to_bf16((i % 1999) * 1e-3f - 1));
    const Tensor x = test::upload_bf16(ctx, arena, host, {s.n});
    const Tensor y = arena.alloc<bf16>({s.n});
    run_op(ctx, Dropout{.x = x, .site = site, .y = Out(y)});
    std::vector<float> expect(s.n);
    run_op(cpu, Dropout{.x = Tensor::view_of(host.data(), Device::CPU, {s.n}),
                        .site = site,
                        .y = Out(Tensor::view_of(expect.data(), Device::CPU, {s.n}))});
    const std::vector<bf16> got = test::download<bf16>(ctx, y);
    for (int64_t i = 0; i < s.n; ++i) {
      if (got[i].bits != float_to_bf16(expect[i]).bits) {
        std::printf("FAILED validation of %s at %ld\n", s.name, static_cast<long>(i));
        return 1;
      }
    }
    const double bytes = 2.0 * 2 * s.n;
    const double ours = bench::time_median_ms(
        ctx, [&] { run_op(ctx, Dropout{.x = x, .site = site, .y = Out(y)}); });
    bench::report(ctx, "dropout_fwd_bf16", s.name, "ours", ours, bytes, 0);
    const double base = bench::time_median_ms(ctx, [&] {
      naive_dropout<<<(s.n + 255) / 256, 256, 0, ctx.stream()>>>(
          static_cast<const __nv_bfloat16*>(x.data), static_cast<__nv_bfloat16*>(y.data), s.n,
          site);
    });
    bench::report(ctx, "dropout_fwd_bf16", s.name, "baseline_naive", base, bytes, 0);
  }
  return 0;
}
