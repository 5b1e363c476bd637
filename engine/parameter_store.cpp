#include "engine/parameter_store.h"

#include <algorithm>

namespace electra {

size_t ParameterStore::add(const std::string& name, std::initializer_list<int64_t> shape,
                           ParamKind kind, bool aligned, int64_t padded_rows) {
  ELECTRA_CHECK(!allocated(), "ParameterStore::add('", name, "') after allocate()");
  ELECTRA_CHECK(!contains(name), "duplicate parameter '", name, "'");
  ELECTRA_CHECK(shape.size() >= 1 && shape.size() <= static_cast<size_t>(kMaxRank), "parameter '",
                name, "' has rank ", shape.size());
  ParamInfo p;
  p.name = name;
  p.shape = shape;
  p.kind = kind;
  p.numel = 1;
  for (int64_t d : shape) {
    ELECTRA_CHECK(d > 0, "parameter '", name, "' has a non-positive dimension");
    p.numel *= d;
  }
  ELECTRA_CHECK(padded_rows == 0 || padded_rows >= p.shape[0], "parameter '", name,
                "': padded_rows ", padded_rows, " < ", p.shape[0], " rows");
  p.padded_rows = std::max(padded_rows, p.shape[0]);
  auto align = [](int64_t n) { return (n + kAlignElements - 1) / kAlignElements * kAlignElements; };
  if (aligned || params_.empty()) {
    p.offset = total_;
    p.unpadded_offset = unpadded_total_;
  } else {
    const ParamInfo& previous = params_.back();
    ELECTRA_CHECK(previous.padded_rows == previous.shape[0], "parameter '", name,
                  "' cannot be packed after '", previous.name, "', which has padding rows");
    p.offset = previous.offset + previous.numel;
    p.unpadded_offset = previous.unpadded_offset + previous.numel;
  }
  total_ = align(p.offset + p.padded_numel());
  unpadded_total_ = align(p.unpadded_offset + p.numel);
  index_[name] = params_.size();
  params_.push_back(std::move(p));
  return params_.size() - 1;
}

size_t ParameterStore::bytes_needed(DType dtype) const {
  return static_cast<size_t>(total_) * dtype_size(dtype) + Arena::kAlignment;
}

void ParameterStore::allocate(Arena& params, Arena& grads, DType dtype) {
  ELECTRA_CHECK(!allocated(), "ParameterStore::allocate() called twice");
  ELECTRA_CHECK(dtype == DType::F32 || dtype == DType::F64, "parameters are f32 or f64, not ",
                dtype_name(dtype));
  ELECTRA_CHECK(total_ > 0, "ParameterStore::allocate() with no parameters");
  flat_params_ = params.alloc(dtype, {total_});
  flat_grads_ = grads.alloc(dtype, {total_});
}

const ParamInfo& ParameterStore::info(const std::string& name) const {
  const auto it = index_.find(name);
  ELECTRA_CHECK(it != index_.end(), "no parameter named '", name, "'");
  return params_[it->second];
}

int64_t ParameterStore::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.numel;
  return n;
}

Tensor ParameterStore::view(const Tensor& flat, const ParamInfo& p, bool padded) const {
  ELECTRA_CHECK(allocated(), "parameter '", p.name, "' used before allocate()");
  Tensor t = flat;
  t.data = static_cast<char*>(flat.data) + static_cast<size_t>(p.offset) * dtype_size(flat.dtype);
  t.rank = static_cast<int>(p.shape.size());
  t.shape.fill(1);
  for (size_t i = 0; i < p.shape.size(); ++i) t.shape[i] = p.shape[i];
  if (padded) t.shape[0] = p.padded_rows;
  return t;
}

}  // namespace electra
