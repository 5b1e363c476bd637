// Shared-memory layout of the flash attention kernels (kernels/attention_flash.cu), host-visible so
// that a CPU unit test checks every kernel and head size against the GPUs' limits:
//   sm_80 (A100): 163 KiB of dynamic shared memory per block (opt-in), 164 KiB per SM;
//   sm_90 (H100/H200): 227 KiB per block (opt-in), 228 KiB per SM;
// and every resident block also reserves 1 KiB of the SM's shared memory for the system.
//
// Tiles: kBr query rows x kBc keys, head dim padded to a tile width kD of 32, 64 or 128. Operand
// tiles (Q, dout, K, V, P, dS) are in the activation type, padded by 8 elements per row; f32 tiles
// (S, dP, the O / dK / dV / dQ accumulators) by 4, so consecutive rows start on different banks
// while 16-row tiles stay 32-byte aligned, as WMMA requires. Every region is 128-byte aligned.
//
// The backward kernels write P (Pd) and dS over the f32 S and dP tiles they are computed from
// (every thread reads its S and dP values into registers, the block synchronises, then writes):
// at d = 64 in bf16 that brings the dK, dV kernel from 122.5 KiB to 104.5 KiB, so two blocks
// (16 warps) fit in an H100 SM, and the dQ kernel, which never needs P, from 105.5 to 87.5 KiB.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "engine/error.h"
#include "engine/tensor.h"

namespace electra {

namespace flash_layout {

// The most dynamic shared memory one block may use on sm_80; the kernels are sized for it, so
// the same binary runs on A100 and H100.
constexpr size_t kMaxBlockBytes = 166912;  // 163 KiB

constexpr int operand_ld(int cols) {
  return cols + 8;
}
constexpr int f32_ld(int cols) {
  return cols + 4;
}
constexpr size_t align128(size_t bytes) {
  return (bytes + 127) / 128 * 128;
}

// Forward: Q, K, V operand tiles, S (f32), Pd (operand type), O (f32 accumulator), the row
// statistics m, l and the rescaling factor, and the dropout keep bits of the tile (one byte per 4
// keys: bit k for key 4 c + k).
template <int kElem, int kD, int kBr, int kBc>
struct Forward {
  static constexpr int kLdT = operand_ld(kD), kLdS = f32_ld(kBc), kLdP = operand_ld(kBc);
  static constexpr int kLdO = f32_ld(kD);
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = align128(kQ + size_t{kElem} * kBr * kLdT);
  static constexpr size_t kV = align128(kK + size_t{kElem} * kBc * kLdT);
  static constexpr size_t kS = align128(kV + size_t{kElem} * kBc * kLdT);
  static constexpr size_t kP = align128(kS + sizeof(float) * kBr * kLdS);
  static constexpr size_t kO = align128(kP + size_t{kElem} * kBr * kLdP);
  static constexpr size_t kKeep = align128(kO + sizeof(float) * kBr * kLdO);
  static constexpr size_t kStats = align128(kKeep + size_t{kBr} * (kBc / 4));
  static constexpr size_t kBytes = kStats + sizeof(float) * 3 * kBr;
  static_assert(kBytes <= kMaxBlockBytes, "flash forward tiles exceed shared memory");
};

// Backward: Q, dout, K, V operand tiles; S (f32) shared with Pd, dP (f32) shared with dS; kAccs
// f32 accumulators of kAccRows rows (dK and dV of a key tile, or dQ of a query tile); L and D of
// the query rows.
template <int kElem, int kD, int kBr, int kBc, int kAccRows, int kAccs>
struct Backward {
  static constexpr int kLdT = operand_ld(kD), kLdS = f32_ld(kBc), kLdP = operand_ld(kBc);
  static constexpr int kLdA = f32_ld(kD);
  static constexpr size_t kScoreTile =
      std::max(sizeof(float) * kBr * kLdS, size_t{kElem} * kBr * kLdP);
  static constexpr size_t kQ = 0;
  static constexpr size_t kDout = align128(kQ + size_t{kElem} * kBr * kLdT);
  static constexpr size_t kK = align128(kDout + size_t{kElem} * kBr * kLdT);
  static constexpr size_t kV = align128(kK + size_t{kElem} * kBc * kLdT);
  static constexpr size_t kS = align128(kV + size_t{kElem} * kBc * kLdT);  // S, then Pd
  static constexpr size_t kDp = align128(kS + kScoreTile);                 // dPd, then dS
  static constexpr size_t kAcc = align128(kDp + kScoreTile);
  static constexpr size_t kRowStats = align128(kAcc + sizeof(float) * kAccs * kAccRows * kLdA);
  static constexpr size_t kBytes = kRowStats + sizeof(float) * 2 * kBr;
  static_assert(kBytes <= kMaxBlockBytes, "flash backward tiles exceed shared memory");
};

// Tile sizes: 16-bit operands use 64 x 64 tiles (WMMA), except the query tile of the dK, dV
// kernel at kD = 128, halved to fit its two f32 accumulators; f32 uses 32 x 32 tiles (its FMA
// loops gain nothing from larger ones).
template <int kElem, int kD>
struct Tiles {
  static constexpr int kBig = kElem == 4 ? 32 : 64;
  static constexpr int kKeyTileBr = kElem == 4 || kD <= 64 ? kBig : 32;
};

template <int kElem, int kD>
using ForwardOf = Forward<kElem, kD, Tiles<kElem, kD>::kBig, Tiles<kElem, kD>::kBig>;
template <int kElem, int kD>
using KeyTileOf = Backward<kElem, kD, Tiles<kElem, kD>::kKeyTileBr, Tiles<kElem, kD>::kBig,
                           Tiles<kElem, kD>::kBig, 2>;
template <int kElem, int kD>
using QueryTileOf =
    Backward<kElem, kD, Tiles<kElem, kD>::kBig, Tiles<kElem, kD>::kBig, Tiles<kElem, kD>::kBig, 1>;

}  // namespace flash_layout

// The flash kernels, by what one block computes.
enum class FlashKernel {
  kForward,       // out and L of one query tile
  kBackwardDkDv,  // dK and dV of one key tile
  kBackwardDq,    // dQ of one query tile
};

// The tile width (32, 64 or 128 columns) that holds head dim d <= 128.
constexpr int flash_tile_width(int64_t d) {
  return d <= 32 ? 32 : d <= 64 ? 64 : 128;
}

// Dynamic shared memory in bytes of `kernel` for activations of `dtype` (F32 or BF16) and head
// dim d <= 128: the amount the launcher requests.
inline size_t flash_shared_bytes(FlashKernel kernel, DType dtype, int64_t d) {
  ELECTRA_CHECK(dtype == DType::F32 || dtype == DType::BF16,
                "flash_shared_bytes: activations are f32 or bf16, got ", dtype_name(dtype));
  ELECTRA_CHECK(d >= 1 && d <= 128, "flash_shared_bytes: head dim ", d, " not in [1, 128]");
  auto pick = [&](auto elem, auto width) -> size_t {
    constexpr int kElem = decltype(elem)::value, kD = decltype(width)::value;
    switch (kernel) {
      case FlashKernel::kForward:
        return flash_layout::ForwardOf<kElem, kD>::kBytes;
      case FlashKernel::kBackwardDkDv:
        return flash_layout::KeyTileOf<kElem, kD>::kBytes;
      case FlashKernel::kBackwardDq:
        return flash_layout::QueryTileOf<kElem, kD>::kBytes;
    }
    return 0;
  };
  auto by_width = [&](auto elem) -> size_t {
    switch (flash_tile_width(d)) {
      case 32:
        return pick(elem, std::integral_constant<int, 32>{});
      case 64:
        return pick(elem, std::integral_constant<int, 64>{});
      default:
        return pick(elem, std::integral_constant<int, 128>{});
    }
  };
  return dtype == DType::F32 ? by_width(std::integral_constant<int, 4>{})
                             : by_width(std::integral_constant<int, 2>{});
}

}  // namespace electra
