// Fast ops of the architecture options (ops_arch.h): QK-norm and rotary embeddings (apart, or fused
// in one pass), in place on qkv's Q and K head vectors, parallel over rows, each head vector
// widened to float (16-bit dtypes), computed and rounded once; and the logit soft-cap, also fused
// into the cross-entropy's backward. Compiled for every CPU target (Highway's foreach_target.h; the
// loops vectorized by the compiler for each) and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/arch.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/crossentropy_row.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"
#include "kernels/ops_arch.h"

#include "kernels/cpu/convert-inl.h"
#include "kernels/cpu/row_reduce-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

namespace {

// Runs fn(v, n, j) on every Q and K head vector v (HS floats; a widened copy for 16-bit dtypes,
// narrowed back afterwards) of row n, head j (0..2NH-1), rows in parallel.
template <class Fn>
void for_each_qk_head(TypedPtr qkv, int64_t N, int C, int NH, Fn fn) {
  const int HS = C / NH;
#pragma omp parallel if (worth_parallel(2 * N * C))
  {
    std::vector<float> buf(static_cast<size_t>(2 * C));  // one row's Q and K, widened
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t o = n * 3 * C;  // the row's Q | K: 2C contiguous values
      float* qk = qkv.f32() ? qkv.f32() + o : buf.data();
      if (!qkv.f32()) WidenSpan(qk, qkv.at(o), 2 * C);
      for (int j = 0; j < 2 * NH; ++j) fn(qk + static_cast<int64_t>(j) * HS, n, j);
      if (!qkv.f32()) NarrowSpan(qkv.at(o), qk, 2 * C);
    }
  }
}

void check_rotary_head_size(int C, int NH) {
  const int HS = C / NH;
  CHECK(HS % 2 == 0, "rotary embeddings need an even head size; got {} (n_embd {} / n_head {})",
        HS, C, NH);
}

// v (HS) turned by sign * the angles of position p (cos, sin: (max_T, HS/2) tables).
[[gnu::always_inline]] inline void rotate_vector(float* v, int HS, const float* cos,
                                                 const float* sin, int64_t p, float sign) {
  const int half = HS / 2;
  const float* c = cos + p * half;  // (half)
  const float* s = sin + p * half;  // (half)
#pragma omp simd
  for (int i = 0; i < half; ++i) {
    const float a = v[i], b = v[i + half], si = sign * s[i];
    v[i] = a * c[i] - b * si;
    v[i + half] = a * si + b * c[i];
  }
}

// v (HS) = v * r * gain, r = 1 / sqrt(mean(v^2) + 1e-5), returned. (gain 1: v * r exactly.)
[[gnu::always_inline]] inline float rms_normalize(float* v, int HS, float gain = 1.0f) {
  const float ss = row_reduce::dot(v, v, HS);
  const float r = 1.0f / std::sqrt(ss / HS + 1e-5f);
  const float rg = r * gain;
#pragma omp simd
  for (int i = 0; i < HS; ++i) v[i] *= rg;
  return r;
}

// g (HS) = gain * r * (g - y * mean(g * y) / gain^2), y = gain * the unit-RMS head: QK-norm's
// backward for one head vector (gain 1: r * (g - y * mean(g * y)), the same floats).
[[gnu::always_inline]] inline void rms_normalize_backward(float* g, const float* y, float r, int HS,
                                                          float gain = 1.0f) {
  const float gy = row_reduce::dot(g, y, HS) / HS / (gain * gain);
  const float rg = r * gain;
#pragma omp simd
  for (int i = 0; i < HS; ++i) g[i] = rg * (g[i] - y[i] * gy);
}

// The row-wise path: when a head's halves are whole vectors of this target (HS/2 a multiple of
// the lane count: heads of 32 and 64 on AVX-512), a row's 2NH heads are done in phases — every
// head's reduction, then every head's scale, then every head's scale-and-turn in vectors — so the
// heads' reduction chains overlap instead of running one after another (the per-head loops above
// spent ~400 cycles a row of 8 heads of 32 waiting on them). Every op of the family takes this path
// at such a head size, so the fused and the separate ops still give the same floats.
namespace hn = hwy::HWY_NAMESPACE;
using RowDF = row_reduce::DF;
constexpr int kHeadsPerPhase = 16;

bool whole_vector_halves(int HS) {
  const int lanes = static_cast<int>(hn::Lanes(RowDF()));
  return HS % 2 == 0 && (HS / 2) % lanes == 0;
}

// v (HS) times rg (when norm), then turned by sign * the angles (c, s: (HS/2), when c is set).
HWY_INLINE void scale_and_turn(float* v, int HS, bool norm, float rg, const float* c,
                               const float* s, float sign) {
  const RowDF d;
  const int N = static_cast<int>(hn::Lanes(d)), half = HS / 2;
  const auto g = hn::Set(d, rg), sg = hn::Set(d, sign);
  for (int i = 0; i < half; i += N) {
    auto a = hn::LoadU(d, v + i), b = hn::LoadU(d, v + half + i);
    if (norm) a = hn::Mul(a, g), b = hn::Mul(b, g);
    if (c != nullptr) {
      const auto cv = hn::LoadU(d, c + i), sv = hn::Mul(sg, hn::LoadU(d, s + i));
      const auto lo = hn::MulSub(a, cv, hn::Mul(b, sv)), hi = hn::MulAdd(a, sv, hn::Mul(b, cv));
      a = lo, b = hi;
    }
    hn::StoreU(a, d, v + i);
    hn::StoreU(b, d, v + half + i);
  }
}

// Forward of one row's Q and K heads (qk: (2NH, HS)): QK-norm (rstd_row (2NH) set; Q's heads times
// q_gain) when rstd_row is set, then the turn by sign when c is set.
void qk_row_forward(float* qk, float* rstd_row, const float* c, const float* s, float sign, int HS,
                    int NH, float q_gain) {
  const bool norm = rstd_row != nullptr;
  float rg[kHeadsPerPhase];
  for (int j0 = 0; j0 < 2 * NH; j0 += kHeadsPerPhase) {
    const int nj = std::min(kHeadsPerPhase, 2 * NH - j0);
    if (norm) {
      float ss[kHeadsPerPhase];
      for (int k = 0; k < nj; ++k) {
        const float* v = qk + static_cast<int64_t>(j0 + k) * HS;
        ss[k] = row_reduce::dot(v, v, HS);
      }
      for (int k = 0; k < nj; ++k) {
        const float r = 1.0f / std::sqrt(ss[k] / HS + 1e-5f);
        rstd_row[j0 + k] = r;
        rg[k] = r * (j0 + k < NH ? q_gain : 1.0f);
      }
    }
    for (int k = 0; k < nj; ++k) {
      scale_and_turn(qk + static_cast<int64_t>(j0 + k) * HS, HS, norm, norm ? rg[k] : 1.0f, c, s,
                     sign);
    }
  }
}

// Backward of one row (g: (2NH, HS) gradients in place, y: the fused forward's output): the
// norm's backward in the turned frame (when rstd_row is set), then the turn back (when c is set).
void qk_row_backward(float* g, const float* y, const float* rstd_row, const float* c,
                     const float* s, int HS, int NH, float q_gain) {
  const RowDF d;
  const int N = static_cast<int>(hn::Lanes(d));
  const bool norm = rstd_row != nullptr;
  for (int j0 = 0; j0 < 2 * NH; j0 += kHeadsPerPhase) {
    const int nj = std::min(kHeadsPerPhase, 2 * NH - j0);
    if (norm) {
      float gy[kHeadsPerPhase];
      for (int k = 0; k < nj; ++k) {
        const int64_t o = static_cast<int64_t>(j0 + k) * HS;
        const float gain = j0 + k < NH ? q_gain : 1.0f;
        gy[k] = row_reduce::dot(g + o, y + o, HS) / HS / (gain * gain);
      }
      for (int k = 0; k < nj; ++k) {  // g = rg * (g - y * gy)
        const int64_t o = static_cast<int64_t>(j0 + k) * HS;
        const auto rg = hn::Set(d, rstd_row[j0 + k] * (j0 + k < NH ? q_gain : 1.0f));
        const auto gyv = hn::Set(d, gy[k]);
        for (int i = 0; i < HS; i += N) {
          const auto v = hn::NegMulAdd(hn::LoadU(d, y + o + i), gyv, hn::LoadU(d, g + o + i));
          hn::StoreU(hn::Mul(rg, v), d, g + o + i);
        }
      }
    }
    if (c == nullptr) continue;
    for (int k = 0; k < nj; ++k) {
      scale_and_turn(g + static_cast<int64_t>(j0 + k) * HS, HS, false, 1.0f, c, s, -1.0f);
    }
  }
}

// Runs fn(qk, n) on every row n's Q and K (2C floats; widened for 16-bit dtypes, narrowed back
// afterwards), rows in parallel.
template <class Fn>
void for_each_qk_row(TypedPtr qkv, int64_t N, int C, Fn fn) {
#pragma omp parallel if (worth_parallel(2 * N * C))
  {
    std::vector<float> buf(static_cast<size_t>(2 * C));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t o = n * 3 * C;
      float* qk = qkv.f32() ? qkv.f32() + o : buf.data();
      if (!qkv.f32()) WidenSpan(qk, qkv.at(o), 2 * C);
      fn(qk, n);
      if (!qkv.f32()) NarrowSpan(qkv.at(o), qk, 2 * C);
    }
  }
}

// The rotary tables' rows of position p: (HS/2) cos and sin.
inline const float* table_row(const float* table, int64_t p, int HS) {
  return table == nullptr ? nullptr : table + p * (HS / 2);
}

void rotate(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0, int C,
            int NH, float sign) {
  check_rotary_head_size(C, NH);
  const int HS = C / NH;
  if (whole_vector_halves(HS)) {
    for_each_qk_row(qkv, N, C, [=](float* qk, int64_t n) {
      const int64_t p = pos0 + n % T;
      qk_row_forward(qk, nullptr, table_row(cos, p, HS), table_row(sin, p, HS), sign, HS, NH, 1.0f);
    });
    return;
  }
  for_each_qk_head(qkv, N, C, NH, [=](float* v, int64_t n, int) {
    rotate_vector(v, HS, cos, sin, pos0 + n % T, sign);
  });
}

// cap * tanh(x / cap), the element code of both soft-cap ops.
[[gnu::always_inline]] inline float softcap(float x, float cap) { return cap * fast_tanh(x / cap); }

}  // namespace

void QkRmsnormForward(TypedPtr qkv, float* rstd, int64_t N, int C, int NH) {
  const int HS = C / NH;
  if (whole_vector_halves(HS)) {
    for_each_qk_row(qkv, N, C, [=](float* qk, int64_t n) {
      qk_row_forward(qk, rstd + n * 2 * NH, nullptr, nullptr, 1.0f, HS, NH, 1.0f);
    });
    return;
  }
  for_each_qk_head(qkv, N, C, NH, [=](float* v, int64_t n, int j) {
    rstd[n * 2 * NH + j] = rms_normalize(v, HS);
  });
}

void QkNormRotaryBackward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, const float* cos,
                          const float* sin, int64_t N, int T, int pos0, int C, int NH,
                          float q_gain);

// The fused pass with the rotation skipped (the same floats: rms_normalize_backward per head).
void QkRmsnormBackward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int C,
                       int NH) {
  QkNormRotaryBackward(dqkv, qkv, rstd, nullptr, nullptr, N, /*T=*/1, /*pos0=*/0, C, NH, 1.0f);
}

void QkNormRotaryForward(TypedPtr qkv, float* rstd, const float* cos, const float* sin, int64_t N,
                         int T, int pos0, int C, int NH, float q_gain) {
  if (cos != nullptr) check_rotary_head_size(C, NH);
  const int HS = C / NH;
  if (whole_vector_halves(HS)) {
    for_each_qk_row(qkv, N, C, [=](float* qk, int64_t n) {
      const int64_t p = pos0 + n % T;
      qk_row_forward(qk, rstd != nullptr ? rstd + n * 2 * NH : nullptr, table_row(cos, p, HS),
                     table_row(sin, p, HS), 1.0f, HS, NH, q_gain);
    });
    return;
  }
  for_each_qk_head(qkv, N, C, NH, [=](float* v, int64_t n, int j) {
    // Q's heads (j < NH) times q_gain
    if (rstd != nullptr) rstd[n * 2 * NH + j] = rms_normalize(v, HS, j < NH ? q_gain : 1.0f);
    if (cos != nullptr) rotate_vector(v, HS, cos, sin, pos0 + n % T, 1.0f);
  });
}

void QkNormRotaryBackward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, const float* cos,
                          const float* sin, int64_t N, int T, int pos0, int C, int NH,
                          float q_gain) {
  if (cos != nullptr) check_rotary_head_size(C, NH);
  const int HS = C / NH;
  const bool fast = whole_vector_halves(HS);  // the row-wise path
#pragma omp parallel if (worth_parallel(4 * N * C))
  {
    std::vector<float> ybuf(static_cast<size_t>(2 * C)), gbuf(static_cast<size_t>(2 * C));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t o = n * 3 * C;
      const float* y = qkv.f32() ? qkv.f32() + o : ybuf.data();  // (2C) the forward's output
      float* g = dqkv.f32() ? dqkv.f32() + o : gbuf.data();      // (2C) its gradient
      if (rstd != nullptr && !qkv.f32()) WidenSpan(ybuf.data(), qkv.at(o), 2 * C);
      if (!dqkv.f32()) WidenSpan(g, dqkv.at(o), 2 * C);
      if (fast) {
        const int64_t p = pos0 + n % T;
        qk_row_backward(g, y, rstd != nullptr ? rstd + n * 2 * NH : nullptr, table_row(cos, p, HS),
                        table_row(sin, p, HS), HS, NH, q_gain);
        if (!dqkv.f32()) NarrowSpan(dqkv.at(o), g, 2 * C);
        continue;
      }
      for (int j = 0; j < 2 * NH; ++j) {
        float* gj = g + static_cast<int64_t>(j) * HS;
        if (rstd != nullptr) {
          rms_normalize_backward(gj, y + static_cast<int64_t>(j) * HS, rstd[n * 2 * NH + j], HS,
                                 j < NH ? q_gain : 1.0f);
        }
        if (cos != nullptr) rotate_vector(gj, HS, cos, sin, pos0 + n % T, -1.0f);
      }
      if (!dqkv.f32()) NarrowSpan(dqkv.at(o), g, 2 * C);
    }
  }
}

void RotaryForward(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                   int C, int NH) {
  rotate(qkv, cos, sin, N, T, pos0, C, NH, 1.0f);
}

void RotaryBackward(TypedPtr dqkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                    int C, int NH) {
  rotate(dqkv, cos, sin, N, T, pos0, C, NH, -1.0f);
}

void SoftcapForward(float* z, int64_t N, float cap) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(4 * N))
  for (int64_t i = 0; i < N; ++i) z[i] = softcap(z[i], cap);
}

void CrossentropySoftcapForwardBackward(float* losses, float* dlogits, const float* logits,
                                        const int* targets, float dloss, int64_t N, int V, int Vp,
                                        float cap) {
  check_crossentropy_targets(targets, N, V);
#pragma omp parallel if (worth_parallel(4 * N * Vp))
  {
    std::vector<float> capped(static_cast<size_t>(Vp));  // one row of capped logits
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const float* x = logits + n * Vp;  // (Vp), may alias d
#pragma omp simd
      for (int v = 0; v < Vp; ++v) capped[v] = softcap(x[v], cap);
      float* d = dlogits + n * Vp;  // (Vp)
      crossentropy_row_forward_backward(losses + n, d, capped.data(), targets[n], dloss, V, Vp);
#pragma omp simd
      for (int v = 0; v < Vp; ++v) {
        const float t = capped[v] / cap;
        d[v] *= 1.0f - t * t;
      }
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(QkRmsnormForward);
HWY_EXPORT(QkRmsnormBackward);
HWY_EXPORT(RotaryForward);
HWY_EXPORT(RotaryBackward);
HWY_EXPORT(QkNormRotaryForward);
HWY_EXPORT(QkNormRotaryBackward);
HWY_EXPORT(SoftcapForward);
HWY_EXPORT(CrossentropySoftcapForwardBackward);

void qk_rmsnorm_forward(TypedPtr qkv, float* rstd, int64_t N, int C, int NH) {
  HWY_DYNAMIC_DISPATCH(QkRmsnormForward)(qkv, rstd, N, C, NH);
}
void qk_rmsnorm_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int C,
                         int NH) {
  HWY_DYNAMIC_DISPATCH(QkRmsnormBackward)(dqkv, qkv, rstd, N, C, NH);
}
void rotary_forward(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                    int C, int NH) {
  HWY_DYNAMIC_DISPATCH(RotaryForward)(qkv, cos, sin, N, T, pos0, C, NH);
}
void rotary_backward(TypedPtr dqkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                     int C, int NH) {
  HWY_DYNAMIC_DISPATCH(RotaryBackward)(dqkv, cos, sin, N, T, pos0, C, NH);
}
void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin,
                            int64_t N, int T, int pos0, int C, int NH, float q_gain) {
  HWY_DYNAMIC_DISPATCH(QkNormRotaryForward)(qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
}
void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, const float* cos,
                             const float* sin, int64_t N, int T, int pos0, int C, int NH,
                             float q_gain) {
  HWY_DYNAMIC_DISPATCH(QkNormRotaryBackward)
  (dqkv, qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
}
void softcap_forward(float* z, int64_t N, float cap) {
  HWY_DYNAMIC_DISPATCH(SoftcapForward)(z, N, cap);
}
void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits,
                                           const int* targets, float dloss, int64_t N, int V,
                                           int Vp, float cap) {
  HWY_DYNAMIC_DISPATCH(CrossentropySoftcapForwardBackward)
  (losses, dlogits, logits, targets, dloss, N, V, Vp, cap);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
