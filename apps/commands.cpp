#include "apps/command.h"

namespace electra::apps {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"version", "print the version, the build configuration and the visible GPUs", cmd_version},
      {"build-vocab", "train a WordPiece vocabulary (vocab.txt) from text", cmd_build_vocab},
      {"build-data", "tokenize text into pre-training shards", cmd_build_data},
      {"info", "print the header and statistics of pre-training shards", cmd_info},
      {"pretrain", "pre-train ELECTRA (generator + discriminator) from a YAML config",
       cmd_pretrain},
      {"finetune", "fine-tune the discriminator on a GLUE task (several seeds: the median)",
       cmd_finetune},
      {"eval", "score a fine-tuned checkpoint on a task's dev set", cmd_eval},
      {"predict", "write GLUE submission files for a task's test set", cmd_predict},
  };
  return kCommands;
}

}  // namespace electra::apps
