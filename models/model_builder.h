// ModelBuilder: how a layer gets its parameters, activation buffers and scratch at construction.
//
// A model is constructed twice (a step allocates nothing, so every buffer is planned up front;
// docs/ARCHITECTURE.md, "Models: how a layer gets its memory"):
//   1. planning: parameters are declared in an unallocated ParameterStore and activations come
//      from a counting Arena (tensors without memory); afterwards the store knows its layout and
//      the arena its high-water mark;
//   2. binding: the store is allocated, a real Arena of the measured size is created, and the
//      same constructors run again: param() now checks each name, shape and kind against the
//      layout and returns views, activation() returns real memory.
// Layers never touch memory in their constructors, so the planning pass is free.
//
// A Param has three views of one parameter: `value` (the f32 master weight; f64 in gradient
// checks), `grad` (same layout) and `compute`, what matmuls read: `value` itself, or its bf16
// copy when activations are bf16 (refreshed once per step by ModelWeights::refresh_compute).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/arena.h"
#include "engine/context.h"
#include "engine/parameter_store.h"

namespace electra {

// [rows, width] view of a tensor with rows * width elements.
inline Tensor as_rows(const Tensor& t, int64_t width) {
  return t.reshape({t.numel() / width, width});
}

// Parameters [first, end) in declaration order: what one part of a model declared (a layer, a
// head). A model records the spans of its parts at construction (ModelBuilder::declared()) and
// reports them, in the order its backward finishes them, to a GradientsReady callback: the
// data-parallel all-reduce starts on them (models/grad_sync.h).
struct ParamSpan {
  size_t first = 0, end = 0;
  bool empty() const { return first == end; }
};
using GradientsReady = std::function<void(Context& ctx, ParamSpan span)>;

struct Param {
  Tensor value;
  Tensor grad;
  Tensor compute;
};

// The dtypes a model runs in, from the context's precision: activations and matmul inputs
// (f64 / f32 / bf16) and statistics, losses and layernorm mean/rstd (f64 in gradient checks, else
// f32). Master weights are f64 in gradient checks, else f32.
struct ModelDTypes {
  DType activation = DType::F32;
  DType statistic = DType::F32;
  DType master = DType::F32;

  static ModelDTypes for_precision(Precision precision);
};

// The flat weights of a model: the store (names and layout), its master and gradient buffers,
// and the bf16 compute copy when activations are bf16.
struct ModelWeights {
  ParameterStore store;
  Tensor compute_flat;  // bf16 copy of the master buffer, or the master buffer itself

  // Casts the master weights into the compute copy (no-op when they are the same buffer).
  void refresh_compute(Context& ctx) const;
};

// The memory of a planned model: parameters (master + bf16 compute copy when separate),
// gradients, and an activation arena of the planned size.
struct ModelArenas {
  Arena params;
  Arena grads;
  Arena activations;
};

// Between the planning and the binding pass: allocates the store's master and gradient buffers
// and the compute copy of `weights` (the master itself unless activations are bf16), and an
// activation arena of `activation_bytes` (the counting arena's high-water mark).
ModelArenas allocate_model(ModelWeights& weights, ModelDTypes dtypes, Device device,
                           size_t activation_bytes);

class ModelBuilder {
 public:
  // Planning pass when weights.store is not allocated (acts should then be a counting arena),
  // binding pass otherwise.
  ModelBuilder(ModelWeights& weights, Arena& acts, ModelDTypes dtypes, Device device);

  bool planning() const { return !weights_.store.allocated(); }
  // Parameters declared through this builder so far (the next one's index).
  size_t declared() const { return declared_; }
  ModelDTypes dtypes() const { return dtypes_; }
  Device device() const { return device_; }

  // One parameter, aligned to ParameterStore::kAlignElements; padded_rows > shape[0] reserves
  // padding rows after it (ParameterStore::add), which padded() includes.
  Param param(const std::string& name, std::initializer_list<int64_t> shape, ParamKind kind,
              int64_t padded_rows = 0);
  // The views of a declared parameter with its padding rows: [padded_rows, shape[1:]...] (the
  // parameter's own shape when it has none).
  Param padded(const std::string& name) const;
  // Several parameters of one shape stored back to back without padding, returned as one view of
  // shape [names.size() * shape[0], shape[1:]...]: the packed Q/K/V projection of attention is
  // HF's query, key and value weights laid out consecutively.
  Param packed(const std::vector<std::string>& names, std::initializer_list<int64_t> shape,
               ParamKind kind);

  // Tying (sharing: all, models/pretrainer.h): while reusing, param() and packed() of a name
  // declared earlier in this pass return that parameter's views (same shape and kind, checked)
  // instead of declaring it again; new names are declared as usual. A model built with the other
  // model's parameter names while reusing thus reads the other's parameters, and its backward
  // adds into their gradients.
  void set_reusing(bool reusing) { reusing_ = reusing; }

  // An activation buffer in the activation dtype, or in `dtype`.
  Tensor activation(std::initializer_list<int64_t> dims);
  Tensor activation(DType dtype, std::initializer_list<int64_t> dims);

 private:
  // Views of dims starting at parameter first_index.
  Param view(size_t first_index, const std::vector<int64_t>& dims) const;
  size_t index_of(const std::string& name) const;
  // While reusing: whether `name` was declared earlier in this pass.
  bool declared_before(const std::string& name) const;

  ModelWeights& weights_;
  Arena& acts_;
  ModelDTypes dtypes_;
  Device device_;
  size_t declared_ = 0;
  bool reusing_ = false;
};

}  // namespace electra
