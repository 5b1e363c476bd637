#include "apps/finetune_glue.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/run_device.h"
#include "data/example_order.h"
#include "data/tokenizer.h"
#include "engine/safetensors.h"
#include "engine/timer.h"
#include "train/train_progress.h"

namespace electra::apps {
namespace fs = std::filesystem;

namespace {

// One tokenised example: ids and segments padded to the model's sequence length.
struct Feature {
  std::vector<int32_t> ids, segment_ids;
  int32_t label = 0;
  float target = 0;  // STS-B score / 5
};

std::vector<Feature> featurize(const std::vector<GlueExample>& examples,
                               const data::ModelTokenizer& model_tokenizer, int64_t seq_len,
                               bool swapped) {
  const data::Vocab& vocab = model_tokenizer.vocab;
  data::Tokenizer tokenizer(vocab, model_tokenizer.lowercase);
  std::vector<Feature> out;
  out.reserve(examples.size());
  for (const GlueExample& e : examples) {
    const std::string& a = swapped ? *e.text_b : e.text_a;
    data::PairEncoding enc = e.text_b ? tokenizer.encode_pair(a, swapped ? e.text_a : *e.text_b,
                                                              static_cast<size_t>(seq_len))
                                      : tokenizer.encode_single(a, static_cast<size_t>(seq_len));
    enc.ids.resize(static_cast<size_t>(seq_len), vocab.pad_id());
    enc.segment_ids.resize(static_cast<size_t>(seq_len), 0);
    out.push_back(Feature{std::move(enc.ids), std::move(enc.segment_ids), e.label, e.score / 5});
  }
  return out;
}

TaskHeadConfig head_for(const GlueTaskInfo& info, const FinetuneSettings& s) {
  TaskHeadConfig head;
  head.kind = info.is_regression() ? TaskKind::kRegression : TaskKind::kClassification;
  head.num_labels = info.is_regression() ? 1 : info.num_classes;
  head.hf_two_layer = s.hf_two_layer;
  head.dropout = static_cast<float>(s.dropout);
  return head;
}

// Fills `batch` with features[order[first .. first + count)] (the other rows: padding) and,
// when the batch carries them, their labels or targets.
void fill_batch(FinetuneBatch& batch, const std::vector<Feature>& features,
                const std::vector<uint64_t>& order, size_t first, size_t count, int64_t seq_len,
                int32_t pad) {
  const size_t t = static_cast<size_t>(seq_len), b = batch.ids.size() / t;
  batch.examples = static_cast<int64_t>(count);
  for (size_t i = 0; i < b; ++i) {
    const Feature* f = i < count ? &features[order[first + i]] : nullptr;
    const auto row = static_cast<ptrdiff_t>(i * t);
    if (f != nullptr) {
      std::copy(f->ids.begin(), f->ids.end(), batch.ids.begin() + row);
      std::copy(f->segment_ids.begin(), f->segment_ids.end(), batch.segment_ids.begin() + row);
    } else {
      std::fill_n(batch.ids.begin() + row, t, pad);
      std::fill_n(batch.segment_ids.begin() + row, t, 0);
    }
    if (!batch.labels.empty()) batch.labels[i] = f != nullptr ? f->label : 0;
    if (!batch.targets.empty()) batch.targets[i] = f != nullptr ? f->target : 0.0f;
  }
}

// A batch of B x T ids; with_targets adds the labels (classification) or targets (regression).
FinetuneBatch make_batch(int64_t b, int64_t t, bool with_targets, bool regression) {
  FinetuneBatch batch;
  batch.ids.resize(static_cast<size_t>(b * t));
  batch.segment_ids.resize(batch.ids.size());
  if (with_targets && regression) batch.targets.resize(static_cast<size_t>(b));
  if (with_targets && !regression) batch.labels.resize(static_cast<size_t>(b));
  return batch;
}

// Predictions of the model over `features` in order: class indices and their probabilities
// (softmax of the logits, num_classes per example), or scores (x 5) for STS-B.
struct Predictions {
  std::vector<int32_t> classes;
  std::vector<double> probabilities;
  std::vector<float> scores;
};

Predictions predict(Context& ctx, ElectraFinetuner& model, const std::vector<Feature>& features,
                    bool regression, int32_t pad) {
  const int64_t b = model.options().batch, t = model.options().seq_len;
  FinetuneBatch batch = make_batch(b, t, false, regression);
  std::vector<uint64_t> order(features.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Predictions out;
  for (size_t first = 0; first < features.size(); first += static_cast<size_t>(b)) {
    const size_t count = std::min(static_cast<size_t>(b), features.size() - first);
    fill_batch(batch, features, order, first, count, t, pad);
    const FinetuneOutputs o = model.forward(ctx, batch);
    for (size_t i = 0; i < count; ++i) {
      if (regression) {
        out.scores.push_back(5.0f * o.logits[i]);
        continue;
      }
      out.classes.push_back(o.predictions[i]);
      const size_t n = o.logits.size() / count;
      const float* row = o.logits.data() + i * n;
      const double top = *std::max_element(row, row + n);
      double sum = 0;
      for (size_t k = 0; k < n; ++k) sum += std::exp(row[k] - top);
      for (size_t k = 0; k < n; ++k) out.probabilities.push_back(std::exp(row[k] - top) / sum);
    }
  }
  return out;
}

std::vector<GlueScore> score(GlueTask task, const Predictions& p,
                             const std::vector<GlueExample>& gold) {
  return glue_task_info(task).is_regression() ? evaluate_glue(task, p.scores, gold)
                                              : evaluate_glue(task, p.classes, gold);
}

// The prediction of example i: the label name or the score ("%.9g": every float digit).
std::string prediction_text(const GlueTaskInfo& info, const Predictions& p, size_t i) {
  if (!info.is_regression()) return info.label_names[static_cast<size_t>(p.classes[i])];
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(p.scores[i]));
  return text;
}

// "\tp_<label>..." header columns (i < 0), or the class probabilities of example i ("%.9g");
// nothing for a regression.
std::string probability_columns(const GlueTaskInfo& info, const Predictions& p, int64_t i) {
  std::string text;
  const size_t n = info.label_names.size();
  for (size_t k = 0; k < n && !info.is_regression(); ++k) {
    if (i < 0) {
      text += "\tp_" + info.label_names[k];
      continue;
    }
    char value[32];
    std::snprintf(value, sizeof value, "\t%.9g", p.probabilities[static_cast<size_t>(i) * n + k]);
    text += value;
  }
  return text;
}

// id, prediction, gold label, class probabilities: one line per dev example.
void write_dev_predictions(const std::string& path, GlueTask task, const Predictions& p,
                           const std::vector<GlueExample>& gold) {
  const GlueTaskInfo& info = glue_task_info(task);
  std::string text = "id\tprediction\tlabel" + probability_columns(info, p, -1) + "\n";
  for (size_t i = 0; i < gold.size(); ++i) {
    const std::string label = info.is_regression()
                                  ? str_cat(gold[i].score)
                                  : info.label_names[static_cast<size_t>(gold[i].label)];
    text += str_cat(gold[i].id, "\t", prediction_text(info, p, i), "\t", label,
                    probability_columns(info, p, static_cast<int64_t>(i)), "\n");
  }
  write_file_atomic(path, text);
}

std::vector<GlueExample> read_split(GlueTask task, const std::string& dir, const std::string& split,
                                    int64_t limit) {
  std::vector<GlueExample> examples = read_glue_split(task, dir, split);
  if (limit > 0 && static_cast<int64_t>(examples.size()) > limit) {
    examples.resize(static_cast<size_t>(limit));
  }
  return examples;
}

// The head of a fine-tuned checkpoint: finetune.json when we wrote it (which must name this task),
// else HF's ElectraForSequenceClassification (two-layer head; num_labels from id2label).
TaskHeadConfig head_of_checkpoint(const std::string& dir, const GlueTaskInfo& info,
                                  const FinetuneSettings& s) {
  TaskHeadConfig head = head_for(info, s);
  check_checkpoint_task(dir, info.name);
  const nlohmann::json meta = read_finetune_meta(dir);
  if (!meta.is_null() && meta.contains("head")) {
    head.hf_two_layer = meta.at("head").get<std::string>() == "hf_two_layer";
  } else {
    const SafetensorsFile file =
        SafetensorsFile::read((fs::path(dir) / "model.safetensors").string());
    head.hf_two_layer = file.find("classifier.dense.weight") != nullptr;
  }
  head.dropout = 0;
  return head;
}

std::vector<std::string> dev_splits_of(const GlueTaskInfo& info) {
  return info.dev_splits;
}

// A fine-tuned checkpoint loaded with its head for eval and predict.
struct CheckpointModel {
  RunDevice device;
  FinetuneInit init;
  ElectraFinetuner model;

  CheckpointModel(const GlueTaskInfo& info, const std::string& dir, const data::Vocab& vocab,
                  const FinetuneSettings& settings)
      : device(open_device(settings.device, settings.precision, 0, "finetune.device", 0, 1,
                           settings.threads)),
        init(resolve_init(dir)),
        model(device.ctx, init.encoder, head_of_checkpoint(init.model_dir, info, settings),
              model_options(settings, vocab)) {
    load_finetune_init(device.ctx, model, init.model_dir, true);
  }
};

}  // namespace

std::string format_scores(const std::vector<GlueScore>& scores) {
  std::string s;
  for (const GlueScore& g : scores) {
    if (!s.empty()) s += ", ";
    char value[32];
    std::snprintf(value, sizeof value, "%.4f", g.value);
    s += str_cat(glue_metric_name(g.metric), " ", value);
  }
  return s;
}

GlueRunResult run_glue(const GlueRunOptions& opts) {
  const GlueTaskInfo& info = glue_task_info(opts.task);
  const FinetuneSettings& s = opts.settings;
  const bool regression = info.is_regression();
  Stopwatch clock;

  std::vector<GlueExample> train =
      read_split(opts.task, opts.data_dir, "train", opts.max_train_examples);
  ELECTRA_USER_CHECK(!train.empty(), opts.data_dir, ": train.tsv has no examples");
  const std::vector<std::string> dev_splits = dev_splits_of(info);
  std::vector<std::vector<GlueExample>> dev;
  std::vector<std::vector<Feature>> dev_features;
  for (const std::string& split : dev_splits) {
    dev.push_back(read_split(opts.task, opts.data_dir, split, opts.max_eval_examples));
    dev_features.push_back(featurize(dev.back(), *opts.tokenizer, s.max_seq_len, false));
  }
  std::vector<Feature> features = featurize(train, *opts.tokenizer, s.max_seq_len, false);
  const bool swap =
      s.swap_augment && (opts.task == GlueTask::kMRPC || opts.task == GlueTask::kSTSB);
  if (swap) {
    std::vector<Feature> swapped = featurize(train, *opts.tokenizer, s.max_seq_len, true);
    features.insert(features.end(), swapped.begin(), swapped.end());
  }

  RunDevice device =
      open_device(s.device, s.precision, opts.seed, "finetune.device", 0, 1, s.threads);
  Context& ctx = device.ctx;
  ElectraFinetuner model(ctx, opts.init.encoder, head_for(info, s),
                         model_options(s, opts.tokenizer->vocab));
  model.init_weights(ctx, opts.seed);  // the head; the encoder is overwritten next
  if (!opts.from_scratch) load_finetune_init(ctx, model, opts.init.model_dir, false);

  const int64_t b = s.batch_size;
  const int64_t steps_per_epoch = (static_cast<int64_t>(features.size()) + b - 1) / b;
  const int64_t total = steps_per_epoch * s.epochs;
  FinetuneOptimizer opt(ctx, model, s, total);
  const std::string attention = attention_note(s, ctx.is_cuda());
  std::fprintf(stderr,
               "finetune %s (seed %llu): %zu training examples%s, %lld epochs x %lld updates of "
               "%lld, lr %.3g, layer-wise decay %.3g, %s, on %s%s%s\n",
               info.name.c_str(), static_cast<unsigned long long>(opts.seed), features.size(),
               swap ? " (with swapped pairs)" : "", static_cast<long long>(s.epochs),
               static_cast<long long>(steps_per_epoch), static_cast<long long>(b), opt.lr,
               opt.decay,
               opts.from_scratch ? "from scratch (no pre-trained weights)"
                                 : str_cat("from ", opts.init.model_dir).c_str(),
               device.description.c_str(), attention.empty() ? "" : ", ", attention.c_str());

  data::ExampleOrder order(features.size(), opts.seed);
  FinetuneBatch batch = make_batch(b, s.max_seq_len, true, regression);
  GlueRunResult result;
  double best_value = -INFINITY;
  int64_t step = 0;
  std::vector<uint64_t> epoch_order(features.size());
  const int64_t log_every = std::max<int64_t>(1, steps_per_epoch / 4);
  for (int64_t epoch = 0; epoch < s.epochs; ++epoch) {
    const std::vector<uint32_t>& perm = order.permutation(static_cast<uint64_t>(epoch));
    epoch_order.assign(perm.begin(), perm.end());
    FinetuneEpoch progress(ctx, info.name, epoch, s.epochs, steps_per_epoch, total, log_every);
    for (int64_t i = 0; i < steps_per_epoch; ++i, ++step) {
      const size_t first = static_cast<size_t>(i * b);
      const size_t count = std::min(static_cast<size_t>(b), features.size() - first);
      fill_batch(batch, features, epoch_order, first, count, s.max_seq_len,
                 opts.tokenizer->vocab.pad_id());
      progress.update(ctx, model, opt, batch, i, step);
    }
    // Evaluation on every dev split; the first decides the best epoch, whose predictions are
    // written for every split (MNLI: dev_predictions.dev_matched.tsv and .dev_mismatched.tsv).
    std::vector<GlueScore> first_scores;
    bool improved = false;
    for (size_t d = 0; d < dev.size(); ++d) {
      const Predictions p =
          predict(ctx, model, dev_features[d], regression, opts.tokenizer->vocab.pad_id());
      const std::vector<GlueScore> scores = score(opts.task, p, dev[d]);
      std::fprintf(stderr, "finetune %s epoch %lld: %s %s\n", info.name.c_str(),
                   static_cast<long long>(epoch + 1), dev_splits[d].c_str(),
                   format_scores(scores).c_str());
      if (d == 0) {
        first_scores = scores;
        improved = scores.front().value > best_value;
      }
      if (improved) {
        fs::create_directories(opts.output_dir);
        const std::string name = dev.size() > 1 ? str_cat("dev_predictions.", dev_splits[d], ".tsv")
                                                : std::string("dev_predictions.tsv");
        write_dev_predictions((fs::path(opts.output_dir) / name).string(), opts.task, p, dev[d]);
      }
    }
    if (improved) {
      best_value = first_scores.front().value;
      result.best = first_scores;
      result.best_epoch = epoch + 1;
      const std::string best_dir = (fs::path(opts.output_dir) / "best").string();
      nlohmann::json meta = {{"task", info.name},
                             {"head", s.hf_two_layer ? "hf_two_layer" : "official"},
                             {"epoch", epoch + 1},
                             {"seed", opts.seed},
                             {"max_seq_len", s.max_seq_len}};
      for (const GlueScore& g : first_scores)
        meta[std::string(glue_metric_name(g.metric))] = g.value;
      save_finetuned(ctx, model, best_dir, meta, *opts.tokenizer);
    }
  }
  result.seconds = clock.seconds();
  return result;
}

std::vector<std::pair<std::string, std::vector<GlueScore>>> evaluate_glue_checkpoint(
    GlueTask task, const std::string& data_dir, const std::string& checkpoint_dir,
    const data::ModelTokenizer& tokenizer, const FinetuneSettings& settings, int64_t max_examples,
    const std::string& predictions_out) {
  const GlueTaskInfo& info = glue_task_info(task);
  CheckpointModel loaded(info, checkpoint_dir, tokenizer.vocab, settings);
  ElectraFinetuner& model = loaded.model;
  RunDevice& device = loaded.device;
  std::vector<std::pair<std::string, std::vector<GlueScore>>> out;
  for (const std::string& split : info.dev_splits) {
    const std::vector<GlueExample> dev = read_split(task, data_dir, split, max_examples);
    const Predictions p =
        predict(device.ctx, model, featurize(dev, tokenizer, settings.max_seq_len, false),
                info.is_regression(), tokenizer.vocab.pad_id());
    out.emplace_back(split, score(task, p, dev));
    if (!predictions_out.empty()) {
      // One file per dev split: MNLI's FILE.tsv -> FILE.dev_matched.tsv, FILE.dev_mismatched.tsv.
      fs::path path(predictions_out);
      if (info.dev_splits.size() > 1) {
        path = path.parent_path() / str_cat(path.stem().string(), ".", split,
                                            path.has_extension() ? path.extension().string() : "");
      }
      if (path.has_parent_path()) fs::create_directories(path.parent_path());
      write_dev_predictions(path.string(), task, p, dev);
      std::fprintf(stderr, "eval: wrote %s\n", path.string().c_str());
    }
  }
  return out;
}

std::vector<std::string> predict_glue_test(GlueTask task, const std::string& data_dir,
                                           const std::string& checkpoint_dir,
                                           const data::ModelTokenizer& tokenizer,
                                           const FinetuneSettings& settings,
                                           const std::string& output_dir) {
  const GlueTaskInfo& info = glue_task_info(task);
  CheckpointModel loaded(info, checkpoint_dir, tokenizer.vocab, settings);
  ElectraFinetuner& model = loaded.model;
  RunDevice& device = loaded.device;
  fs::create_directories(output_dir);
  std::vector<std::string> written;
  for (const std::string& split : info.test_splits) {
    const std::vector<GlueExample> test = read_glue_split(task, data_dir, split);
    const Predictions p =
        predict(device.ctx, model, featurize(test, tokenizer, settings.max_seq_len, false),
                info.is_regression(), tokenizer.vocab.pad_id());
    // The GLUE server's file names: CoLA.tsv, SST-2.tsv, MNLI-m.tsv, MNLI-mm.tsv, ...
    std::string name = info.name;
    if (split == "test_matched") name += "-m";
    if (split == "test_mismatched") name += "-mm";
    // The submission file (STS-B scores clipped to [0, 5], the GLUE range), and beside it every
    // prediction with its class probabilities or unclipped score.
    std::string text = "index\tprediction\n";
    std::string details = "index\tprediction" + probability_columns(info, p, -1) + "\n";
    Predictions clipped = p;
    for (float& score : clipped.scores) score = std::clamp(score, 0.0f, 5.0f);
    for (size_t i = 0; i < test.size(); ++i) {
      text += str_cat(test[i].id, "\t", prediction_text(info, clipped, i), "\n");
      details += str_cat(test[i].id, "\t", prediction_text(info, p, i),
                         probability_columns(info, p, static_cast<int64_t>(i)), "\n");
    }
    const std::string path = (fs::path(output_dir) / (name + ".tsv")).string();
    write_file_atomic(path, text);
    const std::string details_path =
        (fs::path(output_dir) / (name + ".probabilities.tsv")).string();
    write_file_atomic(details_path, details);
    written.push_back(details_path);
    written.push_back(path);
  }
  return written;
}

}  // namespace electra::apps
