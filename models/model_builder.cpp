#include "models/model_builder.h"

#include <algorithm>

#include "kernels/cast.h"

namespace electra {

ModelDTypes ModelDTypes::for_precision(Precision precision) {
  switch (precision) {
    case Precision::F64:
      return {DType::F64, DType::F64, DType::F64};
    case Precision::F32:
      return {DType::F32, DType::F32, DType::F32};
    case Precision::BF16:
      return {DType::BF16, DType::F32, DType::F32};
  }
  throw Error(str_cat("models: precision ", precision_name(precision), " is not supported"));
}

void ModelWeights::refresh_compute(Context& ctx) const {
  if (compute_flat.data != store.flat_params().data)
    run_op(ctx, Cast{.in = store.flat_params(), .out = Out(compute_flat)});
}

ModelArenas allocate_model(ModelWeights& weights, ModelDTypes dtypes, Device device,
                           size_t activation_bytes) {
  ParameterStore& store = weights.store;
  const bool separate_compute = dtypes.activation != dtypes.master;
  size_t param_bytes = store.bytes_needed(dtypes.master);
  if (separate_compute) param_bytes += store.bytes_needed(dtypes.activation);
  ModelArenas arenas{Arena("parameters", device, param_bytes),
                     Arena("gradients", device, store.bytes_needed(dtypes.master)),
                     Arena("activations", device, activation_bytes)};
  store.allocate(arenas.params, arenas.grads, dtypes.master);
  weights.compute_flat = separate_compute
                             ? arenas.params.alloc(dtypes.activation, {store.total_elements()})
                             : store.flat_params();
  return arenas;
}

ModelBuilder::ModelBuilder(ModelWeights& weights, Arena& acts, ModelDTypes dtypes, Device device)
    : weights_(weights), acts_(acts), dtypes_(dtypes), device_(device) {
  ELECTRA_CHECK(
      planning() == acts.is_counting(),
      "ModelBuilder: plan with a counting arena and an unallocated store, bind with a real "
      "arena and an allocated store");
}

Param ModelBuilder::param(const std::string& name, std::initializer_list<int64_t> shape,
                          ParamKind kind, int64_t padded_rows) {
  ParameterStore& store = weights_.store;
  if (declared_before(name)) {
    const ParamInfo& info = store.info(name);
    ELECTRA_CHECK(info.kind == kind && info.shape == std::vector<int64_t>(shape) &&
                      info.padded_rows == std::max(padded_rows, info.shape[0]),
                  "ModelBuilder: tied parameter '", name, "' is declared with another shape");
    return view(index_of(name), shape);
  }
  ++declared_;
  if (planning()) return view(store.add(name, shape, kind, true, padded_rows), shape);
  const ParamInfo& info = store.info(name);
  ELECTRA_CHECK(info.kind == kind && info.shape == std::vector<int64_t>(shape) &&
                    info.padded_rows == std::max(padded_rows, info.shape[0]),
                "ModelBuilder: parameter '", name, "' differs between planning and binding");
  return view(index_of(name), shape);
}

Param ModelBuilder::padded(const std::string& name) const {
  const ParamInfo& info = weights_.store.info(name);
  std::vector<int64_t> dims = info.shape;
  dims[0] = info.padded_rows;
  return view(index_of(name), dims);
}

Param ModelBuilder::packed(const std::vector<std::string>& names,
                           std::initializer_list<int64_t> shape, ParamKind kind) {
  ELECTRA_CHECK(!names.empty(), "ModelBuilder::packed: no names");
  ParameterStore& store = weights_.store;
  std::vector<int64_t> dims(shape);
  dims[0] *= static_cast<int64_t>(names.size());
  if (declared_before(names[0])) {
    for (const std::string& name : names) {
      const ParamInfo& info = store.info(name);
      ELECTRA_CHECK(
          declared_before(name) && info.kind == kind && info.shape == std::vector<int64_t>(shape),
          "ModelBuilder: tied parameter '", name, "' is declared with another shape");
    }
    return view(index_of(names[0]), dims);
  }
  declared_ += names.size();
  if (planning()) {
    const size_t first = store.add(names[0], shape, kind);
    for (size_t i = 1; i < names.size(); ++i) store.add(names[i], shape, kind, /*aligned=*/false);
    return view(first, dims);
  }
  // Binding: the layout must be exactly what the planning pass declared.
  int64_t expected_offset = -1;
  for (const std::string& name : names) {
    const ParamInfo& info = store.info(name);
    ELECTRA_CHECK(info.kind == kind && info.shape == std::vector<int64_t>(shape) &&
                      info.padded_rows == info.shape[0],
                  "ModelBuilder: parameter '", name, "' differs between planning and binding");
    ELECTRA_CHECK(expected_offset < 0 || info.offset == expected_offset, "ModelBuilder: '", name,
                  "' is not packed after the previous parameter");
    expected_offset = info.offset + info.numel;
  }
  return view(index_of(names[0]), dims);
}

size_t ModelBuilder::index_of(const std::string& name) const {
  const auto& params = weights_.store.params();
  size_t index = 0;
  while (params.at(index).name != name) ++index;
  return index;
}

bool ModelBuilder::declared_before(const std::string& name) const {
  return reusing_ && weights_.store.contains(name) && index_of(name) < declared_;
}

Param ModelBuilder::view(size_t first_index, const std::vector<int64_t>& dims) const {
  const ParameterStore& store = weights_.store;
  auto make = [&](const Tensor& flat, DType dtype) {
    Tensor t;
    t.dtype = dtype;
    t.device = device_;
    t.rank = static_cast<int>(dims.size());
    t.shape.fill(1);
    for (size_t i = 0; i < dims.size(); ++i) t.shape[i] = dims[i];
    if (flat.data != nullptr) {
      const int64_t offset = store.params()[first_index].offset;
      t.data = static_cast<char*>(flat.data) + static_cast<size_t>(offset) * dtype_size(dtype);
    }
    return t;
  };
  Param p;
  p.value = make(store.allocated() ? store.flat_params() : Tensor{}, dtypes_.master);
  p.grad = make(store.allocated() ? store.flat_grads() : Tensor{}, dtypes_.master);
  p.compute = make(weights_.compute_flat, weights_.compute_flat.data != nullptr
                                              ? weights_.compute_flat.dtype
                                              : dtypes_.activation);
  return p;
}

Tensor ModelBuilder::activation(std::initializer_list<int64_t> dims) {
  return acts_.alloc(dtypes_.activation, dims);
}

Tensor ModelBuilder::activation(DType dtype, std::initializer_list<int64_t> dims) {
  return acts_.alloc(dtype, dims);
}

}  // namespace electra
