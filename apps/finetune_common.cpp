#include "apps/finetune_common.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "models/hf_checkpoint.h"
#include "models/metric_rows.h"
#include "optim/layerwise_lr.h"
#include "train/train_progress.h"
#include "train/trainer_checkpoint.h"

namespace electra::apps {
namespace fs = std::filesystem;

namespace {

bool is_model_dir(const fs::path& p) {
  return fs::exists(p / "config.json") && fs::exists(p / "model.safetensors");
}

}  // namespace

FinetuneOptions model_options(const FinetuneSettings& s, const data::Vocab& vocab) {
  FinetuneOptions options;
  options.batch = s.batch_size;
  options.seq_len = s.max_seq_len;
  options.pad_id = vocab.pad_id();
  options.attention = s.attention;
  return options;
}

std::string attention_note(const FinetuneSettings& s, bool cuda) {
  if (cuda) return str_cat("attention ", attention_name(s.attention), " (finetune.attention)");
  return s.attention == AttentionImpl::kAuto
             ? ""
             : str_cat("finetune.attention ", attention_name(s.attention),
                       " has no effect on the CPU");
}

FinetuneInit resolve_init(const std::string& path) {
  fs::path p(path);
  ELECTRA_USER_CHECK(fs::is_directory(p), path, ": --init must be a model or checkpoint directory");
  if (!is_model_dir(p)) {
    if (!fs::exists(p / "discriminator")) p = resolve_checkpoint(path);
    p /= "discriminator";
    ELECTRA_USER_CHECK(is_model_dir(p), path,
                       ": neither a model directory (config.json + model.safetensors) nor a "
                       "pre-training checkpoint with a discriminator/");
  }
  return FinetuneInit{p.string(), read_hf_config((p / "config.json").string())};
}

FinetuneOptimizer::FinetuneOptimizer(Context& ctx, const ElectraFinetuner& model,
                                     const FinetuneSettings& settings, int64_t total_steps)
    : state("optimizer", ctx.device(),
            Optimizer::state_bytes(model.store(), OptimizerKind::kAdamW)) {
  const EncoderConfig& encoder = model.encoder_config();
  lr = settings.resolved_lr(encoder);
  decay = settings.resolved_decay(encoder);
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdamW;
  config.eps = static_cast<float>(settings.adam_eps);
  config.weight_decay = static_cast<float>(settings.weight_decay);
  config.max_grad_norm = static_cast<float>(settings.max_grad_norm);
  config.schedule.kind = ScheduleKind::kLinear;
  config.schedule.peak = lr;
  config.schedule.total_steps = total_steps;
  config.schedule.warmup_steps =
      static_cast<int64_t>(settings.warmup_fraction * static_cast<double>(total_steps));
  LayerwiseLrDecay layerwise;
  layerwise.decay = decay;
  layerwise.layers = encoder.layers;
  layerwise.official_off_by_one = settings.official_off_by_one;
  layerwise.validate("finetune.layerwise_lr_decay");
  optimizer = std::make_unique<Optimizer>(ctx, model.store(), config, state,
                                          layerwise_lr_multiplier(layerwise));
}

FinetuneEpoch::FinetuneEpoch(Context& ctx, std::string task, int64_t epoch, int64_t epochs,
                             int64_t steps_per_epoch, int64_t total_steps, int64_t log_every)
    : task_(std::move(task)),
      epoch_(epoch),
      epochs_(epochs),
      steps_per_epoch_(steps_per_epoch),
      total_steps_(total_steps),
      log_every_(log_every),
      metrics_(ctx) {}

std::optional<double> FinetuneEpoch::update(Context& ctx, ElectraFinetuner& model,
                                            FinetuneOptimizer& opt, const FinetuneBatch& batch,
                                            int64_t i, int64_t step) {
  model.zero_grads(ctx);
  model.step(ctx, batch, static_cast<uint32_t>(step));
  model.accumulate_loss(ctx, metrics_.values());
  // The update the optimizer's device counter names, its gradient norm into the metrics.
  opt.optimizer->step(ctx, metrics_.grad_norm_record());
  ++updates_since_line_;
  if ((i + 1) % log_every_ != 0 && i + 1 != steps_per_epoch_) return std::nullopt;
  const std::vector<double> acc = metrics_.read(ctx);
  metrics_.restart(ctx);
  if (const int64_t non_finite = non_finite_count(acc); non_finite > 0) {
    throw UserError(str_cat("finetune ", task_, ": update ", step + 1, ": the loss is not finite (",
                            non_finite, " non-finite losses or gradient norms since update ",
                            step + 1 - updates_since_line_,
                            ", whose updates were skipped); lower finetune.lr?"));
  }
  const double loss = acc[kMetricTotalLoss] / static_cast<double>(updates_since_line_);
  updates_since_line_ = 0;
  const double per_step = clock_.seconds() / static_cast<double>(i + 1);
  std::fprintf(
      stderr, "  epoch %lld/%lld update %lld/%lld | loss %.4f | lr %.3e | ETA %s\n",
      static_cast<long long>(epoch_ + 1), static_cast<long long>(epochs_),
      static_cast<long long>(i + 1), static_cast<long long>(steps_per_epoch_), loss,
      opt.optimizer->lr_at(step),
      ProgressReporter::format_duration(per_step * static_cast<double>(total_steps_ - step - 1))
          .c_str());
  return loss;
}

double median(std::vector<double> values) {
  ELECTRA_CHECK(!values.empty(), "median of nothing");
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace electra::apps
