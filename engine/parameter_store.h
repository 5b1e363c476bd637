// ParameterStore: every trainable parameter of a model as a named view into ONE flat f32 buffer
// (master weights), with gradients in a second buffer of the same layout. Flat buffers make the
// optimizer a single launch and the gradient all-reduce a few large buckets (DESIGN sections 2, 6).
//
// Usage: declare every parameter with add() (HF transformers name, shape, kind), then allocate()
// once; param(name) / grad(name) are views, segments() describes the layout for the optimizer.
// Offsets are multiples of kAlignElements so every view is 256-byte aligned for vector loads.
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
};

class ParameterStore {
 public:
  static constexpr int64_t kAlignElements = 64;

  // Declares a parameter; returns its index. Names are unique (Error on a duplicate). With
  // aligned == false the parameter starts right where the previous one ends (no padding), so that
  // several parameters form one contiguous tensor (the packed Q/K/V projection).
  size_t add(const std::string& name, std::initializer_list<int64_t> shape, ParamKind kind,
             bool aligned = true);
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
  // Sum of the parameters' element counts (without alignment padding).
  int64_t parameter_count() const;

  Tensor param(const std::string& name) const { return view(flat_params_, info(name)); }
  Tensor grad(const std::string& name) const { return view(flat_grads_, info(name)); }
  Tensor param(size_t index) const { return view(flat_params_, params_.at(index)); }
  Tensor grad(size_t index) const { return view(flat_grads_, params_.at(index)); }
  const Tensor& flat_params() const { return flat_params_; }
  const Tensor& flat_grads() const { return flat_grads_; }

 private:
  Tensor view(const Tensor& flat, const ParamInfo& p) const;

  std::vector<ParamInfo> params_;
  std::unordered_map<std::string, size_t> index_;
  int64_t total_ = 0;
  Tensor flat_params_;
  Tensor flat_grads_;
};

}  // namespace electra
