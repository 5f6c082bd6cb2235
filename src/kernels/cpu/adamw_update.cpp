// AdamW's element update (kernels/cpu/adamw_update.h) in Highway vectors, one copy per CPU target
// (foreach_target.h), dispatched at run time. Results do not depend on how a tensor is sliced.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/adamw_update.cpp"
#include "kernels/cpu/adamw_update.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kFused: the gradient is used as GradTransform says (the plain update never writes g).
template <bool kFused>
HWY_INLINE void AdamwUpdate(float* p, float* g, float* m, float* v, int64_t n,
                            const AdamWConstants& k, float keep_f, float step_f,
                            const GradTransform& x) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto b1 = hn::Set(d, k.b1), omb1 = hn::Set(d, k.one_minus_b1);
  const auto b2 = hn::Set(d, k.b2), omb2 = hn::Set(d, k.one_minus_b2);
  const auto bc2 = hn::Set(d, k.bc2_sqrt), eps = hn::Set(d, k.eps);
  const auto keep = hn::Set(d, keep_f), step = hn::Set(d, step_f);
  const auto unscale = hn::Set(d, x.unscale), clip = hn::Set(d, x.clip);
  for (int64_t i = 0; i < n; i += N) {
    const auto mask = hn::FirstN(d, static_cast<size_t>(std::min(N, n - i)));
    auto gi = hn::MaskedLoad(mask, d, g + i);
    if constexpr (kFused) {
      gi = hn::Mul(hn::Mul(gi, unscale), clip);
      if (x.zero) hn::BlendedStore(hn::Zero(d), mask, d, g + i);
    }
    const auto mi = hn::MulAdd(omb1, gi, hn::Mul(hn::MaskedLoad(mask, d, m + i), b1));
    const auto vi = hn::MulAdd(omb2, hn::Mul(gi, gi), hn::Mul(hn::MaskedLoad(mask, d, v + i), b2));
    hn::BlendedStore(mi, mask, d, m + i);
    hn::BlendedStore(vi, mask, d, v + i);
    const auto denom = hn::Add(hn::Div(hn::Sqrt(vi), bc2), eps);
    const auto pi = hn::Mul(hn::MaskedLoad(mask, d, p + i), keep);
    hn::BlendedStore(hn::NegMulAdd(step, hn::Div(mi, denom), pi), mask, d, p + i);
  }
}

void AdamwUpdatePlain(float* p, const float* g, float* m, float* v, int64_t n,
                      const AdamWConstants& k, float keep, float step) {
  AdamwUpdate<false>(p, const_cast<float*>(g), m, v, n, k, keep, step,
                     GradTransform{});  // g only read
}

void AdamwUpdateFused(float* p, float* g, float* m, float* v, int64_t n, const AdamWConstants& k,
                      float keep, float step, const GradTransform& x) {
  AdamwUpdate<true>(p, g, m, v, n, k, keep, step, x);
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(AdamwUpdatePlain);
HWY_EXPORT(AdamwUpdateFused);

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWConstants& k,
                  float keep, float step) {
  HWY_DYNAMIC_DISPATCH(AdamwUpdatePlain)(p, g, m, v, n, k, keep, step);
}

void adamw_update_fused(float* p, float* g, float* m, float* v, int64_t n,
                        const AdamWConstants& k, float keep, float step, const GradTransform& x) {
  HWY_DYNAMIC_DISPATCH(AdamwUpdateFused)(p, g, m, v, n, k, keep, step, x);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
