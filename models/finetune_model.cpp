#include "models/finetune_model.h"

#include "models/host_transfer.h"
#include "models/init.h"
#include "models/metric_rows.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/disc_head.h"
#include "kernels/dropout.h"
#include "kernels/gather.h"
#include "kernels/gelu.h"
#include "kernels/mse_loss.h"
#include "kernels/softmax_xent.h"

namespace electra {

TaskKind parse_task_kind(const std::string& name) {
  if (name == "classification") return TaskKind::kClassification;
  if (name == "regression") return TaskKind::kRegression;
  if (name == "span") return TaskKind::kSpan;
  throw UserError(
      str_cat("unknown task kind '", name, "' (use classification, regression or span)"));
}

const char* task_kind_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::kClassification:
      return "classification";
    case TaskKind::kRegression:
      return "regression";
    case TaskKind::kSpan:
      return "span";
  }
  return "?";
}

void TaskHeadConfig::validate(const std::string& what) const {
  ELECTRA_USER_CHECK(kind != TaskKind::kClassification || num_labels >= 2, what,
                     ": num_labels must be at least 2 for classification, got ", num_labels);
  ELECTRA_USER_CHECK(dropout >= 0.0f && dropout < 1.0f, what, ": dropout must lie in [0, 1), got ",
                     dropout);
  ELECTRA_USER_CHECK(answerable_weight >= 0.0f, what,
                     ": answerable_weight must not be negative, got ", answerable_weight);
  ELECTRA_USER_CHECK(!hf_two_layer || kind != TaskKind::kSpan, what,
                     ": hf_two_layer applies to classification and regression heads only");
  ELECTRA_USER_CHECK(!answerability || kind == TaskKind::kSpan, what,
                     ": answerability applies to the span head only");
}

int TaskHeadConfig::outputs() const {
  switch (kind) {
    case TaskKind::kClassification:
      return num_labels;
    case TaskKind::kRegression:
      return 1;
    case TaskKind::kSpan:
      return 2;
  }
  return 0;
}

namespace {

// Rows [begin, end) of each view of a parameter; while planning the views have no memory and
// only their shape changes.
Param param_rows(const Param& p, int64_t begin, int64_t end) {
  auto slice = [&](const Tensor& t) {
    if (t.data != nullptr) return t.rows(begin, end);
    Tensor s = t;
    s.shape[0] = end - begin;
    return s;
  };
  return Param{slice(p.value), slice(p.grad), slice(p.compute)};
}

// Classification and regression: dropout(c) [-> dense -> GELU -> dropout] -> out_proj, on the
// [CLS] vectors c [B, H]. backward() reads the gradient of the logits from logits() (the loss op
// writes it there) and writes the gradient of c.
class SequenceHead {
 public:
  SequenceHead(ModelBuilder& b, const TaskHeadConfig& config, int64_t hidden, int64_t batch)
      : p_(config.dropout), two_layer_(config.hf_two_layer) {
    const std::string prefix = str_cat(ElectraFinetuner::kPrefix, "classifier.");
    if (two_layer_) {
      dense_ = Linear(b, prefix + "dense.", hidden, hidden);
      pre_ = b.activation({batch, hidden});
      act_ = b.activation({batch, hidden});
      dropped_act_ = b.activation({batch, hidden});
      reduce_ = b.activation(DType::F32, {bias_gelu_backward_workspace_floats(batch, hidden)});
    }
    out_ = Linear(b, prefix + "out_proj.", hidden, config.outputs());
    dropped_ = b.activation({batch, hidden});
    logits_ = b.activation({batch, int64_t{config.outputs()}});
    grad_ping_ = b.activation({batch, hidden});
    grad_pong_ = b.activation({batch, hidden});
  }

  void forward(Context& ctx, const DropoutPass& pass, const Tensor& cls) {
    run_op(ctx, Dropout{.x = cls,
                        .site = pass.site(ElectraFinetuner::kHeadSiteBase, p_),
                        .y = Out(dropped_)});
    if (two_layer_) {
      dense_.forward_no_bias(ctx, dropped_, pre_);
      run_op(ctx, BiasGeluForward{.x = pre_, .b = dense_.bias().value, .y = Out(act_)});
      run_op(ctx, Dropout{.x = act_,
                          .site = pass.site(ElectraFinetuner::kHeadSiteBase + 1, p_),
                          .y = Out(dropped_act_)});
      out_.forward(ctx, dropped_act_, logits_);
    } else {
      out_.forward(ctx, dropped_, logits_);
    }
  }

  const Tensor& logits() const { return logits_; }  // [B, outputs]; holds dlogits before backward

  void backward(Context& ctx, const DropoutPass& pass, const Tensor& grad_cls) {
    const DropoutSite site = pass.site(ElectraFinetuner::kHeadSiteBase, p_);
    if (two_layer_) {
      out_.backward(ctx, dropped_act_, logits_, grad_ping_);
      run_op(ctx, Dropout{.x = grad_ping_,
                          .site = pass.site(ElectraFinetuner::kHeadSiteBase + 1, p_),
                          .y = Out(grad_pong_)});
      run_op(ctx, BiasGeluBackward{.dy = grad_pong_,
                                   .x = pre_,
                                   .b = dense_.bias().value,
                                   .dx = Out(grad_ping_),
                                   .db = Out(dense_.bias().grad),
                                   .workspace = Out(reduce_)});
      dense_.backward_no_bias(ctx, dropped_, grad_ping_, grad_pong_);
      run_op(ctx, Dropout{.x = grad_pong_, .site = site, .y = Out(grad_cls)});
    } else {
      out_.backward(ctx, dropped_, logits_, grad_ping_);
      run_op(ctx, Dropout{.x = grad_ping_, .site = site, .y = Out(grad_cls)});
    }
  }

 private:
  float p_ = 0;
  bool two_layer_ = false;
  Linear dense_, out_;
  Tensor dropped_, pre_, act_, dropped_act_, logits_;
  // [batch, hidden]: the backward's intermediate gradients alternate between these two (each
  // step reads one and writes the other).
  Tensor grad_ping_, grad_pong_;
  Tensor reduce_;
};

// Span prediction: start and end logits per token from the two rows of qa_outputs (computed as
// two one-output Linears so that each sequence's T logits form one contiguous row for the
// softmax), and the optional answerable logit on the [CLS] vector.
class SpanHead {
 public:
  SpanHead(ModelBuilder& b, const TaskHeadConfig& config, int64_t hidden, int64_t batch,
           int64_t seq_len)
      : answerability_(config.answerability) {
    const std::string prefix = ElectraFinetuner::kPrefix;
    const Param weight = b.param(prefix + "qa_outputs.weight", {2, hidden}, ParamKind::kWeight);
    const Param bias = b.param(prefix + "qa_outputs.bias", {2}, ParamKind::kBias);
    start_ = Linear(param_rows(weight, 0, 1), param_rows(bias, 0, 1));
    end_ = Linear(param_rows(weight, 1, 2), param_rows(bias, 1, 2));
    start_logits_ = b.activation({batch * seq_len, 1});
    end_logits_ = b.activation({batch * seq_len, 1});
    if (answerability_) {
      answerable_ = Linear(b, prefix + "answerable_classifier.", hidden, 1);
      answerable_logits_ = b.activation({batch, 1});
    }
  }

  // hidden [B * T, H]; cls [B, H] (read only with answerability).
  void forward(Context& ctx, const Tensor& hidden, const Tensor& cls) {
    start_.forward(ctx, hidden, start_logits_);
    end_.forward(ctx, hidden, end_logits_);
    if (answerability_) answerable_.forward(ctx, cls, answerable_logits_);
  }

  // [B * T, 1] each and [B, 1]; each holds its gradient before backward.
  const Tensor& start_logits() const { return start_logits_; }
  const Tensor& end_logits() const { return end_logits_; }
  const Tensor& answerable_logits() const { return answerable_logits_; }

  // grad_hidden [B * T, H] written; grad_cls [B, H] written with answerability.
  void backward(Context& ctx, const Tensor& hidden, const Tensor& cls, const Tensor& grad_hidden,
                const Tensor& grad_cls) {
    start_.backward(ctx, hidden, start_logits_, grad_hidden);
    end_.backward(ctx, hidden, end_logits_, grad_hidden, /*accumulate_dx=*/true);
    if (answerability_) answerable_.backward(ctx, cls, answerable_logits_, grad_cls);
  }

 private:
  bool answerability_ = false;
  Linear start_, end_, answerable_;
  Tensor start_logits_, end_logits_, answerable_logits_;
};

// The first `count` values of a floating tensor (f32, f64 or bf16) as doubles.
std::vector<double> download_doubles(Context& ctx, const Tensor& t, int64_t count) {
  std::vector<double> out = electra::download_doubles(ctx, t);
  out.resize(static_cast<size_t>(count));
  return out;
}

std::vector<float> download_floats(Context& ctx, const Tensor& t, int64_t count) {
  const std::vector<double> d = download_doubles(ctx, t, count);
  return std::vector<float>(d.begin(), d.end());
}

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

// The encoder, the head and every per-step buffer, built by one ModelBuilder pass.
struct ElectraFinetuner::Network {
  Network(ModelBuilder& b, const EncoderConfig& e, const TaskHeadConfig& h,
          const FinetuneOptions& o)
      : tables(b, str_cat(kPrefix, "electra."), e),
        encoder(b, str_cat(kPrefix, "electra."), e, tables, o.batch, o.seq_len,
                DropoutSites{DropoutSites::kDiscriminatorSiteBase}) {
    const int64_t batch = o.batch, hidden = e.hidden;
    const DType stat = b.dtypes().statistic;
    if (h.kind == TaskKind::kSpan) {
      span.emplace(b, h, hidden, batch, o.seq_len);
    } else {
      sequence.emplace(b, h, hidden, batch);
    }
    ids = b.activation(DType::I32, {batch, o.seq_len});
    segment_ids = b.activation(DType::I32, {batch, o.seq_len});
    mask = b.activation(DType::I32, {batch, o.seq_len});
    cls_positions = b.activation(DType::I32, {batch, 1});
    cls = b.activation({batch, hidden});
    grad_cls = b.activation({batch, hidden});
    weights = b.activation(DType::F32, {batch});
    labels = b.activation(DType::I32, {batch});
    loss = b.activation(stat, {batch});
    sample = b.activation(DType::I32, {batch});
    argmax = b.activation(DType::I32, {batch});
    if (h.kind == TaskKind::kRegression) targets = b.activation(DType::F32, {batch});
    if (h.kind == TaskKind::kSpan) {
      start_weights = b.activation(DType::F32, {batch});
      end_labels = b.activation(DType::I32, {batch});
      end_weights = b.activation(DType::F32, {batch});
      end_loss = b.activation(stat, {batch});
    }
    if (h.answerability) {
      impossible = b.activation(DType::I32, {batch});
      answerable_loss = b.activation(stat, {batch});
      counts = b.activation(stat, {kDiscCounts});
      disc_workspace = b.activation(DType::F32, {disc_head_workspace_size(batch)});
    }
  }

  EmbeddingTables tables;
  Encoder encoder;
  std::optional<SequenceHead> sequence;
  std::optional<SpanHead> span;
  Tensor ids, segment_ids, mask, cls_positions, cls, grad_cls;
  // The loss: `weights` 1 for real rows, 0 for padding rows; labels (classification) or start
  // positions (span), per-row loss, the softmax's sample (unused) and argmax; regression
  // targets; the span's start weights (0 also for ignored positions) and end positions;
  // answerability labels, loss and counts.
  Tensor weights, labels, loss, sample, argmax, targets;
  Tensor start_weights, end_labels, end_weights, end_loss;
  Tensor impossible, answerable_loss, counts, disc_workspace;
};

ElectraFinetuner::ElectraFinetuner(Context& ctx, const EncoderConfig& encoder,
                                   const TaskHeadConfig& head, const FinetuneOptions& options)
    : encoder_(encoder),
      head_(head),
      options_(options),
      params_("parameters", ctx.device(), 0),
      grads_("gradients", ctx.device(), 0),
      acts_("activations", ctx.device(), 0) {
  encoder.validate("model");
  head.validate("task");
  encoder_.attention = options.attention;
  check_attention_fits(encoder_, options.seq_len, "finetune.attention");
  ELECTRA_USER_CHECK(options.batch > 0 && options.seq_len > 0, "finetune: batch ", options.batch,
                     " and seq_len ", options.seq_len, " must be positive");
  ELECTRA_USER_CHECK(options.seq_len <= encoder.max_positions, "finetune.max_seq_len ",
                     options.seq_len, " exceeds the model's max_position_embeddings ",
                     encoder.max_positions,
                     " (e.g. --set finetune.max_seq_len=", encoder.max_positions, ")");
  const ModelDTypes dtypes = ModelDTypes::for_precision(ctx.precision());
  const Device device = ctx.device();

  // Pass 1: plan parameters and activations without memory.
  size_t activation_bytes = 0;
  {
    Arena counting = Arena::counting("activations", device);
    ModelBuilder planner(weights_, counting, dtypes, device);
    Network planned(planner, encoder_, head_, options_);
    activation_bytes = counting.high_water();
  }
  // Pass 2: allocate, then bind the same layout to real memory.
  ModelArenas arenas = allocate_model(weights_, dtypes, device, activation_bytes);
  params_ = std::move(arenas.params);
  grads_ = std::move(arenas.grads);
  acts_ = std::move(arenas.activations);
  ModelBuilder builder(weights_, acts_, dtypes, device);
  network_ = std::make_unique<Network>(builder, encoder_, head_, options_);
  zero_tensor(ctx.stream(), network_->cls_positions);  // [CLS] is position 0 of every sequence

  const size_t b = static_cast<size_t>(options_.batch);
  host_mask_.resize(b * static_cast<size_t>(options_.seq_len));
  host_weights_.resize(b);
  host_start_weights_.resize(b);
  host_end_weights_.resize(b);
  host_ints_.resize(b);
  host_floats_.resize(b);
}

ElectraFinetuner::~ElectraFinetuner() = default;

void ElectraFinetuner::init_weights(Context& ctx, uint64_t seed) {
  init_electra_weights(ctx, weights_, seed);
}

void ElectraFinetuner::zero_grads(Context& ctx) {
  zero_tensor(ctx.stream(), weights_.store.flat_grads());
}

bool ElectraFinetuner::upload_batch(Context& ctx, const FinetuneBatch& batch) {
  Network& net = *network_;
  const int64_t b = options_.batch, t = options_.seq_len;
  const size_t bt = static_cast<size_t>(b * t), rows = static_cast<size_t>(b);
  ELECTRA_USER_CHECK(batch.ids.size() == bt && batch.segment_ids.size() == bt,
                     "finetune: a batch needs ", b, " x ", t, " = ", bt,
                     " ids and segment ids, got ", batch.ids.size(), " and ",
                     batch.segment_ids.size());
  const int64_t examples = batch.examples < 0 ? b : batch.examples;
  ELECTRA_USER_CHECK(examples >= 1 && examples <= b, "finetune: a batch of ", b, " rows with ",
                     batch.examples, " examples");
  for (size_t i = 0; i < bt; ++i) {
    const int32_t id = batch.ids[i], seg = batch.segment_ids[i];
    ELECTRA_USER_CHECK(id >= 0 && id < encoder_.vocab_size, "finetune: token id ", id,
                       " at (sequence ", i / t, ", position ", i % t,
                       ") is outside the vocabulary [0, ", encoder_.vocab_size, ")");
    ELECTRA_USER_CHECK(seg >= 0 && seg < encoder_.type_vocab_size, "finetune: segment id ", seg,
                       " at (sequence ", i / t, ", position ", i % t, ") is outside [0, ",
                       encoder_.type_vocab_size, ")");
    host_mask_[i] = id != options_.pad_id;
  }
  upload_to(ctx, net.ids, batch.ids);
  upload_to(ctx, net.segment_ids, batch.segment_ids);
  upload_to(ctx, net.mask, host_mask_);
  examples_ = static_cast<double>(examples);
  for (size_t i = 0; i < rows; ++i) host_weights_[i] = static_cast<int64_t>(i) < examples;

  // The targets of the task, or none (forward() without a loss).
  auto has = [&](size_t size, const char* what) {
    ELECTRA_USER_CHECK(size == 0 || size == rows, "finetune: ", what, " has ", size,
                       " values for a batch of ", b);
    return size == rows;
  };
  switch (head_.kind) {
    case TaskKind::kClassification: {
      if (!has(batch.labels.size(), "labels")) return false;
      for (size_t i = 0; i < rows; ++i) {
        const int32_t label = batch.labels[i];
        const bool real = host_weights_[i] > 0;
        ELECTRA_USER_CHECK(!real || (label >= 0 && label < head_.num_labels), "finetune: label ",
                           label, " of example ", i, " is outside [0, ", head_.num_labels, ")");
        host_ints_[i] = real ? label : 0;
      }
      upload_to(ctx, net.labels, host_ints_);
      upload_to(ctx, net.weights, host_weights_);
      return true;
    }
    case TaskKind::kRegression: {
      if (!has(batch.targets.size(), "targets")) return false;
      for (size_t i = 0; i < rows; ++i) {
        const bool real = host_weights_[i] > 0;
        ELECTRA_USER_CHECK(!real || std::isfinite(batch.targets[i]), "finetune: target ",
                           batch.targets[i], " of example ", i, " is not finite");
        host_floats_[i] = real ? batch.targets[i] : 0.0f;
      }
      upload_to(ctx, net.targets, host_floats_);
      upload_to(ctx, net.weights, host_weights_);
      return true;
    }
    case TaskKind::kSpan: {
      const bool starts = has(batch.start_positions.size(), "start_positions");
      ELECTRA_USER_CHECK(starts == has(batch.end_positions.size(), "end_positions"),
                         "finetune: a span batch needs both start and end positions");
      if (!starts) return false;
      // A position outside [0, T) (an answer outside this window) is ignored, as HF's
      // ignore_index; the softmax ops never read the label of a row with weight 0.
      auto stage_positions = [&](const std::vector<int32_t>& positions, std::vector<float>& weights,
                                 const Tensor& labels) {
        double count = 0;
        for (size_t i = 0; i < rows; ++i) {
          const int32_t pos = positions[i];
          const bool used = host_weights_[i] > 0 && pos >= 0 && pos < t;
          weights[i] = used ? 1.0f : 0.0f;
          host_ints_[i] = used ? pos : 0;
          count += weights[i];
        }
        upload_to(ctx, labels, host_ints_);
        return count;
      };
      start_count_ = stage_positions(batch.start_positions, host_start_weights_, net.labels);
      upload_to(ctx, net.start_weights, host_start_weights_);
      end_count_ = stage_positions(batch.end_positions, host_end_weights_, net.end_labels);
      upload_to(ctx, net.end_weights, host_end_weights_);
      if (head_.answerability) {
        ELECTRA_USER_CHECK(batch.is_impossible.size() == rows,
                           "finetune: the answerable classifier needs is_impossible for each of ",
                           b, " rows, got ", batch.is_impossible.size());
        for (size_t i = 0; i < rows; ++i) {
          const int32_t v = batch.is_impossible[i];
          ELECTRA_USER_CHECK(v == 0 || v == 1, "finetune: is_impossible ", v, " of example ", i,
                             " must be 0 or 1");
          host_ints_[i] = v;
        }
        upload_to(ctx, net.impossible, host_ints_);
        upload_to(ctx, net.weights, host_weights_);
      }
      return true;
    }
  }
  return false;
}

void ElectraFinetuner::run_forward(Context& ctx, const DropoutPass& pass, bool with_loss,
                                   float loss_scale, FinetuneOutputs* outputs) {
  Network& net = *network_;
  const int64_t b = options_.batch, t = options_.seq_len;
  const int64_t examples = static_cast<int64_t>(examples_);
  weights_.refresh_compute(ctx);
  net.encoder.forward(ctx, pass, net.ids, net.segment_ids, net.mask);
  const Tensor hidden = as_rows(net.encoder.output(), encoder_.hidden);
  if (net.sequence || head_.answerability) {
    run_op(ctx,
           GatherForward{
               .x = net.encoder.output(), .positions = net.cls_positions, .out = Out(net.cls)});
  }
  if (net.sequence) {
    net.sequence->forward(ctx, pass, net.cls);
  } else {
    net.span->forward(ctx, hidden, net.cls);
  }
  if (outputs != nullptr) {
    if (net.sequence) {
      const int64_t n = head_.outputs();
      outputs->logits = download_floats(ctx, net.sequence->logits(), examples * n);
      if (head_.kind == TaskKind::kClassification) {
        outputs->predictions.resize(static_cast<size_t>(examples));
        for (int64_t i = 0; i < examples; ++i) {
          const auto row = outputs->logits.begin() + i * n;
          outputs->predictions[i] = static_cast<int32_t>(std::max_element(row, row + n) - row);
        }
      }
    } else {
      outputs->start_logits = download_floats(ctx, net.span->start_logits(), examples * t);
      outputs->end_logits = download_floats(ctx, net.span->end_logits(), examples * t);
      if (head_.answerability) {
        outputs->answerable_logits = download_floats(ctx, net.span->answerable_logits(), examples);
      }
    }
  }
  has_loss_ = with_loss;
  if (!with_loss) return;

  // The losses write the gradient of loss_scale x loss over their logits (in place).
  const float mean_scale = static_cast<float>(loss_scale / examples_);
  SoftmaxXentParams xent;
  xent.stream = ctx.rng(RngPurpose::kSample, 0);  // the op's sample is not used
  switch (head_.kind) {
    case TaskKind::kClassification:
      xent.vocab = head_.num_labels;
      xent.scale = mean_scale;
      run_op(ctx, SoftmaxXent{.logits = Out(net.sequence->logits()),
                              .labels = net.labels,
                              .weights = net.weights,
                              .params = xent,
                              .loss = Out(net.loss),
                              .sample = Out(net.sample),
                              .argmax = Out(net.argmax)});
      break;
    case TaskKind::kRegression: {
      const Tensor predictions = net.sequence->logits().reshape({b});
      run_op(ctx, MseLoss{.predictions = predictions,
                          .targets = net.targets,
                          .weights = net.weights,
                          .scale = mean_scale,
                          .loss = Out(net.loss),
                          .dpredictions = Out(predictions)});
      break;
    }
    case TaskKind::kSpan: {
      xent.vocab = t;
      xent.scale = start_count_ > 0 ? static_cast<float>(0.5 * loss_scale / start_count_) : 0.0f;
      run_op(ctx, SoftmaxXent{.logits = Out(net.span->start_logits().reshape({b, t})),
                              .labels = net.labels,
                              .weights = net.start_weights,
                              .params = xent,
                              .loss = Out(net.loss),
                              .sample = Out(net.sample),
                              .argmax = Out(net.argmax)});
      xent.scale = end_count_ > 0 ? static_cast<float>(0.5 * loss_scale / end_count_) : 0.0f;
      run_op(ctx, SoftmaxXent{.logits = Out(net.span->end_logits().reshape({b, t})),
                              .labels = net.end_labels,
                              .weights = net.end_weights,
                              .params = xent,
                              .loss = Out(net.end_loss),
                              .sample = Out(net.sample),
                              .argmax = Out(net.argmax)});
      if (head_.answerability) {
        const Tensor logits = net.span->answerable_logits().reshape({b});
        run_op(ctx, DiscHead{.logits = logits,
                             .labels = net.impossible,
                             .weights = net.weights,
                             .scale = static_cast<float>(loss_scale * head_.answerable_weight /
                                                         examples_),
                             .loss = Out(net.answerable_loss),
                             .dlogits = Out(logits),
                             .counts = Out(net.counts),
                             .workspace = Out(net.disc_workspace)});
      }
      break;
    }
  }
}

void ElectraFinetuner::step(Context& ctx, const FinetuneBatch& batch, uint32_t micro_step,
                            float loss_scale) {
  Network& net = *network_;
  ELECTRA_USER_CHECK(upload_batch(ctx, batch), "finetune: a training batch needs the ",
                     task_kind_name(head_.kind), " task's targets");
  const DropoutPass pass{ctx.rng(RngPurpose::kDropout, micro_step), true};
  run_forward(ctx, pass, true, loss_scale, nullptr);

  const Tensor& grad_hidden = net.encoder.grad_output();
  if (net.sequence) {
    net.sequence->backward(ctx, pass, net.grad_cls);
    zero_tensor(ctx.stream(), grad_hidden);
    run_op(ctx, GatherBackward{
                    .dout = net.grad_cls, .positions = net.cls_positions, .dx = Out(grad_hidden)});
  } else {
    net.span->backward(ctx, as_rows(net.encoder.output(), encoder_.hidden), net.cls,
                       as_rows(grad_hidden, encoder_.hidden), net.grad_cls);
    if (head_.answerability)
      run_op(ctx,
             GatherBackward{
                 .dout = net.grad_cls, .positions = net.cls_positions, .dx = Out(grad_hidden)});
  }
  net.encoder.backward(ctx, pass);
}

FinetuneOutputs ElectraFinetuner::forward(Context& ctx, const FinetuneBatch& batch) {
  const bool with_loss = upload_batch(ctx, batch);
  const DropoutPass pass{ctx.rng(RngPurpose::kDropout, 0), false};
  FinetuneOutputs out;
  run_forward(ctx, pass, with_loss, 1.0f, &out);
  out.has_loss = with_loss;
  if (with_loss) out.loss = metrics(ctx).loss;
  return out;
}

FinetuneMetrics ElectraFinetuner::metrics(Context& ctx) const {
  ELECTRA_CHECK(has_loss_, "finetune: metrics() without a step() or forward() with targets");
  const Network& net = *network_;
  const int64_t b = options_.batch;
  FinetuneMetrics m;
  m.examples = examples_;
  const std::vector<double> loss = download_doubles(ctx, net.loss, b);
  switch (head_.kind) {
    case TaskKind::kClassification: {
      const std::vector<int32_t> argmax = download_as<int32_t>(ctx, net.argmax);
      const std::vector<int32_t> labels = download_as<int32_t>(ctx, net.labels);
      double correct = 0;
      for (int64_t i = 0; i < b; ++i) correct += host_weights_[i] * (argmax[i] == labels[i]);
      m.loss = sum_of(loss) / examples_;
      m.accuracy = correct / examples_;
      break;
    }
    case TaskKind::kRegression:
      m.loss = sum_of(loss) / examples_;
      break;
    case TaskKind::kSpan: {
      auto mean = [](double sum, double count) { return count > 0 ? sum / count : 0.0; };
      m.start_loss = mean(sum_of(loss), start_count_);
      m.end_loss = mean(sum_of(download_doubles(ctx, net.end_loss, b)), end_count_);
      m.loss = 0.5 * (m.start_loss + m.end_loss);
      if (head_.answerability) {
        m.answerable_loss = download_doubles(ctx, net.counts, kDiscCounts)[kDiscLoss] / examples_;
        m.loss += head_.answerable_weight * m.answerable_loss;
      }
      break;
    }
  }
  return m;
}

void ElectraFinetuner::accumulate_loss(Context& ctx, const Tensor& acc) const {
  ELECTRA_CHECK(has_loss_, "finetune: accumulate_loss() without a step()");
  const Network& net = *network_;
  // The terms of metrics()'s loss, each a weighted mean over its rows.
  auto term = [&](const Tensor& loss, double weight, double count) {
    run_op(ctx, AccumulateLoss{.loss = loss,
                               .weight = weight,
                               .count = count,
                               .total = kLossTermRows,
                               .acc = Out(acc)});
  };
  if (head_.kind != TaskKind::kSpan) {
    term(net.loss, 1.0, examples_);
    return;
  }
  term(net.loss, 0.5, start_count_);
  term(net.end_loss, 0.5, end_count_);
  if (head_.answerability) {
    term(net.counts.rows(kDiscLoss, kDiscLoss + 1), head_.answerable_weight, examples_);
  }
}

}  // namespace electra
