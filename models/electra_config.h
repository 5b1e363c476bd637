// Model sizes (paper Table 6) and the generator-size rule (generator hidden = multiplier x
// discriminator hidden, FFN 4x, heads hidden / 64; paper section 3.2).
//
// The generator shares the discriminator's embedding tables (so the same embedding size E), has
// the same number of layers, hidden = round(H_disc * multiplier), FFN = 4 * hidden and
// heads = max(1, hidden / 64). Multipliers: Small 1/4, Small++ 1, Base 1/3, Large 1/4.
#pragma once

#include <cstdint>
#include <string>

#include "engine/yaml_config.h"
#include "kernels/attention.h"

namespace electra {

// Bounds on model sizes, far above ELECTRA-Large (24 layers, hidden 1024, 335M parameters): a
// typo such as `layers: 200000` is an error, not minutes of allocation.
inline constexpr int kMaxVocabSize = 1 << 22;
inline constexpr int kMaxWidth = 1 << 16;  // embedding_size, hidden (ffn: 4 x this)
inline constexpr int kMaxLayers = 1024;
inline constexpr int kMaxPositions = 1 << 16;
inline constexpr double kMaxParameters = 20e9;

struct EncoderConfig {
  int vocab_size = 30522;
  int embedding_size = 128;  // E; an embeddings_project E -> H exists when E != hidden
  int hidden = 256;
  int layers = 12;
  int heads = 4;
  int ffn = 1024;
  int max_positions = 512;
  int type_vocab_size = 2;
  float hidden_dropout = 0.1f;
  float attention_dropout = 0.1f;  // resolved to 2^-16 (16-bit uniforms: kernels/dropout_mask.h)
  float layer_norm_eps = 1e-12f;
  // Not a size: the layers per batched weight-gradient call of the backward (models/encoder.h);
  // 0 (the default) is all layers. Memory against launches and all-reduce overlap: the same bits
  // on the CPU at any value. model.weight_grad_group in a config.
  int weight_grad_group = 0;
  // Not a size either: which GPU attention kernels the layers run (kernels/attention.h: auto,
  // unfused, flash, flash_ds, flash_short); the CPU ignores it. model.attention in a config. A GPU
  // run's bits depend on it, the CPU's do not, so, like weight_grad_group, it is not part of the
  // config's hash: a --resume gives the same bits only with the same value (trainer_state.json
  // records it, and `electra pretrain --resume` says when it changed: resume_bits_note).
  AttentionImpl attention = AttentionImpl::kAuto;
  // Whether a bf16 GPU run takes the fused blocks where their kernels take the width (H = 64, the
  // Small generator's: the FFN forward and backward each in one launch, the attention output
  // projection with its residual LayerNorm; kernels/ffn_forward.h, ffn_backward.h,
  // output_layernorm.h) or the separate ops. The CPU never fuses. model.fused_layers in a config:
  // false is the fallback where a GPU's tests fail a fused kernel; outside the config's hash and
  // recorded for --resume like attention.
  bool fused_layers = true;

  int head_dim() const { return hidden / heads; }
  bool has_projection() const { return embedding_size != hidden; }
  // Parameters of the encoder with its embeddings (no head), computed in floating point so that
  // absurd sizes do not overflow.
  double parameter_count() const;
  // Throws UserError naming the offending field when sizes are inconsistent or out of bounds
  // (the k* constants above).
  void validate(const std::string& what) const;
};

struct ElectraConfig {
  EncoderConfig discriminator;
  double generator_multiplier = 0.25;

  EncoderConfig generator() const;
};

// "small", "base", "large" (Table 6) or "tiny" (tests and the CPU demo); UserError otherwise.
ElectraConfig electra_preset(const std::string& name);

// Reads a `model:` section: `preset` then any field overrides (hidden, layers, heads, ffn,
// embedding_size, vocab_size, max_positions, hidden_dropout, attention_dropout,
// generator_multiplier, weight_grad_group, attention, fused_layers). Validates the result.
ElectraConfig read_electra_config(ConfigNode model);

// The GPU attention of a name of model.attention (kAttentionNames); UserError naming `key`
// otherwise.
inline constexpr const char* kAttentionNames[] = {"auto", "unfused", "flash", "flash_ds",
                                                  "flash_short"};
AttentionImpl attention_impl_named(const std::string& name, const std::string& key);
// Refuses (UserError naming `key`) an explicit flash choice (flash, flash_ds, flash_short) that
// an encoder of this shape cannot run at T = seq_len on a GPU (attention_uses_flash: T <= 512,
// head dim <= 128), so that a config fails when it is read, on any device, not at the first GPU
// update; auto runs the unfused path on such shapes and unfused runs every shape.
void check_attention_fits(const EncoderConfig& encoder, int64_t seq_len, const std::string& key);
// The name of model.attention that selects `impl`.
const char* attention_name(AttentionImpl impl);

}  // namespace electra
