#include "models/pretrain_options.h"

#include "kernels/masking.h"

namespace electra {

std::string sharing_problem(const ElectraConfig& config, Sharing sharing, Objective objective,
                            GeneratorKind generator) {
  if (sharing != Sharing::kAll && sharing != Sharing::kGdes) return "";
  const std::string what = str_cat("sharing: ", sharing_name(sharing));
  if (!objective_wiring(objective).generator) {
    return str_cat(what, " ties the generator to the discriminator, but objective: ",
                   objective_name(objective), " has no generator");
  }
  if (generator == GeneratorKind::kUnigram) {
    return str_cat(what,
                   " ties the generator to the discriminator, but generator: unigram builds no "
                   "generator model");
  }
  if (sharing == Sharing::kGdes) return "";
  const EncoderConfig& d = config.discriminator;
  const EncoderConfig g = config.generator();
  const std::string need = str_cat(what, " needs a generator of the discriminator's size: ");
  if (g.hidden != d.hidden) {
    return str_cat(need, "model.generator_multiplier ", config.generator_multiplier,
                   " gives the generator hidden size ", g.hidden, ", the discriminator's is ",
                   d.hidden, " (set model.generator_multiplier: 1)");
  }
  if (g.heads != d.heads) {
    return str_cat(need, "model.heads is ", d.heads, " but the generator of hidden size ", g.hidden,
                   " has hidden / 64 = ", g.heads, " heads");
  }
  if (g.ffn != d.ffn) {
    return str_cat(need, "model.ffn is ", d.ffn,
                   " but the generator's FFN is 4 x hidden = ", g.ffn);
  }
  return "";
}

void check_pretrain_options(const ElectraConfig& config, const PretrainOptions& options) {
  config.discriminator.validate("model");
  config.generator().validate("model (generator)");
  ELECTRA_USER_CHECK(options.batch > 0 && options.seq_len > 1, "pretrain: batch ", options.batch,
                     " and seq_len ", options.seq_len, " must be positive");
  ELECTRA_USER_CHECK(options.seq_len <= config.discriminator.max_positions, "pretrain: seq_len ",
                     options.seq_len, " exceeds model.max_positions ",
                     config.discriminator.max_positions);
  ELECTRA_USER_CHECK(options.seq_len <= kMaskingMaxSeqLen, "pretrain: seq_len ", options.seq_len,
                     " exceeds ", kMaskingMaxSeqLen);
  ELECTRA_USER_CHECK(
      options.generator == GeneratorKind::kMlm || objective_wiring(options.objective).generator,
      "generator: unigram: objective ", objective_name(options.objective),
      " has no generator whose samples it could replace");
  ELECTRA_USER_CHECK(
      options.generator_training == GeneratorTraining::kMle ||
          adversarial_applies(options.objective, options.generator),
      "generator_training: adversarial needs the MLM generator and the binary "
      "discriminator (objective electra or electra-15, generator mlm), not objective ",
      objective_name(options.objective), " with generator ",
      generator_kind_name(options.generator));
  ELECTRA_USER_CHECK(
      options.generator_training == GeneratorTraining::kMle || options.temperature == 1.0f,
      "generator_training: adversarial needs masking.temperature 1 (REINFORCE differentiates the "
      "log-probability of the distribution that was sampled), got ",
      options.temperature);
  ELECTRA_USER_CHECK(
      options.training == Training::kJoint ||
          (options.generator_training == GeneratorTraining::kMle &&
           (options.sharing == Sharing::kEmbeddings || options.sharing == Sharing::kNone)),
      "training: two-stage needs generator_training: mle and sharing: embeddings "
      "or none, not ",
      generator_training_name(options.generator_training), " and ", sharing_name(options.sharing));
  const std::string sharing =
      sharing_problem(config, options.sharing, options.objective, options.generator);
  ELECTRA_USER_CHECK(sharing.empty(), "pretrain: ", sharing);
  ELECTRA_CHECK(options.vocab_multiple > 0, "pretrain: vocab_multiple ", options.vocab_multiple);
}

}  // namespace electra
