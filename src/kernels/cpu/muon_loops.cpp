// Muon's and Newton-Schulz's element loops (kernels/cpu/muon_loops.h), plain loops that the compiler
// vectorizes for each CPU target (Highway's foreach_target.h), dispatched at run time; compiled
// with -ffp-contract=off (CMakeLists.txt), so no multiply-add is fused.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/muon_loops.cpp"
#include "kernels/cpu/muon_loops.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace nanogpt::muon_loops::HWY_NAMESPACE {

void Momentum(float* HWY_RESTRICT buf, float* HWY_RESTRICT d, const float* HWY_RESTRICT g,
              int64_t n, float mu, bool nesterov) {
  if (nesterov) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      const float b = mu * buf[j] + g[j];
      buf[j] = b;
      d[j] = g[j] + mu * b;
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      const float b = mu * buf[j] + g[j];
      buf[j] = b;
      d[j] = b;
    }
  }
}

void Update(float* HWY_RESTRICT p, const float* HWY_RESTRICT o, int64_t n, float keep,
            float step) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) p[j] = p[j] * keep - step * o[j];
}

void ScaleInto(float* HWY_RESTRICT x, const float* HWY_RESTRICT m, int64_t n, float s) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] = m[i] * s;
}

void ScaleAdd(float* HWY_RESTRICT x, const float* HWY_RESTRICT y, int64_t n, float a) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] = a * x[i] + y[i];
}

void Combine(float* HWY_RESTRICT out, const float* HWY_RESTRICT u, const float* HWY_RESTRICT v,
             int64_t n, float a, float b) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = a * u[i] + b * v[i];
}

}  // namespace nanogpt::muon_loops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::muon_loops {

HWY_EXPORT(Momentum);
HWY_EXPORT(Update);
HWY_EXPORT(ScaleInto);
HWY_EXPORT(ScaleAdd);
HWY_EXPORT(Combine);

void momentum(float* buf, float* d, const float* g, int64_t n, float mu, bool nesterov) {
  HWY_DYNAMIC_DISPATCH(Momentum)(buf, d, g, n, mu, nesterov);
}
void update(float* p, const float* o, int64_t n, float keep, float step) {
  HWY_DYNAMIC_DISPATCH(Update)(p, o, n, keep, step);
}
void scale_into(float* x, const float* m, int64_t n, float s) {
  HWY_DYNAMIC_DISPATCH(ScaleInto)(x, m, n, s);
}
void scale_add(float* x, const float* y, int64_t n, float a) {
  HWY_DYNAMIC_DISPATCH(ScaleAdd)(x, y, n, a);
}
void combine(float* out, const float* u, const float* v, int64_t n, float a, float b) {
  HWY_DYNAMIC_DISPATCH(Combine)(out, u, v, n, a, b);
}

}  // namespace nanogpt::muon_loops
#endif  // HWY_ONCE
