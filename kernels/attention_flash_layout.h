// Layout of the flash attention kernels, host-visible so that CPU unit tests check it: the shared
// memory of every kernel and head size against the GPUs' limits, and the thread -> element maps of
// the bf16 kernels' register tiles (mma.sync fragments, ldmatrix addresses, dropout bit exchange).
// Limits: sm_80 (A100): 163 KiB of dynamic shared memory per block (opt-in), 164 KiB per SM;
// sm_90 (H100/H200): 227 KiB per block (opt-in), 228 KiB per SM; every resident block also
// reserves 1 KiB of the SM's shared memory for the system.
//
// bf16 (kernels/attention_flash_bf16.cu): every accumulator lives in registers. One warp owns 16
// rows of the output tile (queries in the forward and the dQ role, keys in the dK, dV role); the
// warp's products are mma.sync m16n8k16 (bf16 operands, f32 accumulation), whose operands come
// from shared memory by ldmatrix. Shared memory holds only operand tiles, double-buffered where a
// block loops over them (cp.async fills the next while the current one is multiplied), rows
// padded by 8 elements (16 bytes): the 8 row addresses of one ldmatrix matrix then fall into 8
// different 16-byte bank groups (row stride 16 mod 128 bytes), so no ldmatrix conflicts.
//
// f32 (kernels/attention_flash.cu, the parity mode): FMA loops over 32 x 32 tiles with every tile
// and accumulator in shared memory, f32 tiles padded by 4 floats per row. Its backward writes Pd
// and dS over the f32 S and dP tiles they are computed from.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "engine/error.h"
#include "engine/hd.h"
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

// ---- f32 kernels: every tile in shared memory, kF32Tile x kF32Tile ----

constexpr int kF32Tile = 32;

// Forward: Q, K, V, S, Pd and the O accumulator, the row statistics m, l and the rescaling factor,
// and the dropout keep bits of the tile (one byte per 8 keys: bit k for key 8 c + k). Operand
// tiles (Q, dout, K, V, Pd, dS) have rows of operand_ld, score tiles (S, dP) and accumulators of
// f32_ld floats.
template <int kD>
struct F32Forward {
  static constexpr int kBr = kF32Tile, kBc = kF32Tile;
  static constexpr int kLdT = operand_ld(kD), kLdS = f32_ld(kBc), kLdP = operand_ld(kBc);
  static constexpr int kLdO = f32_ld(kD);
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = align128(kQ + sizeof(float) * kBr * kLdT);
  static constexpr size_t kV = align128(kK + sizeof(float) * kBc * kLdT);
  static constexpr size_t kS = align128(kV + sizeof(float) * kBc * kLdT);
  static constexpr size_t kP = align128(kS + sizeof(float) * kBr * kLdS);
  static constexpr size_t kO = align128(kP + sizeof(float) * kBr * kLdP);
  static constexpr size_t kKeep = align128(kO + sizeof(float) * kBr * kLdO);
  static constexpr size_t kStats = align128(kKeep + size_t{kBr} * (kBc / 8));
  static constexpr size_t kBytes = kStats + sizeof(float) * 3 * kBr;
  static_assert(kBytes <= kMaxBlockBytes, "flash forward tiles exceed shared memory");
};

// Backward: Q, dout, K, V; S (then Pd) and dP (then dS), each sized for the wider of the two
// rows; kAccs accumulators of kF32Tile rows (dK and dV of a key tile, or dQ of a query tile); L and
// D of the query rows.
template <int kD, int kAccs>
struct F32Backward {
  static constexpr int kBr = kF32Tile, kBc = kF32Tile;
  static constexpr int kLdT = operand_ld(kD), kLdS = f32_ld(kBc), kLdP = operand_ld(kBc);
  static constexpr int kLdA = f32_ld(kD);
  static constexpr size_t kScoreTile = sizeof(float) * kBr * std::max(kLdS, kLdP);
  static constexpr size_t kQ = 0;
  static constexpr size_t kDout = align128(kQ + sizeof(float) * kBr * kLdT);
  static constexpr size_t kK = align128(kDout + sizeof(float) * kBr * kLdT);
  static constexpr size_t kV = align128(kK + sizeof(float) * kBc * kLdT);
  static constexpr size_t kS = align128(kV + sizeof(float) * kBc * kLdT);  // S, then Pd
  static constexpr size_t kDp = align128(kS + kScoreTile);                 // dPd, then dS
  static constexpr size_t kAcc = align128(kDp + kScoreTile);
  static constexpr size_t kRowStats = align128(kAcc + sizeof(float) * kAccs * kBr * kLdA);
  static constexpr size_t kBytes = kRowStats + sizeof(float) * 2 * kBr;
  static_assert(kBytes <= kMaxBlockBytes, "flash backward tiles exceed shared memory");
};

// ---- bf16 kernels: accumulators in registers, 4 warps of 16 rows ----

constexpr int kMmaWarps = 4;
constexpr int kMmaRowsPerWarp = 16;  // the M of mma.sync m16n8k16
constexpr int kMmaRows = kMmaWarps * kMmaRowsPerWarp;
constexpr size_t kBf16 = 2;

// Forward: the Q tile (kBr queries; each warp reads its A fragments per key tile) and two buffers
// each of K and V (kBc keys).
template <int kD>
struct MmaForward {
  static constexpr int kBr = kMmaRows, kBc = 64, kLd = operand_ld(kD);
  static constexpr size_t kTileQ = kBf16 * kBr * kLd, kTileK = kBf16 * kBc * kLd;
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = align128(kQ + kTileQ);      // buffer u at kK + u * kTileK
  static constexpr size_t kV = align128(kK + 2 * kTileK);  // buffer u at kV + u * kTileK
  static constexpr size_t kBytes = align128(kV + 2 * kTileK);
  static_assert(kBytes <= kMaxBlockBytes, "flash forward tiles exceed shared memory");
};

// dQ role (one block per query tile, looping over key tiles): Q and dout of kBr queries, two
// buffers each of K and V (kBc keys).
template <int kD>
struct MmaDq {
  static constexpr int kBr = kMmaRows, kBc = 64, kLd = operand_ld(kD);
  static constexpr size_t kTileQ = kBf16 * kBr * kLd, kTileK = kBf16 * kBc * kLd;
  static constexpr size_t kQ = 0;
  static constexpr size_t kDout = align128(kQ + kTileQ);
  static constexpr size_t kK = align128(kDout + kTileQ);  // buffer u at kK + u * kTileK
  static constexpr size_t kV = align128(kK + 2 * kTileK);
  static constexpr size_t kBytes = align128(kV + 2 * kTileK);
  static_assert(kBytes <= kMaxBlockBytes, "flash dQ tiles exceed shared memory");
};

// dK, dV role (one block per key tile, looping over query tiles): K and V of kBc keys, two buffers
// each of Q, dout (kBr queries) and of their rows' statistics {L log2(e), D} (a float2 a row, so
// that a lane's two queries of a C tile come in one 16-byte load), and the out tile of the next
// query tile (D_i = <dout_i, out_i> is computed by the block itself from the out and dout tiles
// between two query tiles, so one out buffer suffices). The warp's S^T and dP^T tiles (16 x kBr
// f32 each) sit beside its two 16 x kD accumulators: kBr = 64 at d = 32 and 64 (at d = 64 it was
// 32 while the block summed D a row per warp: 64 spilled 44 bytes on sm_90; with D by quads, then
// by tensor cores, 244 / 245 registers on sm_80 / sm_90 and no spill, 2 blocks per SM), 16 at
// d = 128 (at 32, sm_90 spilled 8 bytes at 255 registers). The query tile's width does not change
// the order in which dK and dV add their 16-query mma steps (ascending queries either way).
template <int kD>
struct MmaDkDv {
  static constexpr int kBr = kD <= 64 ? 64 : 16, kBc = kMmaRows;
  static constexpr int kLd = operand_ld(kD);
  static constexpr size_t kTileQ = kBf16 * kBr * kLd, kTileK = kBf16 * kBc * kLd;
  static constexpr size_t kK = 0;
  static constexpr size_t kV = align128(kK + kTileK);
  static constexpr size_t kQ = align128(kV + kTileK);  // buffer u at kQ + u * kTileQ
  static constexpr size_t kDout = align128(kQ + 2 * kTileQ);
  static constexpr size_t kOut = align128(kDout + 2 * kTileQ);
  // Buffer u at kRowStats + u * kRowStatsBytes: {L log2(e), D} of each query row.
  static constexpr size_t kRowStatsBytes = 2 * sizeof(float) * kBr;
  static constexpr size_t kRowStats = align128(kOut + kTileQ);
  static constexpr size_t kBytes = align128(kRowStats + 2 * kRowStatsBytes);
  static_assert(kBytes <= kMaxBlockBytes, "flash dK, dV tiles exceed shared memory");
};

// kFlashShort's one-pass backward (T <= 128, d = 64; kernels/attention_flash_short.cu): one block
// of 8 warps per (b, head) holds the whole head. Q, K, V, dout and out, kRows rows each of
// operand_ld(64) = 72 bf16 (rows past T zero), then Pd = P keep / (1 - p) and dS, both
// [query][key] in kRows rows of operand_ld(128) = 136 bf16: the same 16 bytes of padding a row,
// so the ldmatrix.trans reads of their transposes (ldsm_b's map) are free of bank conflicts too. L
// and D stay in registers (each lane reads the L of its two rows from global memory; each warp sums
// the D of its 16 rows from the out and dout tiles). 161792 bytes: under sm_80's 163 KiB per
// block with its 1 KiB reserve inside the 164 KiB of an SM (1 block per SM; the registers, 8
// warps of up to 255, allow no second one either).
struct MmaShort {
  static constexpr int kWarps = 8;
  static constexpr int kRows = kWarps * kMmaRowsPerWarp;  // the longest T: 128 queries, 128 keys
  static constexpr int kD = 64;
  static constexpr int kLd = operand_ld(kD), kLdScores = operand_ld(kRows);
  static constexpr size_t kTile = kBf16 * kRows * kLd;
  static constexpr size_t kScoreTile = kBf16 * kRows * kLdScores;
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = align128(kQ + kTile);
  static constexpr size_t kV = align128(kK + kTile);
  static constexpr size_t kDout = align128(kV + kTile);
  static constexpr size_t kOut = align128(kDout + kTile);
  static constexpr size_t kPd = align128(kOut + kTile);
  static constexpr size_t kDs = align128(kPd + kScoreTile);
  static constexpr size_t kBytes = align128(kDs + kScoreTile);
};

// kFlashShort's forward (T <= 128, d = 64; kernels/attention_flash_short.cu): one block of the
// same 8 warps per (b, head), warp w owning queries 16 w .. 16 w + 15 against all 128 keys. Q, K
// and V only, the backward's first three tiles at the same offsets (kRows rows of operand_ld(64) =
// 72 bf16, rows past T zero); S, P, O, the row max and sum stay in registers. 55296 bytes: 2
// blocks per SM on sm_80 (164 KiB), 4 on sm_90 (228 KiB), each with its 1 KiB reserve. The
// registers decide: the kernel is compiled for kMinBlocks blocks per SM (__launch_bounds__), at
// most 65536 / (kMinBlocks x 256) = 128 registers a thread.
struct MmaShortForward {
  static constexpr int kWarps = MmaShort::kWarps, kRows = MmaShort::kRows, kD = MmaShort::kD;
  static constexpr int kLd = MmaShort::kLd;
  static constexpr int kMinBlocks = 2;
  static constexpr size_t kTile = MmaShort::kTile;
  static constexpr size_t kQ = MmaShort::kQ, kK = MmaShort::kK, kV = MmaShort::kV;
  static constexpr size_t kBytes = align128(kV + kTile);
};

// The dynamic shared memory kFlashShort's kernels request (one layout each).
constexpr size_t flash_short_forward_shared_bytes() {
  return MmaShortForward::kBytes;
}
constexpr size_t flash_short_backward_shared_bytes() {
  return MmaShort::kBytes;
}
static_assert(flash_short_forward_shared_bytes() <= kMaxBlockBytes,
              "kFlashShort's forward exceeds sm_80's shared memory per block");
static_assert(flash_short_backward_shared_bytes() <= kMaxBlockBytes,
              "kFlashShort's backward exceeds sm_80's shared memory per block");

// ---- Register fragments of mma.sync.m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16
// with floating point type"), lane = 4 g + t (g = lane / 4, t = lane % 4) ----

struct Coord {
  int row, col;
};

// A (16 x 16, row-major), 4 registers of 2 bf16: register r, half h (h = 0: the low 16 bits).
ELECTRA_HD constexpr Coord mma_a(int lane, int reg, int half) {
  return {lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + half + 8 * (reg / 2)};
}
// B (16 x 8, K x N): 2 registers of 2 bf16; {row, col} = {k, n}.
ELECTRA_HD constexpr Coord mma_b(int lane, int reg, int half) {
  return {2 * (lane % 4) + half + 8 * reg, lane / 4};
}
// C and D (16 x 8 f32), 4 registers: element e.
ELECTRA_HD constexpr Coord mma_c(int lane, int e) {
  return {lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2};
}
// An A fragment (16 x 16) from the C fragments of two adjacent 16 x 8 tiles (columns 0-7 and
// 8-15): register r packs elements e and e + 1 of C tile `tile` (a probability tile P, computed
// as C, becomes the A operand of P V without leaving registers).
struct CToA {
  int tile, e;
};
ELECTRA_HD constexpr CToA a_from_c(int reg) {
  return {reg / 2, 2 * (reg % 2)};
}

// ldmatrix.x4 loads four 8 x 8 b16 matrices: lane l gives the address of row l % 8 of matrix l / 8
// and receives in register m row l / 4, columns 2 (l % 4) and + 1 of matrix m (.trans: rows
// 2 (l % 4) and + 1 of column l / 4). The maps below give, for each lane, the {row, col} of the
// tile element whose address it passes (the first of 8 consecutive columns of a row).
//   ldsm_a: the A fragment of a 16 x 16 tile stored row-major (registers = mma_a's 0..3);
//   ldsm_b: the B fragments of two 16 x 8 tiles (n 0-7 and 8-15) from a tile stored as [n][k]
//           (K for Q K^T): registers 0, 1 = tile 0, registers 2, 3 = tile 1;
//   ldsm_bt (with .trans): the same from a tile stored as [k][n] (V for P V);
//   ldsm_b with .trans also reads the A fragment of a 16 x 16 tile stored transposed, [k][m]
//           ({row, col} = {k, m}): kFlashShort's Pd^T and dS^T from Pd and dS stored
//           [query][key] (mma_atb_step).
ELECTRA_HD constexpr Coord ldsm_a(int lane) {
  return {lane % 8 + 8 * (lane / 8 % 2), 8 * (lane / 16)};
}
ELECTRA_HD constexpr Coord ldsm_b(int lane) {
  return {lane % 8 + 8 * (lane / 16), 8 * (lane / 8 % 2)};
}
ELECTRA_HD constexpr Coord ldsm_bt(int lane) {
  return {lane % 8 + 8 * (lane / 8 % 2), 8 * (lane / 16)};
}

// D_i = <dout_i, out_i> of a warp's 16 rows as the diagonal of the 16 x 16 product dout out^T
// (warp_diag_d, kernels/attention_flash_bf16.cuh): row r's D is element e of C tile r / 8 (its
// columns 8 (r / 8) ..) in lane `lane`, mma_c's element (r % 8 + 8 (e / 2), r % 8): lane 4 g +
// g / 2 for g = r % 8, so that rows g and g + 8 are in one lane.
struct DiagAt {
  int lane, e;
};
ELECTRA_HD constexpr DiagAt diag_c(int r) {
  return {4 * (r % 8) + r % 8 / 2, 2 * (r / 8) + r % 2};
}

// Dropout bits in registers, as the bf16 forwards draw them. One Philox block gives the keep bits
// of 8 consecutive keys of one query (attention_keep_bits<8>: 16-bit uniforms); in each pair of C
// tiles (16 queries x 16 keys) every lane draws exactly one such group (`keep_draw`: the tile
// pair's coordinates of its first element, the group running along the key axis): lane 4 g + c
// draws query g + 8 (c % 2), keys 8 (c / 2) .. + 7, so that the groups of the four lanes of a quad
// (4 g .. 4 g + 3) are all the elements the quad holds. Field f (bits 2 f, 2 f + 1: keys 2 f,
// 2 f + 1 of the group) of lane 4 g + c's byte belongs to lane 4 g + f; the quad exchanges them by
// two shuffles (keep_exchange_step, j = 2 then 1, a transpose of the quad's 4 x 4 fields), after
// which field c of lane 4 g + t is field t of lane 4 g + c's group: bit 4 n + e is element e
// (mma_c) of C tile n of the pair, the order the saved words take (add_keep_bits).
ELECTRA_HD constexpr Coord keep_draw(int lane) {
  return {lane / 4 + 8 * (lane % 2), 8 * (lane % 4 / 2)};
}
// One exchange step: this lane (t = lane % 4) holds x, its partner t ^ j holds `partner`; the
// fields f with (f & j) != (t & j) are replaced by the partner's field f ^ j.
ELECTRA_HD constexpr uint32_t keep_exchange_step(uint32_t x, uint32_t partner, int lane, int j) {
  const uint32_t low = j == 2 ? 0x0Fu : 0x33u;  // the fields f with (f & j) == 0
  return (lane & j) == 0 ? (x & low) | ((partner << (2 * j)) & ~low & 0xFFu)
                         : (x & ~low & 0xFFu) | ((partner >> (2 * j)) & low);
}

// The keep bits the bf16 forward saves for the backward (AttentionState::keep_words), so that no
// backward draws: per head, the T x T bits in tiles of 16 queries x 8 keys, ceil(T / 16) x
// ceil(T / 8) of them (query tile major), 4 words a tile. Bit `lane` of word e is the bit of
// element e of that lane's C fragment (mma_c(lane, e)), so that a warp's query-major tiles move
// as one word a lane and a bit transpose (below). The bits of elements outside T (in the last
// tiles) are unspecified. 1 bit an element when 16 divides T.
ELECTRA_HD constexpr int64_t keep_query_tiles(int64_t t) {
  return (t + 15) / 16;
}
ELECTRA_HD constexpr int64_t keep_key_tiles(int64_t t) {
  return (t + 7) / 8;
}
ELECTRA_HD constexpr int64_t keep_words_per_head(int64_t t) {
  return 4 * keep_query_tiles(t) * keep_key_tiles(t);
}
// The first of the 4 words of the tile holding (query i, key j), within the head's words.
ELECTRA_HD constexpr int64_t keep_tile_word(int64_t t, int i, int j) {
  return 4 * (static_cast<int64_t>(i / 16) * keep_key_tiles(t) + j / 8);
}
// The word (within the head's) and the bit of (query i, key j): in its tile, word e = the
// element, bit = the lane (mma_c's inverse on the 16 x 8 tile).
struct KeepAt {
  int64_t word;
  int bit;
};
ELECTRA_HD constexpr KeepAt keep_at(int64_t t, int i, int j) {
  return {keep_tile_word(t, i, j) + 2 * (i % 16 / 8) + j % 2, 4 * (i % 8) + j % 8 / 2};
}
// The lane that shfl.sync.idx reads for lane `lane` given index b and segment mask `segmask`
// (clamp 31, so that every source is taken), as the PTX ISA defines it: (lane & segmask) |
// (b & ~segmask).
ELECTRA_HD constexpr int shfl_idx_source(int lane, int b, int segmask) {
  return (lane & segmask) | (b & ~segmask & 31);
}
// How a warp moves them, one 32-bit word a lane per load or store:
// - a query-major warp tile, queries i0 .. i0 + 15 by keys j0 .. j0 + 63 (i0 % 16 == 0, j0 % 8 ==
//   0; the forward's and the dQ role's): lane l holds word l % 4 of the C tile of keys
//   j0 + 8 (l / 4), so that element e of C tile n is bit `lane` of lane 4 n + e's word. Those 32
//   words are a 32 x 32 bit matrix whose transpose (bit_transpose_step) gives each lane its own
//   32 bits, bit 4 n + e for element e of C tile n;
ELECTRA_HD constexpr int64_t keep_word_rows(int64_t t, int i0, int j0, int l) {
  return keep_tile_word(t, i0, j0 + 8 * (l / 4)) + l % 4;
}
// - the dK, dV role's S^T tiles, keys key0 .. key0 + 15 (rows, key0 % 16 == 0) by a query tile of
//   queries i0 .. (i0 % 16 == 0), C tile n its queries i0 + 8 n .. + 7: lane l < (queries) / 2
//   holds word 2 (l / 2 % 2) + l / 4 % 2 of the saved tile of queries i0 + 16 (l / 8) and keys
//   key0 + 8 (l % 2);
ELECTRA_HD constexpr int64_t keep_word_t(int64_t t, int key0, int i0, int l) {
  return keep_tile_word(t, i0 + 16 * (l / 8), key0 + 8 * (l % 2)) + 2 * (l / 2 % 2) + l / 4 % 2;
}
//   elements e and e + 1 (e even: queries i, i + 1 of one key) of this lane's C tile n are then
//   bits `bit` and bit + 4 of lane `lane`'s word. The source lane takes bit 2 from the reading
//   lane (its key's parity) and its other bits from (n, e) alone: a shuffle with segment mask
//   kKeepSegmentMask and a constant index (shfl_idx_source), no per-lane index arithmetic; the
//   bit depends on the reading lane alone.
struct KeySource {
  int lane, bit;
};
constexpr int kKeepSegmentMask = 4;
ELECTRA_HD constexpr int keep_source_index_t(int n, int e) {
  return 8 * (n / 2) + 2 * (n % 2) + e / 2;
}
ELECTRA_HD constexpr KeySource keep_source_t(int lane, int n, int e) {
  return {shfl_idx_source(lane, keep_source_index_t(n, e), kKeepSegmentMask),
          8 * (lane % 4) + lane / 8};
}

// One of the five exchange steps (j = 16, 8, 4, 2, 1) that transpose a warp's 32 x 32 bit matrix,
// row r in lane r's word (bit c = column c): lane `lane` holding x, its partner lane ^ j holding
// `partner`, swap the off-diagonal j x j blocks of every 2j x 2j block: the lane with (lane & j)
// == 0 takes the partner's columns c (c & j == 0) into its columns c + j, the other lane the
// partner's columns c + j into its columns c. After the five, lane r holds column r.
ELECTRA_HD constexpr uint32_t bit_transpose_step(uint32_t x, uint32_t partner, int lane, int j) {
  // The columns c with (c & j) == 0.
  const uint32_t m = j == 16  ? 0x0000FFFFu
                     : j == 8 ? 0x00FF00FFu
                     : j == 4 ? 0x0F0F0F0Fu
                     : j == 2 ? 0x33333333u
                              : 0x55555555u;
  return (lane & j) == 0 ? (x & m) | ((partner & m) << j) : (x & ~m) | ((partner >> j) & m);
}

// kFlashDsGemm's dS^T store from the dK, dV role's registers: warp w holds dS^T of keys
// 16 w .. 16 w + 15 (rows) by the kBr queries of the query tile (columns), as kBr / 8 C tiles;
// element e of C tile n of a lane is dS^T at {row = key, col = query} of the block's 64 x kBr
// tile, which each lane stores where key and query are inside T (dS^T is key-major, so elements
// 0, 1 and 2, 3 are consecutive queries of one key: one 4-byte store each).
ELECTRA_HD constexpr Coord ds_store_t(int warp, int lane, int n, int e) {
  const Coord c = mma_c(lane, e);
  return {kMmaRowsPerWarp * warp + c.row, 8 * n + c.col};
}

}  // namespace flash_layout

// What one block of a flash kernel computes. The forward is one kind of block; the backward is one
// launch whose grid holds both of its kinds (flash_backward_grid).
enum class FlashBlock {
  kForward,       // out and L of one query tile
  kBackwardDkDv,  // dK and dV of one key tile (with D of every query tile it visits)
  kBackwardDq,    // dQ of one query tile (with D of its rows)
};

// The tile width (32, 64 or 128 columns) that holds head dim d <= 128.
constexpr int flash_tile_width(int64_t d) {
  return d <= 32 ? 32 : d <= 64 ? 64 : 128;
}

// Returns f(std::integral_constant<int, kD>{}) with kD = flash_tile_width(d): the kernels and
// their layouts are compiled per tile width.
template <class F>
decltype(auto) with_tile_width(int64_t d, F&& f) {
  switch (flash_tile_width(d)) {
    case 32:
      return f(std::integral_constant<int, 32>{});
    case 64:
      return f(std::integral_constant<int, 64>{});
    default:
      return f(std::integral_constant<int, 128>{});
  }
}

// The tiles of a block of kind `block` for activations of `dtype` and head dim d <= 128: one block
// computes `block_rows` rows of its output (queries, or keys for dK, dV), looping over the other
// axis in steps of `loop_rows`: ceil(T / block_rows) blocks of the kind per head
// (kernels/attention_flash_common.cuh, flash_forward_grid and flash_backward_grid). Rows past T
// in the last tile of either axis are loaded as zeros and never written.
struct FlashTiles {
  int block_rows, loop_rows;
};
inline FlashTiles flash_tiles(FlashBlock block, DType dtype, int64_t d) {
  ELECTRA_CHECK(dtype == DType::F32 || dtype == DType::BF16,
                "flash_tiles: activations are f32 or bf16, got ", dtype_name(dtype));
  ELECTRA_CHECK(d >= 1 && d <= 128, "flash_tiles: head dim ", d, " not in [1, 128]");
  if (dtype == DType::F32) return {flash_layout::kF32Tile, flash_layout::kF32Tile};
  auto pick = [&](auto width) -> FlashTiles {
    constexpr int kD = decltype(width)::value;
    switch (block) {
      case FlashBlock::kForward:
        return {flash_layout::MmaForward<kD>::kBr, flash_layout::MmaForward<kD>::kBc};
      case FlashBlock::kBackwardDkDv:
        return {flash_layout::MmaDkDv<kD>::kBc, flash_layout::MmaDkDv<kD>::kBr};
      case FlashBlock::kBackwardDq:
        return {flash_layout::MmaDq<kD>::kBr, flash_layout::MmaDq<kD>::kBc};
    }
    return {};
  };
  return with_tile_width(d, pick);
}

// Dynamic shared memory in bytes of a block of kind `block` for activations of `dtype` (F32 or
// BF16) and head dim d <= 128: its layout's size.
inline size_t flash_shared_bytes(FlashBlock block, DType dtype, int64_t d) {
  ELECTRA_CHECK(dtype == DType::F32 || dtype == DType::BF16,
                "flash_shared_bytes: activations are f32 or bf16, got ", dtype_name(dtype));
  ELECTRA_CHECK(d >= 1 && d <= 128, "flash_shared_bytes: head dim ", d, " not in [1, 128]");
  auto pick = [&](auto width) -> size_t {
    constexpr int kD = decltype(width)::value;
    const bool f32 = dtype == DType::F32;
    switch (block) {
      case FlashBlock::kForward:
        return f32 ? flash_layout::F32Forward<kD>::kBytes : flash_layout::MmaForward<kD>::kBytes;
      case FlashBlock::kBackwardDkDv:
        return f32 ? flash_layout::F32Backward<kD, 2>::kBytes : flash_layout::MmaDkDv<kD>::kBytes;
      case FlashBlock::kBackwardDq:
        return f32 ? flash_layout::F32Backward<kD, 1>::kBytes : flash_layout::MmaDq<kD>::kBytes;
    }
    return 0;
  };
  return with_tile_width(d, pick);
}

// The launches of the flash kernels: the forward, the backward (dK, dV blocks and dQ blocks in
// one grid) and kFlashDsGemm's backward (dK, dV blocks only, writing dS; dQ is a GEMM).
enum class FlashLaunch { kForward, kBackward, kBackwardDkDv };

// What a flash launch requests: the largest layout among the kinds of block its grid holds (each
// block lays its tiles out from offset 0).
inline size_t flash_launch_bytes(FlashLaunch launch, DType dtype, int64_t d) {
  switch (launch) {
    case FlashLaunch::kForward:
      return flash_shared_bytes(FlashBlock::kForward, dtype, d);
    case FlashLaunch::kBackward:
      return std::max(flash_shared_bytes(FlashBlock::kBackwardDkDv, dtype, d),
                      flash_shared_bytes(FlashBlock::kBackwardDq, dtype, d));
    case FlashLaunch::kBackwardDkDv:
      return flash_shared_bytes(FlashBlock::kBackwardDkDv, dtype, d);
  }
  return 0;
}

}  // namespace electra
