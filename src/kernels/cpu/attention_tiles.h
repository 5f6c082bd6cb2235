// What the flash attention kernels share (attention.cpp in float32, attention_bf16.cpp in native
// bfloat16): block sizes, the dimensions of a call, the forward's parallel task loop, the K^T / V^T
// packing transpose, and the per-row softmax of a score tile (forward: online max/sum with
// dropout; backward: probabilities from lse and dS), all in float32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/tile_gemm.h"
#include "kernels/cpu/vec_math.h"

#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace nanogpt::cpu::attention_tiles {

constexpr int kBq = 32;  // query rows per block
constexpr int kBk = 64;  // keys per block (the width of the score tile)

struct Dims {
  int B, T, TP, C, NH, HS, HSP;  // TP: T rounded up to kBk; HSP: HS rounded up to 16
  float scale, p, keep_scale;
  uint64_t seed;
};

inline Dims make_dims(int B, int T, int C, int NH, float p, uint64_t seed) {
  const int HS = C / NH;
  return {B,
          T,
          (T + kBk - 1) / kBk * kBk,
          C,
          NH,
          HS,
          (HS + 15) / 16 * 16,
          1.0f / std::sqrt(static_cast<float>(HS)),
          p,
          p > 0 ? 1.0f / (1.0f - p) : 1.0f,
          seed};
}

// Key groups per head in backward: enough tasks for 4 per thread, at most one per key block.
inline int key_groups(int BH, int T, int threads) {
  const int nkb = (T + kBk - 1) / kBk;
  const int want = (4 * threads + BH - 1) / BH;
  return std::clamp(want, 1, nkb);
}

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

static_assert(kBk == 64, "max_of_64 / sum_of_64 read one score row of 4 vectors");

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
inline float max_of_64(const float* row) {
  return hmax16(vmax(vmax(load16(row), load16(row + 16)), vmax(load16(row + 32), load16(row + 48))));
}
inline float sum_of_64(const float* row) {
  return hsum16((load16(row) + load16(row + 16)) + (load16(row + 32) + load16(row + 48)));
}

inline uint64_t mask_index(int b, int h, int t, int s, const Dims& d) {
  return ((static_cast<uint64_t>(b) * d.NH + h) * d.T + t) * d.T + s;
}

// Forward, one score row of query t against key block j0 (row: kBk raw scores, the first nv
// valid): row becomes the dropped, unnormalized probabilities exp(s*scale - m_new) (zero past nv);
// m, l (running max and sum) are updated. Returns the factor the row's output accumulated so far
// must be multiplied by (0 when nothing was accumulated yet).
inline float softmax_row(float* row, int nv, float& m, float& l, int b, int h, int t, int j0,
                         const Dims& d) {
  // Locals, not d's fields: the stores to row could alias a float of d (through a reference),
  // which would keep GCC from vectorizing the loops below.
  const float scale = d.scale, p = d.p, keep_scale = d.keep_scale;
  const uint64_t seed = d.seed;
  // Row max and sum by whole vectors (a scalar reduction chain per row costs as much as a quarter
  // of the block's GEMMs); scale > 0, so max(row) * scale is the max of the scaled.
  float mx = m;
  if (nv == kBk) {
    mx = std::max(mx, max_of_64(row) * scale);
  } else {
    for (int j = 0; j < nv; ++j) mx = std::max(mx, row[j] * scale);
  }
  const float corr = m == -INFINITY ? 0.0f : fast_exp(m - mx);
#pragma omp simd
  for (int j = 0; j < nv; ++j) row[j] = fast_exp(row[j] * scale - mx);
  if (nv < kBk) std::fill(row + nv, row + kBk, 0.0f);
  const float sum = sum_of_64(row);
  if (p > 0) {
    const uint64_t base = mask_index(b, h, t, j0, d);
#pragma omp simd
    for (int j = 0; j < nv; ++j) row[j] *= dropout_keep(seed, base + j, p, keep_scale);
  }
  m = mx;
  l = l * corr + sum;
  return corr;
}

// The forward's parallel loop. Task i: head i/nqb, query block nqb-1 - i%nqb: the longest rows
// first, so the short ones fill in at the end; consecutive tasks of a thread mostly share the head,
// whose K and V it packs once: pack(w, b, h) when the thread starts on a head, then
// block(w, b, h, i0) for the query block at row i0. Scratch (per thread) is built from the Dims.
template <class Scratch, class Pack, class Block>
void run_forward_tasks(const Dims& d, Pack pack, Block block) {
  const int BH = d.B * d.NH, nqb = (d.T + kBq - 1) / kBq;
#pragma omp parallel
  {
    Scratch w(d);
    int packed = -1;  // the head whose K, V are in w
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < int64_t{BH} * nqb; ++i) {
      const int bh = static_cast<int>(i / nqb), qb = nqb - 1 - static_cast<int>(i % nqb);
      const int b = bh / d.NH, h = bh % d.NH;
      if (packed != bh) {
        pack(w, b, h);
        packed = bh;
      }
      block(w, b, h, qb * kBq);
    }
  }
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
  } else {
#pragma omp simd
    for (int j = 0; j < nv; ++j) {
      const float pr = fast_exp(srow[j] * scale - lt);
      srow[j] = pr;
      dprow[j] = pr * (dprow[j] - dt) * scale;
    }
  }
  if (nv < kBk) {
    std::fill(srow + nv, srow + kBk, 0.0f);
    std::fill(dprow + nv, dprow + kBk, 0.0f);
  }
}

}  // namespace nanogpt::cpu::attention_tiles
