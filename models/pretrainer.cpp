#include "models/pretrainer.h"

#include <algorithm>
#include <cstring>

#include "kernels/masking.h"
#include "kernels/step_scalars.h"
#include "models/host_transfer.h"
#include "models/init.h"
#include "models/metric_rows.h"
#include "models/pretrain_network.h"
#include "models/pretrain_options.h"

namespace electra {

namespace {

// The planning pass: declares the parameters in weights.store and returns the activation bytes.
size_t plan_into(ModelWeights& weights, const ElectraConfig& config, const PretrainOptions& o,
                 int64_t slots, ModelDTypes dtypes, Device device) {
  Arena counting = Arena::counting("activations", device);
  ModelBuilder planner(weights, counting, dtypes, device);
  ElectraPretrainer::Network planned(planner, weights.store, config, o, slots);
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
  check_pretrain_options(config, options);
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
  network_ = std::make_unique<Network>(builder, weights_.store, config_, options_, slots_);
  if (options_.overlap_generator) side_ = std::make_unique<SideStream>(ctx);
  input_ = network_->in.input;
  for (const StageList::Entry& e : network_->phase_list(TrainingPhase::kJoint).entries()) {
    e.stage->upload_constants(ctx);
  }
  step_planes_.resize(static_cast<size_t>(input_.numel()));
  set_step(ctx, 0, 1.0f);
}

ElectraPretrainer::~ElectraPretrainer() = default;

void ElectraPretrainer::set_mask_prob(float p) {
  ELECTRA_CHECK(p > 0 && p <= options_.mask_prob, "set_mask_prob: ", p, " outside (0, ",
                options_.mask_prob, "]");
  mask_prob_ = p;
}

void ElectraPretrainer::set_unigram_counts(Context& ctx, const std::vector<uint64_t>& counts) {
  ELECTRA_CHECK(network_->unigram != nullptr, "set_unigram_counts: not a unigram generator");
  network_->unigram->set_counts(ctx, counts);
}

const std::vector<uint64_t>& ElectraPretrainer::unigram_counts() const {
  static const std::vector<uint64_t> none;
  return network_->unigram ? network_->unigram->counts() : none;
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
  return network_->in.scalars;
}

void ElectraPretrainer::set_step(Context& ctx, uint32_t micro_step, float loss_scale) {
  StepScalars s;
  s.micro_step = micro_step;
  s.loss_scale = loss_scale;
  s.mask_prob = mask_prob_;
  std::vector<int32_t> words(kStepScalarWords);
  std::memcpy(words.data(), &s, sizeof(s));
  upload_to(ctx, network_->in.scalars, words);
}

RngStream ElectraPretrainer::rng(Context& ctx, RngPurpose purpose) const {
  return network_->in.rng(ctx, purpose);
}

Corruption ElectraPretrainer::corrupt(Context& ctx) {
  return network_->masking.corrupt(ctx);
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
  normalise(ctx, c);
  network_->phase_list(phase_).forward(ctx, c, saved);
  saved.labels = network_->discriminator->labels();
  last_corruption_ = c;
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
                              .second = net.in.token_weights,
                              .plan = plan,
                              .block = Out(net.in.scalars)});
}

void ElectraPretrainer::set_phase(TrainingPhase phase) {
  ELECTRA_CHECK(phase == TrainingPhase::kJoint || !network_->phase_list(phase).entries().empty(),
                "set_phase: phase ", phase_name(phase),
                " needs two-stage training with an MLM generator");
  phase_ = phase;
}

bool ElectraPretrainer::frozen_in(TrainingPhase phase, const ParamInfo& param) const {
  return network_->phase_list(phase).frozen(weights_.store, param);
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

void ElectraPretrainer::backward(Context& ctx, const ForwardContext& saved,
                                 const GradientsReady& ready) {
  network_->phase_list(phase_).backward(ctx, saved, ready, side_.get());
}

void ElectraPretrainer::accumulate_metrics(Context& ctx, const Corruption& c, const Tensor& acc) {
  const Network& net = *network_;
  const StageList& list = net.phase_list(phase_);
  const int64_t bn = options_.batch * slots_;
  // Without a generator's loss (mlm, generator: unigram, ...) its rows are empty: its loss and
  // accuracy count 0; without a BCE, no binary part.
  const MeanInputs none{.loss = net.no_loss,
                        .argmax = c.original.reshape({bn}).rows(0, 0),
                        .labels = c.original.reshape({bn}).rows(0, 0),
                        .weights = c.weights.reshape({bn}).rows(0, 0),
                        .counts = Tensor{}};
  const MeanInputs m = list.mean_inputs(c, none);
  // The generator's MLM loss and the discriminator's BCE counts: one micro-batch, one total
  // (MLM + disc_weight BCE) in the rows of models/metric_rows.h.
  run_op(ctx, AccumulateMeans{.loss = m.loss,
                              .argmax = m.argmax,
                              .labels = m.labels,
                              .weights = m.weights,
                              .counts = m.counts,
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
  // The adversary's reward and baseline loss, the MLM objectives' loss.
  list.accumulate_metrics(ctx, c, acc);
}

}  // namespace electra
