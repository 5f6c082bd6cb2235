// Fast softmax cross-entropy over the first V of Vp columns, parallel over rows: an online
// max/sum-exp pass, then (fused variant) one pass writing dlogits in place over the logits.
// Compiled for every CPU target (Highway's foreach_target.h; the row loops vectorized by the
// compiler for each) and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/crossentropy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/cpu/crossentropy_row.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

void CrossentropyForward(float* losses, const float* logits, const int* targets, int64_t N, int V,
                         int Vp) {
  check_crossentropy_targets(targets, N, V);
#pragma omp parallel for schedule(static) if (worth_parallel(N * Vp))
  for (int64_t n = 0; n < N; ++n) {
    const float* x = logits + n * Vp;  // (Vp)
    losses[n] = targets[n] < 0 ? 0.0f : row_lse(x, V) - x[targets[n]];
  }
}

void CrossentropyForwardBackward(float* losses, float* dlogits, const float* logits,
                                 const int* targets, float dloss, int64_t N, int V, int Vp) {
  check_crossentropy_targets(targets, N, V);
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N * Vp))
  for (int64_t n = 0; n < N; ++n) {
    // x (Vp) may alias d (Vp)
    crossentropy_row_forward_backward(losses + n, dlogits + n * Vp, logits + n * Vp, targets[n],
                                      dloss, V, Vp);
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(CrossentropyForward);
HWY_EXPORT(CrossentropyForwardBackward);

void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int V,
                          int Vp) {
  HWY_DYNAMIC_DISPATCH(CrossentropyForward)(losses, logits, targets, N, V, Vp);
}

void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                   const int* targets, float dloss, int64_t N, int V, int Vp) {
  HWY_DYNAMIC_DISPATCH(CrossentropyForwardBackward)
  (losses, dlogits, logits, targets, dloss, N, V, Vp);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
