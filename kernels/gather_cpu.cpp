#include "kernels/gather.h"

#include <algorithm>

namespace electra::cpu {
namespace {

// The position of slot (b, k); throws UserError naming the slot unless 0 <= pos < T.
int64_t position_of(const int32_t* positions, int64_t b, int64_t k, int64_t slots, int64_t len) {
  const int32_t pos = positions[b * slots + k];
  ELECTRA_USER_CHECK(pos >= 0 && pos < len, "gather: position ", pos, " at (batch ", b, ", slot ",
                     k, ") is outside [0, ", len, ")");
  return pos;
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

// One task per sequence: sequence b reads and writes only its own rows of x and dx.
void GatherForward::cpu(Context& ctx) const {
  dispatch_cpu_float(x.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    const int64_t batch = x.dim(0), len = x.dim(1), h = x.dim(2), slots = positions.dim(1);
    const int32_t* pos = positions.ptr<int32_t>();
    const T* in = x.ptr<T>();
    T* y = out.ptr<T>();
    ctx.parallel_for(batch, [&](int64_t b) {
      for (int64_t k = 0; k < slots; ++k) {
        const T* row = in + (b * len + cpu::position_of(pos, b, k, slots, len)) * h;
        for (int64_t j = 0; j < h; ++j) y[(b * slots + k) * h + j] = row[j];
      }
    });
  });
}

void GatherBackward::cpu(Context& ctx) const {
  dispatch_cpu_float(dx.dtype, kName, [&](auto tag) {
    using T = decltype(tag);
    const int64_t batch = dx.dim(0), len = dx.dim(1), h = dx.dim(2), slots = positions.dim(1);
    const int32_t* pos = positions.ptr<int32_t>();
    const T* dy = dout.ptr<T>();
    T* out = dx.ptr<T>();
    ctx.parallel_for(batch, [&](int64_t b) {
      if (!accumulate) std::fill(out + b * len * h, out + (b + 1) * len * h, T{0});
      for (int64_t k = 0; k < slots; ++k) {
        T* row = out + (b * len + cpu::position_of(pos, b, k, slots, len)) * h;
        for (int64_t j = 0; j < h; ++j) row[j] += dy[(b * slots + k) * h + j];
      }
    });
  });
}

}  // namespace electra
