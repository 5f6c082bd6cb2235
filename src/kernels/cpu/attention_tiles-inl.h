// The vector parts of the float32 flash attention, per CPU target (attention.cpp includes this in
// its per-target code; Highway's per-target include guard): 2^x of a vector, the K^T / V^T packing
// transpose, and the per-row softmax of a score tile (forward: online max/sum with dropout and the
// lazy rescale; backward: probabilities from lse and dS), in Highway vectors of kTileLanes floats
// (tile_gemm-inl.h). The float32 kernel (attention.cpp) includes it per target; the kernels not
// yet dispatched (attention_bf16.cpp, small_gemm.cpp) get the build's static target.
#if defined(NANOGPT_KERNELS_CPU_ATTENTION_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NANOGPT_KERNELS_CPU_ATTENTION_TILES_INL_H_
#undef NANOGPT_KERNELS_CPU_ATTENTION_TILES_INL_H_
#else
#define NANOGPT_KERNELS_CPU_ATTENTION_TILES_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/attention_dims.h"
#include "kernels/cpu/tile_gemm-inl.h"
#include "kernels/cpu/vec_math.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace attention_v {

using attention_tiles::Dims;
using attention_tiles::kBk;
using attention_tiles::kLazyRescale;
using attention_tiles::kLog2e;
using attention_tiles::mask_index;
using V = hn::Vec<TileTag>;
using M = hn::Mask<TileTag>;

constexpr int kRowVecs = kBk / kTileLanes;  // vectors of a score row
constexpr int kSumVecs = 16 / kTileLanes;   // vectors of a row's 16 partial sums

// 2^x lane by lane, relative error <= 1 ulp for x in [-126, 127] (tests/kernels/exp2_targets_test;
// degree-6 polynomial): x = n + f, n = round(x), 2^f by Horner, times 2^n. AVX-512: vscalefps
// (below -126 denormals or 0); elsewhere x is clamped to [-126, 127] and 2^n made from its bits.
HWY_INLINE V Exp2(V x) {
  const TileTag d;
#if !(HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)
  x = hn::Min(hn::Max(x, hn::Set(d, -126.0f)), hn::Set(d, 127.0f));
#endif
  const V n = hn::Round(x);
  const V f = hn::Sub(x, n);
  V p = hn::Set(d, 1.5345812e-4f);
  p = hn::MulAdd(p, f, hn::Set(d, 1.3399931e-3f));
  p = hn::MulAdd(p, f, hn::Set(d, 9.618489e-3f));
  p = hn::MulAdd(p, f, hn::Set(d, 5.5503286e-2f));
  p = hn::MulAdd(p, f, hn::Set(d, 2.4022646e-1f));
  p = hn::MulAdd(p, f, hn::Set(d, 6.931472e-1f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  return V{_mm512_scalef_ps(p.raw, n.raw)};
#else
  const hn::RebindToSigned<TileTag> di;
  const auto bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
  return hn::Mul(p, hn::BitCast(d, bits));
#endif
}

// dst[c*ldd + r] = src[r*lds + c] for r < R, c < W (32-bit elements: floats or bf16 pairs).
// AVX-512: 16 x 16 blocks transposed in registers (32-bit, 64-bit and 128-bit lane interleaves);
// elsewhere element by element (packing is ~1% of the attention kernels).
HWY_INLINE void Transpose(attention_tiles::Word32* dst, int64_t ldd,
                          const attention_tiles::Word32* src, int64_t lds, int R, int W) {
  int r0 = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  for (; r0 + 16 <= R; r0 += 16) {
    int c0 = 0;
    for (; c0 + 16 <= W; c0 += 16) {
      __m512 r[16], t[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (r0 + i) * lds + c0);
      for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), e = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
      }
      for (int k = 0; k < 4; ++k) {
        const __m512 x0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
        const __m512 x1 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd);
        const __m512 y0 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
        const __m512 y1 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
        attention_tiles::Word32* out = dst + (c0 + k) * ldd + r0;
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

// The kRowVecs vectors of a score row; lanes at or past nv (when nv < kBk) are invalid.
struct ScoreRow {
  V v[kRowVecs];
  M valid[kRowVecs];  // only read when nv < kBk
  HWY_INLINE ScoreRow(const float* row, int nv) {
    const TileTag d;
    for (int i = 0; i < kRowVecs; ++i) {
      v[i] = hn::LoadU(d, row + kTileLanes * i);
      if (nv < kBk) valid[i] = hn::FirstN(d, static_cast<size_t>(std::max(0, nv - kTileLanes * i)));
    }
  }
  // Largest valid raw score (-inf when there is none).
  HWY_INLINE float max(int nv) const {
    const TileTag d;
    V mx = hn::Set(d, -INFINITY);
    for (int i = 0; i < kRowVecs; ++i) {
      mx = hn::Max(mx, nv == kBk ? v[i] : hn::IfThenElse(valid[i], v[i], hn::Set(d, -INFINITY)));
    }
    return hn::GetLane(hn::MaxOfLanes(d, mx));
  }
  // Whether some valid raw score is above lim.
  HWY_INLINE bool any_above(float lim, int nv) const {
    if (nv < kBk) return max(nv) > lim;
    const TileTag d;
    const V l = hn::Set(d, lim);
    M above = hn::Gt(v[0], l);
    for (int i = 1; i < kRowVecs; ++i) above = hn::Or(above, hn::Gt(v[i], l));
    return !hn::AllFalse(d, above);
  }
  // e_i = 2^(v_i * a - c) at the valid lanes, 0 elsewhere; stored to row.
  HWY_INLINE void store_exp2(float* row, float a, float c, int nv, V e[kRowVecs]) const {
    const TileTag d;
    const V av = hn::Set(d, a), cv = hn::Set(d, c);
    for (int i = 0; i < kRowVecs; ++i) {
      e[i] = Exp2(hn::MulSub(v[i], av, cv));
      if (nv < kBk) e[i] = hn::IfThenElseZero(valid[i], e[i]);
      hn::StoreU(e[i], d, row + kTileLanes * i);
    }
  }
};

// Sum of a row's 16 partial sums.
HWY_INLINE float SumOf16(const float* lsum) {
  const TileTag d;
  V s = hn::LoadU(d, lsum);
  for (int i = 1; i < kSumVecs; ++i) s = hn::Add(s, hn::LoadU(d, lsum + kTileLanes * i));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// Forward, one score row of query t against key block j0 : row
// becomes the dropped, unnormalized probabilities exp(s*scale - m) (zero past nv), lsum (16
// partial sums) gets the undropped ones added, m is raised lazily. Returns the factor the row's
// output accumulated so far must be multiplied by (1: m kept; 0: nothing accumulated yet).
HWY_INLINE float SoftmaxRow(float* row, int nv, float& m, float* lsum, int b, int h, int t, int j0,
                            const Dims& d) {
  const TileTag dv;
  const float scale = d.scale, p = d.p, keep_scale = d.keep_scale;  // locals: no aliasing with row
  const uint64_t seed = d.seed;
  const ScoreRow s(row, nv);
  float corr = 1.0f;
  if (s.any_above((m + kLazyRescale) / scale, nv)) {
    const float mx = std::max(m, s.max(nv) * scale);
    corr = m == -INFINITY ? 0.0f : fast_exp(m - mx);
    m = mx;
    const V c = hn::Set(dv, corr);
    for (int i = 0; i < kSumVecs; ++i) {
      hn::StoreU(hn::Mul(hn::LoadU(dv, lsum + kTileLanes * i), c), dv, lsum + kTileLanes * i);
    }
  }
  V e[kRowVecs];
  s.store_exp2(row, scale * kLog2e, m * kLog2e, nv, e);
  // Lane l of partial sum k gets row columns 16q + k*kTileLanes + l, q = 0..3, added as
  // (q0 + q1) + (q2 + q3): with 16 lanes, the same sums as before dispatch (build 35b4b12).
  static_assert(kRowVecs == 4 * kSumVecs, "a score row is 4 groups of 16 columns");
  for (int i = 0; i < kSumVecs; ++i) {
    const V four =
        hn::Add(hn::Add(e[i], e[i + kSumVecs]), hn::Add(e[i + 2 * kSumVecs], e[i + 3 * kSumVecs]));
    hn::StoreU(hn::Add(hn::LoadU(dv, lsum + kTileLanes * i), four), dv, lsum + kTileLanes * i);
  }
  if (p > 0) {
    const uint64_t base = mask_index(b, h, t, j0, d);
#pragma omp simd
    for (int j = 0; j < nv; ++j) row[j] *= dropout_keep(seed, base + j, p, keep_scale);
  }
  return corr;
}

// Backward, one row of query t against key block j0 : srow
// becomes the dropped probabilities P*M, dprow (dout_t . v_s) becomes dS * scale; zero past nv.
HWY_INLINE void BackwardRow(float* srow, float* dprow, int nv, float lt, float dt, int b, int h,
                            int t, int j0, const Dims& d) {
  const TileTag dv;
  const float scale = d.scale, p = d.p, keep_scale = d.keep_scale;
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
    const ScoreRow s(srow, nv);
    V pr[kRowVecs];
    s.store_exp2(srow, scale * kLog2e, lt * kLog2e, nv, pr);
    const V dtv = hn::Set(dv, dt), sc = hn::Set(dv, scale);
    for (int i = 0; i < kRowVecs; ++i) {
      V ds = hn::Mul(hn::Mul(pr[i], hn::Sub(hn::LoadU(dv, dprow + kTileLanes * i), dtv)), sc);
      if (nv < kBk) ds = hn::IfThenElseZero(s.valid[i], ds);
      hn::StoreU(ds, dv, dprow + kTileLanes * i);
    }
  }
}

}  // namespace attention_v
}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
