// ElectraFinetuner: the discriminator's encoder plus one task head (docs/ARCHITECTURE.md,
// "Fine-tuning"), forward and backward on a planned set of buffers (nothing is allocated after
// construction), as ElectraPretrainer does it.
//
// Parameters are named as in HF transformers under the "discriminator/" prefix, so a pre-training
// checkpoint (or an HF ElectraForPreTraining checkpoint) loads into the encoder
// ("discriminator/electra.*", its own embedding tables) and the head's names are those of HF's
// fine-tuning classes where HF has the layer:
//
//   head                 computation (h = encoder output [B, T, H], c = h[:, 0], the [CLS] vector)
//   classification       logits = W_o dropout(c) + b_o                     [B, num_labels]
//                        "classifier.out_proj.*": the official ELECTRA head (one dense layer on
//                        the [CLS] vector, classification_tasks.py). HF has no one-layer variant:
//                        out_proj is the name of HF's last layer, whose role it plays; a
//                        checkpoint of this head is not loadable by HF's
//                        ElectraForSequenceClassification (classifier.dense is missing).
//     hf_two_layer       logits = W_o dropout(gelu(W_d dropout(c) + b_d)) + b_o
//                        HF's ElectraClassificationHead: "classifier.dense.*" [H, H] and
//                        "classifier.out_proj.*", exact-erf GELU, the same dropout rate twice.
//     loss               softmax cross-entropy, mean over the batch's examples.
//   regression           the same head with one output (HF: num_labels = 1); prediction = the
//                        logit; loss = mean squared error against the target. STS-B targets are
//                        score / 5 (the official normalisation); dividing is the caller's job.
//   span                 [start, end] = h W_qa^T + b_qa per token, "qa_outputs.*" [2, H] as HF's
//                        ElectraForQuestionAnswering (row 0 start, row 1 end; no dropout).
//                        loss = (CE(start logits of a sequence, start position)
//                               + CE(end logits, end position)) / 2, each CE a mean over the
//                        examples whose position lies in [0, T) (others are ignored, as HF's
//                        ignore_index); the softmax runs over all T positions, unmasked, as in HF
//                        (the official code adds -1000 outside the context and [CLS]).
//     answerability      SQuAD 2.0: a = w_a . c + b_a, "answerable_classifier.*" [1, H]; adds
//                        answerable_weight x sigmoid BCE(a, is_impossible), mean over the
//                        examples. This is the official ELECTRA answerable classifier with
//                        answerable_uses_start_logits = False (qa_tasks.py); the official default
//                        (features weighted by the start distribution, a 512-wide GELU layer) and
//                        its joint start/end beam prediction are not implemented.
//
// A batch holds B sequences of T tokens (the planned sizes); its first `examples` rows are real,
// the rest padding rows (any valid ids) that the losses and metrics ignore, so the last partial
// batch of an evaluation needs no second model. The attention mask is ids != pad_id.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/encoder.h"

namespace electra {

enum class TaskKind : uint8_t { kClassification, kRegression, kSpan };

// "classification", "regression" or "span"; UserError naming the value otherwise.
TaskKind parse_task_kind(const std::string& name);
const char* task_kind_name(TaskKind kind);

struct TaskHeadConfig {
  TaskKind kind = TaskKind::kClassification;
  int num_labels = 2;              // classification: classes (>= 2); regression: always 1
  bool hf_two_layer = false;       // classification / regression: HF's two-layer head
  float dropout = 0.1f;            // on the [CLS] vector (official keep_prob 0.9)
  bool answerability = false;      // span: the SQuAD 2.0 answerable classifier
  float answerable_weight = 0.5f;  // its loss weight (official answerable_weight)

  // UserError naming `what` when inconsistent (num_labels < 2, dropout outside [0, 1), ...).
  void validate(const std::string& what) const;
  // Outputs per example of the head's final layer: num_labels, 1 or (span) 2 per token.
  int outputs() const;
};

struct FinetuneOptions {
  int64_t batch = 32;  // B, sequences per micro-batch
  int64_t seq_len = 128;
  int32_t pad_id = 0;
  // The GPU's attention kernels for the encoder (model.attention's choice; finetune.attention);
  // the CPU ignores it.
  AttentionImpl attention = AttentionImpl::kAuto;
};

// One batch on the host. ids and segment_ids [B * T]; the targets of the task (all may be empty
// for forward() without a loss):
struct FinetuneBatch {
  std::vector<int32_t> ids;
  std::vector<int32_t> segment_ids;
  int64_t examples = -1;                 // real rows [0, examples); -1: all B
  std::vector<int32_t> labels;           // classification [B], in [0, num_labels) for real rows
  std::vector<float> targets;            // regression [B]
  std::vector<int32_t> start_positions;  // span [B]; outside [0, T): ignored (no loss)
  std::vector<int32_t> end_positions;    // span [B]
  std::vector<int32_t> is_impossible;    // span with answerability [B]: 1 = no answer, 0 = answer
};

// forward()'s results for the real examples (rows [0, examples)).
struct FinetuneOutputs {
  // classification [examples, num_labels]; regression [examples] (the predicted target).
  std::vector<float> logits;
  std::vector<int32_t> predictions;  // classification: argmax (ties to the lowest label)
  // span: [examples, T] each, and [examples] with answerability.
  std::vector<float> start_logits, end_logits, answerable_logits;
  bool has_loss = false;  // the batch carried targets
  double loss = 0;        // as FinetuneMetrics::loss
};

struct FinetuneMetrics {
  double loss = 0;             // the task loss (before loss_scale)
  double accuracy = 0;         // classification: argmax == label; span: 0
  double start_loss = 0;       // span: the start CE
  double end_loss = 0;         // span: the end CE
  double answerable_loss = 0;  // span with answerability: the BCE (before answerable_weight)
  double examples = 0;         // real examples of the batch
};

class ElectraFinetuner {
 public:
  static constexpr const char* kPrefix = "discriminator/";
  // Dropout sites of the head (the encoder's are DropoutSites{kDiscriminatorSiteBase}).
  static constexpr uint32_t kHeadSiteBase = DropoutSites::kDiscriminatorSiteBase + (1u << 15);

  // Plans every buffer for (options.batch, options.seq_len) on ctx's device in ctx's precision
  // (f64 for gradient checks, f32, bf16 on the GPU). Parameters are uninitialised: call
  // init_weights() or load a checkpoint.
  ElectraFinetuner(Context& ctx, const EncoderConfig& encoder, const TaskHeadConfig& head,
                   const FinetuneOptions& options);
  ~ElectraFinetuner();
  ElectraFinetuner(const ElectraFinetuner&) = delete;
  ElectraFinetuner& operator=(const ElectraFinetuner&) = delete;

  const EncoderConfig& encoder_config() const { return encoder_; }
  const TaskHeadConfig& head_config() const { return head_; }
  const FinetuneOptions& options() const { return options_; }
  const ParameterStore& store() const { return weights_.store; }
  ModelWeights& weights() { return weights_; }
  const Arena& activation_arena() const { return acts_; }

  // Truncated normal (std 0.02, cut at 2 std) weights and embeddings, zero biases, LayerNorm
  // gamma 1 beta 0, a pure function of the seed: the pretrainer's initialisation, the head's too
  // (HF draws it from N(0, 0.02^2); the official TF head uses tf.layers.dense's Glorot uniform).
  void init_weights(Context& ctx, uint64_t seed);
  void zero_grads(Context& ctx);

  // One training micro-batch: forward with dropout (keyed by micro_step), the loss and the
  // backward; parameter gradients accumulate (+=) loss_scale times the gradient of the loss.
  // The batch must carry the task's targets.
  void step(Context& ctx, const FinetuneBatch& batch, uint32_t micro_step, float loss_scale = 1.0f);
  // Evaluation: forward without dropout and without backward; the loss when the batch carries
  // targets. Copies the outputs to the host (synchronises).
  FinetuneOutputs forward(Context& ctx, const FinetuneBatch& batch);
  // The loss and accuracy of the last step(), or of the last forward() when its batch carried
  // targets (Error when it did not). Synchronises.
  FinetuneMetrics metrics(Context& ctx) const;
  // Adds the loss of the last step() (FinetuneMetrics::loss) to acc[kMetricTotalLoss] of a
  // metrics accumulator (models/metric_rows.h), counting a non-finite term in
  // acc[kMetricNonFinite], on the device: no transfer, no synchronisation.
  void accumulate_loss(Context& ctx, const Tensor& acc) const;

 private:
  struct Network;  // the encoder, the head and every per-step buffer (finetune_model.cpp)
  // Forward (and the loss when `with_loss`); `outputs` (may be null) receives the logits before
  // the loss overwrites them with their gradient.
  void run_forward(Context& ctx, const DropoutPass& pass, bool with_loss, float loss_scale,
                   FinetuneOutputs* outputs);
  // Validates and uploads the batch; returns whether it carries the task's targets.
  bool upload_batch(Context& ctx, const FinetuneBatch& batch);

  EncoderConfig encoder_;
  TaskHeadConfig head_;
  FinetuneOptions options_;
  ModelWeights weights_;
  Arena params_;
  Arena grads_;
  Arena acts_;
  std::unique_ptr<Network> network_;
  // Host staging, sized at construction, and the counts behind the loss scales.
  std::vector<int32_t> host_mask_;
  std::vector<float> host_weights_, host_start_weights_, host_end_weights_;
  std::vector<int32_t> host_ints_;
  std::vector<float> host_floats_;
  double examples_ = 0, start_count_ = 0, end_count_ = 0;
  bool has_loss_ = false;
};

}  // namespace electra
