// Tensor: a non-owning view of memory owned by an Arena (or by a test's std::vector).
// Shape has rank <= 4, row-major and contiguous. Nothing here allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "engine/bf16.h"
#include "engine/error.h"

namespace electra {

enum class DType : uint8_t { F32, BF16, F16, F64, I32, U16 };
enum class Device : uint8_t { CPU, CUDA };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
const char* device_name(Device device);

// IEEE binary16 storage (no arithmetic on the host).
struct f16 {
  uint16_t bits;
};

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::F64;
};
template <>
struct DTypeOf<bf16> {
  static constexpr DType value = DType::BF16;
};
template <>
struct DTypeOf<f16> {
  static constexpr DType value = DType::F16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::I32;
};
template <>
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::U16;
};

inline constexpr int kMaxRank = 4;
using Shape = std::array<int64_t, kMaxRank>;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  Device device = Device::CPU;
  int rank = 0;
  Shape shape{};

  // A view of `data` with the given dims; throws Error on rank > 4 or a negative dim.
  static Tensor view_of(void* data, DType dtype, Device device,
                        std::initializer_list<int64_t> dims);
  template <class T>
  static Tensor view_of(T* data, Device device, std::initializer_list<int64_t> dims) {
    return view_of(static_cast<void*>(data), DTypeOf<T>::value, device, dims);
  }

  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  // dim(i) with Python-style negative indices; throws on out-of-range i.
  int64_t dim(int i) const;
  bool empty() const { return numel() == 0; }

  // Typed pointer; throws Error when T does not match dtype.
  template <class T>
  T* ptr() const {
    ELECTRA_CHECK(DTypeOf<T>::value == dtype, "tensor is ", str(), ", requested ",
                  dtype_name(DTypeOf<T>::value));
    return static_cast<T*>(data);
  }

  // Same memory, new dims with the same element count.
  Tensor reshape(std::initializer_list<int64_t> dims) const;
  // Rows [begin, end) along dim 0.
  Tensor rows(int64_t begin, int64_t end) const;
  // "f32[2,3]@cpu"
  std::string str() const;
};

// Throws Error naming `what` unless t has exactly the given dims.
void check_shape(const Tensor& t, std::initializer_list<int64_t> dims, const char* what);
// Throws Error naming `what` unless t has the given dtype.
void check_dtype(const Tensor& t, DType dtype, const char* what);
// Both: t has exactly the given dims and dtype (check_shape first).
void check_tensor(const Tensor& t, std::initializer_list<int64_t> dims, DType dtype,
                  const char* what);
// Throws Error unless a and b have the same dims.
void check_same_shape(const Tensor& a, const Tensor& b, const char* what);
// The dtype rule of the ops whose activations follow the run's precision while parameters and
// their gradients stay f32: throws Error naming `what` unless the set tensors (data != nullptr)
// of `acts` share one floating dtype (f32, f64 or bf16) and those of `params` are f32, or f64
// with f64 activations (the CPU's f64 gradient checks). Which of these a device computes in is
// its own check (the CPU has no bf16 arithmetic, the GPU no f64).
void check_float_dtypes(const char* what, std::initializer_list<Tensor> acts,
                        std::initializer_list<Tensor> params = {});

}  // namespace electra
