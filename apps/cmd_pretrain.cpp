// electra pretrain: ELECTRA pre-training (replaced token detection) from a YAML config, with
// progress, metrics.jsonl, periodic atomic checkpoints with retention, exact resume, continued
// pre-training from existing weights (--init, apps/pretrain_init.h), SIGINT / SIGTERM handling
// (checkpoint, exit 0) and a NaN/Inf guard (stop without saving).
//
// Data parallel under mpirun (docs/DISTRIBUTED.md): the backend follows the build and the launch
// (MPI for CPU ranks, NCCL for GPU ranks, one GPU per rank by its rank on the node). N ranks
// compute the update one process computes with N x as many micro-batches:
//   - the global batch train.batch_size = N x local micro-batches x train.micro_batch_size;
//   - rank r's micro-batch m of update s is the single process's micro-batch g = s x A + r x a + m
//     (A = N x a micro-batches per update): it reads the same examples (the ranks share the data
//     cursor and skip each other's micro-batches, data/example_order.h) and keys masking,
//     sampling and dropout by micro-step g with rank 0 in the Philox counter, so its random
//     numbers are the single process's too (the DESIGN's "RNG streams include the rank": g is a
//     function of step, rank and micro-batch);
//   - each rank scales its loss by 1 / A and the gradient all-reduce sums (models/grad_sync.h);
//   - the logged metrics are means over all A micro-batches (host all-reduce of the sums).
// Ranks agree at start on the config hash, the resume step, the device kind and the data size;
// rank 0 alone logs, writes metrics.jsonl and checkpoints; a stop request (signal) on any rank
// stops all of them at the same update. A rank that fails prints its error and aborts the job
// (MPI_Abort), so the others never wait in a collective.
#include <unistd.h>

#include <array>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/command.h"
#include "apps/pretrain_config.h"
#include "apps/pretrain_init.h"
#include "apps/run_device.h"
#include "apps/run_lock.h"
#include "apps/train_progress.h"
#include "apps/trainer_checkpoint.h"
#include "data/pretrain_batches.h"
#include "data/vocab.h"
#include "engine/communicator.h"
#include "engine/timer.h"
#include "models/flops.h"
#include "models/grad_sync.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: electra pretrain --config FILE [--set section.key=value]... [--resume DIR]\n"
    "                        [--init DIR [--init-generator GEN_DIR]] [--stop-after N]\n"
    "  --config      YAML run configuration (configs/electra-{tiny,small,base,large}.yaml)\n"
    "  --set         override one key of the config (repeatable), e.g. --set train.steps=1000\n"
    "  --resume      continue from a checkpoint directory, or from the newest checkpoint of a\n"
    "                run directory (the config must be the one the checkpoint was written with)\n"
    "  --init        start a new run (fresh optimizer, schedule and data at step 0) from the\n"
    "                weights of a checkpoint or run directory of this engine, or of a directory\n"
    "                holding HF discriminator/ (ElectraForPreTraining) and generator/\n"
    "                (ElectraForMaskedLM); without a model section in the config the sizes are\n"
    "                the checkpoint's, else they must agree (continued pre-training on new data)\n"
    "  --init-generator  with --init DISC_DIR: the generator's HF directory, when the two models\n"
    "                are separate (google/electra-*-discriminator and -generator)\n"
    "  --stop-after  stop (with a checkpoint) after N updates of this invocation\n"
    "Runs on the GPU when one is present and the binary was built with CUDA (train.device:\n"
    "auto), else on the CPU. Progress every logging.every updates; metrics.jsonl, checkpoints\n"
    "and metrics.png go to checkpoint.dir. Ctrl-C (SIGINT) or SIGTERM saves a checkpoint and\n"
    "exits 0; a NaN or infinite loss or gradient stops the run (exit 3) without touching the\n"
    "checkpoints.\n"
    "Data parallel: mpirun -np N electra pretrain ... (one GPU per rank; MPI on CPUs); the\n"
    "global batch stays train.batch_size (docs/DISTRIBUTED.md).\n";

std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int signal) {
  g_signal.store(signal);
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

// Every StepMetrics field: the metrics are summed over micro-batches and ranks.
constexpr std::array<double StepMetrics::*, 10> kMetricFields = {&StepMetrics::gen_loss,
                                                                 &StepMetrics::gen_accuracy,
                                                                 &StepMetrics::disc_loss,
                                                                 &StepMetrics::disc_accuracy,
                                                                 &StepMetrics::disc_precision,
                                                                 &StepMetrics::disc_recall,
                                                                 &StepMetrics::replaced_fraction,
                                                                 &StepMetrics::total_loss,
                                                                 &StepMetrics::masked,
                                                                 &StepMetrics::tokens};

// What the ranks decide together after each update.
struct UpdateOutcome {
  StepMetrics metrics;  // means over every micro-batch of the update, on every rank
  int sigint_ranks = 0, sigterm_ranks = 0;
};

// Sums the ranks' micro-batch metric sums, micro-batch counts and stop requests; with one rank
// this is exactly UpdateMetrics::average().
UpdateOutcome reduce_update(Communicator& comm, const UpdateMetrics& local, int signal) {
  std::array<double, kMetricFields.size() + 3> values{};
  for (size_t i = 0; i < kMetricFields.size(); ++i) values[i] = local.mean.*kMetricFields[i];
  values[kMetricFields.size()] = local.micro_batches;
  values[kMetricFields.size() + 1] = signal == SIGINT;
  values[kMetricFields.size() + 2] = signal == SIGTERM;
  comm.all_reduce_host(values, ReduceOp::kSum);
  UpdateMetrics total;
  for (size_t i = 0; i < kMetricFields.size(); ++i) total.mean.*kMetricFields[i] = values[i];
  total.micro_batches = static_cast<int>(values[kMetricFields.size()]);
  UpdateOutcome out;
  out.metrics = total.average();
  out.sigint_ranks = static_cast<int>(values[kMetricFields.size() + 1]);
  out.sigterm_ranks = static_cast<int>(values[kMetricFields.size() + 2]);
  return out;
}

// The ranks must run the same configuration from the same step on the same kind of device over
// the same data; each rank compares its values with rank 0's and every rank learns which differ.
void check_ranks_agree(Communicator& comm, const std::array<uint64_t, 4>& mine) {
  if (comm.size() == 1) return;
  std::array<uint64_t, 4> root = mine;
  comm.broadcast_host(root, 0);
  std::array<double, 4> differ{};
  for (size_t i = 0; i < mine.size(); ++i) differ[i] = mine[i] != root[i];
  comm.all_reduce_host(differ, ReduceOp::kSum);
  const char* what[4] = {"the configuration (config file or --set)", "the resume step (--resume)",
                         "the device kind (GPU or CPU)", "the number of examples in data.shards"};
  std::string problems;
  for (size_t i = 0; i < mine.size(); ++i) {
    if (differ[i] == 0) continue;
    problems += str_cat(problems.empty() ? "" : "; ", what[i], " differs on ",
                        static_cast<int>(differ[i]), " of ", comm.size(), " ranks");
  }
  ELECTRA_USER_CHECK(
      problems.empty(), "the ranks disagree with rank 0: ", problems,
      (mine != root ? str_cat(" (this rank, ", comm.rank(), ", is one of them)") : std::string()));
}

// "1 rank", "2 ranks", "1 micro-batch", "4 micro-batches".
std::string count(int64_t n, const std::string& noun) {
  return str_cat(n, " ", noun, n == 1 ? "" : (noun.back() == 'h' ? "es" : "s"));
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// The run itself. `comm` may be replaced by the NCCL communicator that wraps it.
int pretrain(PretrainConfig config, std::unique_ptr<Communicator>& comm, const std::string& resume,
             const std::optional<InitSource>& init, uint64_t stop_after) {
  const int rank = comm->rank(), ranks = comm->size();
  const bool lead = rank == 0;
  std::optional<RunDirLock> lock;
  if (lead) lock.emplace(config.checkpoint.dir);
  config.train.set_ranks(ranks);
  const TrainConfig& train = config.train;
  const int64_t accumulation = train.accumulation_steps();  // micro-batches per update, all ranks
  const int64_t local_accumulation = train.local_accumulation(ranks);

  // Device: one GPU per rank, the rank's index among the ranks of its node.
  RunDevice run_device = open_device(train_device_name(train.device), train.precision, train.seed,
                                     "train.device", comm->local_rank(), comm->local_size());
  Context& ctx = run_device.ctx;
  const bool on_gpu = run_device.gpu;
  const int gpu = on_gpu ? comm->local_rank() : -1;
  if (on_gpu && std::string(comm->backend()) != "single") {
    comm = make_nccl_communicator(std::move(comm), gpu, config.distributed.timeout_s);
  }
  const std::string& device = run_device.description;
  if (ranks == 1 && std::string(comm->backend()) == "single") {
    std::fprintf(stderr, "pretrain: device %s, precision %s\n", device.c_str(),
                 precision_name(ctx.precision()));
  } else {
    std::fprintf(stderr,
                 "pretrain: rank %d of %d (local rank %d on %s), backend %s: device %s, "
                 "precision %s\n",
                 rank, ranks, comm->local_rank(), host_name().c_str(), comm->backend(),
                 device.c_str(), precision_name(ctx.precision()));
    if (lead) {
      std::fprintf(stderr,
                   "pretrain: world size %d, backend %s; global batch %lld = %s x %s x %lld "
                   "sequences\n",
                   ranks, comm->backend(), static_cast<long long>(train.batch_size),
                   count(ranks, "rank").c_str(), count(local_accumulation, "micro-batch").c_str(),
                   static_cast<long long>(train.micro_batch_size));
    }
  }

  // Data: every rank opens all shards and reads its micro-batches of each update.
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
  state.world_size = ranks;
  state.local_accumulation = local_accumulation;
  state.shards = record_shards(shards);
  if (!resume.empty()) {
    const std::string checkpoint = resolve_checkpoint(resume);
    const TrainerState saved = read_trainer_state(checkpoint);
    ELECTRA_USER_CHECK(saved.config_hash == state.config_hash, checkpoint,
                       " was written with another configuration; it differs in: ",
                       differing_keys(saved.config_text, state.config_text),
                       "; --resume continues the same run: to continue pre-training from its "
                       "weights on new data or with other settings, start a new run with --init ",
                       checkpoint);
    check_resume_data(saved, state.shards, checkpoint);
    check_data_position(saved, shards.size(), checkpoint);
    load_checkpoint(ctx, model, optimizer, checkpoint);
    state.step = saved.step;
    state.cursor = saved.cursor;
    state.elapsed_seconds = saved.elapsed_seconds;
    state.metrics = saved.metrics;
    state.grad_norm = saved.grad_norm;
    if (lead) {
      std::fprintf(stderr, "pretrain: resumed from %s at step %lld\n", checkpoint.c_str(),
                   static_cast<long long>(state.step));
      if (saved.world_size != ranks || saved.local_accumulation != local_accumulation) {
        std::fprintf(stderr,
                     "pretrain: the checkpoint was written by %s x %s per update; now %s x %s of "
                     "%lld sequences: the global batch stays %lld\n",
                     count(saved.world_size, "rank").c_str(),
                     count(saved.local_accumulation, "micro-batch").c_str(),
                     count(ranks, "rank").c_str(), count(local_accumulation, "micro-batch").c_str(),
                     static_cast<long long>(train.micro_batch_size),
                     static_cast<long long>(train.batch_size));
      }
    }
  } else {
    if (init) {
      load_init_weights(ctx, model, *init, lead);
    } else {
      model.init_weights(ctx, train.seed);
    }
    // Bit-identical on every rank already; the broadcast makes that independent of the hardware.
    comm->broadcast(model.store().flat_params(), 0, ctx.stream());
    model.weights().refresh_compute(ctx);
  }
  check_ranks_agree(*comm, {state.config_hash, static_cast<uint64_t>(state.step),
                            static_cast<uint64_t>(on_gpu), shards.size()});

  std::optional<GradSync> sync;
  if (std::string(comm->backend()) != "single") {
    sync.emplace(*comm, model.store(),
                 static_cast<size_t>(config.distributed.bucket_mb * 1024 * 1024));
    model.set_gradient_hook(
        [&sync](Context& c, int64_t first_final) { sync->gradients_final_from(c, first_final); });
  }

  std::optional<ProgressReporter> reporter;
  const std::string metrics_path = (fs::path(config.checkpoint.dir) / "metrics.jsonl").string();
  if (lead) {
    std::fprintf(stderr, "%s", describe(config).c_str());
    std::fprintf(stderr,
                 "pretrain: %lld parameters (generator and discriminator, shared embeddings)\n",
                 static_cast<long long>(model.store().parameter_count()));
    if (sync) {
      std::fprintf(stderr, "pretrain: gradients all-reduced in %s of up to %g MB\n",
                   count(static_cast<int64_t>(sync->buckets().size()), "bucket").c_str(),
                   config.distributed.bucket_mb);
    }
    std::error_code ec;
    fs::create_directories(config.checkpoint.dir, ec);
    ELECTRA_USER_CHECK(!ec, config.checkpoint.dir, ": cannot create: ", ec.message());
    ProgressConfig progress;
    progress.total_steps = train.steps;
    progress.every = config.log_every;
    progress.sequences_per_step = static_cast<double>(train.batch_size);
    progress.tokens_per_step = static_cast<double>(train.batch_size * train.seq_len);
    progress.flops_per_step = step_flops(config.model, train.batch_size, train.seq_len,
                                         static_cast<double>(model.slots()))
                                  .total();
    // MFU against the peak of all the job's GPUs.
    progress.peak_flops =
        on_gpu && ctx.precision() == Precision::BF16 ? ranks * bf16_peak_flops(device) : 0;
    reporter.emplace(progress, metrics_path, state.step);
    std::fprintf(stderr, "pretrain: %.3g FLOPs per update, %.3g for the run; metrics in %s\n",
                 progress.flops_per_step,
                 progress.flops_per_step * static_cast<double>(train.steps - state.step),
                 metrics_path.c_str());
  }

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  HostBatch batch;
  batch.ids.resize(static_cast<size_t>(train.micro_batch_size * train.seq_len));
  batch.segment_ids.resize(batch.ids.size());
  const float loss_scale = 1.0f / static_cast<float>(accumulation);
  const uint64_t micro_examples = static_cast<uint64_t>(train.micro_batch_size);
  int64_t last_saved = -1;
  uint64_t done_here = 0;
  auto save = [&]() {
    last_saved = state.step;
    if (!lead) return;
    const std::string path = save_checkpoint(ctx, model, optimizer, state, config.checkpoint.dir,
                                             config.checkpoint.keep, &vocab);
    std::fprintf(stderr, "pretrain: saved %s\n", path.c_str());
  };

  while (state.step < train.steps) {
    Stopwatch timer;
    model.zero_grads(ctx);
    UpdateMetrics update;
    data::DataCursor cursor = state.cursor;
    batches.skip(static_cast<uint64_t>(rank * local_accumulation) * micro_examples, cursor);
    for (int64_t micro = 0; micro < local_accumulation; ++micro) {
      batches.next(micro_examples, cursor, batch.ids, batch.segment_ids);
      if (sync) sync->begin_micro_batch(micro == local_accumulation - 1);
      const int64_t micro_step = state.step * accumulation + rank * local_accumulation + micro;
      model.step(ctx, batch, static_cast<uint32_t>(micro_step), loss_scale);
      update.add(model.metrics(ctx));
    }
    if (sync) sync->finish(ctx);
    batches.skip(static_cast<uint64_t>(accumulation) * micro_examples, state.cursor);
    const UpdateOutcome outcome = reduce_update(*comm, update, g_signal.load());
    const StepMetrics& m = outcome.metrics;
    if (!std::isfinite(m.total_loss)) {
      if (lead) {
        std::fprintf(stderr,
                     "electra pretrain: error: update %lld: the loss is not finite (generator "
                     "%g, discriminator %g); stopping without saving%s\n",
                     static_cast<long long>(state.step + 1), m.gen_loss, m.disc_loss,
                     last_saved >= 0 || !resume.empty()
                         ? "; the last good checkpoint is kept in checkpoint.dir"
                         : "");
      }
      return 3;
    }
    optimizer.step(ctx, state.step);
    const float grad_norm = optimizer.grad_norm(ctx);
    if (!std::isfinite(grad_norm)) {  // the optimizer left parameters and moments untouched
      if (lead) {
        std::fprintf(stderr,
                     "electra pretrain: error: update %lld: the gradient norm is not finite (the "
                     "loss was %g); the update was skipped; stopping without saving%s\n",
                     static_cast<long long>(state.step + 1), m.total_loss,
                     last_saved >= 0 || !resume.empty()
                         ? "; the last good checkpoint is kept in checkpoint.dir"
                         : "");
      }
      return 3;
    }
    const double lr = optimizer.lr_at(state.step);
    ++state.step;
    ++done_here;
    const double seconds = timer.seconds();
    state.elapsed_seconds += seconds;
    state.metrics = m;
    state.grad_norm = grad_norm;
    if (reporter) reporter->record(state.step, m, lr, grad_norm, seconds);
    if (config.checkpoint.every > 0 && state.step % config.checkpoint.every == 0) save();
    if (outcome.sigint_ranks + outcome.sigterm_ranks > 0) {
      if (lead) {
        std::fprintf(stderr, "pretrain: %s received at update %lld%s; saving a checkpoint\n",
                     outcome.sigint_ranks > 0 ? "SIGINT" : "SIGTERM",
                     static_cast<long long>(state.step),
                     ranks > 1 ? str_cat(" (by ", outcome.sigint_ranks + outcome.sigterm_ranks,
                                         " of ", ranks, " ranks)")
                                     .c_str()
                               : "");
      }
      break;
    }
    if (stop_after > 0 && done_here >= stop_after) break;
  }
  if (last_saved != state.step) save();
  if (!lead) return 0;
  if (state.step >= train.steps) {
    plot_metrics(metrics_path, (fs::path(config.checkpoint.dir) / "metrics.png").string());
  }
  std::fprintf(stderr, "pretrain: %lld/%lld updates done, %s in total\n",
               static_cast<long long>(state.step), static_cast<long long>(train.steps),
               ProgressReporter::format_duration(state.elapsed_seconds).c_str());
  return 0;
}

// Prints a rank's error as main() would, with the rank, and ends the whole job with `code`.
[[noreturn]] void fail_rank(Communicator& comm, const char* kind, const char* what, int code) {
  std::fprintf(stderr, "electra pretrain: rank %d of %d: %s: %s\n", comm.rank(), comm.size(), kind,
               what);
  comm.abort(code);
}

}  // namespace

int cmd_pretrain(const std::vector<std::string>& args) {
  std::string config_path, resume, init, init_generator;
  std::vector<std::string> overrides;
  uint64_t stop_after = 0;
  ArgParser parser("pretrain", kUsage);
  parser.value("--config", [&](const std::string& v) { config_path = v; })
      .value("--set", [&](const std::string& v) { overrides.push_back(v); })
      .value("--resume", [&](const std::string& v) { resume = v; })
      .value("--init", [&](const std::string& v) { init = v; })
      .value("--init-generator", [&](const std::string& v) { init_generator = v; })
      .count("--stop-after", [&](uint64_t n) { stop_after = n; });
  if (!parser.parse(args)) return 0;
  parser.require(!config_path.empty(), "--config");
  PretrainConfig config = read_pretrain_config(config_path, overrides);
  std::unique_ptr<Communicator> comm = make_process_communicator();
  auto run = [&]() {
    const std::optional<InitSource> source = resolve_start(config, init, init_generator, resume);
    return pretrain(config, comm, resume, source, stop_after);
  };
  if (comm->size() == 1) return run();
  // Several ranks: one that fails must take the others down (they would wait in a collective).
  try {
    return run();
  } catch (const UserError& e) {
    fail_rank(*comm, "error", e.what(), 2);
  } catch (const std::exception& e) {
    fail_rank(*comm, "internal error", e.what(), 1);
  }
}

}  // namespace electra::apps
