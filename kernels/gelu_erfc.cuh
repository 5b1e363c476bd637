// The exact GELU and its derivative (erfc form, f32), written once for every kernel that applies
// them: the bias-GELU kernels (kernels/gelu.cu) and the fused ones (kernels/ffn_forward.cu,
// ffn_backward.cu), so that the same u gives the same bits in each.
//   Phi(u)   = 0.5 erfc(-u / sqrt 2)    (accurate in the left tail, where 1 + erf would cancel)
//   gelu(u)  = u Phi(u)
//   gelu'(u) = Phi(u) + u phi(u),  phi(u) = exp(-u^2 / 2) / sqrt(2 pi)
#pragma once

namespace electra::cuda::gelu_erfc {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

__device__ __forceinline__ float normal_cdf(float u) {
  return 0.5f * erfcf(-u * kInvSqrt2);
}

__device__ __forceinline__ float gelu(float u) {
  return u * normal_cdf(u);
}

__device__ __forceinline__ float gelu_grad(float u) {
  return normal_cdf(u) + u * expf(-0.5f * u * u) * kInvSqrt2Pi;
}

}  // namespace electra::cuda::gelu_erfc
