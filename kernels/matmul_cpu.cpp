// CPU reference of matmul. f32 (every training run): the packed GEMM of packed_gemm_cpu.h, whose
// every element of C is one FMA chain in k order, so C has the same bits at any thread count and
// any tiling. f64 (gradient checks): Eigen maps of the row-major matrices, C cut into tiles whose
// sizes depend only on the shape (M, N), never on the thread count; each tile is one
// single-threaded Eigen product written in place into its block of C (Eigen's own multithreaded
// GEMM picks its blocking from the thread count, so its sums would change with it). K is never
// split across tasks. Both run their blocks in the context's thread pool, then the epilogue.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/matmul.h"
#include "kernels/packed_gemm_cpu.h"

namespace electra::cpu {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using Map = Eigen::Map<RowMajor<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// Tiles: at most kMaxTileRows x kMaxTileCols, at least kMinTileRows x kMinTileCols. Multiples of
// Eigen's register blocks (rows: 3 packets of 16 floats on AVX-512, 24 on AVX2; columns: 4 or 8),
// so that only the matrix's own edges take Eigen's remainder paths.
constexpr int64_t kMaxTileRows = 192, kMaxTileCols = 256;
constexpr int64_t kMinTileRows = 96, kMinTileCols = 64;
// The tiles are halved (the larger side first) until C has this many, so that small outputs
// with a long K (the generator's d(normed) = dlogits W: 152 x 128, K = 30522) still spread. Each
// tile packs its own rows of A and columns of B (rows x K + K x cols values), so small tiles cost
// memory traffic: with 48 x 32 tiles and 24 wanted, the ELECTRA-Small update (batch 8) at one
// thread was 3-7% slower than one whole product; with these sizes, 2-3% (bench/RESULTS.md).
constexpr int64_t kWantedTiles = 8;

struct Tiling {
  int64_t rows, cols;  // tile size
  int64_t row_tiles, col_tiles;
  int64_t count() const { return row_tiles * col_tiles; }
};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

Tiling tiling_for(int64_t m, int64_t n) {
  int64_t rows = kMaxTileRows, cols = kMaxTileCols;
  while (ceil_div(m, rows) * ceil_div(n, cols) < kWantedTiles &&
         (rows > kMinTileRows || cols > kMinTileCols)) {
    const bool halve_rows =
        rows > kMinTileRows && (cols == kMinTileCols || ceil_div(m, rows) <= ceil_div(n, cols));
    (halve_rows ? rows : cols) /= 2;
  }
  return Tiling{rows, cols, ceil_div(m, rows), ceil_div(n, cols)};
}

template <class T>
ConstMap<T> const_matrix(const MatrixBatch& x, int64_t i) {
  return ConstMap<T>(x.storage.ptr<T>() + x.offset + i * x.stride, x.rows, x.cols,
                     Eigen::OuterStride<>(x.ld));
}

// gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
template <class T>
T gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
}

// The epilogue on rows [r0, r0 + rows) x columns [c0, c0 + cols) of the product in `out`.
template <class T>
void epilogue_block(const Gemm& g, const MatrixBatch& out, int64_t r0, int64_t rows, int64_t c0,
                    int64_t cols) {
  const MatmulEpilogue& e = g.epilogue;
  T* c = out.storage.ptr<T>() + out.offset;  // epilogues have one contiguous C (check_gemm)
  if (e.bias != nullptr) {
    const T* bias = e.bias->ptr<T>();
    for (int64_t r = r0; r < r0 + rows; ++r) {
      for (int64_t col = c0; col < c0 + cols; ++col) c[r * out.ld + col] += bias[col];
    }
  }
  if (e.gelu_pre != nullptr) {
    T* y = g.c.storage.ptr<T>();
    for (int64_t r = r0; r < r0 + rows; ++r) {
      for (int64_t col = c0; col < c0 + cols; ++col) {
        y[r * out.cols + col] = gelu(c[r * out.cols + col]);
      }
    }
  }
}

// f64 (gradient checks): rows [r0, r0 + rows) x columns [c0, c0 + cols) of C_i = alpha op(A_i)
// op(B_i) + beta C_i as one single-threaded Eigen product written in place (with beta = 0 Eigen
// zeroes the tile first: C is never read, it may hold NaN), then the epilogue.
template <class T>
void eigen_tile(const Gemm& g, const MatrixBatch& out, int64_t i, int64_t r0, int64_t rows,
                int64_t c0, int64_t cols) {
  const ConstMap<T> a = const_matrix<T>(g.a, i);
  const ConstMap<T> b = const_matrix<T>(g.b, i);
  Map<T> c_all(out.storage.ptr<T>() + out.offset + i * out.stride, out.rows, out.cols,
               Eigen::OuterStride<>(out.ld));
  auto c = c_all.block(r0, c0, rows, cols);
  const T alpha = T(g.alpha);
  if (g.beta != 0 && g.beta != 1) c *= T(g.beta);
  const auto write = [&](const auto& lhs, const auto& rhs) {
    if (g.beta == 0) {
      c.noalias() = alpha * (lhs * rhs);
    } else {
      c.noalias() += alpha * (lhs * rhs);
    }
  };
  if (g.trans_a && g.trans_b) {
    write(a.middleCols(r0, rows).transpose(), b.middleRows(c0, cols).transpose());
  } else if (g.trans_a) {
    write(a.middleCols(r0, rows).transpose(), b.middleCols(c0, cols));
  } else if (g.trans_b) {
    write(a.middleRows(r0, rows), b.middleRows(c0, cols).transpose());
  } else {
    write(a.middleRows(r0, rows), b.middleCols(c0, cols));
  }
  epilogue_block<T>(g, out, r0, rows, c0, cols);
}

// The matrix the product goes to: C, or with the GELU epilogue gelu_pre (then C = gelu(pre)).
MatrixBatch product_target(const Gemm& g) {
  return g.epilogue.gelu_pre != nullptr
             ? MatrixBatch{*g.epilogue.gelu_pre, 0, g.c.rows, g.c.cols, g.c.ld, g.c.stride}
             : g.c;
}

void gemm_f32(Context& ctx, const Gemm& g) {
  const MatrixBatch out = product_target(g);
  struct State {
    const Gemm* g;
    const MatrixBatch* out;
  } state{&g, &out};
  const bool has_epilogue = g.epilogue.bias != nullptr || g.epilogue.gelu_pre != nullptr;
  const GemmBlockDone done{
      [](const void* p, int64_t, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
        const State& s = *static_cast<const State*>(p);
        epilogue_block<float>(*s.g, *s.out, r0, rows, c0, cols);
      },
      &state};
  packed_gemm_f32(ctx, g, out, has_epilogue ? done : GemmBlockDone{nullptr, nullptr});
}

void gemm_f64(Context& ctx, const Gemm& g) {
  const MatrixBatch out = product_target(g);
  const int64_t m = g.m(), n = g.n();
  const Tiling t = tiling_for(m, n);
  ctx.parallel_for(g.batch * t.count(), [&](int64_t task) {
    const int64_t i = task / t.count(), tile = task % t.count();
    const int64_t r0 = tile / t.col_tiles * t.rows, c0 = tile % t.col_tiles * t.cols;
    eigen_tile<double>(g, out, i, r0, std::min(t.rows, m - r0), c0, std::min(t.cols, n - c0));
  });
}

// Columns are independent sums: each task owns a block of columns and adds the rows in order.
constexpr int64_t kBiasGradCols = 64;

// A group's sums are one BiasGrad of its own: the groups run one after the other.
template <class T>
void bias_grad_typed(Context& ctx, const BiasGrad& op) {
  const int64_t n = op.n(), m = op.dy.numel() / n / op.groups;
  for (int64_t group = 0; group < op.groups; ++group) {
    const T* g = op.dy.ptr<T>() + group * m * n;
    T* out = op.db.ptr<T>() + group * op.db_stride;
    ctx.parallel_ranges(n, kBiasGradCols, [&](int64_t c0, int64_t c1) {
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = c0; c < c1; ++c) out[c] += g[r * n + c];
      }
    });
  }
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void Gemm::cpu(Context& ctx) const {
  if (m() == 0 || n() == 0) return;
  dispatch_cpu_float(c.storage.dtype, kName, [&](auto zero) {
    if constexpr (std::is_same_v<decltype(zero), float>) {
      cpu::gemm_f32(ctx, *this);
    } else {
      cpu::gemm_f64(ctx, *this);
    }
  });
}

void BiasGrad::cpu(Context& ctx) const {
  if (dy.numel() == 0) return;  // db += an empty sum
  dispatch_cpu_float(dy.dtype, kName, [&](auto zero) {
    using T = decltype(zero);
    cpu::bias_grad_typed<T>(ctx, *this);
  });
}

}  // namespace electra
