// The optimizers' element loops (kernels/cpu/optim_elementwise.h), written as plain loops that the compiler
// vectorizes for each CPU target (Highway's foreach_target.h) and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/optim_elementwise.cpp"
#include "kernels/cpu/optim_elementwise.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace nanogpt::optim_loops::HWY_NAMESPACE {

void SgdMomentum(float* HWY_RESTRICT p, const float* HWY_RESTRICT g, float* HWY_RESTRICT b,
                 int64_t n, float lr, float wd, float mu) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * p[i];
    const float bi = b[i] * mu + d;
    b[i] = bi;
    p[i] -= lr * bi;
  }
}

void SgdPlain(float* HWY_RESTRICT p, const float* HWY_RESTRICT g, int64_t n, float lr, float wd) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
}

double SumOfSquares(const float* HWY_RESTRICT g, int64_t n, float unscale) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    const float v = g[i] * unscale;  // what GradScaler's unscale stores
    acc += static_cast<double>(v) * v;
  }
  return acc;
}

void LerpToward(float* HWY_RESTRICT avg, const float* HWY_RESTRICT x, int64_t n, float decay) {
  const float keep = 1.0f - decay;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) avg[i] = decay * avg[i] + keep * x[i];
}

void Scale(float* HWY_RESTRICT g, int64_t n, float scale) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) g[i] *= scale;
}

bool ScaleAndCheckFinite(float* HWY_RESTRICT g, int64_t n, float inv) {
  int bad = 0;
#pragma omp simd reduction(| : bad)
  for (int64_t i = 0; i < n; ++i) {
    const float v = g[i] * inv;
    g[i] = v;
    bad |= !(std::fabs(v) <= 3.4028235e38f);  // inf or nan
  }
  return bad == 0;
}

}  // namespace nanogpt::optim_loops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::optim_loops {

HWY_EXPORT(SgdMomentum);
HWY_EXPORT(SgdPlain);
HWY_EXPORT(SumOfSquares);
HWY_EXPORT(Scale);
HWY_EXPORT(LerpToward);
HWY_EXPORT(ScaleAndCheckFinite);

void sgd_momentum(float* p, const float* g, float* b, int64_t n, float lr, float wd, float mu) {
  HWY_DYNAMIC_DISPATCH(SgdMomentum)(p, g, b, n, lr, wd, mu);
}
void sgd_plain(float* p, const float* g, int64_t n, float lr, float wd) {
  HWY_DYNAMIC_DISPATCH(SgdPlain)(p, g, n, lr, wd);
}
double sum_of_squares(const float* g, int64_t n, float unscale) {
  return HWY_DYNAMIC_DISPATCH(SumOfSquares)(g, n, unscale);
}
void scale(float* g, int64_t n, float scale) { HWY_DYNAMIC_DISPATCH(Scale)(g, n, scale); }
void lerp_toward(float* avg, const float* x, int64_t n, float decay) {
  HWY_DYNAMIC_DISPATCH(LerpToward)(avg, x, n, decay);
}
bool scale_and_check_finite(float* g, int64_t n, float inv) {
  return HWY_DYNAMIC_DISPATCH(ScaleAndCheckFinite)(g, n, inv);
}

}  // namespace nanogpt::optim_loops
#endif  // HWY_ONCE
