// Trainer: ELECTRA pre-training as a sequence of optimizer updates. It owns the model
// (ElectraPretrainer), the optimizer and its state, the data-parallel gradient all-reduce
// (GradSync), the data cursor, the trainer state (step, cursor, elapsed time, last metrics), the
// non-finite guard and the metrics accumulator (DeviceMetrics, train/device_metrics.h, which
// fine-tuning shares). `electra pretrain` (apps/cmd_pretrain.cpp) keeps
// the command line, logging, signals and when to checkpoint.
//
// One update (docs/ARCHITECTURE.md, "One pre-training update") reads as update() does:
//   for each of the rank's micro-batches:
//     feed             the host reads the examples at the data cursor and packs them into one of
//                      two pinned buffers (pack_batch: ids, segment ids, mask, token weights);
//                      one asynchronous upload copies them into the model's input (the host
//                      prepares the next micro-batch in the other buffer: double buffering)
//     run_micro_batch  the device runs next_micro_step -> corrupt -> forward -> backward ->
//                      accumulate_metrics, reading the micro-step and the loss scales from the
//                      model's step scalars (device memory)
//   synchronise        the bucketed all-reduce of the gradients (several ranks)
//   step               the optimizer (its update counter and learning-rate table live in device
//                      memory), then the gradient norm into the accumulator
// With train.cuda_graph on a GPU the device work of a micro-batch is one CUDA graph, replayed per
// micro-batch, and the step another. Nothing is read back: the host reads the
// accumulator only in metrics(), which the caller calls when metrics_due() (logging.every), and
// save() (the guard checks the accumulated non-finite count first). An update with a non-finite
// gradient norm is skipped by the optimizer kernels, so nothing is lost between two reads.
//
// Two-stage training (training: two-stage, docs/OBJECTIVES.md) runs in two phases
// (TrainingPhase): updates 0 .. G-1 the generator's (stage 1: the discriminator frozen in the
// optimizer), update G starts with the switch (the discriminator's encoder copied from the
// generator's, then the generator frozen) and the rest run the discriminator's (stage 2). The
// switch is a host action between updates; each phase has a micro-batch graph of its own,
// captured after one eager update of that phase.
//
// Data parallel: N ranks compute the update one process computes with N x as many micro-batches
// (rank r's micro-batch m of update s is the single process's micro-batch g = s x A + r x a + m,
// A = N x a; it reads those examples and keys its random numbers by g with rank 0 in the Philox
// counter); each rank scales its loss by 1 / A and the all-reduce sums; metrics() sums the
// ranks' accumulators (a collective: every rank calls it at the same updates).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "data/pretrain_batches.h"
#include "engine/communicator.h"
#include "engine/cuda_graph.h"
#include "models/grad_sync.h"
#include "models/pretrainer.h"
#include "optim/optimizer.h"
#include "train/device_metrics.h"
#include "train/pretrain_config.h"
#include "train/trainer_checkpoint.h"

namespace electra {

// Thrown by metrics() (and so by save()) when a loss or gradient norm was not finite since the
// previous read; the message names the update and the values.
struct NonFiniteUpdate : UserError {
  using UserError::UserError;
};

// What metrics() reads back.
struct UpdateReport {
  int64_t step = 0;      // updates done
  StepMetrics metrics;   // of update `step`: means over its micro-batches and ranks
  double grad_norm = 0;  // of update `step`, before clipping
  double lr = 0;         // the learning rate update `step` used
};

class Trainer {
 public:
  // Plans the model and the optimizer for `config` (whose train section is resolved for
  // comm.size() ranks: TrainConfig::set_ranks) on ctx's device; reads data from `shards`, which
  // must outlive the trainer. The weights are uninitialised: call init_weights() or load().
  Trainer(Context& ctx, Communicator& comm, const PretrainConfig& config,
          const SpecialTokens& tokens, const data::ShardSet& shards);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Writes the initial weights of a new run into the model (continued pre-training: --init).
  using WeightLoader = std::function<void(Context&, ElectraPretrainer&)>;
  // The initial weights of a new run: `load`'s, or without one the official initialisation from
  // train.seed; identical on every rank (broadcast from rank 0). With generator: unigram it also
  // counts the tokens of the shards (the distribution the replacements are drawn from).
  void init_weights(const WeightLoader& load = nullptr);
  // Resumes from a checkpoint directory: weights, optimizer moments and the update counter,
  // data cursor, elapsed time and last metrics from `saved` (read_trainer_state of it; the
  // caller has checked that it belongs to this configuration), and a unigram generator's counts.
  void load(const std::string& checkpoint, const TrainerState& saved);

  // One optimizer update (see the top of this file). Adds its host time to the elapsed time and
  // returns it.
  double update();
  // Whether logging is due after the update just done (every logging.every updates and at the
  // last one).
  bool metrics_due() const;
  // Reads the accumulator back (and sums it over the ranks): the last update's metrics, also
  // stored in the trainer state. The guard: throws NonFiniteUpdate when a micro-batch's loss or
  // an update's gradient norm was not finite since the previous read.
  UpdateReport metrics();
  // Writes a checkpoint of the current step into checkpoint.dir (rank 0; every rank calls it:
  // it reads the metrics first, so the guard runs before anything is written) and returns its
  // path, or "" on other ranks.
  std::string save(const data::Vocab* vocab);

  const TrainerState& state() const { return state_; }
  ElectraPretrainer& model() { return model_; }
  Optimizer& optimizer() { return optimizer_; }
  const GradSync* grad_sync() const { return sync_ ? &*sync_ : nullptr; }
  int64_t local_accumulation() const { return local_accumulation_; }
  // Whether updates are replayed from CUDA graphs (train.cuda_graph on a CUDA context).
  bool uses_cuda_graphs() const { return graphs_; }

 private:
  // The steps of update() (the top of this file).
  // The next micro-batch at `cursor`, read, packed into a pinned buffer and uploaded (async).
  void feed(data::DataCursor& cursor);
  // The device work of the fed micro-batch (eager or its graph); `last`: the update's last on
  // this rank (the gradient sync's buckets complete with it).
  void run_micro_batch(bool last);
  void synchronise();
  void step();
  // run_micro_batch's device work: reads no host value, so it can be captured (with ready =
  // nullptr: no collective inside a graph).
  void micro_batch(const GradientsReady& ready);
  // Whether this update replays the graphs: train.cuda_graph on a CUDA context, after one eager
  // update of the current phase (which builds the cuBLASLt plans and the like before anything is
  // captured).
  bool replaying() const;
  // Two-stage: runs `phase` from the next update on (the model's phase, the optimizer's frozen
  // parameters; the next update is eager).
  void enter_phase(TrainingPhase phase);

  Context& ctx_;
  Communicator& comm_;
  const PretrainConfig config_;
  int64_t accumulation_ = 1, local_accumulation_ = 1;
  ElectraPretrainer model_;
  Arena optimizer_arena_;
  Optimizer optimizer_;
  std::optional<GradSync> sync_;
  GradientsReady ready_;
  data::PretrainBatches batches_;
  TrainerState state_;
  DeviceMetrics metrics_;  // and the non-finite guard, shared with fine-tuning
  // The model's input, double-buffered on the host (pinned on CUDA); an event per buffer says
  // when its upload has left it.
  HostBatch host_batch_;
  PinnedBuffer pinned_[2];
  HostEvent uploaded_[2];
  int64_t micro_batches_fed_ = 0;
  int64_t last_read_step_ = 0;  // the step of the previous metrics() read
  // CUDA graphs (train.cuda_graph): one micro-batch (replayed a times per update) and the
  // optimizer step, each captured once (the Trainer has one shape) at the second update; a
  // two-stage run captures a micro-batch graph per phase (what runs differs), the optimizer's
  // serves both (it reads the frozen flags from device memory).
  bool graphs_ = false;
  int64_t updates_in_phase_ = 0;  // by this process, since the current phase began here
  CudaGraph micro_graphs_[2];     // [0]: joint or the generator phase, [1]: the discriminator's
  CudaGraph optimizer_graph_;
};

}  // namespace electra
