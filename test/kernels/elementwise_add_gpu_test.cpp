#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "kernels/elementwise_add.h"
#include "test/common/device_util.h"
#include "test/common/test_util.h"

using namespace electra;

TEST_CASE("elementwise_add on the GPU equals the CPU bit for bit", "[elementwise_add][gpu]") {
  Context gpu = Context::cuda(0);
  Context cpu = Context::cpu();
  Arena arena("elementwise_add", Device::CUDA, 64 << 20);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{30522 * 128 + 5}}) {
    const std::vector<float> a = test::random_vector<float>(n, n, -1, 1);
    const std::vector<float> b = test::random_vector<float>(n, n + 1, -1e-3, 1e-3);
    std::vector<float> expect(n);
    run_op(cpu, ElementwiseAdd{.a = Tensor::view_of(const_cast<float*>(a.data()), Device::CPU, {n}),
                               .b = Tensor::view_of(const_cast<float*>(b.data()), Device::CPU, {n}),
                               .out = Out(Tensor::view_of(expect.data(), Device::CPU, {n}))});
    const Tensor da = test::upload(gpu, arena, a, {n});
    const Tensor db = test::upload(gpu, arena, b, {n});
    const Tensor out = arena.alloc<float>({n});
    poison_tensor(gpu.stream(), out);
    run_op(gpu, ElementwiseAdd{.a = da, .b = db, .out = Out(out)});
    const std::vector<float> got = test::download<float>(gpu, out);
    CHECK(std::memcmp(got.data(), expect.data(), n * sizeof(float)) == 0);
  }
}
