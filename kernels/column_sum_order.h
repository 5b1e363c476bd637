// The order in which the column sums of kernels/column_sum.cuh combine a column's chains, as a
// host/device function, so that a CPU test can hold the register halving to the order of the
// former shared-memory one (the same additions, hence the same bits).
#pragma once

#include "engine/hd.h"

namespace electra {

// Up to this many chains a column (every sum over more than 16 columns) the finishing block
// halves them in registers, a thread a column (finish_column_tile).
constexpr int kRegisterChains = 8;

// Chain y += chain y + half for half = lanes / 2, ..., 1 (lanes a power of two, at most
// kRegisterChains; chains past `lanes` unused); returns chain 0. Fixed bounds with a test inside,
// so that the chains stay in registers on the GPU.
ELECTRA_HD float halve_chains(float (&chain)[kRegisterChains], int lanes) {
  ELECTRA_HD_UNROLL
  for (int half = kRegisterChains / 2; half > 0; half /= 2) {
    if (half < lanes) {
      ELECTRA_HD_UNROLL
      for (int y = 0; y < half; ++y) chain[y] += chain[y + half];
    }
  }
  return chain[0];
}

}  // namespace electra
