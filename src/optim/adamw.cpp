// AdamW's fused update: one pass per tensor inside one OpenMP region, each thread updating a
// contiguous slice. step_fused (fused=True) also unscales and clips the gradient on the fly,
// zeroes it and rounds the updated params into the 16-bit weight copy, in the same pass. AVX-512 path with masked tails (GCC will not vectorize std::sqrt without
// -fno-math-errno), scalar fallback elsewhere; results do not depend on the thread count.
#include "optim/adamw.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kernels/cpu/convert.h"  // narrow: the rounding of cpu::convert, one block at a time

namespace nanogpt {

struct AdamWScalars {
  float b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, keep, step_size;
};

namespace {

// The fused step's gradient transform: g' = (g * unscale) * clip, and g = 0 afterwards if zero.
struct GradTransform {
  float unscale = 1.0f, clip = 1.0f;
  bool zero = false;
};

// p, g, m, v: (n) slices of one tensor. kFused: the gradient is used as GradTransform says (the
// plain step never writes g).
template <bool kFused>
void adamw_update(float* p, float* g, float* m, float* v, int64_t n, const AdamWScalars& k,
                  const GradTransform& x = {}) {
#if defined(__AVX512F__)
  const __m512 b1 = _mm512_set1_ps(k.b1), omb1 = _mm512_set1_ps(k.one_minus_b1);
  const __m512 b2 = _mm512_set1_ps(k.b2), omb2 = _mm512_set1_ps(k.one_minus_b2);
  const __m512 bc2 = _mm512_set1_ps(k.bc2_sqrt), eps = _mm512_set1_ps(k.eps);
  const __m512 keep = _mm512_set1_ps(k.keep), step = _mm512_set1_ps(k.step_size);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask =
        n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 gi = _mm512_maskz_loadu_ps(mask, g + i);
    if constexpr (kFused) {
      gi = _mm512_mul_ps(_mm512_mul_ps(gi, _mm512_set1_ps(x.unscale)), _mm512_set1_ps(x.clip));
      if (x.zero) _mm512_mask_storeu_ps(g + i, mask, _mm512_setzero_ps());
    }
    const __m512 mi =
        _mm512_fmadd_ps(omb1, gi, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, m + i), b1));
    const __m512 vi = _mm512_fmadd_ps(omb2, _mm512_mul_ps(gi, gi),
                                      _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, v + i), b2));
    _mm512_mask_storeu_ps(m + i, mask, mi);
    _mm512_mask_storeu_ps(v + i, mask, vi);
    const __m512 denom = _mm512_add_ps(
        _mm512_div_ps(_mm512_maskz_sqrt_ps(static_cast<__mmask16>(0xFFFF), vi), bc2), eps);
    const __m512 pi = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, p + i), keep);
    _mm512_mask_storeu_ps(p + i, mask, _mm512_fnmadd_ps(step, _mm512_div_ps(mi, denom), pi));
  }
#else
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    if constexpr (kFused) {
      gi = (gi * x.unscale) * x.clip;
      if (x.zero) g[i] = 0.0f;
    }
    const float mi = m[i] * k.b1 + k.one_minus_b1 * gi;
    const float vi = v[i] * k.b2 + k.one_minus_b2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / k.bc2_sqrt + k.eps;
    p[i] = p[i] * k.keep - k.step_size * (mi / denom);
  }
#endif
}

// This thread's slice [begin, end) of a tensor of n elements, in multiples of 16 elements: the
// same slices in step() and step_fused(), whatever the thread count does to their edges.
std::pair<int64_t, int64_t> thread_slice(int64_t n, int64_t threads, int64_t tid) {
  const int64_t chunk = ((n + threads - 1) / threads + 15) / 16 * 16;
  const int64_t begin = std::min(n, tid * chunk);
  return {begin, std::min(n, begin + chunk)};
}

// In parallel, for every tensor of `specs`: body(k, offset, n) on this thread's slice of it, with
// k.keep the tensor's weight-decay factor (decay_factor, or 1 for tensors without decay).
template <class Body>
void for_each_thread_slice(const std::vector<ParamSpec>& specs, AdamWScalars k,
                           float decay_factor, Body body) {
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    AdamWScalars local = k;
    for (const auto& s : specs) {
      local.keep = s.decay ? decay_factor : 1.0f;
      const auto [begin, end] = thread_slice(s.numel, nt, tid);
      body(local, s.offset + begin, end - begin);
    }
  }
}

}  // namespace

AdamW::AdamW(const ParamTable& table, double beta1, double beta2, double weight_decay, double eps,
             MemoryTracker* tracker)
    : table_(table),
      beta1_(beta1),
      beta2_(beta2),
      weight_decay_(weight_decay),
      eps_(eps),
      m_(static_cast<size_t>(table.total_numel()), tracker),
      v_(static_cast<size_t>(table.total_numel()), tracker) {}

AdamWScalars AdamW::scalars(double lr) {
  const int64_t t = ++steps_;
  AdamWScalars k{};
  k.b1 = static_cast<float>(beta1_);
  k.one_minus_b1 = static_cast<float>(1.0 - beta1_);
  k.b2 = static_cast<float>(beta2_);
  k.one_minus_b2 = static_cast<float>(1.0 - beta2_);
  k.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2_, static_cast<double>(t))));
  k.eps = static_cast<float>(eps_);
  k.step_size = static_cast<float>(lr / (1.0 - std::pow(beta1_, static_cast<double>(t))));
  k.keep = 1.0f;
  return k;
}

void AdamW::step(float* params, const float* grads, double lr) {
  float* m_all = m_.data();
  float* v_all = v_.data();
  for_each_thread_slice(table_.specs(), scalars(lr), static_cast<float>(1.0 - lr * weight_decay_),
                        [&](const AdamWScalars& k, int64_t off, int64_t n) {
                          // (g is only read when kFused is false.)
                          adamw_update<false>(params + off, const_cast<float*>(grads) + off,
                                              m_all + off, v_all + off, n, k);
                        });
}

void AdamW::step_fused(float* params, float* grads, double lr, const FusedStepExtras& extras) {
  const GradTransform x{extras.grad_unscale, extras.grad_clip, extras.zero_grads};
  const TypedPtr lowp = extras.params_lowp;
  float* m_all = m_.data();
  float* v_all = v_.data();
  // The same slices as step(), walked in blocks so that each block of updated params is still in
  // L1 when it is rounded into the 16-bit copy.
  for_each_thread_slice(table_.specs(), scalars(lr), static_cast<float>(1.0 - lr * weight_decay_),
                        [&](const AdamWScalars& k, int64_t off0, int64_t n0) {
                          for (int64_t b = 0; b < n0; b += cpu::kConvertBlock) {
                            const int64_t off = off0 + b, n = std::min(cpu::kConvertBlock, n0 - b);
                            adamw_update<true>(params + off, grads + off, m_all + off, v_all + off,
                                               n, k, x);
                            if (lowp) cpu::narrow(lowp.at(off), params + off, n);
                          }
                        });
}

std::vector<OptimizerStateTensor> AdamW::state_tensors() {
  return {{"m", m_.data(), static_cast<int64_t>(m_.size())},
          {"v", v_.data(), static_cast<int64_t>(v_.size())}};
}

}  // namespace nanogpt
