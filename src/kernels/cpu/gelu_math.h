// The MLP activation of one float and its derivative: GELU (tanh approximation and exact erf form)
// and ReLU² (relu(x)^2, derivative 2 relu(x)), with the
// vectorizable exp/tanh/erf of vec_math.h: the element code of the float32 GELU kernels (gelu.cpp)
// and of the 16-bit ones that widen a block at a time (lowp_elementwise.cpp), so both compute the
// same floats.
#pragma once

#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

namespace nanogpt::cpu::gelu_math {

// Every function here is always inlined: a dispatched kernel (gelu.cpp, compiled per CPU target)
// must get this code compiled for its own target, never an out-of-line copy made for another.

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
constexpr float kCubic = 0.044715f;

[[gnu::always_inline]] inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + fast_tanh(kSqrt2OverPi * (x + kCubic * x * x * x)));
}
[[gnu::always_inline]] inline float gelu_erf(float x) {
  return 0.5f * x * (1.0f + fast_erf(x * kInvSqrt2));
}

// d gelu / dx.
[[gnu::always_inline]] inline float gelu_tanh_grad(float x) {
  const float th = fast_tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
  return 0.5f * (1.0f + th) +
         0.5f * x * (1.0f - th * th) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
}
[[gnu::always_inline]] inline float gelu_erf_grad(float x) {
  return 0.5f * (1.0f + fast_erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * fast_exp(-0.5f * x * x);
}

// out (n) = gelu(inp); dinp (n) += dout * gelu'(inp) (= with kAccumulate false). Serial: the
// callers parallelize.
[[gnu::always_inline]] inline void forward_serial(float* out, const float* inp, int64_t n,
                                                  MlpActivation kind) {
  if (kind == MlpActivation::kRelu2) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float r = inp[i] > 0.0f ? inp[i] : 0.0f;
      out[i] = r * r;
    }
  } else if (kind == MlpActivation::kTanh) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = gelu_tanh(inp[i]);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = gelu_erf(inp[i]);
  }
}
template <bool kAccumulate = true>
[[gnu::always_inline]] inline void backward_serial(float* dinp, const float* inp, const float* dout,
                                                   int64_t n, MlpActivation kind) {
  if (kind == MlpActivation::kRelu2) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float g = dout[i] * (inp[i] > 0.0f ? 2.0f * inp[i] : 0.0f);
      dinp[i] = kAccumulate ? dinp[i] + g : g;
    }
  } else if (kind == MlpActivation::kTanh) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float g = dout[i] * gelu_tanh_grad(inp[i]);
      dinp[i] = kAccumulate ? dinp[i] + g : g;
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float g = dout[i] * gelu_erf_grad(inp[i]);
      dinp[i] = kAccumulate ? dinp[i] + g : g;
    }
  }
}

}  // namespace nanogpt::cpu::gelu_math
