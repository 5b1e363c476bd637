// Forward-only discriminator (contract in models/discriminator_inference.h).
#include "models/discriminator_inference.h"

#include <optional>

#include "models/discriminator.h"
#include "models/hf_checkpoint.h"
#include "models/host_transfer.h"

namespace electra {

// The encoder alone, or the whole ElectraForPreTraining (encoder + replaced-token head).
struct DiscriminatorInference::Network {
  Network(ModelBuilder& b, const EncoderConfig& config, int64_t batch, int64_t seq_len,
          bool with_head)
      : tables(b, str_cat(ElectraDiscriminator::kPrefix, "electra."), config) {
    if (with_head) {
      discriminator.emplace(b, config, tables, batch, seq_len);
    } else {
      encoder.emplace(b, str_cat(ElectraDiscriminator::kPrefix, "electra."), config, tables, batch,
                      seq_len, DropoutSites{DropoutSites::kDiscriminatorSiteBase});
    }
    ids = b.activation(DType::I32, {batch, seq_len});
    segment_ids = b.activation(DType::I32, {batch, seq_len});
    mask = b.activation(DType::I32, {batch, seq_len});
  }

  const Encoder& the_encoder() const { return encoder ? *encoder : discriminator->encoder(); }

  EmbeddingTables tables;
  std::optional<Encoder> encoder;
  std::optional<ElectraDiscriminator> discriminator;
  Tensor ids, segment_ids, mask;
};

DiscriminatorInference::DiscriminatorInference(Context& ctx, const EncoderConfig& config,
                                               int64_t batch, int64_t seq_len, bool with_head)
    : config_(config),
      batch_(batch),
      seq_len_(seq_len),
      with_head_(with_head),
      params_("parameters", ctx.device(), 0),
      grads_("gradients", ctx.device(), 0),
      acts_("activations", ctx.device(), 0) {
  config.validate("model");
  ELECTRA_USER_CHECK(batch > 0 && seq_len >= 2, "batch ", batch, " and seq_len ", seq_len,
                     " must be positive (seq_len at least 2)");
  ELECTRA_USER_CHECK(seq_len <= config.max_positions, "--max-seq-len ", seq_len,
                     " exceeds the model's max_position_embeddings ", config.max_positions);
  // No backward runs: the encoder keeps one layer's output gradients, not all layers' (the
  // weight-gradient group, models/encoder.h).
  config_.weight_grad_group = 1;
  const ModelDTypes dtypes = ModelDTypes::for_precision(ctx.precision());
  size_t activation_bytes = 0;
  {
    Arena counting = Arena::counting("activations", ctx.device());
    ModelBuilder planner(weights_, counting, dtypes, ctx.device());
    Network planned(planner, config_, batch, seq_len, with_head);
    activation_bytes = counting.high_water();
  }
  ModelArenas arenas = allocate_model(weights_, dtypes, ctx.device(), activation_bytes);
  params_ = std::move(arenas.params);
  grads_ = std::move(arenas.grads);
  acts_ = std::move(arenas.activations);
  ModelBuilder builder(weights_, acts_, dtypes, ctx.device());
  network_ = std::make_unique<Network>(builder, config_, batch, seq_len, with_head);
  host_mask_.resize(static_cast<size_t>(batch * seq_len));
}

DiscriminatorInference::~DiscriminatorInference() = default;

void DiscriminatorInference::load(Context& ctx, const std::string& model_dir) {
  HfModelLayout layout = discriminator_layout(weights_.store, config_);
  // Encoding reads any ELECTRA directory: the head of a fine-tuned or pre-training checkpoint
  // is not needed then (nor the MLM head of the MLM objectives' checkpoints).
  if (!with_head_) {
    layout.ignored_prefixes = {"discriminator_predictions.",
                               "generator_predictions.",
                               "generator_lm_head.",
                               "classifier.",
                               "qa_outputs.",
                               "answerable_classifier."};
  }
  load_hf_model(ctx, weights_.store, layout, model_dir);
  weights_.refresh_compute(ctx);
}

void DiscriminatorInference::forward(Context& ctx, const std::vector<int32_t>& ids,
                                     const std::vector<int32_t>& segment_ids, int32_t pad_id) {
  const size_t n = host_mask_.size();
  ELECTRA_CHECK(ids.size() == n && segment_ids.size() == n, "DiscriminatorInference: ", ids.size(),
                " ids for a batch of ", n);
  for (size_t i = 0; i < n; ++i) {
    ELECTRA_CHECK(ids[i] >= 0 && ids[i] < config_.vocab_size, "token id ", ids[i],
                  " outside the vocabulary");
    host_mask_[i] = ids[i] != pad_id;
  }
  Network& net = *network_;
  upload_to(ctx, net.ids, ids);
  upload_to(ctx, net.segment_ids, segment_ids);
  upload_to(ctx, net.mask, host_mask_);
  const DropoutPass pass{ctx.rng(RngPurpose::kDropout, 0), false};
  if (net.discriminator) {
    net.discriminator->forward(ctx, pass, net.ids, net.segment_ids, net.mask);
  } else {
    net.encoder->forward(ctx, pass, net.ids, net.segment_ids, net.mask);
  }
}

std::vector<float> DiscriminatorInference::hidden(Context& ctx, int layer) const {
  ELECTRA_CHECK(layer >= 0 && layer <= config_.layers, "layer ", layer, " outside [0, ",
                config_.layers, "]");
  const std::vector<double> values = download_doubles(ctx, network_->the_encoder().hidden(layer));
  return std::vector<float>(values.begin(), values.end());
}

std::vector<float> DiscriminatorInference::logits(Context& ctx) const {
  ELECTRA_CHECK(network_->discriminator.has_value(), "logits() of a model built without the head");
  const std::vector<double> values = download_doubles(ctx, network_->discriminator->logits());
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace electra
