#include "models/linear_stack.h"

namespace electra {
namespace {

// A flat view from views[0] to the end of views.back() (consecutive layers' parameter at
// `stride` elements): what a batched GEMM or a grouped BiasGrad addresses with offsets.
Tensor span_of(const std::vector<Tensor>& views, int64_t stride) {
  const Tensor& first = views.front();
  const int64_t count = static_cast<int64_t>(views.size());
  return Tensor::view_of(first.data, first.dtype, first.device,
                         {(count - 1) * stride + first.numel()});
}

}  // namespace

int64_t param_stride(const std::vector<Tensor>& views, const char* what) {
  ELECTRA_CHECK(!views.empty(), "param_stride: no views of ", what);
  if (views.size() < 2 || views[0].data == nullptr) return 0;
  const int64_t size = static_cast<int64_t>(dtype_size(views[0].dtype));
  const auto at = [&](size_t l) { return static_cast<const char*>(views[l].data); };
  const int64_t bytes = at(1) - at(0);
  ELECTRA_CHECK(bytes >= views[0].numel() * size && bytes % size == 0, "internal error: ", what,
                " of layer 1 is not after layer 0's (", bytes,
                " bytes apart): the layers' parameters must be declared identically, one layer "
                "after the other");
  for (size_t l = 1; l < views.size(); ++l) {
    ELECTRA_CHECK(at(l) - at(l - 1) == bytes && views[l].numel() == views[0].numel(),
                  "internal error: ", what, " of layer ", l, " is ", at(l) - at(l - 1),
                  " bytes after layer ", l - 1, "'s, not ", bytes,
                  ": the layers' parameters must be at a fixed stride for the batched weight "
                  "gradients (models/linear_stack.h)");
  }
  return bytes / size;
}

LinearStack::LinearStack(const std::vector<const Linear*>& layers, const Tensor& inputs,
                         const Tensor& grads, bool bias, const char* what)
    : layers_(static_cast<int64_t>(layers.size())),
      group_(grads.dim(0)),
      rows_(inputs.dim(1)),
      in_(inputs.dim(2)),
      out_(grads.dim(2)),
      inputs_(inputs),
      grads_(grads) {
  ELECTRA_CHECK(inputs.rank == 3 && grads.rank == 3 && inputs.dim(0) == layers_ &&
                    grads.dim(1) == rows_ && group_ >= 1 && group_ <= layers_,
                "LinearStack (", what, "): inputs ", inputs.str(), " and output gradients ",
                grads.str(), " for ", layers_, " layers");
  std::vector<Tensor> weights, compute, biases;
  for (const Linear* layer : layers) {
    weights.push_back(layer->weight().grad);
    compute.push_back(layer->weight().compute);
    biases.push_back(layer->bias().grad);
  }
  check_shape(weights[0], {out_, in_}, what);
  weight_stride_ = param_stride(weights, what);
  // The values share the gradients' layout; the compute copy is checked too, since the dX GEMMs
  // read it (a layout that held for the gradients alone would be a bug elsewhere).
  param_stride(compute, what);
  weight_grads_ = span_of(weights, weight_stride_);
  if (bias) {
    check_shape(biases[0], {out_}, what);
    bias_stride_ = param_stride(biases, what);
    bias_grads_ = span_of(biases, bias_stride_);
  }
}

void LinearStack::backward_weights(Context& ctx, int64_t first, int64_t count) const {
  const int64_t slot = first % group_;
  ELECTRA_CHECK(first >= 0 && count >= 1 && first + count <= layers_ && slot + count <= group_,
                "LinearStack: layers [", first, ", ", first + count, ") of ", layers_,
                " in groups of ", group_);
  const MatrixBatch dy{grads_, slot * rows_ * out_, rows_, out_, out_, rows_ * out_};
  const MatrixBatch x{inputs_, first * rows_ * in_, rows_, in_, in_, rows_ * in_};
  const MatrixBatch dw{weight_grads_, first * weight_stride_, out_, in_, in_, weight_stride_};
  matmul_batched(ctx, dy, true, x, false, dw, count, 1, 1);
  if (bias_grads_.data == nullptr) return;
  const Tensor dy_slots = grads_.rows(slot, slot + count);
  const Tensor db =
      bias_grads_.rows(first * bias_stride_, (first + count - 1) * bias_stride_ + out_);
  run_op(ctx, BiasGrad{.dy = dy_slots, .db = Out(db), .groups = count, .db_stride = bias_stride_});
}

}  // namespace electra
