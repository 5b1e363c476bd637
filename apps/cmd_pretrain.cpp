// electra pretrain: ELECTRA pre-training (replaced token detection) from a YAML config: the
// command line, logging (progress, metrics.jsonl), SIGINT / SIGTERM handling (checkpoint, exit
// 0), when to checkpoint, the exit code of the non-finite guard (3, without saving), and where the
// weights start: a fresh initialisation, a checkpoint of this run (--resume) or existing weights
// (--init: continued pre-training, apps/pretrain_init.h). The
// updates themselves, the data cursor, the guard and the metrics are the Trainer's
// (train/trainer.h).
//
// Data parallel under mpirun (docs/DISTRIBUTED.md): the backend follows the build and the launch
// (MPI for CPU ranks, NCCL for GPU ranks, one GPU per rank by its rank on the node); the global
// batch train.batch_size = N x local micro-batches x train.micro_batch_size (the Trainer computes
// the single process's update). Ranks agree at start on the config hash, the resume step, the
// device kind and the data size; rank 0 alone logs, writes metrics.jsonl and checkpoints; a stop
// request (signal) on any rank stops all of them at the same update. A rank that fails prints its
// error and aborts the job (MPI_Abort), so the others never wait in a collective.
#include <unistd.h>

#include <algorithm>
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
#include "apps/pretrain_init.h"
#include "apps/run_device.h"
#include "apps/run_lock.h"
#include "apps/runtime_report.h"
#include "data/vocab.h"
#include "engine/communicator.h"
#include "engine/device.h"
#include "kernels/masking.h"
#include "models/flops.h"
#include "train/pretrain_config.h"
#include "train/train_progress.h"
#include "train/trainer.h"
#include "train/trainer_checkpoint.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: electra pretrain --config FILE [--set section.key=value]... [--resume DIR]\n"
    "                        [--init DIR [--init-generator GEN_DIR]] [--stop-after N]\n"
    "                        [--dry-run [--gpu-memory GIB]] [--threads N]\n"
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
    "  --dry-run     plan the model for the configured device and precision, print the bytes of\n"
    "                parameters, gradients, optimizer state, activations and workspace and "
    "whether\n"
    "                they fit the device's free memory, and exit (no data is read; planning for\n"
    "                train.device: cuda works without a GPU); it prints the FLOPs of one update\n"
    "                of the config's objective too (models/flops.h)\n"
    "  --gpu-memory  with --dry-run and no GPU here: the GPU memory (GiB) to compare with\n"
    "  --threads     CPU threads (overrides train.threads; 0: all cores this process may use;\n"
    "                the results are bit-identical at any count, so a run may resume with "
    "another)\n"
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

// The stop requests (signals) of all ranks after an update: with several ranks a host
// all-reduce of two numbers, so that every rank stops at the same update.
struct StopRequests {
  int sigint_ranks = 0, sigterm_ranks = 0;
  int total() const { return sigint_ranks + sigterm_ranks; }
};

StopRequests agree_stop(Communicator& comm, int signal) {
  std::array<double, 2> values = {signal == SIGINT ? 1.0 : 0.0, signal == SIGTERM ? 1.0 : 0.0};
  if (comm.size() > 1) comm.all_reduce_host(values, ReduceOp::kSum);
  return StopRequests{static_cast<int>(values[0]), static_cast<int>(values[1])};
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
  const int64_t local_accumulation = train.local_accumulation(ranks);

  // Device: one GPU per rank, the rank's index among the ranks of its node.
  RunDevice run_device =
      open_device(train_device_name(train.device), train.precision, train.seed, "train.device",
                  comm->local_rank(), comm->local_size(), train.threads);
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

  const SpecialTokens tokens{vocab.pad_id(), vocab.cls_id(), vocab.sep_id(), vocab.mask_id()};
  Trainer trainer(ctx, *comm, config, tokens, shards);
  // The initial weights: a checkpoint of this run (--resume), existing weights (--init) or a fresh
  // initialisation.
  if (!resume.empty()) {
    const std::string checkpoint = resolve_checkpoint(resume);
    const TrainerState saved = read_trainer_state(checkpoint);
    ELECTRA_USER_CHECK(saved.config_hash == trainer.state().config_hash, checkpoint,
                       " was written with another configuration; it differs in: ",
                       differing_keys(saved.config_text, trainer.state().config_text),
                       "; --resume continues the same run: to continue pre-training from its "
                       "weights on new data or with other settings, start a new run with --init ",
                       checkpoint);
    check_resume_data(saved, trainer.state().shards, checkpoint);
    check_data_position(saved, shards.size(), checkpoint);
    trainer.load(checkpoint, saved);
    if (lead) {
      std::fprintf(stderr, "pretrain: resumed from %s at step %lld\n", checkpoint.c_str(),
                   static_cast<long long>(saved.step));
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
      const std::string note = resume_bits_note(saved, trainer.state());
      if (!note.empty()) std::fprintf(stderr, "pretrain: %s\n", note.c_str());
    }
  } else if (init) {
    trainer.init_weights(
        [&](Context& c, ElectraPretrainer& model) { load_init_weights(c, model, *init, lead); });
  } else {
    trainer.init_weights();
  }
  const TrainerState& state = trainer.state();
  check_ranks_agree(*comm, {state.config_hash, static_cast<uint64_t>(state.step),
                            static_cast<uint64_t>(on_gpu), shards.size()});

  std::optional<ProgressReporter> reporter;
  const std::string metrics_path = (fs::path(config.checkpoint.dir) / "metrics.jsonl").string();
  if (lead) {
    std::fprintf(stderr, "%s", describe(config, device, ctx.precision(), on_gpu).c_str());
    std::fprintf(stderr, "pretrain: %lld parameters (%s, shared embeddings)\n",
                 static_cast<long long>(trainer.model().store().parameter_count()),
                 objective_wiring(config.objective).generator ? "generator and discriminator"
                                                              : "the MLM model alone");
    if (const GradSync* sync = trainer.grad_sync()) {
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
    const StepFlops flops = step_flops(
        config.model, train.batch_size, train.seq_len, static_cast<double>(trainer.model().slots()),
        config.objective, config.generator, config.generator_training);
    progress.flops_per_step = flops.total();
    if (config.training == Training::kTwoStage) {  // what each stage runs (models/flops.h)
      progress.generator_steps = config.generator_steps;
      progress.flops_per_step = phase_flops(flops, TrainingPhase::kGenerator).total();
      progress.stage2_flops_per_step = phase_flops(flops, TrainingPhase::kDiscriminator).total();
    }
    // MFU against the peak of all the job's GPUs.
    progress.mlm = objective_wiring(config.objective).mlm_head;
    progress.adversarial = config.generator_training == GeneratorTraining::kAdversarial;
    progress.peak_flops =
        on_gpu && ctx.precision() == Precision::BF16 ? ranks * bf16_peak_flops(device) : 0;
    reporter.emplace(progress, metrics_path, state.step);
    if (progress.generator_steps > 0) {
      const int64_t stage1_left = std::max<int64_t>(config.generator_steps - state.step, 0);
      const int64_t stage2_left = train.steps - state.step - stage1_left;
      std::fprintf(stderr,
                   "pretrain: %.3g FLOPs per update in stage 1 (generator), %.3g in stage 2 "
                   "(discriminator), %.3g for the run; metrics in %s\n",
                   progress.flops_per_step, progress.stage2_flops_per_step,
                   progress.flops_per_step * static_cast<double>(stage1_left) +
                       progress.stage2_flops_per_step * static_cast<double>(stage2_left),
                   metrics_path.c_str());
    } else {
      std::fprintf(stderr, "pretrain: %.3g FLOPs per update, %.3g for the run; metrics in %s\n",
                   progress.flops_per_step,
                   progress.flops_per_step * static_cast<double>(train.steps - state.step),
                   metrics_path.c_str());
    }
  }

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  int64_t last_saved = -1;
  uint64_t done_here = 0;
  auto save = [&]() {
    last_saved = state.step;
    const std::string path = trainer.save(&vocab);
    if (lead) std::fprintf(stderr, "pretrain: saved %s\n", path.c_str());
  };

  try {
    UpdateReport last;  // the last metrics read: what the progress line shows
    while (state.step < train.steps) {
      const double seconds = trainer.update();
      ++done_here;
      if (trainer.metrics_due()) last = trainer.metrics();
      if (reporter) reporter->record(state.step, last.metrics, last.lr, last.grad_norm, seconds);
      if (config.checkpoint.every > 0 && state.step % config.checkpoint.every == 0) save();
      const StopRequests stop = agree_stop(*comm, g_signal.load());
      if (stop.total() > 0) {
        if (lead) {
          std::fprintf(
              stderr, "pretrain: %s received at update %lld%s; saving a checkpoint\n",
              stop.sigint_ranks > 0 ? "SIGINT" : "SIGTERM", static_cast<long long>(state.step),
              ranks > 1 ? str_cat(" (by ", stop.total(), " of ", ranks, " ranks)").c_str() : "");
        }
        break;
      }
      if (stop_after > 0 && done_here >= stop_after) break;
    }
    if (last_saved != state.step) save();
  } catch (const NonFiniteUpdate& e) {
    if (lead) {
      std::fprintf(stderr, "electra pretrain: error: %s; stopping without saving%s\n", e.what(),
                   last_saved >= 0 || !resume.empty()
                       ? "; the last good checkpoint is kept in checkpoint.dir"
                       : "");
    }
    return 3;
  }
  if (!lead) return 0;
  if (state.step >= train.steps) {
    plot_metrics(metrics_path, (fs::path(config.checkpoint.dir) / "metrics.png").string());
  }
  std::fprintf(stderr, "pretrain: %lld/%lld updates done, %s in total\n",
               static_cast<long long>(state.step), static_cast<long long>(train.steps),
               ProgressReporter::format_duration(state.elapsed_seconds).c_str());
  return 0;
}

// --dry-run: what a run of `config` takes on its device (per rank), and whether it fits.
int dry_run(PretrainConfig config, int ranks, double gpu_memory_gib) {
  config.train.set_ranks(ranks);
  const TrainConfig& train = config.train;
  const bool gpu_here = built_with_cuda() && cuda_device_count() > 0;
  const bool cuda =
      train.device == TrainDevice::kCuda || (train.device == TrainDevice::kAuto && gpu_here);
  const Precision precision = cuda ? train.precision : Precision::F32;
  const PretrainOptions options = config.pretrainer_options();
  const PretrainMemory m = ElectraPretrainer::plan_memory(
      config.model, options, cuda ? Device::CUDA : Device::CPU, precision);
  // The moments m and v (f32, the gradients' layout) and the learning-rate table; the segment
  // table and the reduction workspace are a few kB.
  const size_t optimizer_bytes = m.gradients * 2 + Optimizer::schedule_bytes(config.optimizer);
  // A cuBLASLt workspace a CUDA stream: a second one with train.overlap_generator (SideStream).
  const size_t workspace = cuda ? kCublasLtWorkspaceBytes * (train.overlap_generator ? 2 : 1) : 0;
  const size_t total = m.parameters + m.gradients + optimizer_bytes + m.activations + workspace;
  auto gib = [](double bytes) { return bytes / double(size_t{1} << 30); };
  std::printf(
      "pretrain --dry-run: %s, precision %s, micro-batch %lld x %lld tokens per rank (%s)\n",
      cuda ? "cuda" : "cpu", precision_name(precision),
      static_cast<long long>(train.micro_batch_size), static_cast<long long>(train.seq_len),
      count(train.local_accumulation(ranks), "micro-batch").c_str());
  // The FLOP counter's update (what a run reports; bench/ablation.sh sizes its runs by it), all
  // digits: the masked slots as the pretrainer sizes them.
  const int64_t slots =
      std::max(max_predictions(options.mask_prob, static_cast<int>(train.seq_len)), 1);
  const StepFlops flops =
      step_flops(config.model, train.batch_size, train.seq_len, static_cast<double>(slots),
                 config.objective, config.generator, config.generator_training);
  if (config.training == Training::kTwoStage) {  // each stage counts what it runs
    std::printf("  FLOPs per update (%s, two-stage): stage 1 %.17g, stage 2 %.17g\n",
                objective_name(config.objective),
                phase_flops(flops, TrainingPhase::kGenerator).total(),
                phase_flops(flops, TrainingPhase::kDiscriminator).total());
  } else {
    std::printf("  FLOPs per update (%s): %.17g\n", objective_name(config.objective),
                flops.total());
  }
  std::printf("  parameters   %14zu bytes (%.2f GiB; %lld parameters)\n", m.parameters,
              gib(m.parameters), static_cast<long long>(m.parameter_count));
  std::printf("  gradients    %14zu bytes (%.2f GiB)\n", m.gradients, gib(m.gradients));
  std::printf("  optimizer    %14zu bytes (%.2f GiB)\n", optimizer_bytes, gib(optimizer_bytes));
  std::printf("  activations  %14zu bytes (%.2f GiB)\n", m.activations, gib(m.activations));
  std::printf("  workspace    %14zu bytes (%.2f GiB)\n", workspace, gib(workspace));
  std::printf("  total        %14zu bytes (%.2f GiB)\n", total, gib(total));
  double capacity = 0;
  std::string against;
  if (cuda && gpu_here) {
    size_t free = 0, all = 0;
    cuda_memory_info(0, &free, &all);
    capacity = static_cast<double>(free);
    against = str_cat("the free memory of ", cuda_device_description(0));
  } else if (cuda && gpu_memory_gib > 0) {
    capacity = gpu_memory_gib * double(size_t{1} << 30);
    against = str_cat("a GPU of ", gpu_memory_gib, " GiB (--gpu-memory)");
  } else if (!cuda) {
    capacity =
        static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    against = "this machine's free memory";
  }
  if (capacity <= 0) {
    std::printf("  fits: unknown (no GPU here: pass --gpu-memory GIB to compare)\n");
    return 0;
  }
  std::printf("  fits in %s (%.2f GiB): %s\n", against.c_str(), gib(capacity),
              static_cast<double>(total) <= capacity ? "yes" : "NO");
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
  std::optional<int64_t> threads;
  bool plan_only = false;
  double gpu_memory_gib = 0;
  ArgParser parser("pretrain", kUsage);
  parser.value("--config", [&](const std::string& v) { config_path = v; })
      .value("--set", [&](const std::string& v) { overrides.push_back(v); })
      .value("--resume", [&](const std::string& v) { resume = v; })
      .value("--init", [&](const std::string& v) { init = v; })
      .value("--init-generator", [&](const std::string& v) { init_generator = v; })
      .count("--stop-after", [&](uint64_t n) { stop_after = n; })
      .count("--threads", [&](uint64_t n) { threads = checked_thread_count("--threads", n); })
      .switch_flag("--dry-run", [&]() { plan_only = true; })
      .value("--gpu-memory", [&](const std::string& v) {
        char* end = nullptr;
        gpu_memory_gib = std::strtod(v.c_str(), &end);
        ELECTRA_USER_CHECK(end != v.c_str() && *end == '\0' && gpu_memory_gib > 0,
                           "--gpu-memory: '", v, "' is not a positive number of GiB");
      });
  if (!parser.parse(args)) return 0;
  parser.require(!config_path.empty(), "--config");
  PretrainConfig config = read_pretrain_config(config_path, overrides);
  if (threads) config.train.threads = *threads;
  std::unique_ptr<Communicator> comm = make_process_communicator();
  if (comm->rank() == 0) print_runtime_report(stderr, "pretrain: ");
  auto run = [&]() {
    const std::optional<InitSource> source = resolve_start(config, init, init_generator, resume);
    if (plan_only) return dry_run(config, comm->size(), gpu_memory_gib);
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
