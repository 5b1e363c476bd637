// ParameterStore: every trainable parameter of a model as a named view into ONE flat f32 buffer
// (master weights), with gradients in a second buffer of the same layout. Flat buffers make the
// optimizer a single launch and the gradient all-reduce a few large buckets.
//
// Usage: declare every parameter with add() (HF transformers name, shape, kind), then allocate()
// once; param(name) / grad(name) are views, segments() describes the layout for the optimizer.
// Offsets are multiples of kAlignElements so every view is 256-byte aligned for vector loads.
//
// Padding rows: add(..., padded_rows) reserves rows [shape[0], padded_rows) right after a
// parameter (the generator's vocabulary padded to a multiple of 128 for the logits GEMM).
// param(name) keeps the HF shape; padded_param(name) / padded_grad(name) include the padding. The
// padding is outside the parameter: not counted in parameter_count(), not in the optimizer's
// segments, never saved or loaded. It holds zeros as long as the flat buffers are zeroed once
// after allocate() (the owner's job: allocate() has no stream) and nothing writes into it.
// `unpadded_offset` is where a parameter would start had no parameter reserved padding rows: the
// layout in which trainer checkpoints store per-element state, so a checkpoint does not depend on
// the padding.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/arena.h"

namespace electra {

// What a parameter is; decides weight decay (none for LayerNorm and bias, as in the official
// ELECTRA optimizer) and initialisation.
enum class ParamKind : uint8_t { kWeight, kEmbedding, kBias, kLayerNormGamma, kLayerNormBeta };

inline bool param_decays(ParamKind kind) {
  return kind == ParamKind::kWeight || kind == ParamKind::kEmbedding;
}

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  ParamKind kind = ParamKind::kWeight;
  int64_t offset = 0;  // in elements, into the flat buffers
  int64_t numel = 0;
  int64_t padded_rows = 0;      // dim 0 including the padding rows (== shape[0] without padding)
  int64_t unpadded_offset = 0;  // offset in the layout without padding rows

  // Elements of the parameter and its padding rows.
  int64_t padded_numel() const { return numel / shape[0] * padded_rows; }
};

class ParameterStore {
 public:
  static constexpr int64_t kAlignElements = 64;

  // Declares a parameter; returns its index. Names are unique (Error on a duplicate). With
  // aligned == false the parameter starts right where the previous one ends (no padding), so that
  // several parameters form one contiguous tensor (the packed Q/K/V projection). padded_rows
  // > shape[0] reserves padding rows after the parameter (0: none); a parameter packed with
  // aligned == false cannot follow a padded one.
  size_t add(const std::string& name, std::initializer_list<int64_t> shape, ParamKind kind,
             bool aligned = true, int64_t padded_rows = 0);
  // Allocates the parameter and gradient buffers (dtype f32, or f64 for CPU gradient checks) on
  // the arenas' devices; no add() afterwards.
  void allocate(Arena& params, Arena& grads, DType dtype = DType::F32);
  // Bytes allocate() needs from each arena.
  size_t bytes_needed(DType dtype = DType::F32) const;

  bool allocated() const { return flat_params_.data != nullptr; }
  const std::vector<ParamInfo>& params() const { return params_; }
  const ParamInfo& info(const std::string& name) const;
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Padded element count of the flat buffers.
  int64_t total_elements() const { return total_; }
  // Sum of the parameters' element counts (without alignment padding or padding rows).
  int64_t parameter_count() const;
  // Element count of the layout without padding rows (ParamInfo::unpadded_offset).
  int64_t unpadded_total() const { return unpadded_total_; }

  Tensor param(const std::string& name) const { return view(flat_params_, info(name)); }
  Tensor grad(const std::string& name) const { return view(flat_grads_, info(name)); }
  Tensor param(size_t index) const { return view(flat_params_, params_.at(index)); }
  Tensor grad(size_t index) const { return view(flat_grads_, params_.at(index)); }
  // [padded_rows, shape[1:]...]: the parameter followed by its padding rows.
  Tensor padded_param(const std::string& name) const {
    return view(flat_params_, info(name), true);
  }
  Tensor padded_grad(const std::string& name) const { return view(flat_grads_, info(name), true); }
  const Tensor& flat_params() const { return flat_params_; }
  const Tensor& flat_grads() const { return flat_grads_; }

 private:
  Tensor view(const Tensor& flat, const ParamInfo& p, bool padded = false) const;

  std::vector<ParamInfo> params_;
  std::unordered_map<std::string, size_t> index_;
  int64_t total_ = 0;
  int64_t unpadded_total_ = 0;
  Tensor flat_params_;
  Tensor flat_grads_;
};

}  // namespace electra
