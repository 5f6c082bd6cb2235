// Fast GELU (tanh approximation and exact erf form), forward and accumulating backward, with the
// vectorizable exp/tanh/erf of vec_math.h.

#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

namespace nanogpt::cpu {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
constexpr float kCubic = 0.044715f;
}  // namespace

void gelu_forward(float* out, const float* inp, int64_t N, GeluKind kind) {
  if (kind == GeluKind::kTanh) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const float x = inp[i];
      out[i] = 0.5f * x * (1.0f + fast_tanh(kSqrt2OverPi * (x + kCubic * x * x * x)));
    }
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const float x = inp[i];
      out[i] = 0.5f * x * (1.0f + fast_erf(x * kInvSqrt2));
    }
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, GeluKind kind) {
  if (kind == GeluKind::kTanh) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const float x = inp[i];
      const float th = fast_tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
      const float g = 0.5f * (1.0f + th) +
                      0.5f * x * (1.0f - th * th) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
      dinp[i] += dout[i] * g;
    }
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const float x = inp[i];
      const float g =
          0.5f * (1.0f + fast_erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * fast_exp(-0.5f * x * x);
      dinp[i] += dout[i] * g;
    }
  }
}

}  // namespace nanogpt::cpu
