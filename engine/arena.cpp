#include "engine/arena.h"

#include <cstdlib>
#include <utility>

#include "engine/device.h"

namespace electra {

static size_t round_up(size_t n, size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

Arena::Arena(std::string name, Device device, size_t capacity)
    : name_(std::move(name)), device_(device), capacity_(round_up(capacity, kAlignment)) {
  if (capacity_ == 0) return;
  if (device_ == Device::CPU) {
    base_ = static_cast<char*>(std::aligned_alloc(kAlignment, capacity_));
    ELECTRA_CHECK(base_ != nullptr, "arena '", name_, "': cannot allocate ", capacity_,
                  " bytes of host memory");
  } else {
    base_ = static_cast<char*>(cuda_malloc(capacity_));
  }
}

Arena Arena::counting(std::string name, Device device) {
  Arena arena(std::move(name), device, 0);
  arena.capacity_ = SIZE_MAX;
  arena.counting_ = true;
  return arena;
}

Arena::~Arena() {
  release();
}

Arena::Arena(Arena&& other) noexcept
    : name_(std::move(other.name_)),
      device_(other.device_),
      base_(std::exchange(other.base_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      used_(std::exchange(other.used_, 0)),
      high_water_(std::exchange(other.high_water_, 0)),
      counting_(std::exchange(other.counting_, false)) {}

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    device_ = other.device_;
    base_ = std::exchange(other.base_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    used_ = std::exchange(other.used_, 0);
    high_water_ = std::exchange(other.high_water_, 0);
    counting_ = std::exchange(other.counting_, false);
  }
  return *this;
}

void Arena::release() noexcept {
  if (base_ == nullptr) return;
  if (device_ == Device::CPU) {
    std::free(base_);
  } else {
    cuda_free(base_);
  }
  base_ = nullptr;
}

Tensor Arena::alloc(DType dtype, std::initializer_list<int64_t> dims) {
  Tensor t = Tensor::view_of(nullptr, dtype, device_, dims);
  const size_t bytes = round_up(t.nbytes(), kAlignment);
  if (bytes > capacity_ - used_) {
    throw Error(str_cat("arena '", name_, "' (", device_name(device_), ") is full: request of ",
                        t.nbytes(), " bytes for ", t.str(), " with ", used_, " of ", capacity_,
                        " bytes in use"));
  }
  t.data = counting_ ? nullptr : base_ + used_;
  used_ += bytes;
  if (used_ > high_water_) high_water_ = used_;
  return t;
}

void Arena::rewind(size_t mark) {
  ELECTRA_CHECK(mark <= used_, "arena '", name_, "': rewind to ", mark, " beyond use ", used_);
  used_ = mark;
}

}  // namespace electra
