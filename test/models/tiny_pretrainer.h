// The tiny ELECTRA of the model tests: 2 layers, H = 32, E = 16 (projection on),
// generator multiplier 0.5 (generator H = 16 = E, no projection), vocab 97, T = 16, batch 3 with
// padding in two sequences, and a fixed corruption (masked positions, [MASK]/kept tokens, samples
// with one sample equal to its original) for the test entry.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "models/host_transfer.h"
#include "models/pretrainer.h"
#include "test/common/test_util.h"

namespace electra::test {

// A corruption as host values: what masking and sampling would have produced.
struct FixedCorruption {
  std::vector<int32_t> generator_ids;  // [B * T]: ids with the masked positions changed
  std::vector<int32_t> positions;      // [B * N]
  std::vector<float> weights;          // [B * N]: 1 for a used slot, 0 for an empty one
  std::vector<int32_t> samples;        // [B * N]: the generator's "samples"
};

// The test entry of the pipeline: a host batch and a fixed corruption on the device (in memory
// of its own), run through forward and backward in place of masking and sampling.
class FixedStep {
 public:
  FixedStep(Context& ctx, ElectraPretrainer& model, const HostBatch& batch,
            const FixedCorruption& f)
      : model_(model),
        batch_(batch),
        planes_(static_cast<size_t>(model.input().numel())),
        arena_("fixed corruption", ctx.device(), 1 << 16) {
    const int64_t b = model.options().batch, t = model.options().seq_len, n = model.slots();
    ELECTRA_CHECK(f.generator_ids.size() == static_cast<size_t>(b * t) &&
                      f.positions.size() == static_cast<size_t>(b * n) &&
                      f.weights.size() == static_cast<size_t>(b * n) &&
                      f.samples.size() == static_cast<size_t>(b * n),
                  "FixedStep: corruption sizes do not match B = ", b, ", T = ", t, ", N = ", n);
    std::vector<int32_t> original(static_cast<size_t>(b * n));
    for (int64_t i = 0; i < b * n; ++i) {
      original[i] = batch.ids[(i / n) * t + f.positions[i]];
    }
    c_.generator_ids = arena_.alloc<int32_t>({b, t});
    c_.positions = arena_.alloc<int32_t>({b, n});
    c_.original = arena_.alloc<int32_t>({b, n});
    c_.weights = arena_.alloc<float>({b, n});
    c_.samples = arena_.alloc<int32_t>({b * n});
    upload_to(ctx, c_.generator_ids, f.generator_ids);
    upload_to(ctx, c_.positions, f.positions);
    upload_to(ctx, c_.original, original);
    upload_to(ctx, c_.weights, f.weights);
    upload_to(ctx, c_.samples, f.samples);
  }

  const Corruption& corruption() const { return c_; }

  // Packs and uploads the batch.
  void feed(Context& ctx) {
    model_.pack_batch(batch_, planes_.data());
    upload_to(ctx, model_.input(), planes_);
  }

  // One micro-step: feed, forward, backward.
  void run(Context& ctx, uint32_t micro_step, float loss_scale = 1.0f,
           const GradientsReady& ready = {}) {
    feed(ctx);
    model_.backward(ctx, model_.forward(ctx, c_, micro_step, loss_scale), ready);
  }

 private:
  ElectraPretrainer& model_;
  HostBatch batch_;
  std::vector<int32_t> planes_;
  Arena arena_;
  Corruption c_;
};

// The last forward's corruption and samples, read back.
inline FixedCorruption download_corruption(Context& ctx, const ElectraPretrainer& model) {
  const Corruption& c = model.last_corruption();
  FixedCorruption f;
  f.generator_ids = download_as<int32_t>(ctx, c.generator_ids);
  f.positions = download_as<int32_t>(ctx, c.positions);
  f.weights = download_as<float>(ctx, c.weights);
  f.samples = download_as<int32_t>(ctx, model.last_forward().samples);
  return f;
}

// Whether the store holds a parameter whose name starts with `prefix` ("generator/", ...).
inline bool has_param(const ParameterStore& store, const std::string& prefix) {
  for (const ParamInfo& p : store.params()) {
    if (p.name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

inline ElectraConfig tiny_electra_config(float dropout = 0.0f) {
  ElectraConfig c;
  EncoderConfig& d = c.discriminator;
  d.vocab_size = 97;
  d.embedding_size = 16;
  d.hidden = 32;
  d.layers = 2;
  d.heads = 2;
  d.ffn = 64;
  d.max_positions = 32;
  d.hidden_dropout = dropout;
  d.attention_dropout = dropout;
  c.generator_multiplier = 0.5;
  return c;
}

// The tiny model with a generator of the discriminator's size (sharing: all): multiplier 1,
// FFN 4 H = 128, H / 64 = 1 head.
inline ElectraConfig tiny_tied_config(float dropout = 0.0f) {
  ElectraConfig c = tiny_electra_config(dropout);
  c.discriminator.ffn = 128;
  c.discriminator.heads = 1;
  c.generator_multiplier = 1.0;
  return c;
}

// The gradient (f64 store) of parameter `name`.
inline std::vector<double> param_grads(const ParameterStore& store, const std::string& name) {
  const ParamInfo& p = store.info(name);
  const double* g = store.flat_grads().ptr<double>() + p.offset;
  return std::vector<double>(g, g + p.numel);
}

// Copies parameter `from` of store `src` into parameter `to` of `dst` (f64 stores of one shape).
inline void copy_param(const ParameterStore& src, const std::string& from,
                       const ParameterStore& dst, const std::string& to) {
  const ParamInfo& a = src.info(from);
  const ParamInfo& b = dst.info(to);
  ELECTRA_CHECK(a.shape == b.shape, "copy_param: ", from, " -> ", to);
  std::copy_n(src.flat_params().ptr<double>() + a.offset, a.numel,
              dst.flat_params().ptr<double>() + b.offset);
}

inline PretrainOptions tiny_options() {
  PretrainOptions o;
  o.batch = 3;
  o.seq_len = 16;
  o.mask_prob = 0.25f;  // N = int(0.255 * 16) = 4 slots
  o.tokens = SpecialTokens{0, 1, 2, 3};
  return o;
}

// Lengths 16, 11 and 7; two segments in the first two sequences.
inline HostBatch tiny_batch() {
  const int64_t t = 16;
  const int lengths[3] = {16, 11, 7};
  const int first_sep[3] = {8, 5, 6};
  HostBatch batch;
  batch.ids.assign(3 * t, 0);
  batch.segment_ids.assign(3 * t, 0);
  const std::vector<int32_t> words = random_ints(3 * t, 7, 4, 96);
  for (int b = 0; b < 3; ++b) {
    for (int i = 0; i < lengths[b]; ++i) {
      int32_t id = words[b * t + i];
      if (i == 0) id = 1;
      if (i == first_sep[b] || i == lengths[b] - 1) id = 2;
      batch.ids[b * t + i] = id;
      batch.segment_ids[b * t + i] = i > first_sep[b] ? 1 : 0;
    }
  }
  return batch;
}

// Slots per sequence: 4, 3, 1 used; the generator sees [MASK] (3) at all used positions but
// one, which keeps its token; one sample equals its original (not a replacement).
inline FixedCorruption tiny_corruption(const HostBatch& batch) {
  const int64_t t = 16, n = 4;
  FixedCorruption f;
  f.positions = {2, 5, 9, 13, 1, 3, 7, 0, 4, 0, 0, 0};
  f.weights = {1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0};
  f.samples = {10, 20, 30, 40, 50, 60, 70, 0, 80, 0, 0, 0};
  f.generator_ids = batch.ids;
  for (int64_t i = 0; i < 3 * n; ++i) {
    if (f.weights[i] == 0) continue;
    const int64_t at = (i / n) * t + f.positions[i];
    if (i != 5) f.generator_ids[at] = 3;  // slot 5 keeps its original token
  }
  f.samples[1] = batch.ids[0 * t + 5];  // sampled == original: labelled "original"
  return f;
}

}  // namespace electra::test
