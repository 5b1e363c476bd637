// electra pretrain: ELECTRA pre-training (replaced token detection) from a YAML config, with
// progress, metrics.jsonl, periodic atomic checkpoints with retention, exact resume, SIGINT /
// SIGTERM handling (checkpoint, exit 0) and a NaN/Inf guard (stop without saving).
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/command.h"
#include "apps/pretrain_config.h"
#include "apps/train_progress.h"
#include "apps/trainer_checkpoint.h"
#include "data/pretrain_batches.h"
#include "data/vocab.h"
#include "engine/timer.h"
#include "models/flops.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: electra pretrain --config FILE [--set section.key=value]... [--resume DIR]\n"
    "                        [--stop-after N]\n"
    "  --config      YAML run configuration (configs/electra-{tiny,small,base,large}.yaml)\n"
    "  --set         override one key of the config (repeatable), e.g. --set train.steps=1000\n"
    "  --resume      continue from a checkpoint directory, or from the newest checkpoint of a\n"
    "                run directory (the config must be the one the checkpoint was written with)\n"
    "  --stop-after  stop (with a checkpoint) after N updates of this invocation\n"
    "Runs on the GPU when one is present and the binary was built with CUDA (train.device:\n"
    "auto), else on the CPU. Progress every logging.every updates; metrics.jsonl, checkpoints\n"
    "and metrics.png go to checkpoint.dir. Ctrl-C (SIGINT) or SIGTERM saves a checkpoint and\n"
    "exits 0; a NaN or infinite loss stops the run (exit 3) without touching the checkpoints.\n";

std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int signal) {
  g_signal.store(signal);
}

// Dense bf16 peak of known data-centre GPUs, for MFU; 0 when unknown.
double bf16_peak_flops(const std::string& device) {
  if (device.find("H100") != std::string::npos || device.find("H200") != std::string::npos) {
    return 989.4e12;
  }
  if (device.find("A100") != std::string::npos) return 312e12;
  return 0;
}

// The keys whose values differ between two canonical config texts, comma-separated.
std::string differing_keys(const std::string& a, const std::string& b) {
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = text.find('\n', start);
      out.push_back(text.substr(start, end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return out;
  };
  const std::vector<std::string> la = lines(a), lb = lines(b);
  std::string keys;
  for (const std::string& line : la) {
    if (std::find(lb.begin(), lb.end(), line) != lb.end()) continue;
    if (!keys.empty()) keys += ", ";
    keys += line.substr(0, line.find('='));
  }
  return keys.empty() ? "(layout)" : keys;
}

void plot_metrics(const std::string& metrics_path, const std::string& png_path) {
  const std::string script = std::string(ELECTRA_SOURCE_DIR) + "/scripts/plot_metrics.py";
  if (!fs::exists(script)) return;
  const std::string command =
      str_cat("python3 '", script, "' '", metrics_path, "' -o '", png_path, "' >/dev/null 2>&1");
  const int rc = std::system(command.c_str());
  if (rc == 0) {
    std::fprintf(stderr, "pretrain: wrote %s\n", png_path.c_str());
  } else {
    std::fprintf(
        stderr, "pretrain: no plot (python3 with matplotlib is needed: scripts/plot_metrics.py)\n");
  }
}

}  // namespace

int cmd_pretrain(const std::vector<std::string>& args) {
  std::string config_path, resume;
  std::vector<std::string> overrides;
  uint64_t stop_after = 0;
  ArgParser parser("pretrain", kUsage);
  parser.value("--config", [&](const std::string& v) { config_path = v; })
      .value("--set", [&](const std::string& v) { overrides.push_back(v); })
      .value("--resume", [&](const std::string& v) { resume = v; })
      .count("--stop-after", [&](uint64_t n) { stop_after = n; });
  if (!parser.parse(args)) return 0;
  parser.require(!config_path.empty(), "--config");
  const PretrainConfig config = read_pretrain_config(config_path, overrides);
  const TrainConfig& train = config.train;

  // Device.
  const bool gpu_usable = built_with_cuda() && cuda_device_count() > 0;
  ELECTRA_USER_CHECK(train.device != TrainDevice::kCuda || gpu_usable,
                     "train.device is cuda but no GPU can be used: ",
                     built_with_cuda() ? cuda_unavailable_reason() : "built without CUDA");
  const bool on_gpu = train.device != TrainDevice::kCpu && gpu_usable;
  Context ctx = on_gpu ? Context::cuda(0, train.seed, train.precision)
                       : Context::cpu(train.seed, Precision::F32);
  const std::string device =
      on_gpu ? cuda_device_description(0)
             : str_cat("CPU", train.device == TrainDevice::kCpu
                                  ? ""
                                  : str_cat(" (no GPU: ",
                                            built_with_cuda() ? cuda_unavailable_reason()
                                                              : "built without CUDA",
                                            ")"));
  std::fprintf(stderr, "pretrain: device %s, precision %s\n", device.c_str(),
               precision_name(ctx.precision()));

  // Data.
  const data::Vocab vocab = data::Vocab::load(config.vocab);
  ELECTRA_USER_CHECK(static_cast<int64_t>(vocab.size()) == config.model.discriminator.vocab_size,
                     config.vocab, " has ", vocab.size(), " tokens but model.vocab_size is ",
                     config.model.discriminator.vocab_size);
  const data::ShardSet shards(data::expand_shard_inputs(config.shards), vocab.hash(),
                              static_cast<uint32_t>(train.seq_len));
  ELECTRA_USER_CHECK(shards.size() >= static_cast<uint64_t>(train.micro_batch_size),
                     "data.shards hold ", shards.size(), " examples, fewer than one micro-batch (",
                     train.micro_batch_size, ")");
  data::PretrainBatches batches(shards, train.seed);
  const int64_t accumulation = train.accumulation_steps();
  ELECTRA_USER_CHECK(static_cast<double>(train.steps) * accumulation < 4294967296.0,
                     "train.steps x accumulation must stay below 2^32 micro-steps");

  // Model and optimizer.
  PretrainOptions options;
  options.batch = train.micro_batch_size;
  options.seq_len = train.seq_len;
  options.mask_prob = static_cast<float>(config.masking.mask_prob);
  options.mask_token_prob = static_cast<float>(config.masking.mask_token_prob);
  options.temperature = static_cast<float>(config.masking.temperature);
  options.disc_weight = static_cast<float>(train.disc_weight);
  options.tokens = SpecialTokens{vocab.pad_id(), vocab.cls_id(), vocab.sep_id(), vocab.mask_id()};
  ElectraPretrainer model(ctx, config.model, options);
  Arena optimizer_arena("optimizer", ctx.device(),
                        Optimizer::state_bytes(model.store(), config.optimizer.kind));
  Optimizer optimizer(ctx, model.store(), config.optimizer, optimizer_arena);

  TrainerState state;
  state.seed = train.seed;
  state.config_hash = config_hash(config);
  state.config_text = canonical_text(config);
  if (!resume.empty()) {
    const std::string checkpoint = resolve_checkpoint(resume);
    const TrainerState saved = read_trainer_state(checkpoint);
    ELECTRA_USER_CHECK(saved.config_hash == state.config_hash, checkpoint,
                       " was written with another configuration; it differs in: ",
                       differing_keys(saved.config_text, state.config_text));
    load_checkpoint(ctx, model, optimizer, checkpoint);
    state.step = saved.step;
    state.cursor = saved.cursor;
    state.elapsed_seconds = saved.elapsed_seconds;
    std::fprintf(stderr, "pretrain: resumed from %s at step %lld\n", checkpoint.c_str(),
                 static_cast<long long>(state.step));
  } else {
    model.init_weights(ctx, train.seed);
  }
  std::fprintf(stderr, "%s", describe(config).c_str());
  std::fprintf(stderr,
               "pretrain: %lld parameters (generator and discriminator, shared embeddings)\n",
               static_cast<long long>(model.store().parameter_count()));

  std::error_code ec;
  fs::create_directories(config.checkpoint.dir, ec);
  ELECTRA_USER_CHECK(!ec, config.checkpoint.dir, ": cannot create: ", ec.message());
  const std::string metrics_path = (fs::path(config.checkpoint.dir) / "metrics.jsonl").string();
  ProgressConfig progress;
  progress.total_steps = train.steps;
  progress.every = config.log_every;
  progress.sequences_per_step = static_cast<double>(train.batch_size);
  progress.tokens_per_step = static_cast<double>(train.batch_size * train.seq_len);
  progress.flops_per_step =
      step_flops(config.model, train.batch_size, train.seq_len, static_cast<double>(model.slots()))
          .total();
  progress.peak_flops = on_gpu && ctx.precision() == Precision::BF16 ? bf16_peak_flops(device) : 0;
  ProgressReporter reporter(progress, metrics_path, state.step);
  std::fprintf(stderr, "pretrain: %.3g FLOPs per update, %.3g for the run; metrics in %s\n",
               progress.flops_per_step,
               progress.flops_per_step * static_cast<double>(train.steps - state.step),
               metrics_path.c_str());

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  HostBatch batch;
  batch.ids.resize(static_cast<size_t>(train.micro_batch_size * train.seq_len));
  batch.segment_ids.resize(batch.ids.size());
  const float loss_scale = 1.0f / static_cast<float>(accumulation);
  int64_t last_saved = -1;
  uint64_t done_here = 0;
  auto save = [&]() {
    const std::string path = save_checkpoint(ctx, model, optimizer, state, config.checkpoint.dir,
                                             config.checkpoint.keep);
    last_saved = state.step;
    std::fprintf(stderr, "pretrain: saved %s\n", path.c_str());
  };

  while (state.step < train.steps) {
    Stopwatch timer;
    model.zero_grads(ctx);
    UpdateMetrics update;
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      batches.next(static_cast<size_t>(train.micro_batch_size), state.cursor, batch.ids,
                   batch.segment_ids);
      model.step(ctx, batch, static_cast<uint32_t>(state.step * accumulation + micro), loss_scale);
      update.add(model.metrics(ctx));
    }
    const StepMetrics m = update.average();
    if (!std::isfinite(m.total_loss)) {
      std::fprintf(stderr,
                   "electra pretrain: error: update %lld: the loss is not finite (generator %g, "
                   "discriminator %g); stopping without saving%s\n",
                   static_cast<long long>(state.step + 1), m.gen_loss, m.disc_loss,
                   last_saved >= 0 || !resume.empty()
                       ? "; the last good checkpoint is kept in checkpoint.dir"
                       : "");
      return 3;
    }
    optimizer.step(ctx, state.step);
    const float grad_norm = optimizer.grad_norm(ctx);
    const double lr = optimizer.lr_at(state.step);
    ++state.step;
    ++done_here;
    const double seconds = timer.seconds();
    state.elapsed_seconds += seconds;
    reporter.record(state.step, m, lr, grad_norm, seconds);
    if (config.checkpoint.every > 0 && state.step % config.checkpoint.every == 0) save();
    if (g_signal.load() != 0) {
      std::fprintf(stderr, "pretrain: %s received at update %lld; saving a checkpoint\n",
                   g_signal.load() == SIGINT ? "SIGINT" : "SIGTERM",
                   static_cast<long long>(state.step));
      break;
    }
    if (stop_after > 0 && done_here >= stop_after) break;
  }
  if (last_saved != state.step) save();
  if (state.step >= train.steps) {
    plot_metrics(metrics_path, (fs::path(config.checkpoint.dir) / "metrics.png").string());
  }
  std::fprintf(stderr, "pretrain: %lld/%lld updates done, %s in total\n",
               static_cast<long long>(state.step), static_cast<long long>(train.steps),
               ProgressReporter::format_duration(state.elapsed_seconds).c_str());
  return 0;
}

}  // namespace electra::apps
