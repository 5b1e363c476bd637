#include "engine/parameter_store.h"

namespace electra {

size_t ParameterStore::add(const std::string& name, std::initializer_list<int64_t> shape,
                           ParamKind kind, bool aligned) {
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
  if (aligned || params_.empty()) {
    p.offset = total_;
  } else {
    const ParamInfo& previous = params_.back();
    p.offset = previous.offset + previous.numel;
  }
  total_ = (p.offset + p.numel + kAlignElements - 1) / kAlignElements * kAlignElements;
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

Tensor ParameterStore::view(const Tensor& flat, const ParamInfo& p) const {
  ELECTRA_CHECK(allocated(), "parameter '", p.name, "' used before allocate()");
  Tensor t = flat;
  t.data = static_cast<char*>(flat.data) + static_cast<size_t>(p.offset) * dtype_size(flat.dtype);
  t.rank = static_cast<int>(p.shape.size());
  t.shape.fill(1);
  for (size_t i = 0; i < p.shape.size(); ++i) t.shape[i] = p.shape[i];
  return t;
}

}  // namespace electra
