// Fast single-query attention against a KV cache (sampling): per head, scores over the t cached
// keys (row_reduce-inl.h's dot), softmax, weighted sum of cached values; heads in parallel when the
// work is large enough.
// Compiled for every CPU target (foreach_target.h) and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_decode.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/row_reduce-inl.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// o (HS) = sum over s < t of p[s] * v[s * ld .. + HS): up to four vectors of o at a time held in
// registers over all s (through memory, each position's stores fed the next one's loads).
void weighted_values(float* o, const float* p, const float* v, int t, int64_t ld, int HS) {
  const hn::ScalableTag<float> d;
  const int N = static_cast<int>(hn::Lanes(d));
  int x0 = 0;
  for (; x0 + 4 * N <= HS; x0 += 4 * N) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (int s = 0; s < t; ++s) {
      const auto pv = hn::Set(d, p[s]);
      const float* vs = v + s * ld + x0;
      a0 = hn::MulAdd(pv, hn::LoadU(d, vs), a0);
      a1 = hn::MulAdd(pv, hn::LoadU(d, vs + N), a1);
      a2 = hn::MulAdd(pv, hn::LoadU(d, vs + 2 * N), a2);
      a3 = hn::MulAdd(pv, hn::LoadU(d, vs + 3 * N), a3);
    }
    hn::StoreU(a0, d, o + x0);
    hn::StoreU(a1, d, o + x0 + N);
    hn::StoreU(a2, d, o + x0 + 2 * N);
    hn::StoreU(a3, d, o + x0 + 3 * N);
  }
  for (; x0 + N <= HS; x0 += N) {
    auto a = hn::Zero(d);
    for (int s = 0; s < t; ++s) a = hn::MulAdd(hn::Set(d, p[s]), hn::LoadU(d, v + s * ld + x0), a);
    hn::StoreU(a, d, o + x0);
  }
  for (int x = x0; x < HS; ++x) {
    float a = 0;
    for (int s = 0; s < t; ++s) a = std::fma(p[s], v[s * ld + x], a);
    o[x] = a;
  }
}

void AttentionDecodeImpl(float* out, const float* q, const float* kcache, const float* vcache,
                         int t, int C, int NH) {
  const int HS = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  const bool parallel = static_cast<int64_t>(t) * C >= (1 << 16);
#pragma omp parallel if (parallel)
  {
    std::vector<float> score(t);
#pragma omp for schedule(static)
    for (int h = 0; h < NH; ++h) {
      const float* qh = q + h * HS;  // (HS)
      float mx = -INFINITY;
      for (int s = 0; s < t; ++s) {
        const float* k = kcache + static_cast<int64_t>(s) * C + h * HS;
        score[s] = row_reduce::dot(qh, k, HS) * scale;
        mx = score[s] > mx ? score[s] : mx;
      }
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int s = 0; s < t; ++s) {
        score[s] = fast_exp(score[s] - mx);
        sum += score[s];
      }
      for (int s = 0; s < t; ++s) score[s] /= sum;  // the probabilities
      weighted_values(out + h * HS, score.data(), vcache + h * HS, t, C, HS);
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(AttentionDecodeImpl);

void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t,
                      int C, int NH) {
  HWY_DYNAMIC_DISPATCH(AttentionDecodeImpl)(out, q, kcache, vcache, t, C, NH);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
