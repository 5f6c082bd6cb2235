// Naive causal attention (nanoGPT's non-flash path, `attention=naive`): per (b, h) the full
// (T, T) score matrix S = Q K^T is computed (the masked upper triangle too, as masked_fill does),
// masked softmax P is written to `att` (B, NH, T, T) and kept for the backward, then out = (P*M) V.
// The backward reads P back: dP = dO V^T (full T x T), dS = P (M dP - D) with D_t = sum_s P M dP,
// dV = (P M)^T dO, dK = dS^T Q, dQ = dS K (all full-size products). Memory O(B NH T^2); the flash
// kernel (attention.cpp) is the default. Parallel over (b, h); per-thread (T, T) scratch. Compiled
// for every CPU target (foreach_target.h; the products on tile_gemm-inl.h) and dispatched.
#include "kernels/cpu/fixed_width_targets.h"  // first: tile_gemm-inl.h's register tiles
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_naive.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/tile_gemm-inl.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

namespace {

struct NaiveDims {
  int T, TW, LT, C, NH, HS, HSP;  // TW: T rounded up to 16 (GEMM width); LT: row stride of packs
  float scale, p, keep_scale;
  uint64_t seed;
};

NaiveDims naive_dims(int T, int C, int NH, float p, uint64_t seed) {
  const int HS = C / NH, TW = (T + 15) / 16 * 16;
  // Row strides that are multiples of 1 KB put a GEMM's rows in the same L1 sets: pad them.
  const int LT = TW % 256 == 0 ? TW + 16 : TW;
  return {T,
          TW,
          LT,
          C,
          NH,
          HS,
          (HS + 15) / 16 * 16,
          1.0f / std::sqrt(static_cast<float>(HS)),
          p,
          p > 0 ? 1.0f / (1.0f - p) : 1.0f,
          seed};
}

// dst (T, HSP) = rows of src (stride ld), zero padded.
void pack_rows_naive(float* dst, const float* src, int64_t ld, const NaiveDims& d) {
  for (int t = 0; t < d.T; ++t) {
    std::copy(src + t * ld, src + t * ld + d.HS, dst + static_cast<int64_t>(t) * d.HSP);
    std::fill(dst + static_cast<int64_t>(t) * d.HSP + d.HS, dst + (t + 1) * int64_t{d.HSP}, 0.0f);
  }
}

// dst (HS, LT) = transpose of the T rows of src, zero padded to TW columns.
void pack_transposed_naive(float* dst, const float* src, int64_t ld, const NaiveDims& d) {
  for (int x = 0; x < d.HS; ++x) {
    float* row = dst + static_cast<int64_t>(x) * d.LT;
    for (int t = 0; t < d.T; ++t) row[t] = src[t * ld + x];
    std::fill(row + d.T, row + d.TW, 0.0f);
  }
}

inline float mask_at(const NaiveDims& d, uint64_t row_index, int s) {
  return d.p > 0 ? dropout_keep(d.seed, row_index + s, d.p, d.keep_scale) : 1.0f;
}

}  // namespace

void AttentionNaiveForwardImpl(float* out, float* att, const float* qkv, int B, int T, int C,
                               int NH, float dropout_p, uint64_t seed) {
  const NaiveDims d = naive_dims(T, C, NH, dropout_p, seed);
  const int64_t ld = 3 * static_cast<int64_t>(C);
#pragma omp parallel
  {
    std::vector<float> kt(static_cast<size_t>(d.HS) * d.LT), vp(static_cast<size_t>(T) * d.HSP);
    std::vector<float> s(static_cast<size_t>(T) * d.LT), o(static_cast<size_t>(T) * d.HSP);
#pragma omp for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; ++bh) {
      const int b = bh / NH, h = bh % NH;
      const float* q = qkv + static_cast<int64_t>(b) * T * ld + h * d.HS;  // row t at q + t*ld
      float* p_h = att + static_cast<int64_t>(bh) * T * T;                 // (T, T)
      pack_transposed_naive(kt.data(), q + C, ld, d);
      pack_rows_naive(vp.data(), q + 2 * C, ld, d);
      TileGemmSet(s.data(), d.LT, q, ld, 1, kt.data(), d.LT, T, d.HS, d.TW);  // S = Q K^T
      for (int t = 0; t < T; ++t) {  // masked softmax; s row becomes P*M for the product
        float* srow = s.data() + static_cast<int64_t>(t) * d.LT;
        float* prow = p_h + static_cast<int64_t>(t) * T;
        float mx = -INFINITY;
        for (int j = 0; j <= t; ++j) mx = std::max(mx, srow[j] * d.scale);
        float sum = 0;
        for (int j = 0; j <= t; ++j) {
          srow[j] = fast_exp(srow[j] * d.scale - mx);
          sum += srow[j];
        }
        const float inv = 1.0f / sum;
        const uint64_t ri = ((static_cast<uint64_t>(bh)) * T + t) * T;
        for (int j = 0; j <= t; ++j) {
          prow[j] = srow[j] * inv;
          srow[j] = prow[j] * mask_at(d, ri, j);
        }
        std::fill(prow + t + 1, prow + T, 0.0f);
        std::fill(srow + t + 1, srow + d.TW, 0.0f);
      }
      TileGemmSet(o.data(), d.HSP, s.data(), d.LT, 1, vp.data(), d.HSP, T, T, d.HSP);  // O = PM V
      for (int t = 0; t < T; ++t) {
        std::copy(o.data() + static_cast<int64_t>(t) * d.HSP,
                  o.data() + static_cast<int64_t>(t) * d.HSP + d.HS,
                  out + (static_cast<int64_t>(b) * T + t) * C + h * d.HS);
      }
    }
  }
}

void AttentionNaiveBackwardImpl(float* dqkv, const float* dout, const float* att, const float* qkv,
                                int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  const NaiveDims d = naive_dims(T, C, NH, dropout_p, seed);
  const int64_t ld = 3 * static_cast<int64_t>(C);
#pragma omp parallel
  {
    const size_t rows = static_cast<size_t>(T) * d.HSP;
    std::vector<float> vt(static_cast<size_t>(d.HS) * d.LT), qp(rows), kp(rows), dop(rows);
    std::vector<float> dq(rows), dk(rows), dv(rows);
    std::vector<float> dp(static_cast<size_t>(T) * d.LT), pm(dp.size());
#pragma omp for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; ++bh) {
      const int b = bh / NH, h = bh % NH;
      const float* base = qkv + static_cast<int64_t>(b) * T * ld + h * d.HS;
      const float* dob = dout + static_cast<int64_t>(b) * T * C + h * d.HS;
      const float* p_h = att + static_cast<int64_t>(bh) * T * T;  // (T, T)
      float* dbase = dqkv + static_cast<int64_t>(b) * T * ld + h * d.HS;
      pack_rows_naive(qp.data(), base, ld, d);
      pack_rows_naive(kp.data(), base + C, ld, d);
      pack_rows_naive(dop.data(), dob, C, d);
      pack_transposed_naive(vt.data(), base + 2 * C, ld, d);
      // dP (T, TW) = dO V^T
      TileGemmSet(dp.data(), d.LT, dop.data(), d.HSP, 1, vt.data(), d.LT, T, d.HS, d.TW);
      for (int t = 0; t < T; ++t) {  // dp row -> dS * scale, pm row = P*M
        const float* prow = p_h + static_cast<int64_t>(t) * T;
        float* dprow = dp.data() + static_cast<int64_t>(t) * d.LT;
        float* pmrow = pm.data() + static_cast<int64_t>(t) * d.LT;
        const uint64_t ri = (static_cast<uint64_t>(bh) * T + t) * T;
        float D = 0;
        for (int j = 0; j <= t; ++j) {
          const float mk = mask_at(d, ri, j);
          pmrow[j] = prow[j] * mk;
          dprow[j] *= mk;
          D += prow[j] * dprow[j];
        }
        for (int j = 0; j <= t; ++j) dprow[j] = prow[j] * (dprow[j] - D) * d.scale;
        std::fill(dprow + t + 1, dprow + d.TW, 0.0f);
        std::fill(pmrow + t + 1, pmrow + d.TW, 0.0f);
      }
      std::fill(dq.begin(), dq.end(), 0.0f);
      std::fill(dk.begin(), dk.end(), 0.0f);
      std::fill(dv.begin(), dv.end(), 0.0f);
      // dV = (P M)^T dO;  dK = dS^T Q;  dQ = dS K  (full T x T products, as the naive path does)
      TileGemmAcc(dv.data(), d.HSP, pm.data(), 1, d.LT, dop.data(), d.HSP, T, T, d.HSP);
      TileGemmAcc(dk.data(), d.HSP, dp.data(), 1, d.LT, qp.data(), d.HSP, T, T, d.HSP);
      TileGemmAcc(dq.data(), d.HSP, dp.data(), d.LT, 1, kp.data(), d.HSP, T, T, d.HSP);
      for (int t = 0; t < T; ++t) {
        float* row = dbase + static_cast<int64_t>(t) * ld;
        for (int x = 0; x < d.HS; ++x) {
          row[x] += dq[static_cast<size_t>(t) * d.HSP + x];
          row[C + x] += dk[static_cast<size_t>(t) * d.HSP + x];
          row[2 * C + x] += dv[static_cast<size_t>(t) * d.HSP + x];
        }
      }
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(AttentionNaiveForwardImpl);
HWY_EXPORT(AttentionNaiveBackwardImpl);

void attention_naive_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                             float dropout_p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(AttentionNaiveForwardImpl)(out, att, qkv, B, T, C, NH, dropout_p, seed);
}

void attention_naive_backward(float* dqkv, const float* dout, const float* att, const float* qkv,
                              int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(AttentionNaiveBackwardImpl)
  (dqkv, dout, att, qkv, B, T, C, NH, dropout_p, seed);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
