#include "models/pretrainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "kernels/copy_mlm.h"
#include "kernels/disc_head.h"
#include "kernels/gather.h"
#include "kernels/masking.h"
#include "kernels/replace_tokens.h"
#include "kernels/softmax_xent.h"
#include "kernels/step_scalars.h"
#include "kernels/unigram_sample.h"
#include "models/host_transfer.h"
#include "models/init.h"
#include "models/loss_gradient.h"
#include "models/metric_rows.h"

namespace electra {

namespace {

int64_t padded_vocab(int64_t vocab, int64_t multiple) {
  return (vocab + multiple - 1) / multiple * multiple;
}

// The step scalars' loss normalisers (kernels/step_scalars.h) and the losses that read them
// (normalise() computes them).
enum LossScale : int {
  kGenScale = 0,    // loss_scale / masked slots: an MLM loss, a mean over the masked slots
  kDiscScale = 1,   // loss_scale x disc_weight / tokens (electra-15: / masked slots): the BCE
  kTokenScale = 2,  // loss_scale / tokens: all-tokens-mlm's MLM loss, a mean over every token
};

DeviceScalar<float> scale_of(const Tensor& scalars, LossScale k) {
  return DeviceScalar<float>::in(normaliser_at(scalars, k));
}

}  // namespace

std::string sharing_problem(const ElectraConfig& config, Sharing sharing, Objective objective,
                            GeneratorKind generator) {
  if (sharing != Sharing::kAll && sharing != Sharing::kGdes) return "";
  const std::string what = str_cat("sharing: ", sharing_name(sharing));
  if (!objective_wiring(objective).generator) {
    return str_cat(what, " ties the generator to the discriminator, but objective: ",
                   objective_name(objective), " has no generator");
  }
  if (generator == GeneratorKind::kUnigram) {
    return str_cat(what,
                   " ties the generator to the discriminator, but generator: unigram builds no "
                   "generator model");
  }
  if (sharing == Sharing::kGdes) return "";
  const EncoderConfig& d = config.discriminator;
  const EncoderConfig g = config.generator();
  const std::string need = str_cat(what, " needs a generator of the discriminator's size: ");
  if (g.hidden != d.hidden) {
    return str_cat(need, "model.generator_multiplier ", config.generator_multiplier,
                   " gives the generator hidden size ", g.hidden, ", the discriminator's is ",
                   d.hidden, " (set model.generator_multiplier: 1)");
  }
  if (g.heads != d.heads) {
    return str_cat(need, "model.heads is ", d.heads, " but the generator of hidden size ", g.hidden,
                   " has hidden / 64 = ", g.heads, " heads");
  }
  if (g.ffn != d.ffn) {
    return str_cat(need, "model.ffn is ", d.ffn,
                   " but the generator's FFN is 4 x hidden = ", g.ffn);
  }
  return "";
}

// The models and every per-step buffer, built by one ModelBuilder pass.
struct ElectraPretrainer::Network {
  Network(ModelBuilder& b, const ElectraConfig& config, const PretrainOptions& o, int64_t slots)
      : wiring(objective_wiring(o.objective)),
        adversarial(o.generator_training == GeneratorTraining::kAdversarial) {
    const int64_t bt = o.batch * o.seq_len, bn = o.batch * slots;
    const int64_t vocab_rows = padded_vocab(config.discriminator.vocab_size, o.vocab_multiple);
    const std::string disc_prefix = str_cat(ElectraDiscriminator::kPrefix, "electra.");
    const std::string gen_prefix = str_cat(ElectraGenerator::kPrefix, "electra.");
    const bool mlm_generator = wiring.generator && o.generator == GeneratorKind::kMlm;
    if (mlm_generator && o.sharing == Sharing::kGdes) {
      // The generator's tables first, then the discriminator's residuals and LayerNorm.
      generator_tables.emplace(b, gen_prefix, config.generator(), vocab_rows);
      generator_tables_span = ParamSpan{0, b.declared()};
      gdes.emplace(b, disc_prefix, config.discriminator, vocab_rows, *generator_tables);
      tables = gdes->tables();
      tables_span = ParamSpan{generator_tables_span.end, b.declared()};
    } else {
      tables = EmbeddingTables(b, disc_prefix, config.discriminator, vocab_rows);
      tables_span = ParamSpan{0, b.declared()};
      if (mlm_generator && o.sharing == Sharing::kNone) {
        generator_tables.emplace(b, gen_prefix, config.generator(), vocab_rows);
        generator_tables_span = ParamSpan{tables_span.end, b.declared()};
      }
    }
    const bool tie_all = mlm_generator && o.sharing == Sharing::kAll;
    if (mlm_generator && !tie_all) {
      const auto first = b.declared();
      generator.emplace(b, config.generator(), generator_tables ? *generator_tables : tables,
                        o.batch, o.seq_len, slots);
      generator_span = ParamSpan{first, b.declared()};
    }
    const auto discriminator_first = b.declared();
    const int64_t mlm_rows = !wiring.mlm_head ? 0 : wiring.all_tokens ? bt : bn;
    discriminator.emplace(b, config.discriminator, tables, o.batch, o.seq_len,
                          DiscriminatorHeads{wiring.binary_head, mlm_rows});
    discriminator_span = ParamSpan{discriminator_first, b.declared()};
    if (tie_all) {
      // sharing: all: the generator's encoder is the discriminator's (declared just above); only
      // its head is declared here, after the discriminator's.
      b.set_reusing(true);
      generator.emplace(b, config.generator(), tables, o.batch, o.seq_len, slots,
                        ElectraDiscriminator::kPrefix);
      b.set_reusing(false);
    }
    const DType stat = b.dtypes().statistic;
    if (adversarial) {  // b = -log sigmoid(w . h_G + c) per masked slot (kernels/reinforce.h)
      const auto first = b.declared();
      baseline =
          Linear(b, str_cat(ElectraGenerator::kPrefix, ElectraGenerator::kAdversarialBaseline),
                 config.generator().hidden, 1);
      baseline_span = ParamSpan{first, b.declared()};
      baseline_logit = b.activation({bn, 1});
      reinforce_slots = ReinforceSlots{b.activation(stat, {bn}), b.activation(stat, {bn}),
                                       b.activation(stat, {bn}), b.activation(stat, {bn})};
    }
    input = b.activation(DType::I32, {kInputPlanes, o.batch, o.seq_len});
    auto plane = [&](int k, DType dtype) {  // planning: a view without memory
      void* data = input.data == nullptr ? nullptr : input.ptr<int32_t>() + k * bt;
      return Tensor::view_of(data, dtype, input.device, {o.batch, o.seq_len});
    };
    ids = plane(0, DType::I32);
    segment_ids = plane(1, DType::I32);
    mask = plane(2, DType::I32);
    token_weights = plane(3, DType::F32).reshape({bt});
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
    metrics = b.activation(DType::F64, {kTrainMetrics});
    scalars = b.activation(DType::I32, {kStepScalarWords});
    if (mlm_rows > 0) {
      mlm_loss = b.activation(stat, {mlm_rows});
      mlm_samples = b.activation(DType::I32, {mlm_rows});
      mlm_argmax = b.activation(DType::I32, {mlm_rows});
    }
    if (wiring.masked_only) masked_weights = b.activation(DType::F32, {o.batch, o.seq_len, 1});
    if (wiring.all_tokens) all_positions = b.activation(DType::I32, {o.batch, o.seq_len});
    if (wiring.generator && o.generator == GeneratorKind::kUnigram)
      unigram_cdf = b.activation(DType::F64, {config.discriminator.vocab_size});
  }

  static constexpr int kInputPlanes = 4;  // ids, segment ids, mask, token weights

  ObjectiveWiring wiring;
  bool adversarial;  // generator_training: adversarial
  // The discriminator's tables (shared with the generator but for sharing: none and gdes) and
  // their parameters: declared first, or right after the generator's tables with gdes.
  EmbeddingTables tables;
  ParamSpan tables_span;
  std::optional<EmbeddingTables> generator_tables;  // sharing: none (declared right after
                                                    // tables_span) and gdes (declared first)
  ParamSpan generator_tables_span;
  std::optional<GdesTables> gdes;  // sharing: gdes: tables are its sums
  ParamSpan generator_span;        // projection, layers, head (two-stage; not with sharing: all)
  ParamSpan discriminator_span;    // projection, layers, heads
  std::optional<ElectraGenerator> generator;          // not for mlm nor generator: unigram
  std::optional<ElectraDiscriminator> discriminator;  // always: "the" model
  Tensor input, ids, segment_ids, mask, token_weights;
  Tensor generator_ids, positions, original, mlm_weights;
  Tensor gen_loss, samples, argmax;
  Tensor disc_ids, labels, disc_loss, counts, disc_workspace;
  Tensor metrics;
  Tensor scalars;                            // StepScalars (kernels/step_scalars.h)
  Tensor mlm_loss, mlm_samples, mlm_argmax;  // the MLM objectives' loss op outputs
  Tensor masked_weights;                     // electra-15: f32 [B, T, 1], 1 at the masked positions
  Tensor all_positions;                      // all-tokens-mlm: i32 [B, T], 0..T-1 in every row
  Tensor unigram_cdf;                        // generator: unigram: f64 [V] cumulative counts
  Linear baseline;                           // adversarial: generator/adversarial_baseline.*
  ParamSpan baseline_span;                   // declared right after the generator
  Tensor baseline_logit;                     // [B * N, 1]: u, then du (reinforce, in place)
  ReinforceSlots reinforce_slots;            // reward, advantage, log_prob, baseline_loss [B * N]
};

namespace {

// The planning pass: declares the parameters in weights.store and returns the activation bytes.
size_t plan_into(ModelWeights& weights, const ElectraConfig& config, const PretrainOptions& o,
                 int64_t slots, ModelDTypes dtypes, Device device) {
  Arena counting = Arena::counting("activations", device);
  ModelBuilder planner(weights, counting, dtypes, device);
  ElectraPretrainer::Network planned(planner, config, o, slots);
  return counting.high_water();
}

}  // namespace

PretrainMemory ElectraPretrainer::plan_memory(const ElectraConfig& config,
                                              const PretrainOptions& options, Device device,
                                              Precision precision) {
  const int64_t slots =
      std::max(max_predictions(options.mask_prob, static_cast<int>(options.seq_len)), 1);
  const ModelDTypes dtypes = ModelDTypes::for_precision(precision);
  ModelWeights weights;
  PretrainMemory m;
  m.activations = plan_into(weights, config, options, slots, dtypes, device);
  const ParameterStore& store = weights.store;
  m.parameter_count = store.parameter_count();
  m.gradients = store.bytes_needed(dtypes.master);
  m.parameters = m.gradients;
  if (dtypes.activation != dtypes.master) m.parameters += store.bytes_needed(dtypes.activation);
  return m;
}

ElectraPretrainer::ElectraPretrainer(Context& ctx, const ElectraConfig& config,
                                     const PretrainOptions& options)
    : config_(config),
      options_(options),
      slots_(max_predictions(options.mask_prob, static_cast<int>(options.seq_len))),
      mask_prob_(options.mask_prob),
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
  ELECTRA_USER_CHECK(
      options.generator == GeneratorKind::kMlm || objective_wiring(options.objective).generator,
      "generator: unigram: objective ", objective_name(options.objective),
      " has no generator whose samples it could replace");
  ELECTRA_USER_CHECK(
      options.generator_training == GeneratorTraining::kMle ||
          adversarial_applies(options.objective, options.generator),
      "generator_training: adversarial needs the MLM generator and the binary "
      "discriminator (objective electra or electra-15, generator mlm), not objective ",
      objective_name(options.objective), " with generator ",
      generator_kind_name(options.generator));
  ELECTRA_USER_CHECK(
      options.generator_training == GeneratorTraining::kMle || options.temperature == 1.0f,
      "generator_training: adversarial needs masking.temperature 1 (REINFORCE differentiates the "
      "log-probability of the distribution that was sampled), got ",
      options.temperature);
  ELECTRA_USER_CHECK(
      options.training == Training::kJoint ||
          (options.generator_training == GeneratorTraining::kMle &&
           (options.sharing == Sharing::kEmbeddings || options.sharing == Sharing::kNone)),
      "training: two-stage needs generator_training: mle and sharing: embeddings "
      "or none, not ",
      generator_training_name(options.generator_training), " and ", sharing_name(options.sharing));
  const std::string sharing =
      sharing_problem(config, options.sharing, options.objective, options.generator);
  ELECTRA_USER_CHECK(sharing.empty(), "pretrain: ", sharing);
  ELECTRA_CHECK(options.vocab_multiple > 0, "pretrain: vocab_multiple ", options.vocab_multiple);
  slots_ = std::max<int64_t>(slots_, 1);
  const ModelDTypes dtypes = ModelDTypes::for_precision(ctx.precision());
  const Device device = ctx.device();

  // Pass 1: plan parameters and activations without memory.
  const size_t activation_bytes = plan_into(weights_, config_, options_, slots_, dtypes, device);
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
  network_ = std::make_unique<Network>(builder, config_, options_, slots_);
  tables_span_ = network_->tables_span;
  {
    const std::vector<ParamInfo>& params = weights_.store.params();
    const ParamInfo& first = params[tables_span_.first];
    const ParamInfo& last = params[tables_span_.end - 1];
    shared_tables_grad_ =
        weights_.store.flat_grads().rows(first.offset, last.offset + last.padded_numel());
  }
  generator_tables_span_ = network_->generator_tables_span;
  input_ = network_->input;
  if (network_->wiring.all_tokens) {
    std::vector<int32_t> iota(static_cast<size_t>(options_.batch * options_.seq_len));
    for (size_t i = 0; i < iota.size(); ++i) iota[i] = static_cast<int32_t>(i % options_.seq_len);
    upload_to(ctx, network_->all_positions, iota);
  }
  step_planes_.resize(static_cast<size_t>(input_.numel()));
  set_step(ctx, 0, 1.0f);
}

ElectraPretrainer::~ElectraPretrainer() = default;

StepMetrics step_metrics(const std::vector<double>& acc) {
  ELECTRA_CHECK(acc.size() == kTrainMetrics, "step_metrics: ", acc.size(), " values");
  const double n = std::max(acc[kMetricMicroBatches], 1.0);
  StepMetrics m;
  m.gen_loss = acc[kMetricGenLoss] / n;
  m.gen_accuracy = acc[kMetricGenAccuracy] / n;
  m.disc_loss = acc[kMetricDiscLoss] / n;
  m.disc_accuracy = acc[kMetricDiscAccuracy] / n;
  m.disc_precision = acc[kMetricDiscPrecision] / n;
  m.disc_recall = acc[kMetricDiscRecall] / n;
  m.replaced_fraction = acc[kMetricReplaced] / n;
  m.total_loss = acc[kMetricTotalLoss] / n;
  m.mlm_loss = acc[kMetricMlmLoss] / n;
  m.mlm_accuracy = acc[kMetricMlmAccuracy] / n;
  m.reward = acc[kMetricReward] / n;
  m.baseline_loss = acc[kMetricBaselineLoss] / n;
  m.masked = acc[kMetricMasked];  // totals over the micro-steps
  m.tokens = acc[kMetricTokens];
  return m;
}

const ReinforceSlots& ElectraPretrainer::adversarial_slots() const {
  return network_->reinforce_slots;
}

const Tensor& ElectraPretrainer::discriminator_token_loss() const {
  return network_->disc_loss;
}

const Tensor& ElectraPretrainer::labels() const {
  return network_->labels;
}

void ElectraPretrainer::set_mask_prob(float p) {
  ELECTRA_CHECK(p > 0 && p <= options_.mask_prob, "set_mask_prob: ", p, " outside (0, ",
                options_.mask_prob, "]");
  mask_prob_ = p;
}

void ElectraPretrainer::set_unigram_counts(Context& ctx, const std::vector<uint64_t>& counts) {
  ELECTRA_CHECK(network_->unigram_cdf.data != nullptr,
                "set_unigram_counts: not a unigram generator");
  ELECTRA_USER_CHECK(counts.size() == static_cast<size_t>(config_.discriminator.vocab_size),
                     "unigram counts: ", counts.size(), " tokens for a vocabulary of ",
                     config_.discriminator.vocab_size);
  upload_to(ctx, network_->unigram_cdf, unigram_cdf(counts));
  unigram_counts_ = counts;
}

void ElectraPretrainer::init_weights(Context& ctx, uint64_t seed) {
  init_electra_weights(ctx, weights_, seed);
  // sharing: gdes: the discriminator's residual tables start at 0 (E_D = E_G at the start).
  for (const ParamInfo& p : weights_.store.params()) {
    if (is_gdes_residual(p.name)) zero_tensor(ctx.stream(), weights_.store.param(p.name));
  }
}

void ElectraPretrainer::zero_grads(Context& ctx) {
  zero_tensor(ctx.stream(), weights_.store.flat_grads());
}

const Tensor& ElectraPretrainer::step_scalars() const {
  return network_->scalars;
}

void ElectraPretrainer::set_step(Context& ctx, uint32_t micro_step, float loss_scale) {
  StepScalars s;
  s.micro_step = micro_step;
  s.loss_scale = loss_scale;
  s.mask_prob = mask_prob_;
  std::vector<int32_t> words(kStepScalarWords);
  std::memcpy(words.data(), &s, sizeof(s));
  upload_to(ctx, network_->scalars, words);
}

RngStream ElectraPretrainer::rng(Context& ctx, RngPurpose purpose) const {
  RngStream stream = ctx.rng(purpose, 0);
  stream.step_at = micro_step_at(network_->scalars);
  return stream;
}

void ElectraPretrainer::pack_batch(const HostBatch& batch, int32_t* planes) const {
  const int64_t b = options_.batch, t = options_.seq_len;
  const size_t bt = static_cast<size_t>(b * t);
  ELECTRA_USER_CHECK(batch.ids.size() == bt && batch.segment_ids.size() == bt,
                     "pretrain: a batch needs ", b, " x ", t, " = ", bt,
                     " ids and segment ids, got ", batch.ids.size(), " and ",
                     batch.segment_ids.size());
  const int32_t vocab = config_.discriminator.vocab_size;
  const int32_t types = config_.discriminator.type_vocab_size;
  const SpecialTokens& tok = options_.tokens;
  int32_t* ids = planes;
  int32_t* segments = planes + bt;
  int32_t* mask = planes + 2 * bt;
  float* weights = reinterpret_cast<float*>(planes + 3 * bt);
  double masked_slots = 0, tokens = 0;
  for (int64_t s = 0; s < b; ++s) {
    int non_pad = 0, candidates = 0;
    for (int64_t i = 0; i < t; ++i) {
      const size_t at = static_cast<size_t>(s * t + i);
      const int32_t id = batch.ids[at], seg = batch.segment_ids[at];
      ELECTRA_USER_CHECK(id >= 0 && id < vocab, "pretrain: token id ", id, " at (sequence ", s,
                         ", position ", i, ") is outside the vocabulary [0, ", vocab, ")");
      ELECTRA_USER_CHECK(seg >= 0 && seg < types, "pretrain: segment id ", seg, " at (sequence ", s,
                         ", position ", i, ") is outside [0, ", types, ")");
      const bool real = id != tok.pad;
      ids[at] = id;
      segments[at] = seg;
      mask[at] = real;
      weights[at] = real ? 1.0f : 0.0f;
      non_pad += real;
      candidates += real && id != tok.cls && id != tok.sep;
    }
    // The masking op's k for this sequence (kernels/masking.h).
    const int k = std::max(1, masking_target_count(mask_prob_, non_pad));
    masked_slots += static_cast<double>(std::min<int64_t>({slots_, candidates, k}));
    tokens += non_pad;
  }
  // The loss normalisers (computed again on the device, kernels/step_scalars.h) must not be 0.
  ELECTRA_USER_CHECK(tokens > 0, "pretrain: a batch without any non-padding token");
  ELECTRA_USER_CHECK(masked_slots > 0, "pretrain: a batch without any maskable token");
}

Corruption ElectraPretrainer::corrupt(Context& ctx) {
  Network& net = *network_;
  MaskingParams masking;
  masking.pad_id = options_.tokens.pad;
  masking.cls_id = options_.tokens.cls;
  masking.sep_id = options_.tokens.sep;
  masking.mask_id = options_.tokens.mask;
  masking.mask_prob = DeviceScalar<float>::in(mask_prob_at(net.scalars));
  masking.mask_token_prob = options_.mask_token_prob;
  masking.random_token_prob = options_.random_token_prob;
  masking.vocab_size = config_.discriminator.vocab_size;
  masking.stream = rng(ctx, RngPurpose::kMasking);
  run_op(ctx, MaskTokens{.ids = net.ids,
                         .params = masking,
                         .masked_ids = Out(net.generator_ids),
                         .positions = Out(net.positions),
                         .original = Out(net.original),
                         .weights = Out(net.mlm_weights)});
  Corruption c;
  c.generator_ids = net.generator_ids;
  c.positions = net.positions;
  c.original = net.original;
  c.weights = net.mlm_weights;
  return c;
}

const Tensor& ElectraPretrainer::generator_forward(Context& ctx, const Corruption& c,
                                                   const DropoutPass& pass) {
  Network& net = *network_;
  net.generator->forward(ctx, pass, c.generator_ids, net.segment_ids, net.mask, c.positions);
  return net.generator->logits();
}

void ElectraPretrainer::generator_loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  Network& net = *network_;
  const int64_t bn = options_.batch * slots_;
  normalise(ctx, c);
  saved.samples = c.samples.data != nullptr ? c.samples : net.samples;
  if (!net.generator) {  // generator: unigram (no loss; the sample's Philox purpose)
    ELECTRA_CHECK(!unigram_counts_.empty(), "pretrain: generator: unigram without counts");
    run_op(ctx, UnigramSample{.cdf = net.unigram_cdf,
                              .stream = rng(ctx, RngPurpose::kGumbel),
                              .samples = Out(net.samples)});
    return;
  }
  SoftmaxXentParams xent;
  xent.vocab = config_.discriminator.vocab_size;
  xent.temperature = options_.temperature;
  // Adversarial: the unscaled w (p - e_y) that adversarial_loss turns into the policy gradient.
  xent.scale = net.adversarial ? DeviceScalar<float>(1.0f) : scale_of(net.scalars, kGenScale);
  xent.stream = rng(ctx, RngPurpose::kGumbel);
  // The loss writes dz over the logits: that buffer is the generator's gradient.
  const Tensor& dz = net.generator->logits();
  run_op(ctx, SoftmaxXent{.logits = Out(dz),
                          .labels = c.original.reshape({bn}),
                          .weights = c.weights.reshape({bn}),
                          .params = xent,
                          .loss = Out(net.gen_loss),
                          .sample = Out(net.samples),
                          .argmax = Out(net.argmax)});
  saved.dlogits.generator = dz;
}

Tensor ElectraPretrainer::discriminator_forward(Context& ctx, const Corruption& c,
                                                const Tensor& samples, const DropoutPass& pass) {
  Network& net = *network_;
  if (net.gdes) net.gdes->refresh(ctx);  // E_D = sg(E_G) + E_delta with this update's weights
  // Without a generator (mlm) the model reads the masking op's output directly.
  const Tensor* ids = &c.generator_ids;
  if (net.wiring.generator) {
    run_op(ctx, ReplaceTokens{.ids = net.ids,
                              .positions = c.positions,
                              .weights = c.weights,
                              .samples = samples,
                              .replaced = Out(net.disc_ids),
                              .labels = Out(net.labels)});
    ids = &net.disc_ids;
  }
  net.discriminator->forward(ctx, pass, *ids, net.segment_ids, net.mask,
                             net.wiring.all_tokens ? net.all_positions : c.positions);
  if (!net.wiring.binary_head) return Tensor{};
  return net.discriminator->logits().reshape({options_.batch * options_.seq_len});
}

void ElectraPretrainer::discriminator_loss(Context& ctx, const Corruption& c,
                                           ForwardContext& saved) {
  Network& net = *network_;
  const int64_t bt = options_.batch * options_.seq_len;
  const Tensor logits = net.discriminator->logits().reshape({bt});
  // electra-15: the token weights are 1 at the masked positions only (scattered from the slot
  // weights, an empty slot adding 0), and the mean is over the masked positions (normalise).
  Tensor weights = net.token_weights;
  if (net.wiring.masked_only) {
    zero_tensor(ctx.stream(), net.masked_weights);
    run_op(ctx, GatherBackward{.dout = c.weights.reshape({options_.batch * slots_, 1}),
                               .positions = c.positions,
                               .dx = Out(net.masked_weights)});
    weights = net.masked_weights.reshape({bt});
  }
  const DeviceScalar<float> scale = scale_of(net.scalars, kDiscScale);
  // The loss writes dz over the logits: that buffer is the binary head's gradient.
  run_op(ctx, DiscHead{.logits = logits,
                       .labels = net.labels.reshape({bt}),
                       .weights = weights,
                       .scale = scale,
                       .loss = Out(net.disc_loss),
                       .dlogits = Out(logits),
                       .counts = Out(net.counts),
                       .workspace = Out(net.disc_workspace)});
  saved.dlogits.discriminator.binary = logits;
}

void ElectraPretrainer::mlm_loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  Network& net = *network_;
  const int64_t bt = options_.batch * options_.seq_len, bn = options_.batch * slots_;
  const bool all = net.wiring.all_tokens;
  const Tensor labels = all ? net.ids.reshape({bt}) : c.original.reshape({bn});
  const Tensor weights = all ? net.token_weights : c.weights.reshape({bn});
  SoftmaxXentParams xent;
  xent.vocab = config_.discriminator.vocab_size;
  // A mean over the tokens (all-tokens-mlm) or over the masked slots.
  xent.scale = scale_of(net.scalars, all ? kTokenScale : kGenScale);
  xent.stream = rng(ctx, RngPurpose::kGumbel);  // its samples are not used
  // The losses write dz over the logits: those buffers are the heads' gradients.
  const Tensor& logits = net.discriminator->mlm_logits();
  saved.dlogits.discriminator.mlm = logits;
  run_op(ctx, SoftmaxXent{.logits = Out(logits),
                          .labels = labels,
                          .weights = weights,
                          .params = xent,
                          .loss = Out(net.mlm_loss),
                          .sample = Out(net.mlm_samples),
                          .argmax = Out(net.mlm_argmax)});
  if (all) {
    saved.dlogits.discriminator.binary = net.discriminator->logits().reshape({bt});
    run_op(ctx, CopyMlm{.copy_logits = saved.dlogits.discriminator.binary,
                        .inputs = net.disc_ids.reshape({bt}),
                        .labels = labels,
                        .weights = weights,
                        .scale = xent.scale,
                        .xent_loss = Out(net.mlm_loss),
                        .dlogits = Out(logits),
                        .argmax = Out(net.mlm_argmax)});
  }
}

void ElectraPretrainer::adversarial_loss(Context& ctx, const Corruption& c,
                                         const ForwardContext& saved) {
  Network& net = *network_;
  check_loss_gradient(saved.dlogits.generator, net.generator->logits(), "adversarial_loss");
  const int64_t bn = options_.batch * slots_;
  const Tensor& hidden = net.generator->masked_hidden();
  net.baseline.forward(ctx, hidden, net.baseline_logit);
  ReinforceParams params;
  params.vocab = config_.discriminator.vocab_size;
  params.scale = scale_of(net.scalars, kGenScale);
  const Tensor u = net.baseline_logit.reshape({bn});
  run_op(ctx, Reinforce{.dlogits = Out(saved.dlogits.generator),
                        .labels = c.original.reshape({bn}),
                        .samples = saved.samples,
                        .weights = c.weights.reshape({bn}),
                        .token_loss = net.disc_loss,
                        .positions = c.positions,
                        .baseline = u,
                        .params = params,
                        .baseline_grad = Out(u),
                        .out = net.reinforce_slots});
}

ForwardContext ElectraPretrainer::forward(Context& ctx, const Corruption& c, uint32_t micro_step,
                                          float loss_scale) {
  set_step(ctx, micro_step, loss_scale);
  return forward(ctx, c);
}

ForwardContext ElectraPretrainer::forward(Context& ctx, const Corruption& c) {
  const int64_t b = options_.batch, t = options_.seq_len, n = slots_;
  ELECTRA_CHECK(c.generator_ids.numel() == b * t && c.positions.numel() == b * n &&
                    c.original.numel() == b * n && c.weights.numel() == b * n &&
                    (c.samples.data == nullptr || c.samples.numel() == b * n),
                "pretrain: corruption sizes do not match B = ", b, ", T = ", t, ", N = ", n);
  weights_.refresh_compute(ctx);
  ForwardContext saved;
  saved.pass = DropoutPass{rng(ctx, RngPurpose::kDropout), true};
  const ObjectiveWiring& w = network_->wiring;
  if (w.generator) {
    if (network_->generator) generator_forward(ctx, c, saved.pass);
    generator_loss(ctx, c, saved);
  } else {
    normalise(ctx, c);
  }
  saved.labels = network_->labels;
  last_corruption_ = c;
  last_forward_ = saved;
  if (phase_ == TrainingPhase::kGenerator) {  // two-stage, stage 1: no discriminator
    zero_tensor(ctx.stream(), network_->counts);
    return saved;
  }
  discriminator_forward(ctx, c, saved.samples, saved.pass);
  // The binary head is trained with the BCE unless it is the copy head (all-tokens-mlm, whose
  // gradient mlm_loss writes); without the BCE its counts stay 0 (no discriminator metrics).
  if (w.binary_head && !w.all_tokens) {
    discriminator_loss(ctx, c, saved);
  } else {
    zero_tensor(ctx.stream(), network_->counts);
  }
  if (w.mlm_head) mlm_loss(ctx, c, saved);
  if (network_->adversarial) adversarial_loss(ctx, c, saved);
  last_forward_ = saved;
  return saved;
}

void ElectraPretrainer::normalise(Context& ctx, const Corruption& c) {
  const Network& net = *network_;
  // Over the slot weights (first) or the token weights (second), in LossScale's order; the BCE
  // is a mean over the masked slots with electra-15.
  using Over = LossNormaliser::Over;
  const LossNormaliserPlan plan = {
      LossNormaliser{.over = Over::kFirst, .factor = 1.0f},
      LossNormaliser{.over = net.wiring.masked_only ? Over::kFirst : Over::kSecond,
                     .factor = options_.disc_weight},
      LossNormaliser{.over = Over::kSecond, .factor = 1.0f}};
  run_op(ctx, LossNormalisers{.first = c.weights.reshape({options_.batch * slots_}),
                              .second = net.token_weights,
                              .plan = plan,
                              .block = Out(net.scalars)});
}

void ElectraPretrainer::set_phase(TrainingPhase phase) {
  ELECTRA_CHECK(phase == TrainingPhase::kJoint ||
                    (options_.training == Training::kTwoStage && network_->generator.has_value()),
                "set_phase: phase ", phase_name(phase),
                " needs two-stage training with an MLM generator");
  phase_ = phase;
}

bool ElectraPretrainer::frozen_in(TrainingPhase phase, const ParamInfo& param) const {
  const std::vector<ParamInfo>& params = weights_.store.params();
  auto in = [&](ParamSpan span) {
    if (span.empty()) return false;
    const ParamInfo& first = params[span.first];
    const ParamInfo& last = params[span.end - 1];
    return param.offset >= first.offset && param.offset < last.offset + last.numel;
  };
  const bool own_tables = options_.sharing == Sharing::kNone;
  switch (phase) {
    case TrainingPhase::kJoint:
      return false;
    case TrainingPhase::kGenerator:
      return in(network_->discriminator_span) || (own_tables && in(tables_span_));
    case TrainingPhase::kDiscriminator:  // shared tables are the generator's too: frozen
      return in(network_->generator_span) || in(generator_tables_span_) ||
             (!own_tables && in(tables_span_));
  }
  return false;
}

void ElectraPretrainer::init_discriminator_from_generator(Context& ctx) {
  const ParameterStore& store = weights_.store;
  const std::string from = str_cat(ElectraGenerator::kPrefix, "electra.");
  const std::string to = str_cat(ElectraDiscriminator::kPrefix, "electra.");
  int copied = 0;
  for (const ParamInfo& p : store.params()) {
    if (p.name.rfind(from, 0) != 0) continue;
    const std::string target = to + p.name.substr(from.size());
    ELECTRA_CHECK(store.contains(target), "two-stage: the discriminator has no ", target, " for ",
                  p.name);
    const Tensor dst = store.padded_param(target);
    const Tensor src = store.padded_param(p.name);
    ELECTRA_CHECK(dst.shape == src.shape, "two-stage: ", target, " ", dst.str(), " cannot take ",
                  p.name, " ", src.str());
    copy_tensor(ctx.stream(), dst, src);
    ++copied;
  }
  ELECTRA_CHECK(copied > 0, "two-stage: no generator encoder parameter to copy");
  weights_.refresh_compute(ctx);
}

void ElectraPretrainer::report_tables(Context& ctx, const GradientsReady& ready) const {
  if (!ready) return;
  // The tables come first in the buffer: the later-declared span is reported first (gdes declares
  // the generator's tables before the discriminator's, none after).
  const bool generator_first = generator_tables_span_.first < tables_span_.first;
  const ParamSpan& later = generator_first ? tables_span_ : generator_tables_span_;
  const ParamSpan& earlier = generator_first ? generator_tables_span_ : tables_span_;
  if (!later.empty()) ready(ctx, later);
  ready(ctx, earlier);
}

void ElectraPretrainer::backward(Context& ctx, const ForwardContext& saved,
                                 const GradientsReady& ready) {
  Network& net = *network_;
  if (net.adversarial) {  // declared last, so reported first; no gradient into the generator's
                          // encoder (stop-gradient)
    net.baseline.backward(ctx, net.generator->masked_hidden(), net.baseline_logit, Tensor{});
    if (ready) ready(ctx, net.baseline_span);
  }
  if (options_.sharing == Sharing::kAll && net.generator) {
    // sharing: all: the generator's head is declared after the discriminator and reported
    // before it; its backward adds into the tied encoder's gradients, which the
    // discriminator's backward then completes and reports, layer by layer. (Not two-stage.)
    net.generator->backward(ctx, saved.pass, saved.dlogits.generator, ready);
    net.discriminator->backward(ctx, saved.pass, saved.dlogits.discriminator, ready);
    report_tables(ctx, ready);
    return;
  }
  // Two-stage: a model the stage does not run reports its whole span: its gradients stay 0.
  if (phase_ != TrainingPhase::kGenerator) {
    net.discriminator->backward(ctx, saved.pass, saved.dlogits.discriminator, ready);
    // Stage 2 with shared tables: they are the frozen generator's; the discriminator's gradient
    // into them is dropped (frozen gradients are 0, and they stay out of the norm).
    if (phase_ == TrainingPhase::kDiscriminator && options_.sharing == Sharing::kEmbeddings)
      zero_tensor(ctx.stream(), shared_tables_grad_);
  } else if (ready) {
    ready(ctx, net.discriminator_span);
  }
  if (net.generator && phase_ != TrainingPhase::kDiscriminator) {
    net.generator->backward(ctx, saved.pass, saved.dlogits.generator, ready);
  } else if (ready && net.generator) {
    ready(ctx, net.generator_span);
  }
  report_tables(ctx, ready);
}

void ElectraPretrainer::accumulate_metrics(Context& ctx, const Corruption& c, const Tensor& acc) {
  const Network& net = *network_;
  const int64_t bt = options_.batch * options_.seq_len, bn = options_.batch * slots_;
  // Without an MLM generator (mlm, generator: unigram) its rows are empty: its loss and accuracy
  // count 0.
  const int64_t gen_rows = net.generator ? bn : 0;
  // The generator's MLM loss and the discriminator's BCE counts: one micro-batch, one total
  // (MLM + disc_weight BCE) in the rows of models/metric_rows.h.
  run_op(ctx, AccumulateMeans{.loss = net.gen_loss.rows(0, gen_rows),
                              .argmax = net.argmax.rows(0, gen_rows),
                              .labels = c.original.reshape({bn}).rows(0, gen_rows),
                              .weights = c.weights.reshape({bn}).rows(0, gen_rows),
                              .counts = net.counts,
                              .means = {.mean = kMetricGenLoss,
                                        .accuracy = kMetricGenAccuracy,
                                        .weight = kMetricMasked},
                              .binary = {.loss = kMetricDiscLoss,
                                         .accuracy = kMetricDiscAccuracy,
                                         .precision = kMetricDiscPrecision,
                                         .recall = kMetricDiscRecall,
                                         .positive_rate = kMetricReplaced,
                                         .weight = kMetricTokens},
                              .binary_factor = options_.disc_weight,
                              .total = {.total = kMetricTotalLoss,
                                        .count = kMetricMicroBatches,
                                        .non_finite = kMetricNonFinite},
                              .acc = Out(acc)});
  if (net.adversarial) {  // the samples' mean reward and the baseline's loss (trained)
    run_op(ctx, AccumulateValueMeans{.value = net.reinforce_slots.reward,
                                     .loss = net.reinforce_slots.baseline_loss,
                                     .weights = c.weights.reshape({bn}),
                                     .rows = {.value = kMetricReward, .loss = kMetricBaselineLoss},
                                     .total = kLossTermRows,
                                     .acc = Out(acc)});
  }
  if (!net.wiring.mlm_head) return;
  // The discriminator-sized model's MLM loss: at every token (all-tokens-mlm) or at the slots.
  const bool all = net.wiring.all_tokens;
  run_op(ctx,
         AccumulateMeans{
             .loss = net.mlm_loss,
             .argmax = net.mlm_argmax,
             .labels = all ? net.ids.reshape({bt}) : c.original.reshape({bn}),
             .weights = all ? net.token_weights : c.weights.reshape({bn}),
             .counts = Tensor{},
             .means = {.mean = kMetricMlmLoss, .accuracy = kMetricMlmAccuracy, .weight = kNoRow},
             .binary = {},
             .binary_factor = 0,
             .total = kLossTermRows,
             .acc = Out(acc)});
}

void ElectraPretrainer::step(Context& ctx, const HostBatch& batch, uint32_t micro_step,
                             float loss_scale, const GradientsReady& ready) {
  pack_batch(batch, step_planes_.data());
  upload_to(ctx, input_, step_planes_);
  set_step(ctx, micro_step, loss_scale);
  const Corruption corruption = corrupt(ctx);
  backward(ctx, forward(ctx, corruption), ready);
}

StepMetrics ElectraPretrainer::metrics(Context& ctx, const Corruption& corruption) {
  const Tensor& acc = network_->metrics;
  zero_tensor(ctx.stream(), acc);
  accumulate_metrics(ctx, corruption, acc);
  return step_metrics(download_as<double>(ctx, acc));
}

}  // namespace electra
