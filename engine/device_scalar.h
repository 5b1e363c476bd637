// DeviceScalar: a scalar argument of an op that is either a host value or one element of memory
// on the op's device, written earlier on the same stream (by a kernel, e.g. a loss normaliser
// computed from the batch). The second form needs no host read and no upload per call, so the op
// can be recorded once in a CUDA graph and replayed with new values. On the CPU "device memory" is
// host memory and the op reads it the same way. An op reads the value once (each CUDA thread at
// its start, a CPU op at its entry), never per element.
#pragma once

#include "engine/hd.h"

namespace electra {

template <class T>
struct DeviceScalar {
  T value{};
  const T* at = nullptr;  // when set, the value is *at

  DeviceScalar() = default;
  DeviceScalar(T v) : value(v) {}  // NOLINT(google-explicit-constructor): a host value
  static DeviceScalar in(const T* where) {
    DeviceScalar s;
    s.at = where;
    return s;
  }
  ELECTRA_HD T get() const { return at == nullptr ? value : *at; }
};

}  // namespace electra
