#include "kernels/copy_mlm.h"

namespace electra::cpu {
namespace {

template <class T>
void run(const Tensor& copy_logits, const Tensor& inputs, const Tensor& labels,
         const Tensor& weights, DeviceScalar<float> scale_in, const Tensor& xent_loss,
         const Tensor& dlogits, const Tensor& argmax) {
  const int64_t m = dlogits.dim(0), stride = dlogits.dim(1);
  const float scale = scale_in.get();
  T* c = copy_logits.ptr<T>();
  const int32_t* x = inputs.ptr<int32_t>();
  const int32_t* y = labels.ptr<int32_t>();
  const float* w = weights.ptr<float>();
  T* loss = xent_loss.ptr<T>();
  T* dz = dlogits.ptr<T>();
  int32_t* top = argmax.ptr<int32_t>();
  for (int64_t i = 0; i < m; ++i) {
    const double wi = w[i];
    if (wi == 0) {
      loss[i] = 0;
      c[i] = 0;
      continue;
    }
    T* row = dz + i * stride;
    ELECTRA_CHECK(x[i] >= 0 && x[i] < stride, "copy_mlm: input ", x[i], " of row ", i,
                  " outside the vocabulary");
    // p_j = dz_j / (w scale) + [j == y] (softmax_xent's gradient read back).
    const double unit = wi * scale;
    const double p_input = static_cast<double>(row[x[i]]) / unit + (x[i] == y[i]);
    const double p_top = static_cast<double>(row[top[i]]) / unit + (top[i] == y[i]);
    const double cl = static_cast<double>(c[i]);
    const CopyMlmRow r = copy_mlm_row(cl, -static_cast<double>(loss[i]) / wi, x[i] == y[i]);
    loss[i] = static_cast<T>(wi * r.loss);
    c[i] = static_cast<T>(unit * r.dc);
    top[i] = copy_mlm_prediction(cl, p_input, p_top, x[i], top[i]);
    for (int64_t j = 0; j < stride; ++j) row[j] = static_cast<T>(r.r * static_cast<double>(row[j]));
  }
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void CopyMlm::cpu(Context&) const {
  ELECTRA_CHECK(xent_loss.dtype == dlogits.dtype, "copy_mlm (cpu): xent_loss ", xent_loss.str(),
                " and dlogits ", dlogits.str(), " differ in dtype");
  dispatch_cpu_float(dlogits.dtype, kName, [&](auto zero) {
    using T = decltype(zero);
    cpu::run<T>(copy_logits, inputs, labels, weights, scale, xent_loss, dlogits, argmax);
  });
}

}  // namespace electra
