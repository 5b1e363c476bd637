// Moving test data between host vectors and tensors on any device, through an Arena, and the
// values as a device that reads bf16 sees them.
#pragma once

#include <cstring>
#include <vector>

#include "engine/arena.h"
#include "engine/context.h"
#include "engine/device.h"

namespace electra::test {

// A tensor of dtype T on the arena's device holding `values` (size must match dims).
template <class T>
Tensor upload(Context& ctx, Arena& arena, const std::vector<T>& values,
              std::initializer_list<int64_t> dims) {
  Tensor t = arena.alloc<T>(dims);
  ELECTRA_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "upload: ", values.size(),
                " values for ", t.str());
  copy_tensor(
      ctx.stream(), t,
      Tensor::view_of(const_cast<T*>(values.data()), Device::CPU, {t.numel()}).reshape(dims));
  return t;
}

// f32 values rounded to bf16 on the arena's device.
inline Tensor upload_bf16(Context& ctx, Arena& arena, const std::vector<float>& values,
                          std::initializer_list<int64_t> dims) {
  std::vector<bf16> rounded(values.size());
  for (size_t i = 0; i < values.size(); ++i) rounded[i] = float_to_bf16(values[i]);
  return upload(ctx, arena, rounded, dims);
}

// `values` as the device sees them in `dtype`: rounded to bf16 when it is BF16, widened back to
// f32.
inline std::vector<float> as_dtype(std::vector<float> values, DType dtype) {
  if (dtype == DType::BF16) {
    for (float& x : values) x = bf16_to_float(float_to_bf16(x));
  }
  return values;
}

// f32 values uploaded as `dtype` (F32, or BF16 rounded as in upload_bf16).
inline Tensor upload_as(Context& ctx, Arena& arena, const std::vector<float>& values, DType dtype,
                        std::initializer_list<int64_t> dims) {
  return dtype == DType::F32 ? upload(ctx, arena, values, dims)
                             : upload_bf16(ctx, arena, values, dims);
}

// The tensor's contents as a host vector of T (T must match its dtype).
template <class T>
std::vector<T> download(Context& ctx, const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  ELECTRA_CHECK(DTypeOf<T>::value == t.dtype, "download: ", t.str());
  copy_tensor(ctx.stream(), Tensor::view_of(out.data(), Device::CPU, {t.numel()}),
              t.reshape({t.numel()}));
  return out;
}

// The tensor's contents widened to f32 (accepts f32 and bf16).
inline std::vector<float> download_f32(Context& ctx, const Tensor& t) {
  if (t.dtype == DType::F32) return download<float>(ctx, t);
  const std::vector<bf16> raw = download<bf16>(ctx, t);
  std::vector<float> out(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) out[i] = bf16_to_float(raw[i]);
  return out;
}

}  // namespace electra::test
