#include "models/flops.h"

namespace electra {
namespace {

// The official script's per-element constants.
constexpr double kDropout = 4;    // random number, >=, mask multiply, 1 / (1 - p) multiply
constexpr double kLayerNorm = 5;  // mean, variance (square and sum), bias, scale
constexpr double kGelu = 8;
constexpr double kSoftmax = 5;  // max/subtract, exp, sum, divide
constexpr double kSigmoid = 4;  // negate, exp, add 1, divide
constexpr double kCopyMix = 3;  // 1 - D, (1 - D) p(x), + D [v = x]

}  // namespace

double encoder_block_flops(const EncoderConfig& enc, int64_t seq_len) {
  const double h = enc.hidden, i = enc.ffn, a = enc.heads, s = static_cast<double>(seq_len);
  const double attention = 3 * 2 * h * h                                  // Q, K, V projections
                           + 3 * h                                        // their biases
                           + 2 * h * s                                    // scores q . k
                           + kSoftmax * s * a + kDropout * s * a + s * a  // softmax, dropout, scale
                           + 2 * h * s                                    // weighted sum of values
                           + 2 * h * h + h                                // output projection, bias
                           + kDropout * h + h                             // dropout, residual
                           + kLayerNorm;        // the official script's constant (not 5h)
  const double ffn = 2 * h * i + kGelu * i + i  // intermediate, GELU, bias
                     + 2 * h * i + h            // output, bias
                     + kDropout * h + h + kLayerNorm * h;
  return (attention + ffn) * s;
}

double embedding_flops(const EncoderConfig& enc, int64_t seq_len) {
  const double e = enc.embedding_size, h = enc.hidden, v = enc.vocab_size;
  const double s = static_cast<double>(seq_len);
  double per_token = 2 * e * v                            // dense word lookup
                     + 2 * e * (s + enc.type_vocab_size)  // dense position and segment lookups
                     + 2 * e + kLayerNorm * e + kDropout * e;
  if (enc.has_projection()) per_token += 2 * h * e + h;  // embeddings_project E -> H
  return per_token * s;
}

double mlm_head_flops(const EncoderConfig& enc, double masked_per_seq) {
  const double e = enc.embedding_size, h = enc.hidden, v = enc.vocab_size;
  const double per_position = 2 * e * v        // logits against the tied word table
                              + 2 * h * e + e  // dense H -> E and bias
                              + kGelu * e + kLayerNorm * e + kSoftmax * v + 2 * v;
  return per_position * masked_per_seq;
}

double disc_head_flops(const EncoderConfig& enc, int64_t seq_len) {
  const double h = enc.hidden;
  return (2 * h * h + h + kGelu * h + 2 * h) * static_cast<double>(seq_len);
}

double copy_flops(int64_t seq_len) {
  return (kSigmoid + kCopyMix) * static_cast<double>(seq_len);
}

double adversarial_flops(const EncoderConfig& enc, double masked_per_seq) {
  const double h = enc.hidden, v = enc.vocab_size;
  return (2 * h + 1 + kSigmoid + 2 * v) * masked_per_seq;
}

StepFlops step_flops(const ElectraConfig& cfg, int64_t batch, int64_t seq_len,
                     double masked_per_seq, Objective objective, GeneratorKind generator,
                     GeneratorTraining training) {
  const ObjectiveWiring wiring = objective_wiring(objective);
  const EncoderConfig& d = cfg.discriminator;
  const EncoderConfig g = cfg.generator();
  const double b = static_cast<double>(batch);
  StepFlops f;
  if (wiring.generator && generator == GeneratorKind::kMlm) {
    f.generator_forward = b * (g.layers * encoder_block_flops(g, seq_len) +
                               embedding_flops(g, seq_len) + mlm_head_flops(g, masked_per_seq));
    if (training == GeneratorTraining::kAdversarial) {
      f.generator_forward += b * adversarial_flops(g, masked_per_seq);
    }
  }
  double heads = 0;
  if (wiring.mlm_head) {
    heads += wiring.all_tokens
                 ? mlm_head_flops(d, static_cast<double>(seq_len)) + copy_flops(seq_len)
                 : mlm_head_flops(d, masked_per_seq);
  }
  if (wiring.binary_head) heads += disc_head_flops(d, seq_len);
  f.discriminator_forward =
      b * (d.layers * encoder_block_flops(d, seq_len) + embedding_flops(d, seq_len) + heads);
  return f;
}

StepFlops phase_flops(StepFlops joint, TrainingPhase phase) {
  if (phase == TrainingPhase::kGenerator) joint.discriminator_forward = 0;
  if (phase == TrainingPhase::kDiscriminator) joint.generator_trained = false;
  return joint;
}

double train_flops(const ElectraConfig& cfg, int64_t batch, int64_t seq_len, int64_t steps,
                   Objective objective) {
  const double masked = kOfficialOutputFrac * static_cast<double>(seq_len);
  return static_cast<double>(steps) * step_flops(cfg, batch, seq_len, masked, objective).total();
}

}  // namespace electra
