// Per-target element spans shared by the dispatched elementwise kernels (residual.cpp,
// encoder.cpp): out = a + b, and da += g, db += g, in Highway vectors with a scalar tail. Included
// inside a kernel's HWY_NAMESPACE region once per target (Highway's per-target include guard).
#if defined(NANOGPT_KERNELS_CPU_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NANOGPT_KERNELS_CPU_ELEMENTWISE_INL_H_
#undef NANOGPT_KERNELS_CPU_ELEMENTWISE_INL_H_
#else
#define NANOGPT_KERNELS_CPU_ELEMENTWISE_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out (n) = a + b. Serial: callers split the work.
inline void add_span(float* HWY_RESTRICT out, const float* HWY_RESTRICT a,
                     const float* HWY_RESTRICT b, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// da (n) += g, db (n) += g. Serial.
inline void accumulate_twice_span(float* HWY_RESTRICT da, float* HWY_RESTRICT db,
                                  const float* HWY_RESTRICT g, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto gv = hn::LoadU(d, g + i);
    hn::StoreU(hn::Add(hn::LoadU(d, da + i), gv), d, da + i);
    hn::StoreU(hn::Add(hn::LoadU(d, db + i), gv), d, db + i);
  }
  for (; i < n; ++i) {
    da[i] += g[i];
    db[i] += g[i];
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
