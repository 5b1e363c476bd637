// Arena: one allocation per (device, lifetime) made at construction, handed out by bumping a
// pointer. Parameters, gradients, optimizer state, activations and workspace each get one, so a
// training step allocates nothing; the high-water mark proves it.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

#include "engine/tensor.h"

namespace electra {

class Arena {
 public:
  static constexpr size_t kAlignment = 256;  // cudaMalloc's alignment; enough for 16-byte vectors

  // Allocates `capacity` bytes on `device` (aligned host memory or cudaMalloc).
  Arena(std::string name, Device device, size_t capacity);
  // An arena without memory that only counts: alloc() returns tensors with data == nullptr and
  // advances used() and high_water() as a real arena would. A model is planned once against it
  // to learn how many bytes the real arena needs.
  static Arena counting(std::string name, Device device);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;

  // A tensor of the given dtype and dims from the arena, 256-byte aligned. Throws Error naming the
  // arena, the request, the use and the capacity when it does not fit.
  Tensor alloc(DType dtype, std::initializer_list<int64_t> dims);
  template <class T>
  Tensor alloc(std::initializer_list<int64_t> dims) {
    return alloc(DTypeOf<T>::value, dims);
  }

  // Scoped reuse: everything allocated after mark() is released by rewind(mark).
  size_t mark() const { return used_; }
  void rewind(size_t mark);
  void reset() { rewind(0); }

  const std::string& name() const { return name_; }
  Device device() const { return device_; }
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  size_t high_water() const { return high_water_; }
  bool is_counting() const { return counting_; }

 private:
  void release() noexcept;

  std::string name_;
  Device device_ = Device::CPU;
  char* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  size_t high_water_ = 0;
  bool counting_ = false;
};

}  // namespace electra
