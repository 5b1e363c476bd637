// What `electra encode` and `electra score` share: the options, the checkpoint and its tokenizer,
// the input lines tokenised as [CLS] text [SEP] (truncated to --max-seq-len), and the batched
// forward passes with a progress line on long inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/finetune_common.h"
#include "apps/run_device.h"
#include "models/discriminator_inference.h"

namespace electra::apps {

struct TextInferenceArgs {
  std::string checkpoint, input, output, vocab;
  std::string device = "auto";
  uint64_t batch_size = 32;
  uint64_t max_seq_len = 0;  // 0: min(512, the model's max_position_embeddings)
  int64_t threads = 0;       // CPU threads; 0: all cores this process may use
};

// Registers --checkpoint, --input, --output, --vocab, --device, --batch-size, --max-seq-len,
// --threads.
ArgParser& add_text_inference_args(ArgParser& parser, TextInferenceArgs& a);

// One input line, tokenised.
struct TextLine {
  std::string text;
  std::vector<int32_t> ids;  // [CLS] pieces [SEP]
};

class TextInference {
 public:
  // Loads the checkpoint (a pre-training checkpoint or run directory, an HF ELECTRA directory,
  // or for encoding a fine-tuned checkpoint) and reads and tokenises the input file.
  TextInference(const std::string& command, const TextInferenceArgs& args, bool with_head);

  const std::vector<TextLine>& lines() const { return lines_; }
  const data::ModelTokenizer& tokenizer() const { return tokenizer_; }
  DiscriminatorInference& model() { return model_; }
  Context& ctx() { return device_.ctx; }

  // Runs every line through the model, batch by batch; `each(line index, row in the batch)` is
  // called after the batch's forward pass.
  void run(const std::function<void(size_t line, size_t row)>& each);

 private:
  std::string command_;
  FinetuneInit init_;
  data::ModelTokenizer tokenizer_;
  RunDevice device_;
  DiscriminatorInference model_;
  std::vector<TextLine> lines_;
};

}  // namespace electra::apps
