// The device Philox and uniforms give the same bits as the host.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "engine/arena.h"
#include "engine/context.h"
#include "engine/cuda_check.h"
#include "engine/philox.h"
#include "test/common/device_util.h"

using namespace electra;

namespace {

__global__ void draw_kernel(RngStream stream, uint64_t first, int n, uint32_t* bits, float* u) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t b = stream.bits(first + static_cast<uint64_t>(i));
  bits[i] = b;
  u[i] = uniform01(b);
}

}  // namespace

TEST_CASE("Philox draws on the GPU equal the CPU bit for bit", "[philox][gpu]") {
  Context ctx = Context::cuda(0, 1234);
  const int n = 1 << 20;
  const uint64_t first = (1ull << 34) + 3;  // beyond 32-bit element indices
  Arena device("philox", Device::CUDA, size_t{16} << 20);
  Tensor bits = device.alloc(DType::I32, {n});
  Tensor u = device.alloc<float>({n});
  poison_tensor(ctx.stream(), bits);
  const RngStream stream = ctx.rng(RngPurpose::kSample, 77);
  draw_kernel<<<(n + 255) / 256, 256, 0, ctx.stream()>>>(
      stream, first, n, static_cast<uint32_t*>(bits.data), u.ptr<float>());
  ELECTRA_CUDA_CHECK_LAUNCH();
  // download() copies on ctx.stream() and waits for it: a plain cudaMemcpy runs on the legacy
  // default stream, which does not wait for the context's non-blocking stream.
  const std::vector<int32_t> host_bits = test::download<int32_t>(ctx, bits);
  const std::vector<float> host_u = test::download<float>(ctx, u);
  int bit_mismatch = 0, u_mismatch = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t b = stream.bits(first + i);
    bit_mismatch += static_cast<uint32_t>(host_bits[i]) != b;
    const float cu = uniform01(b);
    u_mismatch += std::memcmp(&host_u[i], &cu, 4) != 0;
  }
  CHECK(bit_mismatch == 0);
  CHECK(u_mismatch == 0);
}
