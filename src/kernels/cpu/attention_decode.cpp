// Fast single-query attention against a KV cache (sampling): per head, scores over the t cached
// keys, softmax, weighted sum of cached values; heads in parallel when the work is large enough.
// Compiled for every CPU target (foreach_target.h) and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_decode.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

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
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int x = 0; x < HS; ++x) dot += qh[x] * k[x];
        score[s] = dot * scale;
        mx = score[s] > mx ? score[s] : mx;
      }
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int s = 0; s < t; ++s) {
        score[s] = fast_exp(score[s] - mx);
        sum += score[s];
      }
      float* o = out + h * HS;  // (HS)
      std::fill(o, o + HS, 0.0f);
      for (int s = 0; s < t; ++s) {
        const float p = score[s] / sum;
        const float* v = vcache + static_cast<int64_t>(s) * C + h * HS;
#pragma omp simd
        for (int x = 0; x < HS; ++x) o[x] += p * v[x];
      }
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
