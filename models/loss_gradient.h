// The gradient a loss hands to a model's backward: d loss / d logits, passed explicitly.
//
// The loss ops (kernels/softmax_xent.h, disc_head.h, copy_mlm.h, reinforce.h) write dz over z in
// place, so the gradient usually IS the logits buffer; the loss's caller says so once, by handing
// that buffer on as the gradient. A backward never reads its logits as a gradient by itself: an
// unset gradient means that no loss ran, and the backward refuses it (a backward without its loss
// would otherwise back-propagate the logits as if they were gradients).
#pragma once

#include "engine/error.h"
#include "engine/tensor.h"

namespace electra {

// Refuses (Error naming `what`) a gradient `dz` that is unset or does not match the logits `z`
// it is the gradient of (same element count and dtype; the shape may be a reshape of z's).
inline void check_loss_gradient(const Tensor& dz, const Tensor& z, const char* what) {
  ELECTRA_CHECK(dz.data != nullptr, what,
                ": backward without a gradient of the logits (the loss did not run)");
  ELECTRA_CHECK(dz.numel() == z.numel() && dz.dtype == z.dtype && dz.device == z.device, what,
                ": the gradient ", dz.str(), " does not match the logits ", z.str());
}

}  // namespace electra
