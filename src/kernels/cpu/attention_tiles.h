// What the build-target flash attention kernels share (attention_bf16.cpp in native bfloat16; the
// float32 kernel, attention.cpp, is dispatched per CPU target and has attention_tiles-inl.h): the
// K^T / V^T packing transpose and the per-row softmax of a score tile (forward: online max/sum
// with dropout; backward: probabilities from lse and dS), all in float32. Block sizes, Dims and the
// forward's task loop are attention_dims.h's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/attention_dims.h"
#include "kernels/cpu/tile_gemm.h"
#include "kernels/cpu/vec_math.h"

#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace nanogpt::cpu::attention_tiles {

// A 32-bit element (float or a bf16 pair) that may be read and written through any type.
typedef uint32_t Word32 __attribute__((may_alias));

// dst[c*ldd + r] = src[r*lds + c] for r < R, c < W (32-bit elements): 16 x 16 blocks transposed in
// registers (AVX-512: 32-bit, 64-bit and 128-bit lane interleaves), the edges element by element.
// The K^T / V^T packing of the attention kernels.
inline void transpose32(Word32* dst, int64_t ldd, const Word32* src, int64_t lds, int R, int W) {
  int r0 = 0;
#ifdef __AVX512F__
  for (; r0 + 16 <= R; r0 += 16) {
    int c0 = 0;
    for (; c0 + 16 <= W; c0 += 16) {
      __m512 r[16], t[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (r0 + i) * lds + c0);
      for (int i = 0; i < 16; i += 2) {  // lane m: a[4m] b[4m] a[4m+1] b[4m+1] / a[4m+2] ...
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int i = 0; i < 16; i += 4) {  // r[i+k], lane m: rows i..i+3 of column 4m+k
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), e = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
      }
      for (int k = 0; k < 4; ++k) {  // output row 4m+k = lane m of r[k], r[4+k], r[8+k], r[12+k]
        const __m512 x0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
        const __m512 x1 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd);
        const __m512 y0 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
        const __m512 y1 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
        Word32* out = dst + (c0 + k) * ldd + r0;
        _mm512_storeu_ps(out, _mm512_shuffle_f32x4(x0, y0, 0x88));
        _mm512_storeu_ps(out + 4 * ldd, _mm512_shuffle_f32x4(x1, y1, 0x88));
        _mm512_storeu_ps(out + 8 * ldd, _mm512_shuffle_f32x4(x0, y0, 0xdd));
        _mm512_storeu_ps(out + 12 * ldd, _mm512_shuffle_f32x4(x1, y1, 0xdd));
      }
    }
    for (int r = r0; r < r0 + 16; ++r) {
      for (int c = c0; c < W; ++c) dst[c * ldd + r] = src[r * lds + c];
    }
  }
#endif
  for (int r = r0; r < R; ++r) {
    for (int c = 0; c < W; ++c) dst[c * ldd + r] = src[r * lds + c];
  }
}

static_assert(kBk == 64, "a score row is 4 vectors (ScoreRow)");

inline Vec16 vmax(Vec16 a, Vec16 b) { return a > b ? a : b; }

// Largest / sum of the 16 lanes, by halving shuffles.
inline float hmax16(Vec16 v) {
  v = vmax(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  v = vmax(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
  v = vmax(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
  v = vmax(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return v[0];
}
inline float hsum16(Vec16 v) {
  v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
  v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  return v[0];
}
// The 4 vectors of a score row; lanes at or past nv (when nv < kBk) are invalid.
struct ScoreRow {
  Vec16 v[4];
  Vec16i valid[4];  // all-ones where valid (only read when nv < kBk)
  ScoreRow(const float* row, int nv) {
    for (int i = 0; i < 4; ++i) {
      v[i] = load16(row + 16 * i);
      if (nv < kBk) {
        const Vec16i lane = Vec16i{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} + 16 * i;
        valid[i] = lane < nv;
      }
    }
  }
  // Largest valid raw score (-inf when there is none).
  float max(int nv) const {
    if (nv == kBk) return hmax16(vmax(vmax(v[0], v[1]), vmax(v[2], v[3])));
    Vec16 mx = Vec16{} - INFINITY;
    for (int i = 0; i < 4; ++i) mx = vmax(mx, valid[i] ? v[i] : Vec16{} - INFINITY);
    return hmax16(mx);
  }
  // Whether some valid raw score is above lim.
  bool any_above(float lim, int nv) const {
#ifdef __AVX512F__
    __mmask16 above = 0;
    for (int i = 0; i < 4; ++i)
      above |= _mm512_cmp_ps_mask((__m512)v[i], _mm512_set1_ps(lim), _CMP_GT_OQ);
    if (nv == kBk) return above != 0;
#endif
    return max(nv) > lim;
  }
  // e_i = 2^(v_i * a - c) at the valid lanes, 0 elsewhere; stored to row.
  void store_exp2(float* row, float a, float c, int nv, Vec16 e[4]) const {
    for (int i = 0; i < 4; ++i) {
      e[i] = exp2_16(v[i] * a - c);
      if (nv < kBk) e[i] = valid[i] ? e[i] : Vec16{};
      store16(row + 16 * i, e[i]);
    }
  }
};

// Forward, one score row of query t against key block j0 (row: kBk raw scores, the first nv
// valid): row becomes the dropped, unnormalized probabilities exp(s*scale - m) (zero past nv) for
// the row's running max m, and lsum (16 partial sums; the row's l is their total) gets the
// undropped ones added. m is raised (to the max of the scores seen) only when a score exceeds it by
// more than kLazyRescale, and lsum then rescaled. Returns the factor the row's output accumulated
// so far must be multiplied by: 1 when m was kept (no rescale), 0 when nothing was accumulated yet.
inline float softmax_row(float* row, int nv, float& m, float* lsum, int b, int h, int t, int j0,
                         const Dims& d) {
  // Locals, not d's fields: the stores to row could alias a float of d (through a reference),
  // which would keep GCC from vectorizing the loops below.
  const float scale = d.scale, p = d.p, keep_scale = d.keep_scale;
  const uint64_t seed = d.seed;
  const ScoreRow s(row, nv);
  float corr = 1.0f;
  // scale > 0: a scaled score exceeds m + kLazyRescale iff the raw one exceeds the limit below
  // (m = -inf: any valid score does).
  if (s.any_above((m + kLazyRescale) / scale, nv)) {
    const float mx = std::max(m, s.max(nv) * scale);
    corr = m == -INFINITY ? 0.0f : fast_exp(m - mx);
    m = mx;
    store16(lsum, load16(lsum) * corr);
  }
  Vec16 e[4];
  s.store_exp2(row, scale * kLog2e, m * kLog2e, nv, e);
  store16(lsum, load16(lsum) + ((e[0] + e[1]) + (e[2] + e[3])));
  if (p > 0) {
    const uint64_t base = mask_index(b, h, t, j0, d);
#pragma omp simd
    for (int j = 0; j < nv; ++j) row[j] *= dropout_keep(seed, base + j, p, keep_scale);
  }
  return corr;
}

// Backward, one row of query t against key block j0: srow (kBk scores) becomes the dropped
// probabilities P*M, dprow (kBk values dout_t . v_s) becomes dS * scale; lt = lse_t, dt = D_t.
// Both are zero past nv.
inline void backward_row(float* srow, float* dprow, int nv, float lt, float dt, int b, int h, int t,
                         int j0, const Dims& d) {
  const float scale = d.scale, p = d.p, keep_scale = d.keep_scale;  // locals: see softmax_row
  const uint64_t seed = d.seed;
  if (p > 0) {
    const uint64_t idx = mask_index(b, h, t, j0, d);
#pragma omp simd
    for (int j = 0; j < nv; ++j) {
      const float pr = fast_exp(srow[j] * scale - lt);
      const float mk = dropout_keep(seed, idx + j, p, keep_scale);
      srow[j] = pr * mk;
      dprow[j] = pr * (dprow[j] * mk - dt) * scale;
    }
    if (nv < kBk) {
      std::fill(srow + nv, srow + kBk, 0.0f);
      std::fill(dprow + nv, dprow + kBk, 0.0f);
    }
  } else {
    // P = 2^(s * scale log2(e) - lse log2(e)) by whole vectors (zero past nv), dS = P (dP - D).
    const ScoreRow s(srow, nv);
    Vec16 pr[4];
    s.store_exp2(srow, scale * kLog2e, lt * kLog2e, nv, pr);
    for (int i = 0; i < 4; ++i) {
      const Vec16 ds = pr[i] * (load16(dprow + 16 * i) - dt) * scale;
      store16(dprow + 16 * i, nv < kBk ? (s.valid[i] ? ds : Vec16{}) : ds);
    }
  }
}

}  // namespace nanogpt::cpu::attention_tiles
