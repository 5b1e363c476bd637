// How the GPU parameter-gradient passes (layernorm dgamma / dbeta, bias + GELU db, bias_grad)
// split N rows: blocks of at least 32 rows, and at most kMaxParamGradPartials blocks, each writing
// one row of partial column sums that the last blocks of the same launch add in a fixed order
// (kernels/column_sum.cuh). Bounding the number of partials keeps that finishing tail short at any
// N (131k rows: 512 partials of 256 rows, not 4096 of 32), while 512 row blocks still give the
// pass enough blocks to fill a GPU.
#pragma once

#include <algorithm>
#include <cstdint>

namespace electra {

constexpr int64_t kMaxParamGradPartials = 512;

inline int64_t param_grad_rows_per_block(int64_t n) {
  return std::max<int64_t>(32, (n + kMaxParamGradPartials - 1) / kMaxParamGradPartials);
}

}  // namespace electra
