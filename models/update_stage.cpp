#include "models/update_stage.h"

namespace electra {

UpdateInputs::UpdateInputs(ModelBuilder& b, int64_t batch_, int64_t seq_len_, int64_t slots_,
                           int32_t vocab_)
    : batch(batch_), seq_len(seq_len_), slots(slots_), vocab(vocab_) {
  input = b.activation(DType::I32, {kPlanes, batch, seq_len});
  auto plane = [&](int k, DType dtype) {  // planning: a view without memory
    void* data = input.data == nullptr ? nullptr : input.ptr<int32_t>() + k * tokens();
    return Tensor::view_of(data, dtype, input.device, {batch, seq_len});
  };
  ids = plane(0, DType::I32);
  segment_ids = plane(1, DType::I32);
  mask = plane(2, DType::I32);
  token_weights = plane(3, DType::F32).reshape({tokens()});
  scalars = b.activation(DType::I32, {kStepScalarWords});
}

RngStream UpdateInputs::rng(Context& ctx, RngPurpose purpose) const {
  RngStream stream = ctx.rng(purpose, 0);
  stream.step_at = micro_step_at(scalars);
  return stream;
}

void UpdateStage::backward(Context& ctx, const ForwardContext& /*saved*/,
                           const GradientsReady& ready) {
  report(ctx, ready, span_);
}

}  // namespace electra
