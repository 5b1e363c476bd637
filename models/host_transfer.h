// Copies between host vectors and tensors on the context's device, for setup, tests and the
// logging path (each copy synchronises; both are counted by the transfer counter, engine/device.h).
#pragma once

#include <vector>

#include "engine/context.h"
#include "engine/device.h"

namespace electra {

template <class T>
void upload_to(Context& ctx, const Tensor& dst, const std::vector<T>& src) {
  upload(
      ctx.stream(), dst.reshape({dst.numel()}),
      Tensor::view_of(const_cast<T*>(src.data()), Device::CPU, {static_cast<int64_t>(src.size())}));
  ctx.synchronize();  // src is pageable host memory the caller may free
}

template <class T>
std::vector<T> download_as(Context& ctx, const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  download(ctx.stream(), Tensor::view_of(out.data(), Device::CPU, {t.numel()}),
           t.reshape({t.numel()}));
  return out;
}

// The values of a floating tensor (f32, f64 or bf16) as doubles.
inline std::vector<double> download_doubles(Context& ctx, const Tensor& t) {
  if (t.dtype == DType::F64) return download_as<double>(ctx, t);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::BF16) {
    for (bf16 x : download_as<bf16>(ctx, t)) out.push_back(bf16_to_float(x));
  } else {
    for (float x : download_as<float>(ctx, t)) out.push_back(x);
  }
  return out;
}

}  // namespace electra
