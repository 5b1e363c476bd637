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
      {"finetune",
       "fine-tune the discriminator on a GLUE or SQuAD task (several seeds: the median)",
       cmd_finetune},
      {"eval", "score a fine-tuned checkpoint on a task's dev set(s)", cmd_eval},
      {"predict", "write test-set predictions of a fine-tuned checkpoint (GLUE files, SQuAD JSON)",
       cmd_predict},
      {"encode", "hidden states of the discriminator for your own text (JSON lines or .npy)",
       cmd_encode},
      {"score", "per-token probability that each token was replaced, for your own text", cmd_score},
      {"pretrain-eval",
       "replaced-token detection and masked-word prediction of a pre-training checkpoint on "
       "held-out text",
       cmd_pretrain_eval},
      {"mlm-eval",
       "masked-token accuracy of the generator, the discriminator (Appendix G) and an mlm "
       "checkpoint on held-out text",
       cmd_mlm_eval},
  };
  return kCommands;
}

}  // namespace electra::apps
