// The flash kernels' layout (kernels/attention_flash_layout.h) on the CPU: their shared memory
// against the limits of the GPUs the binary is built for (a layout that grows past them fails
// here, not at the first launch on a GPU), their tile counts, and the thread -> element maps of the
// bf16 kernels' register tiles: the mma.sync fragments, the ldmatrix addresses (simulated with
// the PTX ISA's definition of ldmatrix), the lanes that draw and pass on the dropout bits, and
// where the forward saves them and each role of the backward finds them again; and
// kFlashShort's forward and one-pass backward: their shared memory against the blocks per SM
// each is built for, and the backward's Pd, dS tiles written by query rows and read back
// transposed.
#include <catch2/catch.hpp>
#include <set>
#include <utility>

#include "kernels/attention_flash_layout.h"
#include "kernels/dropout_mask.h"

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

TEST_CASE("every flash block fits the per-block shared memory of sm_80 and sm_90",
          "[attention][flash]") {
  for (FlashBlock block :
       {FlashBlock::kForward, FlashBlock::kBackwardDkDv, FlashBlock::kBackwardDq}) {
    for (DType dtype : {DType::F32, DType::BF16}) {
      for (int64_t d = 1; d <= 128; ++d) {
        const size_t bytes = flash_shared_bytes(block, dtype, d);
        INFO("block " << static_cast<int>(block) << ", " << dtype_name(dtype) << ", d = " << d
                      << ": " << bytes << " bytes");
        CHECK(bytes > 0);
        CHECK(bytes % 4 == 0);
        for (const SmLimits& sm : {kSm80, kSm90}) {
          INFO(sm.name);
          CHECK(bytes <= sm.per_block);
          CHECK(blocks_per_sm(bytes, sm) >= 1);
        }
        // One layout per tile width: every d of a width requests the same bytes.
        CHECK(bytes == flash_shared_bytes(block, dtype, flash_tile_width(d)));
      }
    }
  }
}

TEST_CASE("a flash launch requests what its largest kind of block uses", "[attention][flash]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (int64_t d = 1; d <= 128; ++d) {
      INFO(dtype_name(dtype) << ", d = " << d);
      CHECK(flash_launch_bytes(FlashLaunch::kForward, dtype, d) ==
            flash_shared_bytes(FlashBlock::kForward, dtype, d));
      // The backward's one grid holds both roles; each lays its tiles out from offset 0.
      const size_t backward = flash_launch_bytes(FlashLaunch::kBackward, dtype, d);
      const size_t dkdv = flash_shared_bytes(FlashBlock::kBackwardDkDv, dtype, d);
      const size_t dq = flash_shared_bytes(FlashBlock::kBackwardDq, dtype, d);
      CHECK(backward >= dkdv);
      CHECK(backward >= dq);
      CHECK((backward == dkdv || backward == dq));
      // kFlashDsGemm's backward holds only dK, dV blocks: their layout, storing dS from registers
      // (bf16) or from the dS tile already in shared memory (f32), nothing more.
      CHECK(flash_launch_bytes(FlashLaunch::kBackwardDkDv, dtype, d) == dkdv);
      for (const SmLimits& sm : {kSm80, kSm90}) {
        INFO(sm.name);
        CHECK(backward <= sm.per_block);
      }
    }
  }
}

TEST_CASE("bf16 flash shared memory at d = 64: operand tiles only, 3 or more blocks per SM",
          "[attention][flash]") {
  // Rows of 64 + 8 bf16 = 144 bytes; a 64-row tile is 9216 bytes (a multiple of 128, so no
  // alignment padding). Forward: Q + 2 K + 2 V buffers; dQ role: Q, dout + 2 K + 2 V; dK, dV
  // role: K, V of 64 keys + 2 x (Q, dout) of 64 queries + their out tile, and 2 x {L, D} of 64
  // queries (2 x 512 bytes).
  const size_t fwd = flash_shared_bytes(FlashBlock::kForward, DType::BF16, 64);
  const size_t dq = flash_shared_bytes(FlashBlock::kBackwardDq, DType::BF16, 64);
  const size_t dkdv = flash_shared_bytes(FlashBlock::kBackwardDkDv, DType::BF16, 64);
  const size_t backward = flash_launch_bytes(FlashLaunch::kBackward, DType::BF16, 64);
  CHECK(fwd == 5 * 9216);
  CHECK(dq == 6 * 9216);
  CHECK(dkdv == 7 * 9216 + 2 * 512);
  CHECK(backward == dkdv);  // the merged kernel requests its larger role's
  // Registers, not shared memory, bound these kernels' occupancy: a block is 128 threads of up to
  // 255 registers (-Xptxas -v, docs/KERNELS.md), 2 blocks per 64K-register SM (3 for the forward,
  // bounded to 168 registers). Shared memory must not bind tighter:
  CHECK(blocks_per_sm(fwd, kSm80) >= 3);
  CHECK(blocks_per_sm(fwd, kSm90) >= 3);
  for (size_t bytes : {dq, dkdv, backward}) {
    CHECK(blocks_per_sm(bytes, kSm80) >= 2);
    CHECK(blocks_per_sm(bytes, kSm90) >= 2);
  }
}

TEST_CASE("flash tiles: one block per tile of rows, the last one partial", "[attention][flash]") {
  for (FlashBlock block :
       {FlashBlock::kForward, FlashBlock::kBackwardDkDv, FlashBlock::kBackwardDq}) {
    for (DType dtype : {DType::F32, DType::BF16}) {
      for (int64_t d : {16, 20, 24, 32, 64, 100, 128}) {
        const FlashTiles tiles = flash_tiles(block, dtype, d);
        INFO("block " << static_cast<int>(block) << ", " << dtype_name(dtype) << ", d = " << d);
        if (dtype == DType::BF16) {
          // 4 warps of 16 rows own the block's rows; the loop's rows are whole mma k or n steps.
          CHECK(tiles.block_rows == flash_layout::kMmaRows);
          CHECK(tiles.loop_rows % 16 == 0);
        }
        for (int64_t t : {1, 15, 16, 33, 37, 63, 64, 65, 70, 77, 100, 129, 512}) {
          const int64_t blocks = (t + tiles.block_rows - 1) / tiles.block_rows;
          const int64_t steps = (t + tiles.loop_rows - 1) / tiles.loop_rows;
          // Every row is in exactly one tile, and the last tile holds at least one real row.
          CHECK(blocks * tiles.block_rows >= t);
          CHECK((blocks - 1) * tiles.block_rows < t);
          CHECK(steps * tiles.loop_rows >= t);
          CHECK((steps - 1) * tiles.loop_rows < t);
        }
      }
    }
  }
  CHECK(flash_tiles(FlashBlock::kBackwardDkDv, DType::BF16, 32).loop_rows == 64);
  CHECK(flash_tiles(FlashBlock::kBackwardDkDv, DType::BF16, 64).loop_rows == 64);
  CHECK(flash_tiles(FlashBlock::kBackwardDkDv, DType::BF16, 128).loop_rows == 16);
  CHECK(flash_tiles(FlashBlock::kForward, DType::F32, 128).block_rows == 32);
}

namespace {

using flash_layout::Coord;
constexpr int kLanes = 32;

// Each {row, col} of a rows x cols tile appears exactly once among `coords`.
void check_covers_once(const std::vector<Coord>& coords, int rows, int cols) {
  CHECK(coords.size() == static_cast<size_t>(rows * cols));
  std::set<std::pair<int, int>> seen;
  for (const Coord& c : coords) {
    CHECK(c.row >= 0);
    CHECK(c.row < rows);
    CHECK(c.col >= 0);
    CHECK(c.col < cols);
    CHECK(seen.insert({c.row, c.col}).second);
  }
}

// What ldmatrix.x4 delivers, by the PTX ISA: lane l passes the address of row l % 8 of matrix
// l / 8 (`address(l)`, a tile {row, col} whose 8 consecutive columns are that row); in register m
// (half h) it receives element (l / 4, 2 (l % 4) + h) of matrix m, or with .trans element
// (2 (l % 4) + h, l / 4). Returns the tile coordinate of that element.
template <class Address>
Coord ldmatrix_element(Address address, int lane, int m, int half, bool trans) {
  if (!trans) {
    const Coord row = address(8 * m + lane / 4);
    return {row.row, row.col + 2 * (lane % 4) + half};
  }
  const Coord row = address(8 * m + 2 * (lane % 4) + half);
  return {row.row, row.col + lane / 4};
}

// The 8 row addresses of each matrix of an ldmatrix.x4 in a tile of bf16 rows of `ld` elements:
// 16-byte aligned and in 8 different 16-byte bank groups of a 128-byte line (no conflict).
template <class Address>
void check_ldmatrix_conflict_free(Address address, int ld) {
  for (int m = 0; m < 4; ++m) {
    std::set<int> groups;
    for (int r = 0; r < 8; ++r) {
      const Coord c = address(8 * m + r);
      const int byte = 2 * (c.row * ld + c.col);
      CHECK(byte % 16 == 0);
      groups.insert(byte / 16 % 8);
    }
    CHECK(groups.size() == 8);
  }
}

}  // namespace

TEST_CASE("mma.sync m16n8k16 fragments cover their tiles once", "[attention][flash]") {
  std::vector<Coord> a, b, c;
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      for (int half = 0; half < 2; ++half) a.push_back(flash_layout::mma_a(lane, reg, half));
    }
    for (int reg = 0; reg < 2; ++reg) {
      for (int half = 0; half < 2; ++half) b.push_back(flash_layout::mma_b(lane, reg, half));
    }
    for (int e = 0; e < 4; ++e) c.push_back(flash_layout::mma_c(lane, e));
  }
  check_covers_once(a, 16, 16);
  check_covers_once(b, 16, 8);
  check_covers_once(c, 16, 8);
}

TEST_CASE("two C tiles of a lane are its A fragment (P stays in registers)", "[attention][flash]") {
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const flash_layout::CToA at = flash_layout::a_from_c(reg);
      for (int half = 0; half < 2; ++half) {
        INFO("lane " << lane << " register " << reg << " half " << half);
        const Coord from = flash_layout::mma_c(lane, at.e + half);
        const Coord want = flash_layout::mma_a(lane, reg, half);
        CHECK(from.row == want.row);
        CHECK(from.col + 8 * at.tile == want.col);
      }
    }
  }
}

TEST_CASE("ldmatrix addresses deliver the mma fragments", "[attention][flash]") {
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int m = 0; m < 4; ++m) {
      for (int half = 0; half < 2; ++half) {
        INFO("lane " << lane << " register " << m << " half " << half);
        // A from a row-major [16][16] tile.
        const Coord a = ldmatrix_element(flash_layout::ldsm_a, lane, m, half, false);
        const Coord want_a = flash_layout::mma_a(lane, m, half);
        CHECK(a.row == want_a.row);
        CHECK(a.col == want_a.col);
        // A from a tile stored transposed, [k][m] (kFlashShort's Pd for Pd^T), with .trans.
        const Coord at = ldmatrix_element(flash_layout::ldsm_b, lane, m, half, true);
        CHECK(at.row == want_a.col);
        CHECK(at.col == want_a.row);
        // B of n-tile m / 2 from a tile stored [n][k] (K rows for Q K^T): row n, column k.
        const Coord want_b = flash_layout::mma_b(lane, m % 2, half);  // {k, n}
        const Coord b = ldmatrix_element(flash_layout::ldsm_b, lane, m, half, false);
        CHECK(b.row == want_b.col + 8 * (m / 2));
        CHECK(b.col == want_b.row);
        // The same from a tile stored [k][n] (V rows for P V), transposed: row k, column n.
        const Coord bt = ldmatrix_element(flash_layout::ldsm_bt, lane, m, half, true);
        CHECK(bt.row == want_b.row);
        CHECK(bt.col == want_b.col + 8 * (m / 2));
      }
    }
  }
  // Rows of operand_ld(kD) bf16 keep every ldmatrix free of bank conflicts, at every tile width
  // and for every 16 x 16 block of the tile the kernels address (row offsets of 16, column
  // offsets of 16).
  for (int width : {32, 64, 128}) {
    const int ld = flash_layout::operand_ld(width);
    INFO("tile width " << width);
    for (int r0 = 0; r0 < 64; r0 += 16) {
      for (int c0 = 0; c0 < width; c0 += 16) {
        const auto shift = [&](auto map) {
          return [=](int lane) {
            const Coord c = map(lane);
            return Coord{r0 + c.row, c0 + c.col};
          };
        };
        check_ldmatrix_conflict_free(shift(flash_layout::ldsm_a), ld);
        check_ldmatrix_conflict_free(shift(flash_layout::ldsm_b), ld);
        check_ldmatrix_conflict_free(shift(flash_layout::ldsm_bt), ld);
      }
    }
  }
}

TEST_CASE("diag_c: D of row r is the product's element (r, r), rows g and g + 8 in one lane",
          "[attention][flash]") {
  // The 16 x 16 product is two C tiles: columns 0-7 (tile 0) and 8-15 (tile 1).
  std::set<int> lanes;
  for (int r = 0; r < 16; ++r) {
    INFO("row " << r);
    const flash_layout::DiagAt at = flash_layout::diag_c(r);
    const Coord c = flash_layout::mma_c(at.lane, at.e);
    CHECK(c.row == r);
    CHECK(c.col + 8 * (r / 8) == r);  // tile r / 8 holds columns 8 (r / 8) ..
    // warp_diag_d's selection: element g % 2 of tile 0, 2 + g % 2 of tile 1 (g = r % 8); the
    // lane of rows g and g + 8 is that of quad g, which warp_rows_d reads.
    CHECK(at.e == 2 * (r / 8) + r % 8 % 2);
    CHECK(at.lane == flash_layout::diag_c(r % 8).lane);
    CHECK(at.lane / 4 == r % 8);
    lanes.insert(at.lane);
  }
  CHECK(lanes.size() == 8);
}

TEST_CASE("dropout bits: each group of 8 keys drawn once, a quad's exchange gives each element",
          "[attention][flash]") {
  // A pair of C tiles, rows = queries (16), columns = keys (16): a group is 8 consecutive columns
  // of one row.
  std::vector<Coord> drawn;
  for (int lane = 0; lane < kLanes; ++lane) {
    const Coord g = flash_layout::keep_draw(lane);
    CHECK(g.col % 8 == 0);
    CHECK(g.row / 8 * 8 + lane / 4 == g.row);  // a quad's lanes draw its own rows g, g + 8
    for (int k = 0; k < 8; ++k) drawn.push_back({g.row, g.col + k});
  }
  check_covers_once(drawn, 16, 16);
  // Every lane at once, as the warp's shuffles give them: lane l's byte holds the keep bits of its
  // group (bit k: key keep_draw(l).col + k) of an arbitrary mask; after the steps j = 2, 1 (xor
  // j within the quad), bit 4 n + e of lane l is the mask's bit at mma_c(l, e) of C tile n.
  const auto mask = [](int row, int col) { return ((row * 37 + col * 11 + row * col) >> 2) & 1; };
  std::vector<uint32_t> bits(kLanes);
  for (int lane = 0; lane < kLanes; ++lane) {
    const Coord g = flash_layout::keep_draw(lane);
    for (int k = 0; k < 8; ++k) bits[lane] |= static_cast<uint32_t>(mask(g.row, g.col + k)) << k;
  }
  for (int j : {2, 1}) {
    std::vector<uint32_t> next(kLanes);
    for (int lane = 0; lane < kLanes; ++lane) {
      next[lane] = flash_layout::keep_exchange_step(bits[lane], bits[lane ^ j], lane, j);
    }
    bits = next;
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    CHECK(bits[lane] < 256u);
    for (int n = 0; n < 2; ++n) {
      for (int e = 0; e < 4; ++e) {
        INFO("lane " << lane << " tile " << n << " element " << e);
        const Coord c = flash_layout::mma_c(lane, e);
        CHECK(((bits[lane] >> (4 * n + e)) & 1u) ==
              static_cast<uint32_t>(mask(c.row, 8 * n + c.col)));
      }
    }
  }
}

TEST_CASE("saved keep bits: every (query, key) inside T has a bit of its own, 1 bit an element",
          "[attention][flash]") {
  namespace fl = flash_layout;
  for (int t : {1, 7, 16, 33, 77, 128, 129, 512}) {
    INFO("T = " << t);
    // A bijection of [0, T)^2 into the head's words, 1 bit an element when 16 divides T.
    const int64_t words = fl::keep_words_per_head(t);
    std::vector<bool> taken(static_cast<size_t>(words) * 32, false);
    int outside = 0, collisions = 0;
    for (int i = 0; i < t; ++i) {
      for (int j = 0; j < t; ++j) {
        const fl::KeepAt at = fl::keep_at(t, i, j);
        if (at.word < 0 || at.word >= words || at.bit < 0 || at.bit >= 32) {
          ++outside;
          continue;
        }
        const size_t k = static_cast<size_t>(at.word) * 32 + at.bit;
        collisions += taken[k];
        taken[k] = true;
      }
    }
    CHECK(outside == 0);
    CHECK(collisions == 0);
    if (t % 16 == 0) CHECK(words * 32 == int64_t{t} * t);
  }
}

TEST_CASE("bit_transpose_step: five steps transpose a warp's 32 x 32 bit matrix",
          "[attention][flash]") {
  std::vector<uint32_t> rows(kLanes);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint32_t& r : rows) r = static_cast<uint32_t>((x = x * 6364136223846793005ull + 1) >> 32);
  std::vector<uint32_t> m = rows;
  for (int j = 16; j > 0; j /= 2) {  // every lane at once, as a warp's shuffles give them
    std::vector<uint32_t> next(kLanes);
    for (int lane = 0; lane < kLanes; ++lane) {
      next[lane] = flash_layout::bit_transpose_step(m[lane], m[lane ^ j], lane, j);
    }
    m = next;
  }
  int wrong = 0;
  for (int r = 0; r < kLanes; ++r) {
    for (int c = 0; c < kLanes; ++c) wrong += (m[r] >> c & 1u) != (rows[c] >> r & 1u);
  }
  CHECK(wrong == 0);
}

TEST_CASE("shfl_idx_source: __shfl_sync's lanes for every width, and the segment mask's",
          "[attention][flash]") {
  namespace fl = flash_layout;
  for (int lane = 0; lane < kLanes; ++lane) {
    // __shfl_sync(mask, v, b, width) is shfl.sync.idx with segment mask 32 - width: lane b % width
    // of the reading lane's group of `width` (the CUDA programming guide's definition).
    for (int width = 1; width <= kLanes; width *= 2) {
      for (int b = 0; b < kLanes; ++b) {
        CHECK(fl::shfl_idx_source(lane, b, kLanes - width) == lane / width * width + b % width);
      }
    }
    // The dK, dV role's keep words: bit 2 from the reading lane, the others from the index.
    CHECK(fl::shfl_idx_source(lane, 0, fl::kKeepSegmentMask) == (lane & 4));
    CHECK(fl::shfl_idx_source(lane, 27, fl::kKeepSegmentMask) == (27 & ~4) + (lane & 4));
  }
}

TEST_CASE("saved keep bits: each role's lanes find each of their elements' bits",
          "[attention][flash]") {
  namespace fl = flash_layout;
  const int t = 77;
  for (const auto& [i0, j0] : {std::pair{0, 0}, std::pair{16, 8}, std::pair{64, 64}}) {
    INFO("query-major warp tile at query " << i0 << ", key " << j0);
    // Lane l holds the word keep_word_rows(l): bit `lane` of lane 4 n + e's word is element e of
    // C tile n of that lane (so the transpose gives lane `lane` bit 4 n + e).
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int n = 0; n < 8; ++n) {
        for (int e = 0; e < 4; ++e) {
          const Coord c = flash_layout::mma_c(lane, e);
          const fl::KeepAt at = fl::keep_at(t, i0 + c.row, j0 + 8 * n + c.col);
          CHECK(at.word == fl::keep_word_rows(t, i0, j0, 4 * n + e));
          CHECK(at.bit == lane);
        }
      }
    }
  }
  for (int width : {32, 64, 128}) {
    const int br = flash_tiles(FlashBlock::kBackwardDkDv, DType::BF16, width).loop_rows;
    for (const auto& [key0, i0] : {std::pair{0, 0}, std::pair{16, br}, std::pair{48, 2 * br}}) {
      INFO("dK, dV tile of " << br << " queries at query " << i0 << ", keys from " << key0);
      // Elements e, e + 1 of C tile n of S^T: bits b, b + 4 of the word lane src.lane loads.
      for (int lane = 0; lane < kLanes; ++lane) {
        for (int n = 0; n < br / 8; ++n) {
          for (int e = 0; e < 4; e += 2) {
            const Coord c = flash_layout::mma_c(lane, e);
            const fl::KeySource src = fl::keep_source_t(lane, n, e);
            REQUIRE(src.lane < br / 2);  // the lanes that load
            // The kernel's shuffle: a constant index under the segment mask.
            CHECK(src.lane ==
                  fl::shfl_idx_source(lane, fl::keep_source_index_t(n, e), fl::kKeepSegmentMask));
            CHECK(src.bit == fl::keep_source_t(lane, 0, 0).bit);
            const int64_t word = fl::keep_word_t(t, key0, i0, src.lane);
            for (int q = 0; q < 2; ++q) {
              const fl::KeepAt at = fl::keep_at(t, i0 + 8 * n + c.col + q, key0 + c.row);
              CHECK(at.word == word);
              CHECK(at.bit == src.bit + 4 * q);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("kFlashDsGemm's dS store: each (query, key) of a dK, dV block's tile once",
          "[attention][flash]") {
  // The block's tile is 64 keys (4 warps of 16) by kBr queries (the query tile), key-major as dS^T
  // is stored; each lane stores its kBr / 8 C tiles of dS^T, element e of tile n at ds_store_t,
  // that element's place in the warp's rows (mma_c: row = key, column = query), elements 0, 1
  // (and 2, 3) side by side in one row: the kernel's paired stores.
  for (int width : {32, 64, 128}) {
    const int br = flash_tiles(FlashBlock::kBackwardDkDv, DType::BF16, width).loop_rows;
    INFO("tile width " << width << ", " << br << " queries");
    std::vector<Coord> stored;
    for (int warp = 0; warp < flash_layout::kMmaWarps; ++warp) {
      for (int lane = 0; lane < kLanes; ++lane) {
        for (int n = 0; n < br / 8; ++n) {
          for (int e = 0; e < 4; ++e) {
            const Coord at = flash_layout::ds_store_t(warp, lane, n, e);
            const Coord c = flash_layout::mma_c(lane, e);
            CHECK(at.row == flash_layout::kMmaRowsPerWarp * warp + c.row);
            CHECK(at.col == 8 * n + c.col);
            if (e % 2 == 1) {
              const Coord first = flash_layout::ds_store_t(warp, lane, n, e - 1);
              CHECK(first.row == at.row);
              CHECK(first.col % 2 == 0);
              CHECK(first.col + 1 == at.col);
            }
            stored.push_back(at);
          }
        }
      }
    }
    check_covers_once(stored, flash_layout::kMmaRows, br);
  }
}

TEST_CASE("kFlashShort's one-pass backward fits one block per SM on sm_80 and sm_90",
          "[attention][flash]") {
  using S = flash_layout::MmaShort;
  // Five [128][72] bf16 operand tiles (Q, K, V, dout, out: 18432 bytes each) and the [128][136]
  // bf16 Pd and dS (34816 bytes each), nothing else (L and D in registers).
  constexpr size_t bytes = flash_layout::flash_short_backward_shared_bytes();
  static_assert(bytes == 5 * 128 * 72 * 2 + 2 * 128 * 136 * 2);
  CHECK(bytes == 161792);
  CHECK(S::kRows == S::kWarps * flash_layout::kMmaRowsPerWarp);
  // Each tile starts 128-byte aligned and none overlaps the next.
  const size_t starts[] = {S::kQ, S::kK, S::kV, S::kDout, S::kOut, S::kPd, S::kDs, S::kBytes};
  const size_t sizes[] = {S::kTile, S::kTile,      S::kTile,     S::kTile,
                          S::kTile, S::kScoreTile, S::kScoreTile};
  for (size_t i = 0; i < 7; ++i) {
    CHECK(starts[i] % 128 == 0);
    CHECK(starts[i] + sizes[i] <= starts[i + 1]);
  }
  CHECK(bytes <= flash_layout::kMaxBlockBytes);
  for (const SmLimits& sm : {kSm80, kSm90}) {
    INFO(sm.name);
    CHECK(bytes <= sm.per_block);
    CHECK(blocks_per_sm(bytes, sm) == 1);
  }
}

TEST_CASE("kFlashShort's forward fits the blocks per SM its registers are bounded for",
          "[attention][flash]") {
  using F = flash_layout::MmaShortForward;
  using S = flash_layout::MmaShort;
  // Q, K and V, [128][72] bf16 each (18432 bytes), nothing else (S, P, O, the row max and sum in
  // registers), at the backward's offsets: the same tiles, the same conflict-free ldmatrix reads.
  constexpr size_t bytes = flash_layout::flash_short_forward_shared_bytes();
  static_assert(bytes == 3 * 128 * 72 * 2);
  CHECK(bytes == 55296);
  CHECK(F::kTile == 18432);
  CHECK(F::kQ == S::kQ);
  CHECK(F::kK == S::kK);
  CHECK(F::kV == S::kV);
  CHECK(F::kLd == S::kLd);
  CHECK(F::kRows == F::kWarps * flash_layout::kMmaRowsPerWarp);
  const size_t starts[] = {F::kQ, F::kK, F::kV, F::kBytes};
  for (size_t i = 0; i < 3; ++i) {
    CHECK(starts[i] % 128 == 0);
    CHECK(starts[i] + F::kTile <= starts[i + 1]);
  }
  CHECK(bytes <= flash_layout::kMaxBlockBytes);
  // __launch_bounds__(256, kMinBlocks): shared memory must allow those blocks on both
  // architectures, so that the registers (at most 65536 / (kMinBlocks x 256) = 128) decide.
  constexpr int threads = F::kWarps * kLanes;
  CHECK(65536 / (F::kMinBlocks * threads) == 128);
  const std::pair<SmLimits, size_t> by_shared_memory[] = {{kSm80, 2}, {kSm90, 4}};
  for (const auto& [sm, blocks] : by_shared_memory) {
    INFO(sm.name);
    CHECK(bytes <= sm.per_block);
    CHECK(blocks_per_sm(bytes, sm) == blocks);
    CHECK(blocks_per_sm(bytes, sm) >= static_cast<size_t>(F::kMinBlocks));
  }
}

TEST_CASE("kFlashShort: Pd and dS stored by query rows are read back as Pd^T and dS^T fragments",
          "[attention][flash]") {
  using S = flash_layout::MmaShort;
  const int ld = S::kLdScores;
  // Phase 2: warp w stores element e of C tile n (its 16 queries x the 128 keys) at [query][key]
  // = [16 w + row][8 n + col] of mma_c, the pairs e, e + 1 as one 4-byte store; every (query, key)
  // once, and each store instruction (fixed n and pair) hits 32 different banks.
  std::vector<Coord> stored;
  for (int warp = 0; warp < S::kWarps; ++warp) {
    for (int n = 0; n < S::kRows / 8; ++n) {
      for (int e = 0; e < 4; e += 2) {
        std::set<int> banks;
        for (int lane = 0; lane < kLanes; ++lane) {
          const Coord c = flash_layout::mma_c(lane, e), next = flash_layout::mma_c(lane, e + 1);
          const Coord at{flash_layout::kMmaRowsPerWarp * warp + c.row, 8 * n + c.col};
          CHECK(next.row == c.row);
          CHECK(next.col == c.col + 1);
          CHECK(at.col % 2 == 0);
          stored.push_back(at);
          stored.push_back({at.row, at.col + 1});
          banks.insert((at.row * ld + at.col) * 2 / 4 % 32);
        }
        CHECK(banks.size() == 32);
      }
    }
  }
  check_covers_once(stored, S::kRows, S::kRows);
  // Phase 3: warp w's A fragment of query step kk is Pd^T (and dS^T) at rows = keys 16 w .. + 15,
  // columns = queries 16 kk .. + 15, each lane passing the address of [16 kk + at.row][16 w +
  // at.col] (at = ldsm_b) to ldmatrix.trans: register m, half h must be A element mma_a.
  for (int warp = 0; warp < S::kWarps; ++warp) {
    for (int kk = 0; kk < S::kRows / 16; ++kk) {
      const auto address = [=](int lane) {
        const Coord at = flash_layout::ldsm_b(lane);
        return Coord{16 * kk + at.row, 16 * warp + at.col};  // {query, key}
      };
      for (int lane = 0; lane < kLanes; ++lane) {
        for (int m = 0; m < 4; ++m) {
          for (int half = 0; half < 2; ++half) {
            INFO("warp " << warp << " step " << kk << " lane " << lane << " register " << m
                         << " half " << half);
            const Coord got = ldmatrix_element(address, lane, m, half, true);
            const Coord want = flash_layout::mma_a(lane, m, half);  // {key - 16 w, query - 16 kk}
            CHECK(got.col == 16 * warp + want.row);
            CHECK(got.row == 16 * kk + want.col);
          }
        }
      }
      check_ldmatrix_conflict_free(address, ld);
    }
  }
  // The operand tiles' rows of 72 keep the S, dPd and dQ products' ldmatrix reads conflict-free
  // across all 128 rows (the 64-row blocks of the other kernels' tests, twice).
  for (int r0 = 0; r0 < S::kRows; r0 += 16) {
    for (int c0 = 0; c0 < S::kD; c0 += 16) {
      for (auto map : {flash_layout::ldsm_a, flash_layout::ldsm_b, flash_layout::ldsm_bt}) {
        check_ldmatrix_conflict_free(
            [=](int lane) {
              const Coord c = map(lane);
              return Coord{r0 + c.row, c0 + c.col};
            },
            S::kLd);
      }
    }
  }
}

TEST_CASE("flash_shared_bytes and flash_tiles refuse other dtypes and head dims",
          "[attention][flash]") {
  CHECK_THROWS_WITH(flash_shared_bytes(FlashBlock::kForward, DType::F64, 64),
                    Catch::Contains("f32 or bf16"));
  CHECK_THROWS_WITH(flash_shared_bytes(FlashBlock::kForward, DType::BF16, 129),
                    Catch::Contains("head dim 129"));
  CHECK_THROWS(flash_shared_bytes(FlashBlock::kForward, DType::BF16, 0));
  CHECK_THROWS_WITH(flash_tiles(FlashBlock::kForward, DType::F64, 64),
                    Catch::Contains("f32 or bf16"));
  CHECK_THROWS_WITH(flash_tiles(FlashBlock::kForward, DType::BF16, 129),
                    Catch::Contains("head dim 129"));
}

// The bf16 forwards' keep path end to end, every lane of every warp simulated (a shuffle reads the
// partner's value before the step): each lane draws its group at attention_mask_index
// (keep_bits_pair), the quad exchanges, the bytes of a 64-key tile go into one word a lane
// (add_keep_bits), the warp stores its transpose (store_keep_bits) and the dQ role loads and
// transposes it back (load_keep_bits). Every bit a lane uses, and every saved bit, must be the
// CPU reference's attention_keep, whatever T (rows round_up(T, 8) apart in the mask index).
TEST_CASE("saved keep bits: the forward's draws, saved and read back, are the CPU reference's",
          "[attention][flash]") {
  namespace fl = flash_layout;
  using Warp = std::vector<uint32_t>;
  const auto exchange = [](Warp w, auto step, std::initializer_list<int> js) {
    for (const int j : js) {
      Warp next(kLanes);
      for (int lane = 0; lane < kLanes; ++lane) next[lane] = step(w[lane], w[lane ^ j], lane, j);
      w = next;
    }
    return w;
  };
  const RngStream rng{0x5eed, RngPurpose::kDropout, 7, 3};
  const uint64_t site = dropout_site_offset(77);
  const float p = 0.3f;
  const uint32_t threshold = attention_keep_threshold(p);
  for (const int t : {7, 16, 77, 129, 200}) {
    INFO("T = " << t);
    const int64_t per_head = fl::keep_words_per_head(t), heads = 2;
    std::vector<uint32_t> words(static_cast<size_t>(heads * per_head), 0);
    int wrong_used = 0, wrong_saved = 0, wrong_loaded = 0;
    // The bits a lane holds for C tile n at (row0, j0): bits 4 n .. + 3 of its word.
    const auto count_wrong = [&](const Warp& w, int64_t bh, int row0, int j0, int& wrong) {
      for (int lane = 0; lane < kLanes; ++lane) {
        for (int n = 0; n < 8; ++n) {
          for (int e = 0; e < 4; ++e) {
            const Coord c = fl::mma_c(lane, e);
            const int i = row0 + c.row, j = j0 + 8 * n + c.col;
            if (i >= t || j >= t) continue;
            const bool want = attention_keep(rng, attention_mask_index(site, bh, t, i, j), p);
            wrong += ((w[lane] >> (4 * n + e)) & 1u) != static_cast<uint32_t>(want);
          }
        }
      }
    };
    for (int64_t bh = 0; bh < heads; ++bh) {
      for (int row0 = 0; row0 < t; row0 += 16) {
        for (int j0 = 0; j0 < t; j0 += 64) {
          Warp saved(kLanes, 0);
          for (int pair = 0; pair < 4; ++pair) {
            Warp drawn(kLanes);
            for (int lane = 0; lane < kLanes; ++lane) {
              const Coord at = fl::keep_draw(lane);
              const int i = row0 + at.row, j = j0 + 16 * pair + at.col;
              drawn[lane] = i < t && j < t
                                ? attention_keep_bits<8>(
                                      rng, attention_mask_index(site, bh, t, i, j), threshold)
                                : 0xFFu;
            }
            drawn = exchange(drawn, fl::keep_exchange_step, {2, 1});
            for (int lane = 0; lane < kLanes; ++lane) saved[lane] |= drawn[lane] << (8 * pair);
          }
          count_wrong(saved, bh, row0, j0, wrong_used);
          const Warp stored = exchange(saved, fl::bit_transpose_step, {16, 8, 4, 2, 1});
          for (int lane = 0; lane < kLanes; ++lane) {
            if (j0 + 8 * (lane / 4) < t) {
              words[bh * per_head + fl::keep_word_rows(t, row0, j0, lane)] = stored[lane];
            }
          }
        }
      }
      for (int i = 0; i < t; ++i) {
        for (int j = 0; j < t; ++j) {
          const fl::KeepAt at = fl::keep_at(t, i, j);
          const bool want = attention_keep(rng, attention_mask_index(site, bh, t, i, j), p);
          wrong_saved += ((words[bh * per_head + at.word] >> at.bit) & 1u) != uint32_t{want};
        }
      }
      for (int row0 = 0; row0 < t; row0 += 16) {
        for (int j0 = 0; j0 < t; j0 += 64) {
          Warp loaded(kLanes, ~0u);
          for (int lane = 0; lane < kLanes; ++lane) {
            if (j0 + 8 * (lane / 4) < t) {
              loaded[lane] = words[bh * per_head + fl::keep_word_rows(t, row0, j0, lane)];
            }
          }
          count_wrong(exchange(loaded, fl::bit_transpose_step, {16, 8, 4, 2, 1}), bh, row0, j0,
                      wrong_loaded);
        }
      }
    }
    CHECK(wrong_used == 0);
    CHECK(wrong_saved == 0);
    CHECK(wrong_loaded == 0);
  }
}
