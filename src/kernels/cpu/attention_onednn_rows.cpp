// The oneDNN attention's row work (attention_onednn_rows.h), compiled for every CPU target
// (Highway's foreach_target.h; the row loops are vectorized by the compiler for each: fast_exp,
// the dropout hash and the bf16 rounding are plain inline code) and dispatched at run time.
#include "kernels/cpu/fixed_width_targets.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_onednn_rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/attention_onednn_rows.h"
#include "kernels/cpu/vec_math.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace {

// float -> bf16 bits, round to nearest even (finite inputs: the rows hold no NaN).
[[gnu::always_inline]] inline uint16_t to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// The row's mask index of key 0 (attention_dims.h's mask_index).
inline uint64_t row_index(const AttentionRowParams& a, int t) {
  return ((static_cast<uint64_t>(a.b) * a.NH + a.h) * a.T + t) * a.T;
}

}  // namespace

void OnednnSoftmaxRows(const float* s, uint16_t* p, int64_t ld, float* m, float* l, int nq,
                       int kend, int i0, const AttentionRowParams& a) {
  const float scale = a.scale, prob = a.p, keep_scale = a.keep_scale;
  const uint64_t seed = a.seed;
  for (int r = 0; r < nq; ++r) {
    const int t = i0 + r, nv = t + 1;  // keys 0..t
    const float* srow = s + r * ld;
    uint16_t* prow = p + r * ld;
    float mx = -INFINITY;
    for (int j = 0; j < nv; ++j) mx = srow[j] > mx ? srow[j] : mx;
    const float mr = mx * scale;
    float sum = 0.0f;
    if (prob > 0.0f) {
      const uint64_t base = row_index(a, t);
#pragma omp simd reduction(+ : sum)
      for (int j = 0; j < nv; ++j) {
        const float e = fast_exp(srow[j] * scale - mr);
        sum += e;
        prow[j] = to_bf16(e * dropout_keep(seed, base + j, prob, keep_scale));
      }
    } else {
#pragma omp simd reduction(+ : sum)
      for (int j = 0; j < nv; ++j) {
        const float e = fast_exp(srow[j] * scale - mr);
        sum += e;
        prow[j] = to_bf16(e);
      }
    }
    for (int j = nv; j < kend; ++j) prow[j] = 0;
    m[r] = mr;
    l[r] = sum;
  }
}

void OnednnBackwardRows(const float* s, const float* dp, int64_t ld, uint16_t* pd, uint16_t* ds,
                        const float* lse, const float* delta, int nq, int kend, int i0,
                        const AttentionRowParams& a) {
  const float scale = a.scale, prob = a.p, keep_scale = a.keep_scale;
  const uint64_t seed = a.seed;
  for (int r = 0; r < nq; ++r) {
    const int t = i0 + r, nv = t + 1;
    const float* srow = s + r * ld;
    const float* dprow = dp + r * ld;
    uint16_t* pdrow = pd + r * ld;
    uint16_t* dsrow = ds + r * ld;
    const float lt = lse[t], dt = delta[t];
    if (prob > 0.0f) {
      const uint64_t base = row_index(a, t);
#pragma omp simd
      for (int j = 0; j < nv; ++j) {
        const float pr = fast_exp(srow[j] * scale - lt);
        const float mk = dropout_keep(seed, base + j, prob, keep_scale);
        pdrow[j] = to_bf16(pr * mk);
        dsrow[j] = to_bf16(pr * (dprow[j] * mk - dt) * scale);
      }
    } else {
#pragma omp simd
      for (int j = 0; j < nv; ++j) {
        const float pr = fast_exp(srow[j] * scale - lt);
        pdrow[j] = to_bf16(pr);
        dsrow[j] = to_bf16(pr * (dprow[j] - dt) * scale);
      }
    }
    for (int j = nv; j < kend; ++j) {
      pdrow[j] = 0;
      dsrow[j] = 0;
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(OnednnSoftmaxRows);
HWY_EXPORT(OnednnBackwardRows);

void onednn_softmax_rows(const float* s, uint16_t* p, int64_t ld, float* m, float* l, int nq,
                         int kend, int i0, const AttentionRowParams& a) {
  HWY_DYNAMIC_DISPATCH(OnednnSoftmaxRows)(s, p, ld, m, l, nq, kend, i0, a);
}

void onednn_backward_rows(const float* s, const float* dp, int64_t ld, uint16_t* pd, uint16_t* ds,
                          const float* lse, const float* delta, int nq, int kend, int i0,
                          const AttentionRowParams& a) {
  HWY_DYNAMIC_DISPATCH(OnednnBackwardRows)(s, dp, ld, pd, ds, lse, delta, nq, kend, i0, a);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
