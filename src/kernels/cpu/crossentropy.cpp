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
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

namespace {

void check_targets(const int* targets, int64_t N, int V) {
  int64_t bad = -1;
  for (int64_t n = 0; n < N && bad < 0; ++n) {
    if (targets[n] < -1 || targets[n] >= V) bad = n;
  }
  CHECK(bad < 0,
        "crossentropy: targets[{}] = {} is outside [0, V={}) and not the ignore index -1; check "
        "the token data against the model's vocab_size",
        bad, bad < 0 ? 0 : targets[bad], V);
}

// log(sum_{v<V} exp(x_v)): max pass, then a vectorized sum of exps (row stays in cache).
float row_lse(const float* x, int V) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int v = 0; v < V; ++v) m = x[v] > m ? x[v] : m;
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int v = 0; v < V; ++v) s += fast_exp(x[v] - m);
  return m + std::log(s);
}

}  // namespace

void CrossentropyForward(float* losses, const float* logits, const int* targets, int64_t N, int V,
                         int Vp) {
  check_targets(targets, N, V);
#pragma omp parallel for schedule(static) if (worth_parallel(N * Vp))
  for (int64_t n = 0; n < N; ++n) {
    const float* x = logits + n * Vp;  // (Vp)
    losses[n] = targets[n] < 0 ? 0.0f : row_lse(x, V) - x[targets[n]];
  }
}

void CrossentropyForwardBackward(float* losses, float* dlogits, const float* logits,
                                 const int* targets, float dloss, int64_t N, int V, int Vp) {
  check_targets(targets, N, V);
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N * Vp))
  for (int64_t n = 0; n < N; ++n) {
    const float* x = logits + n * Vp;  // (Vp), may alias d
    float* d = dlogits + n * Vp;       // (Vp)
    const int y = targets[n];
    if (y < 0) {
      losses[n] = 0.0f;
      std::fill(d, d + Vp, 0.0f);
      continue;
    }
    const float lse = row_lse(x, V);
    const float xy = x[y];
    losses[n] = lse - xy;
#pragma omp simd
    for (int v = 0; v < V; ++v) d[v] = dloss * fast_exp(x[v] - lse);
    d[y] -= dloss;
    for (int v = V; v < Vp; ++v) d[v] = 0.0f;
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
