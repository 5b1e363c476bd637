// The flash kernels' shared memory (kernels/attention_flash_layout.h) against the limits of the
// GPUs the binary is built for, on the CPU: a layout that grows past them fails here, not at the
// first launch on a GPU.
#include <catch2/catch.hpp>

#include "kernels/attention_flash_layout.h"

using namespace electra;

namespace {

// Per-block opt-in dynamic shared memory and shared memory per SM (CUDA C++ Programming Guide,
// "Technical Specifications per Compute Capability"); each resident block also reserves 1 KiB.
struct SmLimits {
  const char* name;
  size_t per_block, per_sm;
};
constexpr SmLimits kSm80{"sm_80", 163 * 1024, 164 * 1024};
constexpr SmLimits kSm90{"sm_90", 227 * 1024, 228 * 1024};
constexpr size_t kReservedPerBlock = 1024;

size_t blocks_per_sm(size_t bytes, const SmLimits& sm) {
  return sm.per_sm / (bytes + kReservedPerBlock);
}

}  // namespace

TEST_CASE("every flash kernel fits the per-block shared memory of sm_80 and sm_90",
          "[attention][flash]") {
  for (FlashKernel kernel :
       {FlashKernel::kForward, FlashKernel::kBackwardDkDv, FlashKernel::kBackwardDq}) {
    for (DType dtype : {DType::F32, DType::BF16}) {
      for (int64_t d = 1; d <= 128; ++d) {
        const size_t bytes = flash_shared_bytes(kernel, dtype, d);
        INFO("kernel " << static_cast<int>(kernel) << ", " << dtype_name(dtype) << ", d = " << d
                       << ": " << bytes << " bytes");
        CHECK(bytes > 0);
        CHECK(bytes % 4 == 0);
        for (const SmLimits& sm : {kSm80, kSm90}) {
          INFO(sm.name);
          CHECK(bytes <= sm.per_block);
          CHECK(blocks_per_sm(bytes, sm) >= 1);
        }
        // One layout per tile width: every d of a width requests the same bytes.
        CHECK(bytes == flash_shared_bytes(kernel, dtype, flash_tile_width(d)));
      }
    }
  }
}

TEST_CASE("flash dK, dV at d = 64 in bf16 runs 2 blocks per H100 SM (S/dP tiles reused)",
          "[attention][flash]") {
  const size_t dkdv = flash_shared_bytes(FlashKernel::kBackwardDkDv, DType::BF16, 64);
  const size_t dq = flash_shared_bytes(FlashKernel::kBackwardDq, DType::BF16, 64);
  // Q, dout, K, V (4 x 9 KiB) + S/Pd and dP/dS (2 x 17 KiB) + dK, dV (34 KiB) + L, D (512 B).
  CHECK(dkdv == 107008);  // 104.5 KiB, down from 122.5 KiB with separate Pd and dS tiles
  CHECK(dq == 89600);     // 87.5 KiB, down from 105.5 KiB
  CHECK(blocks_per_sm(dkdv, kSm90) == 2);
  CHECK(blocks_per_sm(dq, kSm90) == 2);
  CHECK(blocks_per_sm(flash_shared_bytes(FlashKernel::kForward, DType::BF16, 64), kSm90) >= 3);
}

TEST_CASE("flash_shared_bytes refuses other dtypes and head dims", "[attention][flash]") {
  CHECK_THROWS_WITH(flash_shared_bytes(FlashKernel::kForward, DType::F64, 64),
                    Catch::Contains("f32 or bf16"));
  CHECK_THROWS_WITH(flash_shared_bytes(FlashKernel::kForward, DType::BF16, 129),
                    Catch::Contains("head dim 129"));
  CHECK_THROWS(flash_shared_bytes(FlashKernel::kForward, DType::BF16, 0));
}
