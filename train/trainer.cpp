#include "train/trainer.h"

#include <algorithm>
#include <array>

#include "data/unigram_counts.h"
#include "engine/device.h"
#include "engine/timer.h"
#include "kernels/step_scalars.h"
#include "models/metric_rows.h"

namespace electra {

Trainer::Trainer(Context& ctx, Communicator& comm, const PretrainConfig& config,
                 const SpecialTokens& tokens, const data::ShardSet& shards)
    : ctx_(ctx),
      comm_(comm),
      config_(config),
      accumulation_(config.train.accumulation_steps()),
      local_accumulation_(config.train.local_accumulation(comm.size())),
      model_(ctx, config.model, config.pretrainer_options(tokens)),
      optimizer_arena_("optimizer", ctx.device(),
                       Optimizer::state_bytes(model_.store(), config.optimizer.kind)),
      optimizer_(ctx, model_.store(), config.optimizer, optimizer_arena_),
      batches_(shards, config.train.seed),
      metrics_(ctx),
      graphs_(ctx.is_cuda() && config.train.cuda_graph) {
  ELECTRA_USER_CHECK(static_cast<double>(config.train.steps) * accumulation_ < 4294967296.0,
                     "train.steps x accumulation must stay below 2^32 micro-steps");
  if (std::string(comm.backend()) != "single") {
    sync_.emplace(comm, model_.store(),
                  static_cast<size_t>(config.distributed.bucket_mb * 1024 * 1024));
    ready_ = [this](Context& c, ParamSpan span) { sync_->gradients_ready(c, span); };
  }
  // Each rank scales its loss by 1 / A and the all-reduce sums; the micro-step counter starts at
  // micro-batch 0 of the update the optimizer's counter names.
  model_.set_step(ctx, 0, 1.0f / static_cast<float>(accumulation_));
  const size_t values = static_cast<size_t>(model_.input().numel());
  host_batch_.ids.resize(values / 4);
  host_batch_.segment_ids.resize(values / 4);
  for (PinnedBuffer& buffer : pinned_) {
    buffer = PinnedBuffer(values * sizeof(int32_t), ctx.is_cuda());
  }
  state_.seed = config.train.seed;
  state_.config_hash = config_hash(config);
  state_.config_text = canonical_text(config);
  state_.world_size = comm.size();
  state_.local_accumulation = local_accumulation_;
  state_.device = ctx.is_cuda() ? cuda_device_description(ctx.device_index()) : "cpu";
  state_.attention = attention_name(config.model.discriminator.attention);
  state_.fused_layers = config.model.discriminator.fused_layers;
  state_.shards = record_shards(shards);
  if (config.training == Training::kTwoStage) enter_phase(TrainingPhase::kGenerator);
}

void Trainer::enter_phase(TrainingPhase phase) {
  model_.set_phase(phase);
  optimizer_.set_frozen(ctx_, [&](const ParamInfo& p) { return model_.frozen_in(phase, p); });
  updates_in_phase_ = 0;
}

Trainer::~Trainer() {
  ctx_.synchronize();  // no upload may still read a pinned buffer
}

void Trainer::init_weights(const WeightLoader& load) {
  // generator: unigram: counted once per run (identically on every rank); a resume reads the
  // checkpoint's counts instead (load).
  if (model_.options().generator == GeneratorKind::kUnigram) {
    model_.set_unigram_counts(
        ctx_, data::unigram_counts(batches_.shards(), config_.model.discriminator.vocab_size));
  }
  if (load) {
    load(ctx_, model_);
  } else {
    model_.init_weights(ctx_, config_.train.seed);
  }
  // Bit-identical on every rank already; the broadcast makes that independent of the hardware.
  comm_.broadcast(model_.store().flat_params(), 0, ctx_.stream());
  model_.weights().refresh_compute(ctx_);
}

void Trainer::load(const std::string& checkpoint, const TrainerState& saved) {
  load_checkpoint(ctx_, model_, optimizer_, checkpoint);
  optimizer_.set_step(ctx_, saved.step);
  state_.step = saved.step;
  state_.cursor = saved.cursor;
  state_.elapsed_seconds = saved.elapsed_seconds;
  state_.metrics = saved.metrics;
  state_.grad_norm = saved.grad_norm;
  last_read_step_ = saved.step;
  // Saved after the switch: the checkpoint holds the discriminator phase's weights. Saved exactly
  // at the switch (step G): still the generator phase; the next update() switches.
  if (config_.training == Training::kTwoStage && saved.step > config_.generator_steps)
    enter_phase(TrainingPhase::kDiscriminator);
}

void Trainer::feed(data::DataCursor& cursor) {
  const int slot = static_cast<int>(micro_batches_fed_++ % 2);
  const uint64_t examples = static_cast<uint64_t>(config_.train.micro_batch_size);
  batches_.next(examples, cursor, host_batch_.ids, host_batch_.segment_ids);
  uploaded_[slot].wait();  // the upload two micro-batches ago has left this buffer
  int32_t* planes = static_cast<int32_t*>(pinned_[slot].data());
  model_.pack_batch(host_batch_, planes);
  const Tensor& input = model_.input();
  upload(ctx_.stream(), input, Tensor::view_of(planes, Device::CPU, {input.numel()}));
  uploaded_[slot].record(ctx_.stream());
}

void Trainer::run_micro_batch(bool last) {
  if (sync_) sync_->begin_micro_batch(last);
  if (!replaying()) {
    micro_batch(ready_);
    return;
  }
  // The graph holds no collective: the buckets' all-reduce starts after the last micro-batch
  // (docs/ARCHITECTURE.md, "What the CUDA graph covers").
  CudaGraph& graph = micro_graphs_[model_.phase() == TrainingPhase::kDiscriminator ? 1 : 0];
  if (!graph.captured()) graph.capture(ctx_, [this] { micro_batch(nullptr); });
  graph.launch(ctx_);
  if (last && sync_) sync_->gradients_final_from(ctx_, 0);
}

void Trainer::synchronise() {
  if (sync_) sync_->finish(ctx_);
}

void Trainer::step() {
  // The update the optimizer's device counter names, its gradient norm into the metrics.
  auto body = [this] { optimizer_.step(ctx_, metrics_.grad_norm_record()); };
  if (!replaying()) {
    body();
    return;
  }
  if (!optimizer_graph_.captured()) optimizer_graph_.capture(ctx_, body);
  optimizer_graph_.launch(ctx_);
}

bool Trainer::replaying() const {
  return graphs_ && updates_in_phase_ > 0;
}

void Trainer::micro_batch(const GradientsReady& ready) {
  // Micro-batch m of update s on rank r is micro-step s A + r a + m (the top of trainer.h),
  // computed on the device from the optimizer's update counter.
  // The update's masking rate comes from the update counter too (masking.mask_prob_schedule).
  // The per-update metrics start from zero at the first micro-batch (the same launch); the
  // non-finite count runs until it is read.
  const MicroStepPlan plan{.accumulation = accumulation_,
                           .first = comm_.rank() * local_accumulation_,
                           .local = local_accumulation_,
                           .mask_rate = config_.masking.schedule(config_.train.steps)};
  run_op(ctx_, NextMicroStep{.counter = Out(optimizer_.counter()),
                             .plan = plan,
                             .block = Out(model_.step_scalars()),
                             .restart = Out(metrics_.window())});
  const Corruption corruption = model_.corrupt(ctx_);
  const ForwardContext saved = model_.forward(ctx_, corruption);
  model_.backward(ctx_, saved, ready);
  model_.accumulate_metrics(ctx_, corruption, metrics_.values());
}

double Trainer::update() {
  Stopwatch timer;
  // Two-stage: the switch, once, before update G (also when a run resumes at G).
  if (config_.training == Training::kTwoStage && state_.step == config_.generator_steps &&
      model_.phase() == TrainingPhase::kGenerator) {
    model_.init_discriminator_from_generator(ctx_);
    enter_phase(TrainingPhase::kDiscriminator);
  }
  model_.zero_grads(ctx_);
  const uint64_t micro_examples = static_cast<uint64_t>(config_.train.micro_batch_size);
  data::DataCursor cursor = state_.cursor;
  batches_.skip(static_cast<uint64_t>(comm_.rank() * local_accumulation_) * micro_examples, cursor);
  for (int64_t micro = 0; micro < local_accumulation_; ++micro) {
    feed(cursor);
    run_micro_batch(micro == local_accumulation_ - 1);
  }
  synchronise();
  step();
  ++updates_in_phase_;
  batches_.skip(static_cast<uint64_t>(accumulation_) * micro_examples, state_.cursor);
  ++state_.step;
  const double seconds = timer.seconds();
  state_.elapsed_seconds += seconds;
  return seconds;
}

bool Trainer::metrics_due() const {
  return state_.step % config_.log_every == 0 || state_.step == config_.train.steps;
}

UpdateReport Trainer::metrics() {
  std::vector<double> acc = metrics_.read(ctx_);
  if (comm_.size() > 1) {
    std::array<double, kTrainMetrics> values{};
    std::copy(acc.begin(), acc.end(), values.begin());
    comm_.all_reduce_host(values, ReduceOp::kSum);
    acc.assign(values.begin(), values.end());
    acc[kMetricGradNorm] /= comm_.size();  // the same reduced gradient on every rank
  }
  UpdateReport r;
  r.step = state_.step;
  r.metrics = step_metrics(acc);
  r.grad_norm = acc[kMetricGradNorm];
  r.lr = optimizer_.lr_at(std::max<int64_t>(state_.step - 1, 0));
  const int64_t since = last_read_step_;
  last_read_step_ = state_.step;
  if (const int64_t non_finite = non_finite_count(acc); non_finite > 0) {
    throw NonFiniteUpdate(
        str_cat("update ", state_.step, ": the loss or the gradient norm is not finite (generator ",
                r.metrics.gen_loss, ", discriminator ", r.metrics.disc_loss, ", gradient norm ",
                r.grad_norm, "; ", non_finite, " non-finite micro-batches or updates since update ",
                since, "; updates with a non-finite gradient norm were skipped)"));
  }
  state_.metrics = r.metrics;
  state_.grad_norm = r.grad_norm;
  return r;
}

std::string Trainer::save(const data::Vocab* vocab) {
  metrics();
  if (comm_.rank() != 0) return "";
  return save_checkpoint(ctx_, model_, optimizer_, state_, config_.checkpoint.dir,
                         config_.checkpoint.keep, vocab);
}

}  // namespace electra
