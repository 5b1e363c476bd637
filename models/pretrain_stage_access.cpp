// ElectraPretrainer's stages one by one, for tests and tools (models/pretrainer.h).
#include "models/pretrain_network.h"

namespace electra {

const Tensor& ElectraPretrainer::generator_forward(Context& ctx, const Corruption& c,
                                                   const DropoutPass& pass) {
  ELECTRA_CHECK(network_->generator != nullptr, "generator_forward: no MLM generator");
  return network_->generator->forward_model(ctx, c, pass);
}

void ElectraPretrainer::generator_loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  normalise(ctx, c);
  if (network_->unigram) {
    network_->unigram->forward(ctx, c, saved);
    return;
  }
  ELECTRA_CHECK(network_->generator != nullptr, "generator_loss: no replacement source");
  network_->generator->loss(ctx, c, saved);
}

Tensor ElectraPretrainer::discriminator_forward(Context& ctx, const Corruption& c,
                                                const Tensor& samples, const DropoutPass& pass) {
  return network_->discriminator->forward_model(ctx, c, samples, pass);
}

void ElectraPretrainer::discriminator_loss(Context& ctx, const Corruption& c,
                                           ForwardContext& saved) {
  ElectraObjective* electra = network_->electra();
  ELECTRA_CHECK(electra != nullptr, "discriminator_loss: objective ",
                objective_name(options_.objective), " has no binary loss");
  electra->loss(ctx, c, saved);
}

void ElectraPretrainer::mlm_loss(Context& ctx, const Corruption& c, ForwardContext& saved) {
  MlmObjective* mlm = network_->mlm();
  ELECTRA_CHECK(mlm != nullptr, "mlm_loss: objective ", objective_name(options_.objective),
                " has no MLM head");
  mlm->loss(ctx, c, saved);
}

void ElectraPretrainer::adversarial_loss(Context& ctx, const Corruption& c,
                                         const ForwardContext& saved) {
  ELECTRA_CHECK(network_->adversary != nullptr, "adversarial_loss: not adversarial");
  ForwardContext rewritten = saved;  // the stage rewrites the generator's dlogits in place
  network_->adversary->forward(ctx, c, rewritten);
}

const ReinforceSlots& ElectraPretrainer::adversarial_slots() const {
  ELECTRA_CHECK(network_->adversary != nullptr, "adversarial_slots: not adversarial");
  return network_->adversary->slots();
}

const Tensor& ElectraPretrainer::discriminator_token_loss() const {
  const ElectraObjective* electra = network_->electra();
  ELECTRA_CHECK(electra != nullptr, "discriminator_token_loss: no binary objective");
  return electra->token_loss();
}

const Tensor& ElectraPretrainer::labels() const {
  return network_->discriminator->labels();
}

}  // namespace electra
