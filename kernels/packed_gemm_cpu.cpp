// Packed f32 GEMM (see packed_gemm_cpu.h for the order of the sums). Loops, outer to inner:
//   matrix i of the batch
//     pack op(B_i) [K, N] into panels of kNR columns, k-major inside a panel (tasks of panels)
//     tasks: blocks of C_i, mc rows x nc columns (sizes from M and N only)
//       for each block of kKc values of k: pack alpha op(A) rows x kc into panels of kMR rows
//       (full panels of a row-major op(A) with alpha == 1 are read in place instead)
//         for each kMR-row panel (its A panel stays in L1), for each kNR-column panel:
//           micro-kernel: kMR x kNR accumulators in registers, kc FMAs each, in k order
//       the epilogue on the block
#include "kernels/packed_gemm_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/simd_cpu.h"

namespace electra::cpu {
namespace {

// Register tile of the micro-kernel: kMR rows x kVecsPerRow vectors of C.
#if defined(__AVX512F__)
// 12 x 32: 24 accumulators + 2 B vectors + 1 broadcast of the 32 zmm registers.
constexpr int kMR = 12, kVecsPerRow = 2;
#elif defined(__AVX2__) && defined(__FMA__)
// 6 x 16: 12 accumulators + 2 B vectors + 1 broadcast of the 16 ymm registers.
constexpr int kMR = 6, kVecsPerRow = 2;
#else
constexpr int kMR = 4, kVecsPerRow = 4;
#endif
constexpr int64_t kNR = int64_t{kVecsPerRow} * Vec::kLanes;

// K is cut into blocks of at most kKc so that a kMR x kc panel of A (12 KiB) stays in L1 and the
// task's kc x nc of packed B in L2. Task blocks of C: at most kMaxRowPanels x kMaxColPanels
// panels, cut finer until there are kTasksPerThread per thread (blocks of at least 2 panels a
// side) and a multiple of the thread count, in near-equal panel counts. The bits of C do not depend
// on the blocking, so it may follow the thread count: that keeps both cores busy to the end.
constexpr int64_t kKc = 256;
constexpr int64_t kMaxRowPanels = 8, kMaxColPanels = 16;
constexpr int64_t kTasksPerThread = 4;
constexpr int64_t kPanelsPerPackTask = 2;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

// How C starts before the first block of K: 0 (beta == 0, C never read), or beta * C.
enum class Start { kZero, kScaledC, kC };

// The kMR rows of op(A) a tile reads, from k0 of the current block of K: a packed panel
// (pack_a_block: element (r, k) at p[k * kMR + r], alpha applied), or, when op(A) is row-major and
// alpha == 1, the rows in place (element (r, k) at p[r * ld + k]): packing would copy them
// unchanged, and each row's run of kc values is contiguous, so they stay in L1 as a panel does.
struct PackedRows {
  const float* p;
  float at(int r, int64_t k) const { return p[k * kMR + r]; }
};
struct InPlaceRows {
  const float* p;
  int64_t ld;
  float at(int r, int64_t k) const { return p[r * ld + k]; }
};

// c[r, 0 .. kNR) for r < kMR (leading dimension ldc) after kc more FMAs from the rows a (kc values
// each) and the packed panel b (kc x kNR).
template <class Rows>
void micro_kernel(int64_t kc, Rows a, const float* b, float* c, int64_t ldc, Start start,
                  float beta) {
  Vec acc[kMR][kVecsPerRow];
  const Vec scale = Vec::broadcast(beta);
#pragma GCC unroll 16
  for (int r = 0; r < kMR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecsPerRow; ++v) {
      const float* p = c + r * ldc + v * Vec::kLanes;
      acc[r][v] = start == Start::kZero      ? Vec::zero()
                  : start == Start::kScaledC ? Vec::load(p) * scale
                                             : Vec::load(p);
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    Vec bv[kVecsPerRow];
#pragma GCC unroll 4
    for (int v = 0; v < kVecsPerRow; ++v) bv[v] = Vec::load(b + v * Vec::kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < kMR; ++r) {
      const Vec av = Vec::broadcast(a.at(r, k));
#pragma GCC unroll 4
      for (int v = 0; v < kVecsPerRow; ++v) acc[r][v] = Vec::fma(av, bv[v], acc[r][v]);
    }
    b += kNR;
  }
#pragma GCC unroll 16
  for (int r = 0; r < kMR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecsPerRow; ++v) acc[r][v].store(c + r * ldc + v * Vec::kLanes);
  }
}

// The micro-kernel on a partial tile (rows < kMR or cols < kNR) through a full tile on the stack;
// the packed panels' padding is zero, so the extra lanes compute zeros that are dropped.
template <class Rows>
void edge_kernel(int64_t kc, Rows a, const float* b, float* c, int64_t ldc, int64_t rows,
                 int64_t cols, Start start, float beta) {
  alignas(64) float tile[kMR * kNR];
  if (start != Start::kZero) {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(tile + r * kNR, c + r * ldc, cols * 4);
  }
  micro_kernel(kc, a, b, tile, kNR, start, beta);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, tile + r * kNR, cols * 4);
}

// A strided f32 matrix: element (r, c) is p[r * rs + c * cs].
struct Strided {
  const float* p;
  int64_t rs, cs;
  float at(int64_t r, int64_t c) const { return p[r * rs + c * cs]; }
};

Strided op_view(const MatrixBatch& x, int64_t i, bool trans) {
  const float* p = x.storage.ptr<float>() + x.offset + i * x.stride;
  return trans ? Strided{p, 1, x.ld} : Strided{p, x.ld, 1};
}

// A buffer of f32 that grows to the largest request and is then reused (64-byte aligned).
class Buffer {
 public:
  float* get(int64_t count) {
    if (count > capacity_) {
      data_.reset(
          static_cast<float*>(::operator new[](count * sizeof(float), std::align_val_t(64))));
      capacity_ = count;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<float[], Free> data_;
  int64_t capacity_ = 0;
};

// Packed op(B) of the GEMM this thread runs; packed rows of op(A) of the task this thread runs.
thread_local Buffer tls_packed_b, tls_packed_a;

// Panel jp of op(B) [K, N]: for k < K, the kNR values op(B)[k, jp * kNR + j] (0 past N).
void pack_b_panel(const Strided& b, int64_t k_dim, int64_t n, int64_t jp, float* out) {
  const int64_t c0 = jp * kNR, cols = std::min(kNR, n - c0);
  if (b.cs == 1) {  // rows of op(B) contiguous
    for (int64_t k = 0; k < k_dim; ++k) {
      const float* src = b.p + k * b.rs + c0;
      float* dst = out + k * kNR;
      std::memcpy(dst, src, cols * 4);
      std::fill(dst + cols, dst + kNR, 0.0f);
    }
    return;
  }
  for (int64_t j = 0; j < kNR; ++j) {  // columns of op(B) contiguous (B stored transposed)
    if (j < cols) {
      const float* src = b.p + (c0 + j) * b.cs;
      for (int64_t k = 0; k < k_dim; ++k) out[k * kNR + j] = src[k * b.rs];
    } else {
      for (int64_t k = 0; k < k_dim; ++k) out[k * kNR + j] = 0.0f;
    }
  }
}

// Rows [r0, r0 + rows) x k [k0, k0 + kc) of alpha op(A) as panels of kMR rows (kc x kMR each,
// rows past the block zero). Reads follow A's memory order: along k for a row-major A, along the
// rows for a transposed one (a stride of ld per k would miss the TLB on every element).
void pack_a_block(const Strided& a, float alpha, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                  float* out) {
  for (int64_t p0 = 0; p0 < rows; p0 += kMR) {
    const int64_t panel_rows = std::min<int64_t>(kMR, rows - p0);
    float* panel = out + p0 * kc;
    const float* src = a.p + (r0 + p0) * a.rs + k0 * a.cs;
    if (a.rs == 1 && panel_rows == kMR) {  // kMR contiguous values per k: a fixed-length copy
      for (int64_t k = 0; k < kc; ++k) {
        const float* col = src + k * a.cs;
#pragma GCC unroll 16
        for (int r = 0; r < kMR; ++r) panel[k * kMR + r] = alpha * col[r];
      }
      continue;
    }
    if (a.rs == 1) {
      for (int64_t k = 0; k < kc; ++k) {
        const float* col = src + k * a.cs;
        float* dst = panel + k * kMR;
        for (int64_t r = 0; r < panel_rows; ++r) dst[r] = alpha * col[r];
        for (int64_t r = panel_rows; r < kMR; ++r) dst[r] = 0.0f;
      }
      continue;
    }
    if (panel_rows == kMR) {  // k outer: 12 contiguous stores per k, 12 rows read in step
      for (int64_t k = 0; k < kc; ++k) {
#pragma GCC unroll 16
        for (int r = 0; r < kMR; ++r) panel[k * kMR + r] = alpha * src[r * a.rs + k];
      }
      continue;
    }
    for (int64_t r = 0; r < kMR; ++r) {
      const float* row = src + r * a.rs;
      if (r < panel_rows) {
        for (int64_t k = 0; k < kc; ++k) panel[k * kMR + r] = alpha * row[k];
      } else {
        for (int64_t k = 0; k < kc; ++k) panel[k * kMR + r] = 0.0f;
      }
    }
  }
}

// `panels` panels of `size` elements (`extent` in all) cut into `blocks` blocks of near-equal
// panel counts: block b is [begin(b), end(b)).
struct Split {
  int64_t panels, blocks, size, extent;
  int64_t begin(int64_t b) const { return std::min(extent, b * panels / blocks * size); }
  int64_t end(int64_t b) const { return begin(b + 1); }
};

struct Blocking {
  Split rows, cols;
  int64_t count() const { return rows.blocks * cols.blocks; }
};

Blocking blocking_for(int64_t m, int64_t n, int threads) {
  const int64_t row_panels = ceil_div(m, kMR), col_panels = ceil_div(n, kNR);
  int64_t row_blocks = ceil_div(row_panels, kMaxRowPanels);
  int64_t col_blocks = ceil_div(col_panels, kMaxColPanels);
  const auto can_split_rows = [&] { return row_panels >= 2 * (row_blocks + 1); };
  const auto can_split_cols = [&] { return col_panels >= 2 * (col_blocks + 1); };
  if (threads > 1) {
    const int64_t wanted = kTasksPerThread * threads;
    while (row_blocks * col_blocks < wanted && (can_split_rows() || can_split_cols())) {
      // Rows first: each column block packs its rows of A again.
      (can_split_rows() ? row_blocks : col_blocks) += 1;
    }
    while ((row_blocks * col_blocks) % threads != 0 && can_split_rows()) ++row_blocks;
  }
  return Blocking{Split{row_panels, row_blocks, kMR, m}, Split{col_panels, col_blocks, kNR, n}};
}

// One row of tiles: rows (<= kMR) of C from a's rows and the packed panels of op(B) from b
// (panel stride kNR * k_dim), cols columns.
template <class Rows>
void tile_row(int64_t kc, Rows a, const float* b, int64_t k_dim, float* c, int64_t ldc,
              int64_t rows, int64_t cols, Start start, float beta) {
  for (int64_t jr = 0; jr < cols; jr += kNR) {
    const float* bp = b + jr * k_dim;
    const int64_t tile_cols = std::min(kNR, cols - jr);
    if (rows == kMR && tile_cols == kNR) {
      micro_kernel(kc, a, bp, c + jr, ldc, start, beta);
    } else {
      edge_kernel(kc, a, bp, c + jr, ldc, rows, tile_cols, start, beta);
    }
  }
}

// Block (r0, c0, rows, cols) of C (row-major, ldc) from the packed op(B) (whole K) and op(A).
void compute_block(const Strided& a, float alpha, const float* packed_b, int64_t k_dim, float* c,
                   int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t cols, float beta) {
  float* packed_a = tls_packed_a.get(round_up(rows, kMR) * std::min(k_dim, kKc));
  const int64_t k_blocks = ceil_div(k_dim, kKc);
  for (int64_t kb = 0; kb < k_blocks; ++kb) {
    const int64_t k0 = kb * kKc, kc = std::min(kKc, k_dim - k0);
    const Start start = kb > 0 ? Start::kC : beta == 0 ? Start::kZero : Start::kScaledC;
    // Full row panels of a row-major op(A) with alpha == 1 are read in place; the rest is packed.
    const int64_t in_place = a.cs == 1 && alpha == 1 ? rows / kMR * kMR : 0;
    if (in_place < rows) {
      pack_a_block(a, alpha, r0 + in_place, rows - in_place, k0, kc, packed_a);
    }
    for (int64_t ir = 0; ir < rows; ir += kMR) {
      const int64_t tile_rows = std::min<int64_t>(kMR, rows - ir);
      float* ct = c + (r0 + ir) * ldc + c0;
      const float* bp = packed_b + c0 * k_dim + k0 * kNR;
      if (ir < in_place) {
        const InPlaceRows rows_a{a.p + (r0 + ir) * a.rs + k0, a.rs};
        tile_row(kc, rows_a, bp, k_dim, ct, ldc, tile_rows, cols, start, beta);
      } else {
        const PackedRows rows_a{packed_a + (ir - in_place) * kc};
        tile_row(kc, rows_a, bp, k_dim, ct, ldc, tile_rows, cols, start, beta);
      }
    }
  }
}

}  // namespace

void packed_gemm_f32(Context& ctx, const Gemm& g, const MatrixBatch& out, GemmBlockDone done) {
  const int64_t m = g.m(), n = g.n(), k_dim = g.k();
  const int64_t panels = ceil_div(n, kNR);
  float* packed_b = tls_packed_b.get(panels * kNR * k_dim);
  const Blocking t = blocking_for(m, n, ctx.threads());
  for (int64_t i = 0; i < g.batch; ++i) {
    const Strided a = op_view(g.a, i, g.trans_a), b = op_view(g.b, i, g.trans_b);
    ctx.parallel_ranges(panels, kPanelsPerPackTask, [&](int64_t p0, int64_t p1) {
      for (int64_t jp = p0; jp < p1; ++jp)
        pack_b_panel(b, k_dim, n, jp, packed_b + jp * kNR * k_dim);
    });
    float* c = out.storage.ptr<float>() + out.offset + i * out.stride;
    ctx.parallel_for(t.count(), [&](int64_t task) {
      const int64_t rb = task / t.cols.blocks, cb = task % t.cols.blocks;
      const int64_t r0 = t.rows.begin(rb), rows = t.rows.end(rb) - r0;
      const int64_t c0 = t.cols.begin(cb), cols = t.cols.end(cb) - c0;
      compute_block(a, g.alpha, packed_b, k_dim, c, out.ld, r0, rows, c0, cols, g.beta);
      if (done.fn != nullptr) done.fn(done.state, i, r0, rows, c0, cols);
    });
  }
}

}  // namespace electra::cpu
