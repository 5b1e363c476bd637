#include "models/pretrainer.h"

#include <algorithm>
#include <cmath>

#include "kernels/disc_head.h"
#include "kernels/masking.h"
#include "kernels/replace_tokens.h"
#include "kernels/softmax_xent.h"
#include "models/host_transfer.h"
#include "models/init.h"

namespace electra {

namespace {

int64_t padded_vocab(int64_t vocab, int64_t multiple) {
  return (vocab + multiple - 1) / multiple * multiple;
}

}  // namespace

// The models and every per-step buffer, built by one ModelBuilder pass.
struct ElectraPretrainer::Parts {
  Parts(ModelBuilder& b, const ElectraConfig& config, const PretrainOptions& o, int64_t slots)
      : tables(b, str_cat(ElectraDiscriminator::kPrefix, "electra."), config.discriminator,
               padded_vocab(config.discriminator.vocab_size, o.vocab_multiple)),
        generator(b, config.generator(), tables, o.batch, o.seq_len, slots),
        discriminator(b, config.discriminator, tables, o.batch, o.seq_len) {
    const int64_t bt = o.batch * o.seq_len, bn = o.batch * slots;
    const DType stat = b.dtypes().statistic;
    ids = b.activation(DType::I32, {o.batch, o.seq_len});
    segment_ids = b.activation(DType::I32, {o.batch, o.seq_len});
    mask = b.activation(DType::I32, {o.batch, o.seq_len});
    token_weights = b.activation(DType::F32, {bt});
    generator_ids = b.activation(DType::I32, {o.batch, o.seq_len});
    positions = b.activation(DType::I32, {o.batch, slots});
    original = b.activation(DType::I32, {o.batch, slots});
    mlm_weights = b.activation(DType::F32, {o.batch, slots});
    gen_loss = b.activation(stat, {bn});
    samples = b.activation(DType::I32, {bn});
    argmax = b.activation(DType::I32, {bn});
    disc_ids = b.activation(DType::I32, {o.batch, o.seq_len});
    labels = b.activation(DType::I32, {o.batch, o.seq_len});
    disc_loss = b.activation(stat, {bt});
    counts = b.activation(stat, {kDiscCounts});
    disc_workspace = b.activation(DType::F32, {disc_head_workspace_size(bt)});
  }

  EmbeddingTables tables;
  ElectraGenerator generator;
  ElectraDiscriminator discriminator;
  Tensor ids, segment_ids, mask, token_weights;
  Tensor generator_ids, positions, original, mlm_weights;
  Tensor gen_loss, samples, argmax;
  Tensor disc_ids, labels, disc_loss, counts, disc_workspace;
};

ElectraPretrainer::ElectraPretrainer(Context& ctx, const ElectraConfig& config,
                                     const PretrainOptions& options)
    : config_(config),
      options_(options),
      slots_(max_predictions(options.mask_prob, static_cast<int>(options.seq_len))),
      params_("parameters", ctx.device(), 0),
      grads_("gradients", ctx.device(), 0),
      acts_("activations", ctx.device(), 0) {
  config.discriminator.validate("model");
  config.generator().validate("model (generator)");
  ELECTRA_USER_CHECK(options.batch > 0 && options.seq_len > 1, "pretrain: batch ", options.batch,
                     " and seq_len ", options.seq_len, " must be positive");
  ELECTRA_USER_CHECK(options.seq_len <= config.discriminator.max_positions, "pretrain: seq_len ",
                     options.seq_len, " exceeds model.max_positions ",
                     config.discriminator.max_positions);
  ELECTRA_USER_CHECK(options.seq_len <= kMaskingMaxSeqLen, "pretrain: seq_len ", options.seq_len,
                     " exceeds ", kMaskingMaxSeqLen);
  ELECTRA_CHECK(options.vocab_multiple > 0, "pretrain: vocab_multiple ", options.vocab_multiple);
  slots_ = std::max<int64_t>(slots_, 1);
  const ModelDTypes dtypes = ModelDTypes::for_precision(ctx.precision());
  const Device device = ctx.device();

  // Pass 1: plan parameters and activations without memory.
  size_t activation_bytes = 0;
  {
    Arena counting = Arena::counting("activations", device);
    ModelBuilder planner(weights_, counting, dtypes, device);
    Parts planned(planner, config_, options_, slots_);
    if (options_.keep_logits) {
      counting.alloc(dtypes.activation, {options_.batch * slots_, config.discriminator.vocab_size});
      counting.alloc(dtypes.activation, {options_.batch * options_.seq_len});
    }
    activation_bytes = counting.high_water();
  }
  // Pass 2: allocate, then bind the same layout to real memory.
  ModelArenas arenas = allocate_model(weights_, dtypes, device, activation_bytes);
  params_ = std::move(arenas.params);
  grads_ = std::move(arenas.grads);
  acts_ = std::move(arenas.activations);
  // The padding rows of the word table and the output bias must be zero (and stay zero: nothing
  // writes them; init_weights and checkpoint loads write the parameters only).
  zero_tensor(ctx.stream(), weights_.store.flat_params());
  zero_tensor(ctx.stream(), weights_.store.flat_grads());
  ModelBuilder builder(weights_, acts_, dtypes, device);
  parts_ = std::make_unique<Parts>(builder, config_, options_, slots_);
  if (options_.keep_logits) {
    kept_gen_logits_ =
        acts_.alloc(dtypes.activation, {options_.batch * slots_, config.discriminator.vocab_size});
    kept_disc_logits_ = acts_.alloc(dtypes.activation, {options_.batch * options_.seq_len});
  }
  plan_gradient_frontiers();
  const size_t bt = static_cast<size_t>(options_.batch * options_.seq_len);
  host_mask_.resize(bt);
  host_token_weights_.resize(bt);
  host_original_.resize(static_cast<size_t>(options_.batch * slots_));
}

ElectraPretrainer::~ElectraPretrainer() = default;

namespace {

// The smallest offset from which every parameter's name starts with one of `prefixes` (the
// buffer's end when the last parameter's does not).
int64_t final_from(const ParameterStore& store, const std::vector<std::string>& prefixes) {
  int64_t from = store.total_elements();
  const std::vector<ParamInfo>& params = store.params();
  for (size_t i = params.size(); i-- > 0;) {
    const std::string& name = params[i].name;
    const bool final = std::any_of(prefixes.begin(), prefixes.end(),
                                   [&](const std::string& p) { return name.rfind(p, 0) == 0; });
    if (!final) break;
    from = params[i].offset;
  }
  return from;
}

}  // namespace

void ElectraPretrainer::plan_gradient_frontiers() {
  // What each model's backward has finished when its encoder reports a layer: the head, the
  // layers from there to the last, and after the embeddings the projection. The shared tables
  // ("discriminator/electra.embeddings.") are never in these lists: they are final only after
  // the generator's backward, which reports 0. Computing the frontiers from the names keeps them
  // correct if the declaration order changes (a frontier then just moves less far).
  std::vector<std::string> done;
  auto plan = [&](const std::string& model, int layers, std::vector<int64_t>& frontiers) {
    frontiers.assign(static_cast<size_t>(layers) + 1, 0);
    for (int l = layers - 1; l >= 0; --l) {
      done.push_back(str_cat(model, "electra.encoder.layer.", l, "."));
      frontiers[l] = final_from(weights_.store, done);
    }
    done.push_back(model + "electra.embeddings_project.");
    frontiers[layers] = final_from(weights_.store, done);
  };
  done = {str_cat(ElectraDiscriminator::kPrefix, "discriminator_predictions.")};
  plan(ElectraDiscriminator::kPrefix, config_.discriminator.layers, discriminator_frontiers_);
  done.push_back(str_cat(ElectraGenerator::kPrefix, "generator_predictions."));
  done.push_back(str_cat(ElectraGenerator::kPrefix, "generator_lm_head."));
  plan(ElectraGenerator::kPrefix, config_.generator().layers, generator_frontiers_);

  auto report = [this](const std::vector<int64_t>& frontiers) {
    return [this, &frontiers](Context& ctx, int layer) {
      if (gradient_hook_) {
        gradient_hook_(ctx, layer >= 0 ? frontiers[static_cast<size_t>(layer)] : frontiers.back());
      }
    };
  };
  parts_->discriminator.encoder().set_backward_hook(report(discriminator_frontiers_));
  parts_->generator.encoder().set_backward_hook(report(generator_frontiers_));
}

const Tensor& ElectraPretrainer::labels() const {
  return parts_->labels;
}

void ElectraPretrainer::init_weights(Context& ctx, uint64_t seed) {
  init_electra_weights(ctx, weights_, seed);
}

void ElectraPretrainer::zero_grads(Context& ctx) {
  zero_tensor(ctx.stream(), weights_.store.flat_grads());
}

void ElectraPretrainer::stage_batch(Context& ctx, const HostBatch& batch) {
  const int64_t b = options_.batch, t = options_.seq_len;
  const size_t bt = static_cast<size_t>(b * t);
  ELECTRA_USER_CHECK(batch.ids.size() == bt && batch.segment_ids.size() == bt,
                     "pretrain: a batch needs ", b, " x ", t, " = ", bt,
                     " ids and segment ids, got ", batch.ids.size(), " and ",
                     batch.segment_ids.size());
  const int32_t vocab = config_.discriminator.vocab_size;
  const int32_t types = config_.discriminator.type_vocab_size;
  tokens_ = 0;
  for (size_t i = 0; i < bt; ++i) {
    const int32_t id = batch.ids[i], seg = batch.segment_ids[i];
    ELECTRA_USER_CHECK(id >= 0 && id < vocab, "pretrain: token id ", id, " at (sequence ",
                       i / options_.seq_len, ", position ", i % options_.seq_len,
                       ") is outside the vocabulary [0, ", vocab, ")");
    ELECTRA_USER_CHECK(seg >= 0 && seg < types, "pretrain: segment id ", seg, " at (sequence ",
                       i / options_.seq_len, ", position ", i % options_.seq_len,
                       ") is outside [0, ", types, ")");
    const bool real = id != options_.tokens.pad;
    host_mask_[i] = real;
    host_token_weights_[i] = real ? 1.0f : 0.0f;
    tokens_ += real;
  }
  ELECTRA_USER_CHECK(tokens_ > 0, "pretrain: a batch without any non-padding token");
  upload_to(ctx, parts_->ids, batch.ids);
  upload_to(ctx, parts_->segment_ids, batch.segment_ids);
  upload_to(ctx, parts_->mask, host_mask_);
  upload_to(ctx, parts_->token_weights, host_token_weights_);
}

double ElectraPretrainer::planned_masked_slots(const HostBatch& batch) const {
  // The masking op's k per sequence (kernels/masking.h), computed on the host so that the loss
  // scale needs no device-to-host copy.
  const SpecialTokens& tok = options_.tokens;
  const int64_t t = options_.seq_len;
  double total = 0;
  for (int64_t b = 0; b < options_.batch; ++b) {
    int non_pad = 0, candidates = 0;
    for (int64_t i = 0; i < t; ++i) {
      const int32_t id = batch.ids[static_cast<size_t>(b * t + i)];
      non_pad += id != tok.pad;
      candidates += id != tok.pad && id != tok.cls && id != tok.sep;
    }
    const int k = std::max(1, masking_target_count(options_.mask_prob, non_pad));
    total += std::min<int64_t>({slots_, candidates, k});
  }
  return total;
}

void ElectraPretrainer::step(Context& ctx, const HostBatch& batch, uint32_t micro_step,
                             float loss_scale) {
  run(ctx, batch, nullptr, micro_step, loss_scale);
}

void ElectraPretrainer::step_fixed(Context& ctx, const HostBatch& batch,
                                   const FixedCorruption& fixed, uint32_t micro_step,
                                   float loss_scale) {
  run(ctx, batch, &fixed, micro_step, loss_scale);
}

void ElectraPretrainer::run(Context& ctx, const HostBatch& batch, const FixedCorruption* fixed,
                            uint32_t micro_step, float loss_scale) {
  Parts& p = *parts_;
  const int64_t b = options_.batch, t = options_.seq_len, n = slots_;
  stage_batch(ctx, batch);
  weights_.refresh_compute(ctx);
  const Pass pass{ctx.rng(RngPurpose::kDropout, micro_step), true};

  if (fixed == nullptr) {
    MaskingParams masking;
    masking.pad_id = options_.tokens.pad;
    masking.cls_id = options_.tokens.cls;
    masking.sep_id = options_.tokens.sep;
    masking.mask_id = options_.tokens.mask;
    masking.mask_prob = options_.mask_prob;
    masking.mask_token_prob = options_.mask_token_prob;
    masking.stream = ctx.rng(RngPurpose::kMasking, micro_step);
    mask_tokens(ctx, p.ids, masking, p.generator_ids, p.positions, p.original, p.mlm_weights);
    masked_slots_ = planned_masked_slots(batch);
  } else {
    ELECTRA_CHECK(fixed->generator_ids.size() == static_cast<size_t>(b * t) &&
                      fixed->positions.size() == static_cast<size_t>(b * n) &&
                      fixed->weights.size() == static_cast<size_t>(b * n) &&
                      fixed->samples.size() == static_cast<size_t>(b * n),
                  "step_fixed: corruption sizes do not match B = ", b, ", T = ", t, ", N = ", n);
    masked_slots_ = 0;
    for (int64_t i = 0; i < b * n; ++i) {
      const int32_t pos = fixed->positions[i];
      ELECTRA_CHECK(pos >= 0 && pos < t, "step_fixed: position ", pos, " at slot ", i);
      host_original_[i] = batch.ids[(i / n) * t + pos];
      masked_slots_ += fixed->weights[i];
    }
    upload_to(ctx, p.generator_ids, fixed->generator_ids);
    upload_to(ctx, p.positions, fixed->positions);
    upload_to(ctx, p.original, host_original_);
    upload_to(ctx, p.mlm_weights, fixed->weights);
  }
  ELECTRA_USER_CHECK(masked_slots_ > 0, "pretrain: a batch without any maskable token");

  p.generator.forward(ctx, pass, p.generator_ids, p.segment_ids, p.mask, p.positions);
  if (options_.keep_logits) keep_generator_logits(ctx);
  SoftmaxXentParams xent;
  xent.vocab = config_.discriminator.vocab_size;
  xent.temperature = options_.temperature;
  xent.scale = static_cast<float>(loss_scale / masked_slots_);
  xent.stream = ctx.rng(RngPurpose::kGumbel, micro_step);
  softmax_xent(ctx, p.generator.logits(), p.original.reshape({b * n}),
               p.mlm_weights.reshape({b * n}), xent, p.gen_loss, p.samples, p.argmax);
  if (fixed != nullptr) upload_to(ctx, p.samples, fixed->samples);
  replace_tokens(ctx, p.ids, p.positions, p.mlm_weights, p.samples, p.disc_ids, p.labels);

  p.discriminator.forward(ctx, pass, p.disc_ids, p.segment_ids, p.mask);
  const Tensor disc_logits = p.discriminator.logits().reshape({b * t});
  if (options_.keep_logits) copy_tensor(ctx.stream(), kept_disc_logits_, disc_logits);
  const float disc_scale = static_cast<float>(loss_scale * options_.disc_weight / tokens_);
  disc_head(ctx, disc_logits, p.labels.reshape({b * t}), p.token_weights, disc_scale, p.disc_loss,
            disc_logits, p.counts, p.disc_workspace);

  p.discriminator.backward(ctx, pass);
  p.generator.backward(ctx, pass);
  if (gradient_hook_) gradient_hook_(ctx, 0);
}

void ElectraPretrainer::keep_generator_logits(Context& ctx) {
  // Row by row without the padding columns (a test option: one synchronising copy per row).
  const Tensor& logits = parts_->generator.logits();
  const int64_t v = kept_gen_logits_.dim(1);
  for (int64_t r = 0; r < logits.dim(0); ++r) {
    copy_tensor(ctx.stream(), kept_gen_logits_.rows(r, r + 1),
                Tensor::view_of(logits.rows(r, r + 1).data, logits.dtype, logits.device, {1, v}));
  }
}

FixedCorruption ElectraPretrainer::corruption(Context& ctx) const {
  const Parts& p = *parts_;
  FixedCorruption f;
  f.generator_ids = download_as<int32_t>(ctx, p.generator_ids);
  f.positions = download_as<int32_t>(ctx, p.positions);
  f.weights = download_as<float>(ctx, p.mlm_weights);
  f.samples = download_as<int32_t>(ctx, p.samples);
  return f;
}

StepMetrics ElectraPretrainer::metrics(Context& ctx) const {
  const Parts& p = *parts_;
  const std::vector<double> loss = download_doubles(ctx, p.gen_loss);
  const std::vector<double> counts = download_doubles(ctx, p.counts);
  const std::vector<int32_t> argmax = download_as<int32_t>(ctx, p.argmax);
  const std::vector<int32_t> original = download_as<int32_t>(ctx, p.original);
  const std::vector<float> weights = download_as<float>(ctx, p.mlm_weights);
  StepMetrics m;
  double loss_sum = 0, correct = 0, weight = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    loss_sum += loss[i];
    weight += weights[i];
    correct += weights[i] * (argmax[i] == original[i]);
  }
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  m.masked = weight;
  m.tokens = counts[kDiscWeight];
  m.gen_loss = ratio(loss_sum, weight);
  m.gen_accuracy = ratio(correct, weight);
  m.disc_loss = ratio(counts[kDiscLoss], counts[kDiscWeight]);
  m.disc_accuracy = ratio(counts[kDiscCorrect], counts[kDiscWeight]);
  m.disc_precision = ratio(counts[kDiscTruePositive], counts[kDiscPredictedPositive]);
  m.disc_recall = ratio(counts[kDiscTruePositive], counts[kDiscActualPositive]);
  m.replaced_fraction = ratio(counts[kDiscActualPositive], counts[kDiscWeight]);
  m.total_loss = m.gen_loss + options_.disc_weight * m.disc_loss;
  return m;
}

}  // namespace electra
