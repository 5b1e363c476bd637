#include "apps/finetune_squad.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <unordered_map>

#include "apps/run_device.h"
#include "data/example_order.h"
#include "data/squad.h"
#include "data/squad_answer.h"
#include "data/squad_features.h"
#include "data/tokenizer.h"
#include "engine/safetensors.h"
#include "engine/timer.h"
#include "train/train_progress.h"

namespace electra::apps {
namespace fs = std::filesystem;

namespace {

// The BERT tokenizer behind data/squad.h's interface: a whitespace-free word goes through the
// whole Tokenizer (basic tokenizer, which splits punctuation inside the word as HF's
// BertTokenizer.tokenize(word) does, then WordPiece). The WordPieceFn calls this object's
// Tokenizer, so it is neither copied nor moved.
class SquadWordPiece {
 public:
  explicit SquadWordPiece(const data::ModelTokenizer& model_tokenizer)
      : tokenizer_(model_tokenizer.vocab, model_tokenizer.lowercase),
        squad_{[this](const std::string& word) { return tokenizer_.encode(word); },
               model_tokenizer.vocab.cls_id(), model_tokenizer.vocab.sep_id()} {}
  SquadWordPiece(const SquadWordPiece&) = delete;
  SquadWordPiece& operator=(const SquadWordPiece&) = delete;

  const SquadTokenizer& get() const { return squad_; }

 private:
  data::Tokenizer tokenizer_;
  SquadTokenizer squad_;
};

// A split's questions and their windows (an example's windows consecutive, in example order).
struct SquadSplit {
  std::vector<SquadExample> examples;
  std::vector<SquadFeature> features;
};

SquadSplit load_split(const std::string& path, bool training, int64_t limit,
                      const SquadTokenizer& tokenizer, const FinetuneSettings& s) {
  SquadReadOptions read_options;
  read_options.training = training;
  SquadDataset data = read_squad(path, read_options);
  SquadSplit split;
  split.examples = std::move(data.examples);
  if (limit > 0 && static_cast<int64_t>(split.examples.size()) > limit) {
    split.examples.erase(split.examples.begin() + static_cast<ptrdiff_t>(limit),
                         split.examples.end());
  }
  SquadFeatureOptions options;
  options.max_seq_len = static_cast<int32_t>(s.max_seq_len);
  options.doc_stride = static_cast<int32_t>(s.doc_stride);
  options.max_query_len = static_cast<int32_t>(s.max_query_length);
  split.features = featurize_squad(split.examples, tokenizer, options);
  return split;
}

// A batch of B x T ids; with_targets adds start/end positions (and is_impossible for 2.0).
FinetuneBatch make_batch(int64_t b, int64_t t, bool with_targets, bool v2) {
  FinetuneBatch batch;
  batch.ids.resize(static_cast<size_t>(b * t));
  batch.segment_ids.resize(batch.ids.size());
  if (with_targets) {
    batch.start_positions.resize(static_cast<size_t>(b));
    batch.end_positions.resize(static_cast<size_t>(b));
    if (v2) batch.is_impossible.resize(static_cast<size_t>(b));
  }
  return batch;
}

// Fills `batch` with features[order[first .. first + count)], each padded to T with `pad`:
// segment 0 for [CLS] query [SEP], 1 for the document window and its [SEP], 0 on padding. Rows
// past `count` are padding rows; the targets, when the batch carries them, come from the
// feature (start = end = 0, [CLS], when the window has no answer) and its example.
void fill_batch(FinetuneBatch& batch, const SquadSplit& split, const std::vector<uint64_t>& order,
                size_t first, size_t count, int64_t seq_len, int32_t pad) {
  const size_t t = static_cast<size_t>(seq_len), b = batch.ids.size() / t;
  batch.examples = static_cast<int64_t>(count);
  for (size_t i = 0; i < b; ++i) {
    const SquadFeature* f = i < count ? &split.features[order[first + i]] : nullptr;
    const auto row = batch.ids.begin() + static_cast<ptrdiff_t>(i * t);
    const auto seg = batch.segment_ids.begin() + static_cast<ptrdiff_t>(i * t);
    std::fill_n(row, t, pad);
    std::fill_n(seg, t, 0);
    if (f != nullptr) {
      ELECTRA_CHECK(f->input_ids.size() <= t, "SQuAD feature of ", f->input_ids.size(),
                    " tokens for a sequence length of ", t);
      std::copy(f->input_ids.begin(), f->input_ids.end(), row);
      std::fill(seg + f->doc_offset, seg + static_cast<ptrdiff_t>(f->input_ids.size()), 1);
    }
    if (!batch.start_positions.empty()) {
      batch.start_positions[i] = f != nullptr ? f->start_position : 0;
      batch.end_positions[i] = f != nullptr ? f->end_position : 0;
    }
    if (!batch.is_impossible.empty()) {
      batch.is_impossible[i] =
          f != nullptr && split.examples[static_cast<size_t>(f->example_index)].is_impossible;
    }
  }
}

// The model's outputs over every feature of a split, in order: start and end logits [F, T] and,
// with the answerable classifier, its logit [F].
struct SpanLogits {
  std::vector<float> start, end, answerable;
};

SpanLogits predict(Context& ctx, ElectraFinetuner& model, const SquadSplit& split, int32_t pad) {
  const int64_t b = model.options().batch, t = model.options().seq_len;
  FinetuneBatch batch = make_batch(b, t, false, false);
  std::vector<uint64_t> order(split.features.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  SpanLogits out;
  out.start.reserve(order.size() * static_cast<size_t>(t));
  out.end.reserve(out.start.capacity());
  for (size_t first = 0; first < order.size(); first += static_cast<size_t>(b)) {
    const size_t count = std::min(static_cast<size_t>(b), order.size() - first);
    fill_batch(batch, split, order, first, count, t, pad);
    const FinetuneOutputs o = model.forward(ctx, batch);
    out.start.insert(out.start.end(), o.start_logits.begin(), o.start_logits.end());
    out.end.insert(out.end.end(), o.end_logits.begin(), o.end_logits.end());
    out.answerable.insert(out.answerable.end(), o.answerable_logits.begin(),
                          o.answerable_logits.end());
  }
  return out;
}

// Question id -> answer text ("" for "no answer"), in example order.
using Answers = std::vector<std::pair<std::string, std::string>>;

Answers extract_answers(const SquadSplit& split, const SpanLogits& logits, int64_t seq_len,
                        const SquadTokenizer& tokenizer, const FinetuneSettings& s, bool v2,
                        double null_threshold) {
  const size_t t = static_cast<size_t>(seq_len);
  const bool classifier = !logits.answerable.empty();
  SquadAnswerOptions options;
  options.n_best = static_cast<int32_t>(s.n_best);
  options.max_answer_len = static_cast<int32_t>(s.max_answer_length);
  const std::span<const SquadFeature> features(split.features);
  Answers out;
  out.reserve(split.examples.size());
  std::vector<SquadLogits> views;
  size_t f = 0;
  for (size_t e = 0; e < split.examples.size(); ++e) {
    const SquadExample& example = split.examples[e];
    size_t end = f;
    views.clear();
    // The official null logit of an example: the least answerable logit over its windows.
    double null_logit = std::numeric_limits<double>::infinity();
    for (; end < features.size() && features[end].example_index == static_cast<int32_t>(e); ++end) {
      views.push_back(SquadLogits{std::span<const float>(logits.start).subspan(end * t, t),
                                  std::span<const float>(logits.end).subspan(end * t, t)});
      if (classifier)
        null_logit = std::min(null_logit, static_cast<double>(logits.answerable[end]));
    }
    const SquadPrediction p =
        extract_answer(example, features.subspan(f, end - f), views, tokenizer, options);
    std::string text = p.text;
    if (v2)
      text = classifier ? (null_logit > null_threshold ? "" : p.text)
                        : answer_or_null(p, null_threshold);
    out.emplace_back(example.id, std::move(text));
    f = end;
  }
  ELECTRA_CHECK(f == features.size(), "SQuAD features out of example order");
  return out;
}

SquadScores score(const SquadSplit& split, const Answers& answers) {
  std::unordered_map<std::string, std::string> map(answers.begin(), answers.end());
  return evaluate_squad(split.examples, map);
}

// SQuAD's official predictions file: {"question id": "answer text", ...}.
void write_predictions(const std::string& path, const Answers& answers) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [id, text] : answers) j[id] = text;
  write_file_atomic(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

TaskHeadConfig span_head(bool answerability, double dropout) {
  TaskHeadConfig head;
  head.kind = TaskKind::kSpan;
  head.answerability = answerability;
  head.dropout = static_cast<float>(dropout);
  return head;
}

const char* task_name(bool v2) {
  return v2 ? "squad2.0" : "squad1.1";
}

// The head of a SQuAD checkpoint: the span layer, and the answerable classifier when the
// checkpoint has one (ours for 2.0; HF's ElectraForQuestionAnswering has none). A fine-tuned
// checkpoint of another task is refused by name.
TaskHeadConfig head_of_checkpoint(const std::string& dir, bool v2) {
  check_checkpoint_task(dir, task_name(v2));
  const SafetensorsFile file =
      SafetensorsFile::read((fs::path(dir) / "model.safetensors").string());
  ELECTRA_USER_CHECK(file.find("qa_outputs.weight") != nullptr, dir,
                     ": model.safetensors has no qa_outputs.weight: not a question-answering "
                     "(ElectraForQuestionAnswering) checkpoint");
  return span_head(file.find("answerable_classifier.weight") != nullptr, 0);
}

}  // namespace

std::string squad_file(const std::string& data_dir, bool v2, const std::string& split) {
  const fs::path path = fs::path(data_dir) / str_cat(split, v2 ? "-v2.0.json" : "-v1.1.json");
  ELECTRA_USER_CHECK(fs::is_regular_file(path), path.string(), ": no such file (SQuAD ",
                     v2 ? "2.0" : "1.1", " ", split, " set; --data-dir must hold ",
                     v2 ? "train-v2.0.json and dev-v2.0.json" : "train-v1.1.json and dev-v1.1.json",
                     ")");
  return path.string();
}

std::string format_squad_scores(const SquadScores& s) {
  char text[192];
  std::snprintf(text, sizeof text, "EM %.2f, F1 %.2f", 100 * s.exact, 100 * s.f1);
  std::string out = text;
  if (s.no_answer_total > 0) {
    std::snprintf(text, sizeof text,
                  " (has answer: EM %.2f, F1 %.2f over %zu; no answer: EM %.2f over %zu)",
                  100 * s.has_answer_exact, 100 * s.has_answer_f1, s.has_answer_total,
                  100 * s.no_answer_exact, s.no_answer_total);
    out += text;
  }
  return out;
}

SquadRunResult run_squad(const SquadRunOptions& opts) {
  ELECTRA_CHECK(opts.tokenizer != nullptr, "run_squad without a vocabulary");
  const FinetuneSettings& s = opts.settings;
  const char* name = task_name(opts.v2);
  Stopwatch clock;

  const std::string train_path = squad_file(opts.data_dir, opts.v2, "train");
  const std::string dev_path = squad_file(opts.data_dir, opts.v2, "dev");
  SquadWordPiece wordpiece(*opts.tokenizer);
  const SquadSplit train =
      load_split(train_path, true, opts.max_train_examples, wordpiece.get(), s);
  ELECTRA_USER_CHECK(!train.features.empty(), train_path, ": no training questions");
  const SquadSplit dev = load_split(dev_path, false, opts.max_eval_examples, wordpiece.get(), s);
  ELECTRA_USER_CHECK(!dev.examples.empty(), dev_path, ": no questions");

  RunDevice device =
      open_device(s.device, s.precision, opts.seed, "finetune.device", 0, 1, s.threads);
  Context& ctx = device.ctx;
  const int32_t pad = opts.tokenizer->vocab.pad_id();
  ElectraFinetuner model(ctx, opts.init.encoder, span_head(opts.v2, s.dropout),
                         model_options(s, opts.tokenizer->vocab));
  model.init_weights(ctx, opts.seed);  // the head; the encoder is overwritten next
  load_finetune_init(ctx, model, opts.init.model_dir, false);

  const int64_t b = s.batch_size;
  const auto num_features = static_cast<int64_t>(train.features.size());
  const int64_t steps_per_epoch = (num_features + b - 1) / b;
  const int64_t total = steps_per_epoch * s.epochs;
  FinetuneOptimizer opt(ctx, model, s, total);
  const std::string attention = attention_note(s, ctx.is_cuda());
  std::fprintf(stderr,
               "finetune %s (seed %llu): %zu training questions in %lld windows, %zu dev "
               "questions in %zu windows, %lld epochs x %lld updates of %lld, lr %.3g, layer-wise "
               "decay %.3g, on %s%s%s\n",
               name, static_cast<unsigned long long>(opts.seed), train.examples.size(),
               static_cast<long long>(num_features), dev.examples.size(), dev.features.size(),
               static_cast<long long>(s.epochs), static_cast<long long>(steps_per_epoch),
               static_cast<long long>(b), opt.lr, opt.decay, device.description.c_str(),
               attention.empty() ? "" : ", ", attention.c_str());

  // The official code shuffles features, not questions: an epoch is a permutation of windows.
  data::ExampleOrder order(train.features.size(), opts.seed);
  FinetuneBatch batch = make_batch(b, s.max_seq_len, true, opts.v2);
  SquadRunResult result;
  double best_f1 = -INFINITY;
  int64_t step = 0;
  std::vector<uint64_t> epoch_order(train.features.size());
  const int64_t log_every = std::clamp<int64_t>(steps_per_epoch / 4, 1, 100);
  for (int64_t epoch = 0; epoch < s.epochs; ++epoch) {
    const std::vector<uint32_t>& perm = order.permutation(static_cast<uint64_t>(epoch));
    epoch_order.assign(perm.begin(), perm.end());
    FinetuneEpoch progress(ctx, name, epoch, s.epochs, steps_per_epoch, total, log_every);
    for (int64_t i = 0; i < steps_per_epoch; ++i, ++step) {
      const size_t first = static_cast<size_t>(i * b);
      const size_t count = std::min(static_cast<size_t>(b), train.features.size() - first);
      fill_batch(batch, train, epoch_order, first, count, s.max_seq_len, pad);
      progress.update(ctx, model, opt, batch, i, step);
    }
    const Answers answers = extract_answers(dev, predict(ctx, model, dev, pad), s.max_seq_len,
                                            wordpiece.get(), s, opts.v2, opts.null_threshold);
    const SquadScores scores = score(dev, answers);
    std::fprintf(stderr, "finetune %s epoch %lld: dev %s\n", name,
                 static_cast<long long>(epoch + 1), format_squad_scores(scores).c_str());
    if (scores.f1 > best_f1) {
      best_f1 = scores.f1;
      result.best = scores;
      result.best_epoch = epoch + 1;
      fs::create_directories(opts.output_dir);
      write_predictions((fs::path(opts.output_dir) / "dev_predictions.json").string(), answers);
      const std::string best_dir = (fs::path(opts.output_dir) / "best").string();
      const nlohmann::json meta = {{"task", name},
                                   {"head", "official"},
                                   {"answerable_classifier", opts.v2},
                                   {"epoch", epoch + 1},
                                   {"seed", opts.seed},
                                   {"max_seq_len", s.max_seq_len},
                                   {"doc_stride", s.doc_stride},
                                   {"max_query_length", s.max_query_length},
                                   {"exact", scores.exact},
                                   {"f1", scores.f1}};
      save_finetuned(ctx, model, best_dir, meta, *opts.tokenizer);
    }
  }
  result.seconds = clock.seconds();
  return result;
}

SquadScores evaluate_squad_checkpoint(bool v2, const std::string& dev_json,
                                      const std::string& checkpoint_dir,
                                      const data::ModelTokenizer& tokenizer,
                                      const FinetuneSettings& settings, int64_t max_examples,
                                      const std::string& predictions_json_out,
                                      double null_threshold) {
  ELECTRA_USER_CHECK(fs::is_regular_file(dev_json), dev_json, ": no such file");
  const FinetuneInit init = resolve_init(checkpoint_dir);
  const TaskHeadConfig head = head_of_checkpoint(init.model_dir, v2);
  RunDevice device = open_device(settings.device, settings.precision, 0, "finetune.device", 0, 1,
                                 settings.threads);
  ElectraFinetuner model(device.ctx, init.encoder, head, model_options(settings, tokenizer.vocab));
  load_finetune_init(device.ctx, model, init.model_dir, true);
  SquadWordPiece wordpiece(tokenizer);
  const SquadSplit dev = load_split(dev_json, false, max_examples, wordpiece.get(), settings);
  ELECTRA_USER_CHECK(!dev.examples.empty(), dev_json, ": no questions");
  const Answers answers =
      extract_answers(dev, predict(device.ctx, model, dev, tokenizer.vocab.pad_id()),
                      settings.max_seq_len, wordpiece.get(), settings, v2, null_threshold);
  if (!predictions_json_out.empty()) {
    const fs::path parent = fs::path(predictions_json_out).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    write_predictions(predictions_json_out, answers);
  }
  return score(dev, answers);
}

}  // namespace electra::apps
