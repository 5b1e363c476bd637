// DropoutPass: what a forward/backward pair needs beyond its tensors: the dropout stream of this
// micro-step and whether dropout is on. Each dropout site of a model has a fixed number (see
// DropoutSites), so the backward regenerates exactly the forward's masks.
#pragma once

#include <cstdint>

#include "kernels/dropout.h"
#include "kernels/dropout_mask.h"

namespace electra {

struct DropoutPass {
  RngStream dropout;     // kDropout; in pre-training its step is the step scalars' micro-step
  bool training = true;  // false: every dropout is the identity

  DropoutSite site(uint32_t number, float p) const {
    return DropoutSite{dropout, dropout_site_offset(number), training ? p : 0.0f};
  }
  float p(float configured) const { return training ? configured : 0.0f; }
};

// Site numbers of one encoder starting at `base`: the embedding dropout, then three per layer
// (attention probabilities, attention output, FFN output). The generator's encoder starts at 0,
// the discriminator's at kDiscriminatorSiteBase.
struct DropoutSites {
  static constexpr uint32_t kDiscriminatorSiteBase = 1u << 16;
  uint32_t base = 0;

  uint32_t embeddings() const { return base; }
  uint32_t attention_probs(int layer) const { return base + 1 + 3 * layer; }
  uint32_t attention_output(int layer) const { return base + 2 + 3 * layer; }
  uint32_t ffn_output(int layer) const { return base + 3 + 3 * layer; }
};

}  // namespace electra
