// Fast dropout with the counter-based mask (element i kept iff hash_uniform(seed, i) >= p, scaled
// by 1/(1-p)); the mask is recomputed in backward, never stored. The loops are plain code that the
// compiler vectorizes (the 64-bit hash has no portable Highway form in 1.0.3), compiled once per
// CPU target by foreach_target.h and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/dropout.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

void DropoutForward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
  if (p == 0) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
    for (int64_t i = 0; i < N; ++i) out[i] = inp[i];
    return;
  }
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
  for (int64_t i = 0; i < N; ++i) out[i] = inp[i] * dropout_keep(seed, i, p, scale);
}

void DropoutBackward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  if (p == 0) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
    for (int64_t i = 0; i < N; ++i) dinp[i] += dout[i];
    return;
  }
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
  for (int64_t i = 0; i < N; ++i) dinp[i] += dout[i] * dropout_keep(seed, i, p, scale);
}

// DropoutBackward into a zeroed dinp without the zeroing: 0.0f + (...) keeps its bits (a dropped
// negative gradient's -0 becomes +0, as when added to the zeroed buffer), and dinp is not read.
void DropoutBackwardOverwrite(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  if (p == 0) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(2 * N))
    for (int64_t i = 0; i < N; ++i) dinp[i] = 0.0f + dout[i];
    return;
  }
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for simd schedule(static) if (worth_parallel(2 * N))
  for (int64_t i = 0; i < N; ++i) dinp[i] = 0.0f + dout[i] * dropout_keep(seed, i, p, scale);
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(DropoutForward);
HWY_EXPORT(DropoutBackward);
HWY_EXPORT(DropoutBackwardOverwrite);

void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(DropoutForward)(out, inp, N, p, seed);
}

void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(DropoutBackward)(dinp, dout, N, p, seed);
}

void dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(DropoutBackwardOverwrite)(dinp, dout, N, p, seed);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
