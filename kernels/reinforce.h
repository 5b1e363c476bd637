// reinforce: the adversarial generator's update (generator_training: adversarial; Clark et al.
// 2020, Appendix F; docs/OBJECTIVES.md): REINFORCE on the discriminator's loss at the generator's
// samples, with a learned baseline, turning the generator's MLM gradient into the policy gradient
// in place.
//
// Shapes: dlogits [M, Vs] (Vs >= V; columns >= V are padding), labels [M] i32 (the originals y),
// samples [M] i32 (x^), weights [M] f32 (1 for a used slot, 0 for an empty one; nothing else),
// token_loss [B * T] (the discriminator's per-token loss, kernels/disc_head.h, with weight 1 at
// every masked position), positions [B, N] i32 (M = B * N), baseline [M] (the baseline's logit
// u = w_b . h_G + c), baseline_grad [M] (may alias baseline: read before written), and per slot
// reward, advantage, log_prob, baseline_loss [M].
//
// On entry dlogits holds softmax_xent's gradient with scale 1 and the same weights:
// w (p - e_y) with p = softmax(z) (kernels/softmax_xent.h). With w = weights[i], the slot's token
// k = (i / N) * T + positions[i], R = token_loss[k], q = exp(-R), s = scale:
//   reward[i]        = w R            the discriminator's loss at the sample: -log P(original)
//                                     for an unchanged sample, -log P(replaced) for a replacement
//                                     (the generator gains when the discriminator is wrong)
//   b                = softplus(-u)   = -log sigmoid(u): the baseline's predicted reward
//   advantage[i]     = w (R - b)
//   baseline_loss[i] = w (q softplus(-u) + (1 - q) softplus(u))   the cross-entropy between
//                      Bernoulli(q) and sigmoid(u): minimal at b = R (in expectation at
//                      b = -log E[exp(-R)])
//   baseline_grad[i] = w s (sigmoid(u) - q)                        d(s baseline_loss) / du
//   p_j              = dlogits[i, j] + w [j == y]                  (recovers the softmax)
//   log_prob[i]      = w log max(p_x^, FLT_MIN)                    log p_G(x^) (finite)
//   dlogits[i, j]   <- s advantage[i] (p_j - [j == x^])  for j < V, 0 for j >= V   (IN PLACE)
// i.e. the gradient of s sum_i (-sg(advantage[i]) log p_G(x^_i) + baseline_loss[i]) with the
// reward and the baseline's input held fixed (no gradient into the discriminator, none into the
// generator's encoder from the baseline). Rows with w = 0 get zeros everywhere (labels and samples
// are not read).
//
// Dtypes: CUDA dlogits and baseline(_grad) f32 or bf16, token_loss and the per-slot outputs f32,
// f32 math. CPU: every float tensor f32 or f64, one dtype. The recovery of p from a bf16 row loses
// up to 2^-8 at the label's column (p_y - 1 is stored); docs/OBJECTIVES.md discusses it.
#pragma once

#include "engine/device_scalar.h"
#include "kernels/dispatch.h"
#include "kernels/softmax_xent.h"

namespace electra {

struct ReinforceParams {
  int64_t vocab = 0;                 // V: valid columns of each row
  DeviceScalar<float> scale = 1.0f;  // e.g. loss_scale / masked slots; a value or device memory
};

// The outputs of one call (every tensor [M]).
struct ReinforceSlots {
  Tensor reward, advantage, log_prob, baseline_loss;
};

struct Reinforce {
  static constexpr const char* kName = "reinforce";
  Out dlogits;
  In labels, samples, weights, token_loss, positions, baseline;
  ReinforceParams params;
  Out baseline_grad;
  ReinforceSlots out;

  void check() const {
    const int64_t m = check_padded_logits(kName, "dlogits", dlogits, params.vocab);
    ELECTRA_CHECK(positions.rank == 2 && positions.numel() == m && m > 0, "reinforce: positions ",
                  positions.str(), " for ", m, " rows");
    check_dtype(positions, DType::I32, "reinforce positions");
    const int64_t batch = positions.dim(0);
    ELECTRA_CHECK(token_loss.numel() > 0 && token_loss.numel() % batch == 0,
                  "reinforce: token_loss ", token_loss.str(), " for a batch of ", batch);
    for (const Tensor* t : std::initializer_list<const Tensor*>{&labels, &samples}) {
      check_tensor(*t, {m}, DType::I32, "reinforce labels/samples");
    }
    check_tensor(weights, {m}, DType::F32, "reinforce weights");
    for (const Tensor* t : std::initializer_list<const Tensor*>{&baseline, &baseline_grad}) {
      ELECTRA_CHECK(t->numel() == m && t->dtype == dlogits.dtype, "reinforce: baseline ", t->str(),
                    " must have ", m, " values of dlogits' dtype");
    }
    for (const Tensor* t : {&out.reward, &out.advantage, &out.log_prob, &out.baseline_loss}) {
      check_tensor(*t, {m}, token_loss.dtype, "reinforce slot output");
    }
  }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
