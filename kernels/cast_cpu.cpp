#include "kernels/cast.h"

namespace electra::cpu {

void cast(Context&, const Tensor& in, const Tensor& out) {
  const int64_t n = in.numel();
  if (in.dtype == DType::F32 && out.dtype == DType::BF16) {
    const float* x = in.ptr<float>();
    bf16* y = out.ptr<bf16>();
    for (int64_t i = 0; i < n; ++i) y[i] = float_to_bf16(x[i]);
  } else if (in.dtype == DType::BF16 && out.dtype == DType::F32) {
    const bf16* x = in.ptr<bf16>();
    float* y = out.ptr<float>();
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_float(x[i]);
  } else if (in.dtype == DType::F32 && out.dtype == DType::F64) {
    const float* x = in.ptr<float>();
    double* y = out.ptr<double>();
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
  } else if (in.dtype == DType::F64 && out.dtype == DType::F32) {
    const double* x = in.ptr<double>();
    float* y = out.ptr<float>();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
  } else {
    throw Error(str_cat("cast: unsupported pair ", in.str(), " -> ", out.str()));
  }
}

}  // namespace electra::cpu
