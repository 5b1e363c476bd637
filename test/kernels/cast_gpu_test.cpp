#include <catch2/catch.hpp>
#include <cstring>

#include "kernels/cast.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("cast on the GPU equals the CPU bit for bit, aligned and unaligned", "[cast][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("cast", Device::CUDA, 64 << 20);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{4096}, int64_t{30522 * 3 + 5}}) {
    std::vector<float> x = test::random_vector<float>(n, n, -1e3, 1e3);
    std::vector<bf16> expect(n);
    run_op(cpu, Cast{.in = Tensor::view_of(x.data(), Device::CPU, {n}),
                     .out = Out(Tensor::view_of(expect.data(), Device::CPU, {n}))});
    Tensor dx = test::upload(gpu, arena, x, {n});
    Tensor dy = arena.alloc<bf16>({n});
    poison_tensor(gpu.stream(), dy);
    run_op(gpu, Cast{.in = dx, .out = Out(dy)});
    std::vector<bf16> got = test::download<bf16>(gpu, dy);
    CHECK(std::memcmp(got.data(), expect.data(), n * sizeof(bf16)) == 0);
    Tensor back = arena.alloc<float>({n});
    run_op(gpu, Cast{.in = dy, .out = Out(back)});
    std::vector<float> widened = test::download<float>(gpu, back);
    for (int64_t i = 0; i < n; ++i) REQUIRE(widened[i] == bf16_to_float(expect[i]));
  }
}
