#include "engine/tensor.h"

#include <sstream>

namespace electra {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::BF16:
    case DType::F16:
    case DType::U16:
      return 2;
    case DType::F64:
      return 8;
  }
  throw Error("unknown dtype");
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::BF16:
      return "bf16";
    case DType::F16:
      return "f16";
    case DType::F64:
      return "f64";
    case DType::I32:
      return "i32";
    case DType::U16:
      return "u16";
  }
  return "?";
}

const char* device_name(Device device) {
  return device == Device::CPU ? "cpu" : "cuda";
}

static void set_dims(Tensor& t, std::initializer_list<int64_t> dims) {
  ELECTRA_CHECK(dims.size() <= static_cast<size_t>(kMaxRank), "rank ", dims.size(),
                " exceeds the maximum of ", kMaxRank);
  t.rank = static_cast<int>(dims.size());
  t.shape.fill(1);
  int i = 0;
  for (int64_t d : dims) {
    ELECTRA_CHECK(d >= 0, "negative dimension ", d, " at index ", i);
    t.shape[i++] = d;
  }
}

Tensor Tensor::view_of(void* data, DType dtype, Device device,
                       std::initializer_list<int64_t> dims) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  set_dims(t, dims);
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

int64_t Tensor::dim(int i) const {
  int j = i < 0 ? i + rank : i;
  ELECTRA_CHECK(j >= 0 && j < rank, "dim ", i, " out of range for ", str());
  return shape[j];
}

Tensor Tensor::reshape(std::initializer_list<int64_t> dims) const {
  Tensor t = *this;
  set_dims(t, dims);
  ELECTRA_CHECK(t.numel() == numel(), "cannot reshape ", str(), " to ", t.str());
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  ELECTRA_CHECK(rank >= 1 && 0 <= begin && begin <= end && end <= shape[0], "rows [", begin, ", ",
                end, ") out of range for ", str());
  Tensor t = *this;
  t.shape[0] = end - begin;
  int64_t row = 1;
  for (int i = 1; i < rank; ++i) row *= shape[i];
  t.data = static_cast<char*>(data) + static_cast<size_t>(begin * row) * dtype_size(dtype);
  return t;
}

std::string Tensor::str() const {
  std::ostringstream out;
  out << dtype_name(dtype) << "[";
  for (int i = 0; i < rank; ++i) out << (i ? "," : "") << shape[i];
  out << "]@" << device_name(device);
  return out.str();
}

void check_shape(const Tensor& t, std::initializer_list<int64_t> dims, const char* what) {
  bool ok = t.rank == static_cast<int>(dims.size());
  int i = 0;
  for (int64_t d : dims) ok = ok && t.shape[i++] == d;
  if (!ok) {
    Tensor expected = t;
    expected.rank = static_cast<int>(dims.size());
    i = 0;
    for (int64_t d : dims) expected.shape[i++] = d;
    throw Error(str_cat(what, ": expected shape ", expected.str(), ", got ", t.str()));
  }
}

void check_dtype(const Tensor& t, DType dtype, const char* what) {
  if (t.dtype != dtype) {
    throw Error(str_cat(what, ": expected dtype ", dtype_name(dtype), ", got ", t.str()));
  }
}

void check_tensor(const Tensor& t, std::initializer_list<int64_t> dims, DType dtype,
                  const char* what) {
  check_shape(t, dims, what);
  check_dtype(t, dtype, what);
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  bool ok = a.rank == b.rank;
  for (int i = 0; ok && i < a.rank; ++i) ok = a.shape[i] == b.shape[i];
  if (!ok) throw Error(str_cat(what, ": shapes differ: ", a.str(), " vs ", b.str()));
}

void check_float_dtypes(const char* what, std::initializer_list<Tensor> acts,
                        std::initializer_list<Tensor> params) {
  const Tensor* first = nullptr;
  for (const Tensor& t : acts) {
    if (t.data == nullptr) continue;
    if (first == nullptr) first = &t;
    if (t.dtype != first->dtype ||
        (t.dtype != DType::F32 && t.dtype != DType::F64 && t.dtype != DType::BF16)) {
      throw Error(str_cat(what, ": activations must share one of f32, f64, bf16: ", first->str(),
                          " and ", t.str()));
    }
  }
  const DType param = first != nullptr && first->dtype == DType::F64 ? DType::F64 : DType::F32;
  for (const Tensor& t : params) {
    if (t.data != nullptr && t.dtype != param) {
      throw Error(str_cat(what, ": parameters and their gradients must be ", dtype_name(param),
                          " here, got ", t.str()));
    }
  }
}

}  // namespace electra
