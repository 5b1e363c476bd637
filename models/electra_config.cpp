#include "models/electra_config.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

namespace electra {

double EncoderConfig::parameter_count() const {
  const double e = embedding_size, h = hidden, f = ffn;
  const double embeddings = (vocab_size + max_positions + type_vocab_size + 2.0) * e +
                            (has_projection() ? e * h + h : 0.0);
  // Q, K, V, output projections (4 H^2 + 4 H), FFN (2 H F + F + H), two LayerNorms (4 H).
  const double layer = 4 * h * h + 2 * h * f + f + 9 * h;
  return embeddings + static_cast<double>(layers) * layer;
}

void EncoderConfig::validate(const std::string& what) const {
  // Each size is bounded before any product is formed from it (4 x hidden must not overflow an
  // int), and the model as a whole before anything is allocated for it.
  auto bounded = [&](int v, const char* field, int most) {
    ELECTRA_USER_CHECK(v > 0 && v <= most, what, ".", field, " must be in [1, ", most, "] (got ", v,
                       ")");
  };
  bounded(vocab_size, "vocab_size", kMaxVocabSize);
  bounded(embedding_size, "embedding_size", kMaxWidth);
  bounded(hidden, "hidden", kMaxWidth);
  bounded(layers, "layers", kMaxLayers);
  bounded(heads, "heads", hidden);
  bounded(ffn, "ffn", 4 * kMaxWidth);
  bounded(max_positions, "max_positions", kMaxPositions);
  bounded(type_vocab_size, "type_vocab_size", 1024);
  const double params = parameter_count();
  ELECTRA_USER_CHECK(params <= kMaxParameters, what, ": ", layers, " layers of hidden ", hidden,
                     " and ffn ", ffn, " make ", params / 1e9, " billion parameters (",
                     params * 4 / (1 << 30),
                     " GiB in f32 before gradients and optimizer state); "
                     "the engine's limit is ",
                     kMaxParameters / 1e9, " billion");
  ELECTRA_USER_CHECK(hidden % heads == 0, what, ".hidden (", hidden, ") is not divisible by ", what,
                     ".heads (", heads, ")");
  ELECTRA_USER_CHECK(hidden_dropout >= 0 && hidden_dropout < 1, what,
                     ".hidden_dropout must be in [0, 1) (got ", hidden_dropout, ")");
  ELECTRA_USER_CHECK(attention_dropout >= 0 && attention_dropout < 1, what,
                     ".attention_dropout must be in [0, 1) (got ", attention_dropout, ")");
}

EncoderConfig ElectraConfig::generator() const {
  EncoderConfig g = discriminator;
  g.hidden =
      std::max(1, static_cast<int>(std::lround(discriminator.hidden * generator_multiplier)));
  g.ffn = 4 * g.hidden;
  g.heads = std::max(1, g.hidden / 64);
  return g;
}

ElectraConfig electra_preset(const std::string& name) {
  ElectraConfig c;
  EncoderConfig& d = c.discriminator;
  if (name == "small") {
    d.embedding_size = 128, d.hidden = 256, d.layers = 12, d.heads = 4, d.ffn = 1024;
    c.generator_multiplier = 0.25;
  } else if (name == "base") {
    d.embedding_size = 768, d.hidden = 768, d.layers = 12, d.heads = 12, d.ffn = 3072;
    c.generator_multiplier = 1.0 / 3.0;
  } else if (name == "large") {
    d.embedding_size = 1024, d.hidden = 1024, d.layers = 24, d.heads = 16, d.ffn = 4096;
    c.generator_multiplier = 0.25;
  } else if (name == "tiny") {
    d.embedding_size = 64, d.hidden = 128, d.layers = 2, d.heads = 2, d.ffn = 512;
    d.max_positions = 128;
    c.generator_multiplier = 0.5;
  } else {
    throw UserError(str_cat("unknown model preset '", name, "' (use tiny, small, base, large)"));
  }
  return c;
}

namespace {
// kAttentionNames[i] selects kImpls[i].
constexpr AttentionImpl kImpls[] = {AttentionImpl::kAuto, AttentionImpl::kUnfused,
                                    AttentionImpl::kFlash, AttentionImpl::kFlashDsGemm,
                                    AttentionImpl::kFlashShort};
static_assert(std::size(kImpls) == std::size(kAttentionNames));
}  // namespace

void check_attention_fits(const EncoderConfig& encoder, int64_t seq_len, const std::string& key) {
  if (encoder.attention == AttentionImpl::kAuto || encoder.attention == AttentionImpl::kUnfused) {
    return;
  }
  const int64_t head_dim = encoder.hidden / encoder.heads;
  ELECTRA_USER_CHECK(seq_len <= kFlashMaxSeqLen && head_dim <= kFlashMaxHeadDim, key, " ",
                     attention_name(encoder.attention), " needs T <= ", kFlashMaxSeqLen,
                     " and a head dim <= ", kFlashMaxHeadDim, " (got T = ", seq_len, ", head dim ",
                     encoder.hidden, " / ", encoder.heads, " = ", head_dim,
                     "): use auto (flash where it can, else unfused) or unfused");
}

const char* attention_name(AttentionImpl impl) {
  for (size_t i = 0; i < std::size(kImpls); ++i) {
    if (impl == kImpls[i]) return kAttentionNames[i];
  }
  throw Error(str_cat("attention_name: AttentionImpl ", static_cast<int>(impl), " has no name"));
}

AttentionImpl attention_impl_named(const std::string& name, const std::string& key) {
  for (size_t i = 0; i < std::size(kImpls); ++i) {
    if (name == kAttentionNames[i]) return kImpls[i];
  }
  throw UserError(str_cat(key, ": unknown attention '", name,
                          "' (use auto, unfused, flash, flash_ds or flash_short)"));
}

ElectraConfig read_electra_config(ConfigNode model) {
  ElectraConfig c =
      electra_preset(model.choice("preset", "small", {"tiny", "small", "base", "large"}));
  EncoderConfig& d = c.discriminator;
  d.vocab_size = model.get<int>("vocab_size", d.vocab_size);
  d.embedding_size = model.get<int>("embedding_size", d.embedding_size);
  d.hidden = model.get<int>("hidden", d.hidden);
  d.layers = model.get<int>("layers", d.layers);
  d.heads = model.get<int>("heads", d.heads);
  d.ffn = model.get<int>("ffn", d.ffn);
  d.max_positions = model.get<int>("max_positions", d.max_positions);
  d.hidden_dropout = model.get<float>("hidden_dropout", d.hidden_dropout);
  d.attention_dropout = model.get<float>("attention_dropout", d.attention_dropout);
  d.weight_grad_group = model.get<int>("weight_grad_group", d.weight_grad_group);
  ELECTRA_USER_CHECK(d.weight_grad_group >= 0, "model.weight_grad_group must be >= 0 (0: all ",
                     "layers; got ", d.weight_grad_group, ")");
  d.attention = attention_impl_named(
      model.choice(
          "attention", "auto",
          std::vector<std::string>(std::begin(kAttentionNames), std::end(kAttentionNames))),
      "model.attention");
  d.fused_layers = model.get<bool>("fused_layers", d.fused_layers);
  c.generator_multiplier = model.get<double>("generator_multiplier", c.generator_multiplier);
  ELECTRA_USER_CHECK(c.generator_multiplier > 0 && c.generator_multiplier <= 1,
                     "model.generator_multiplier must be in (0, 1] (got ", c.generator_multiplier,
                     ")");
  d.validate("model");
  c.generator().validate("model (generator)");
  return c;
}

}  // namespace electra
