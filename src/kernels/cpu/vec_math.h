// Vectorizable float math for the cpu kernels (plain inline functions the compiler turns into
// SIMD inside `omp simd` loops; libm calls would stay scalar): exp, tanh, erf, plus the dropout
// keep test. Accuracy is stated per function; tests derive their tolerances from it. (The
// attention softmax's vector 2^x is Exp2 in attention_tiles-inl.h, per CPU target.)
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/rng.h"

namespace nanogpt::cpu {

// Always inlined: the dispatched kernels (compiled per CPU target) must get this code compiled for
// their own target, never an out-of-line copy made for another.

// e^x, relative error <= 2 ulp with FMA, 2.1 ulp without (Cody-Waite reduction, degree-6 Taylor
// polynomial on |r| <= ln2/2).
// x is clamped to [-87.3, 88.3]: below, the result is ~1e-38 (not 0; callers that need an exact 0
// mask explicitly), above, ~2e38 (finite).
[[gnu::always_inline]] inline float fast_exp(float x) {
  // Written without floor/fmin/fmax: GCC vectorizes those only under -fno-trapping-math /
  // -ffinite-math-only, which the build does not set; compares and the round-to-nearest
  // 1.5*2^23 trick vectorize everywhere.
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting rounds to integer
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  float r = x - n * 0.693145751953125f;    // ln2 high part (exact in float)
  r = r - n * 1.42860682030941723212e-6f;  // ln2 low part
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 127]
  return p * std::bit_cast<float>(bits);
}

// tanh(x) = 1 - 2 / (1 + e^{2x}); absolute error <= ~3 ulp of 1.
[[gnu::always_inline]] inline float fast_tanh(float x) {
  return 1.0f - 2.0f / (1.0f + fast_exp(2.0f * x));
}

// erf(x) by Abramowitz & Stegun 7.1.26: absolute error <= 1.5e-7 (plus float rounding).
[[gnu::always_inline]] inline float fast_erf(float x) {
  const float ax = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float y = 1.0f - p * t * fast_exp(-ax * ax);
  return std::copysign(y, x);
}

// Dropout multiplier for element `index`: `scale` if hash_uniform(seed, index) >= p, else 0.
[[gnu::always_inline]] inline float dropout_keep(uint64_t seed, uint64_t index, float p,
                                                 float scale) {
  return hash_uniform(seed, index) >= p ? scale : 0.0f;
}

}  // namespace nanogpt::cpu
