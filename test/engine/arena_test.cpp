#include <catch2/catch.hpp>
#include <cstdint>

#include "engine/arena.h"
#include "engine/device.h"

using namespace electra;

TEST_CASE("Arena hands out aligned, disjoint tensors and tracks the high-water mark", "[arena]") {
  Arena arena("activations", Device::CPU, 4096);
  Tensor a = arena.alloc<float>({10});
  Tensor b = arena.alloc<double>({3, 5});
  CHECK(reinterpret_cast<uintptr_t>(a.data) % Arena::kAlignment == 0);
  CHECK(reinterpret_cast<uintptr_t>(b.data) % Arena::kAlignment == 0);
  CHECK(static_cast<char*>(b.data) >= static_cast<char*>(a.data) + a.nbytes());
  CHECK(arena.used() == 512);
  CHECK(arena.high_water() == 512);
  a.ptr<float>()[9] = 1.5f;  // the memory is usable
  CHECK(a.ptr<float>()[9] == 1.5f);
}

TEST_CASE("Arena mark/rewind reuses memory without lowering the high-water mark", "[arena]") {
  Arena arena("workspace", Device::CPU, 4096);
  arena.alloc<float>({64});
  const size_t mark = arena.mark();
  Tensor scratch = arena.alloc<float>({256});
  arena.rewind(mark);
  CHECK(arena.used() == mark);
  Tensor again = arena.alloc<float>({256});
  CHECK(again.data == scratch.data);
  CHECK(arena.high_water() == 256 + 1024);
  CHECK_THROWS_AS(arena.rewind(arena.used() + 1), Error);
  arena.reset();
  CHECK(arena.used() == 0);
}

TEST_CASE("Arena over capacity names the arena, the request and the sizes", "[arena]") {
  Arena arena("parameters", Device::CPU, 1024);
  arena.alloc<float>({200});
  CHECK_THROWS_WITH(arena.alloc<float>({100}), Catch::Contains("arena 'parameters'") &&
                                                   Catch::Contains("400 bytes") &&
                                                   Catch::Contains("1024"));
  CHECK(arena.used() == 1024);  // a failed request changes nothing
}

TEST_CASE("Arena moves transfer ownership", "[arena]") {
  Arena a("a", Device::CPU, 1024);
  Tensor t = a.alloc<float>({4});
  Arena b = std::move(a);
  CHECK(b.used() == 256);
  CHECK(a.capacity() == 0);
  t.ptr<float>()[0] = 3.0f;
  CHECK(t.ptr<float>()[0] == 3.0f);
}

TEST_CASE("A CUDA arena is refused without a usable GPU", "[arena]") {
  if (cuda_device_count() > 0)
    SUCCEED("GPU present: covered by arena_gpu_test");
  else
    CHECK_THROWS_AS(Arena("device", Device::CUDA, 1024), Error);
}

TEST_CASE("A counting arena measures what a real one would use, without memory", "[arena]") {
  Arena counting = Arena::counting("plan", Device::CUDA);
  Tensor a = counting.alloc<float>({10});
  Tensor b = counting.alloc<double>({3, 5});
  CHECK(counting.is_counting());
  CHECK(a.data == nullptr);
  CHECK(b.data == nullptr);
  CHECK(b.device == Device::CUDA);
  Arena real("real", Device::CPU, counting.high_water());
  real.alloc<float>({10});
  real.alloc<double>({3, 5});
  CHECK(real.used() == counting.used());
  CHECK(counting.high_water() == 512);
}
