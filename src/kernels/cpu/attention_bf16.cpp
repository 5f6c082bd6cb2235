// Native bfloat16 flash attention (AVX512_BF16), dispatched at run time: the float32 kernel's
// blocking and row softmax (attention_tiles-inl.h), with every tile product a bf16 dot product with
// float32 accumulation (vdpbf16ps: 2 products per lane per instruction, twice the FMA rate). Inputs
// are read as bf16 where they lie; only what a product needs in another layout is packed once per
// head:
//   forward:  S = Q K^T (Q rows as they are, K^T packed), O += P V (P rounded to bf16 per tile,
//             V packed as row pairs);
//   backward: S, dP = dO V^T as forward; dV += P^T dO and dK += dS^T Q (P and dS as row pairs per
//             tile, read by columns; Q and dO packed as row pairs per head), dQ += dS K (dS
//             rounded by rows, K packed as row pairs).
// Probabilities and dS are rounded to bf16 before their products (as FlashAttention does on GPUs);
// the softmax statistics, lse, D_t and every accumulator stay float32. Outputs are rounded once:
// out = bf16(O / l), and dqkv = bf16(dqkv + gradient) for each element, written once (a task owns
// its head: this path is taken when the backward has one key group per head). The roundings use
// vcvtneps2bf16 (nearest even; it reads float32 denormals as zero).
// Compiled per CPU target (foreach_target.h); the kernel exists in the AVX3_DL copy only, with
// AVX512_BF16 enabled for it alone (a pragma), and runs where the CPU has AVX512_BF16 and the
// NANOGPT_CPU_TARGET cap allows it (attention_bf16_native); the other targets widen to float32.
#include "kernels/cpu/fixed_width_targets.h"  // first: attention_tiles-inl.h's score rows
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_bf16.cpp"
#include "kernels/cpu/attention_bf16.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>

#include "core/avx512bf16_region.h"
#include "core/check.h"
#include "core/cpu_info.h"
#include "kernels/cpu/attention_dims.h"
#include "kernels/cpu/attention_tiles-inl.h"
#include "kernels/cpu/attention_workspace.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

// GCC 12's own AVX-512 headers trip -Wmaybe-uninitialized (their _mm512_undefined operands) when
// inlined here; the warning is about the headers, not this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX3_DL
#define NANOGPT_ATTENTION_BF16_NATIVE 1
// AVX512_BF16 on top of this target's features, for the kernel's functions only.
NANOGPT_AVX512BF16_BEGIN

namespace bf16_native {

using namespace attention_tiles;  // NOLINT: the shared block sizes, Dims and the task loop
using namespace attention_v;      // NOLINT: this target's row softmax and transpose

// A bf16 pair: element k in the low half, k+1 in the high half (the layout vdpbf16ps multiplies);
// a may_alias word, so bf16 rows (uint16_t) are read as pairs in place.
using Pair = Word32;

// out[r][w] (+)= sum_k2 a[r*a_rs + k2*a_ks] . x[k2*ldx + w]   (pair dot products; r < R,
// w < 16*NV). A is read by strides, so A or A^T (by pairs) work alike.
template <bool kAcc, int R, int NV>
inline void bf16_micro(float* out, int64_t ldo, const Pair* a, int64_t a_rs, int64_t a_ks,
                       const Pair* x, int64_t ldx, int K2) {
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = kAcc ? _mm512_loadu_ps(out + r * ldo + 16 * v) : _mm512_setzero_ps();
    }
  }
  for (int k = 0; k < K2; ++k) {
    __m512bh xv[NV];
    for (int v = 0; v < NV; ++v) xv[v] = (__m512bh)_mm512_loadu_si512(x + k * ldx + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * a_rs + k * a_ks]));
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, xv[v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out + r * ldo + 16 * v, acc[r][v]);
  }
}

// out (R, W) (+)= A (R, 2*K2) X (2*K2, W): A by pairs (pair (r, k2) at a[r*a_rs + k2*a_ks]), X by
// pair rows (row k2 holds rows 2k2 and 2k2+1 interleaved, stride ldx pairs). W a multiple of 16.
// Covers an (R, W) output by register tiles: rows 4 at a time (then the 1-3 left), columns 64 at a
// time (then 48, 32 or 16; W is a multiple of 16), calling micro.template operator()<Rt, NV>(r, w)
// for the tile of Rt rows and NV 16-wide vectors at (r, w).
template <class Micro>
inline void for_each_register_tile(int R, int W, Micro&& micro) {
  auto widths = [&]<int Rt>(int r) {
    int w = 0;
    for (; w + 64 <= W; w += 64) micro.template operator()<Rt, 4>(r, w);
    switch ((W - w) / 16) {
      case 3:
        micro.template operator()<Rt, 3>(r, w);
        break;
      case 2:
        micro.template operator()<Rt, 2>(r, w);
        break;
      case 1:
        micro.template operator()<Rt, 1>(r, w);
        break;
      default:
        break;
    }
  };
  int r = 0;
  for (; r + 4 <= R; r += 4) widths.template operator()<4>(r);
  switch (R - r) {
    case 3:
      widths.template operator()<3>(r);
      break;
    case 2:
      widths.template operator()<2>(r);
      break;
    case 1:
      widths.template operator()<1>(r);
      break;
    default:
      break;
  }
}

template <bool kAcc>
void bf16_gemm(float* out, int64_t ldo, const Pair* a, int64_t a_rs, int64_t a_ks, const Pair* x,
               int64_t ldx, int R, int K2, int W) {
  for_each_register_tile(R, W, [&]<int Rt, int NV>(int r, int w) {
    bf16_micro<kAcc, Rt, NV>(out + r * ldo + w, ldo, a + r * a_rs, a_rs, a_ks, x + w, ldx, K2);
  });
}

// A by rows of pairs (a_ks = 1) or by columns (A^T of a pair-row layout: a_rs = 1).
void gemm(bool acc, float* out, int64_t ldo, const Pair* a, int64_t a_rs, int64_t a_ks,
          const Pair* x, int64_t ldx, int R, int K2, int W) {
  (acc ? bf16_gemm<true> : bf16_gemm<false>)(out, ldo, a, a_rs, a_ks, x, ldx, R, K2, W);
}

// dst (TP/kBk tiles of (HS/2, kBk) pairs) = K^T by key blocks, pairs along the channel: tile jb,
// pair row x2, column s = channels 2x2, 2x2+1 of key jb*kBk + s (the key's row read as pairs).
// Keys past T are zero.
void pack_pairs_transposed(Pair* dst, const uint16_t* src, int64_t ld, const Dims& d) {
  const int H2 = d.HS / 2;
  if (d.T != d.TP) std::fill(dst, dst + static_cast<int64_t>(H2) * d.TP, Pair{0});
  for (int t0 = 0; t0 < d.T; t0 += kBk) {
    Transpose(dst + static_cast<int64_t>(t0 / kBk) * H2 * kBk, kBk,
              reinterpret_cast<const Word32*>(src + t0 * ld), ld / 2, std::min(kBk, d.T - t0), H2);
  }
}

// 16 pairs from two bf16 rows: pair x = (r0[x], r1[x]).
inline __m512i pairs16(const uint16_t* r0, const uint16_t* r1) {
  const __m512i lo =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0)));
  const __m512i hi =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1)));
  return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

// dst (TP/2, HS) = row pairs: pair row t2, column x = (src[2t2][x], src[2t2+1][x]); rows past T
// are zero. HS is a multiple of 16.
void pack_row_pairs(Pair* dst, const uint16_t* src, int64_t ld, const Dims& d) {
  static const uint16_t zeros[512] = {};
  for (int t2 = 0; t2 < d.TP / 2; ++t2) {
    const int t = 2 * t2;
    Pair* out = dst + static_cast<int64_t>(t2) * d.HS;
    const uint16_t* r0 = t < d.T ? src + t * ld : zeros;
    const uint16_t* r1 = t + 1 < d.T ? src + (t + 1) * ld : zeros;
    for (int x = 0; x < d.HS; x += 16) _mm512_storeu_si512(out + x, pairs16(r0 + x, r1 + x));
  }
}

// dst (n) = bf16(src), n a multiple of 16.
inline void round_to_bf16(uint16_t* dst, const float* src, int n) {
  for (int x = 0; x < n; x += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + x),
                        (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + x)));
  }
}

// dst (n) = bf16(float(dst) + src), n a multiple of 16.
inline void add_round_to_bf16(uint16_t* dst, const float* src, int n) {
  for (int x = 0; x < n; x += 16) {
    const __m512i old =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dst + x)));
    const __m512 sum =
        _mm512_add_ps(_mm512_castsi512_ps(_mm512_slli_epi32(old, 16)), _mm512_loadu_ps(src + x));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + x), (__m256i)_mm512_cvtneps_pbh(sum));
  }
}

// dot product of n bf16 pairs of values (n a multiple of 16), in float32.
inline float dot_bf16(const uint16_t* a, const uint16_t* b, int n) {
  __m512 acc = _mm512_setzero_ps();
  for (int x = 0; x < n; x += 16) {
    const __m512 va = _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + x))), 16));
    const __m512 vb = _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + x))), 16));
    acc = _mm512_fmadd_ps(va, vb, acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// A float32 tile row of kBk values as kBk/2 bf16 pairs (consecutive columns paired).
inline void round_row(Pair* dst, const float* row) {
  for (int v = 0; v < kBk; v += 32) {
    const __m512bh p = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + v + 16), _mm512_loadu_ps(row + v));
    _mm512_storeu_si512(dst + v / 2, (__m512i)p);
  }
}

// Rows 2q2 and 2q2+1 of a float32 tile (kBk wide) as one row of kBk pairs (row 2q2 in the low
// half).
inline void round_row_pair(Pair* dst, const float* row0, const float* row1) {
  for (int v = 0; v < kBk; v += 16) {
    const __m512i lo =
        _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(row0 + v)));
    const __m512i hi =
        _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(row1 + v)));
    _mm512_storeu_si512(dst + v, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
}

// Per-thread forward buffers, cut from the thread's workspace block (contents left by earlier
// calls; the pair buffers in float-sized storage).
struct ForwardScratch {
  Pair *kt, *vp, *pb;
  float *s, *o, *m, *l;
  size_t floats;  // the whole
  ForwardScratch(const Dims& d, float* block) {
    Carver c(block);
    kt = reinterpret_cast<Pair*>(c.take(static_cast<size_t>(d.HS / 2) * d.TP));
    vp = reinterpret_cast<Pair*>(c.take(static_cast<size_t>(d.TP / 2) * d.HS));
    pb = reinterpret_cast<Pair*>(c.take(kBq * kBk / 2));
    s = c.take(kBq * kBk);
    o = c.take(static_cast<size_t>(kBq) * d.HS);
    m = c.take(kBq);
    l = c.take(kBq * 16);  // 16 partial sums per row (SoftmaxRow)
    floats = c.used();
  }
};

void forward_block(uint16_t* out, float* lse, const uint16_t* q, int b, int h, int i0,
                   const Dims& d, ForwardScratch& w) {
  const int nq = std::min(kBq, d.T - i0);
  const int64_t ld = 3 * static_cast<int64_t>(d.C);
  float* s = w.s;
  float* o = w.o;  // (nq, HS): set by the first key block's P V, then accumulated
  std::fill(w.m, w.m + kBq, -INFINITY);
  std::fill(w.l, w.l + kBq * 16, 0.0f);
  const Pair* qp = reinterpret_cast<const Pair*>(q + i0 * ld);
  const int last_key = i0 + nq - 1;
  for (int j0 = 0; j0 <= last_key; j0 += kBk) {
    const int nk = std::min(kBk, last_key + 1 - j0);
    gemm(false, s, kBk, qp, ld / 2, 1, w.kt + static_cast<int64_t>(j0) * (d.HS / 2), kBk, nq,
         d.HS / 2, (nk + 15) / 16 * 16);
    for (int r = 0; r < nq; ++r) {
      const int t = i0 + r;
      float* row = s + r * kBk;
      const float corr =
          SoftmaxRow(row, std::clamp(t - j0 + 1, 0, nk), w.m[r], w.l + 16 * r, b, h, t, j0, d);
      if (j0 > 0 && corr != 1.0f) {
        float* orow = o + r * d.HS;
#pragma omp simd
        for (int x = 0; x < d.HS; ++x) orow[x] *= corr;
      }
      round_row(w.pb + r * (kBk / 2), row);
    }
    gemm(j0 > 0, o, d.HS, w.pb, kBk / 2, 1, w.vp + static_cast<int64_t>(j0 / 2) * d.HS, d.HS, nq,
         (nk + 1) / 2, d.HS);
  }
  for (int r = 0; r < nq; ++r) {
    const int t = i0 + r;
    uint16_t* dst = out + (static_cast<int64_t>(b) * d.T + t) * d.C + h * d.HS;
    const float l = SumOf16(w.l + 16 * r);
    const float inv = 1.0f / l;
    float* orow = o + r * d.HS;
#pragma omp simd
    for (int x = 0; x < d.HS; ++x) orow[x] *= inv;
    round_to_bf16(dst, orow, d.HS);
    lse[(static_cast<int64_t>(b) * d.NH + h) * d.T + t] = w.m[r] + std::log(l);
  }
}

// Per-thread backward buffers (in the thread's workspace block, as ForwardScratch).
struct BackwardScratch {
  Pair *kt, *vt, *kp, *qp, *dop, *pq, *dsq, *dsr;
  float *s, *dp, *dkb, *dvb, *dq, *delta;
  size_t floats;  // the whole
  BackwardScratch(const Dims& d, float* block) {
    Carver c(block);
    const size_t head_pairs = static_cast<size_t>(d.HS / 2) * d.TP, tile_pairs = kBq / 2 * kBk;
    auto pairs = [&](size_t n) { return reinterpret_cast<Pair*>(c.take(n)); };
    kt = pairs(head_pairs);
    vt = pairs(head_pairs);
    kp = pairs(head_pairs);
    qp = pairs(head_pairs);
    dop = pairs(head_pairs);
    pq = pairs(tile_pairs);
    dsq = pairs(tile_pairs);
    dsr = pairs(tile_pairs);
    s = c.take(kBq * kBk);
    dp = c.take(kBq * kBk);
    dkb = c.take(static_cast<size_t>(kBk) * d.HS);
    dvb = c.take(static_cast<size_t>(kBk) * d.HS);
    dq = c.take(static_cast<size_t>(d.TP) * d.HS);
    delta = c.take(static_cast<size_t>(d.T));
    floats = c.used();
  }
};

// Head (b, h), every key block.
void backward_head(uint16_t* dqkv, const uint16_t* dout, const uint16_t* out, const float* lse,
                   const uint16_t* qkv, int b, int h, const Dims& d, BackwardScratch& w) {
  const int T = d.T, HS = d.HS, H2 = HS / 2;
  const int64_t ld = 3 * static_cast<int64_t>(d.C);
  const uint16_t* base = qkv + static_cast<int64_t>(b) * T * ld + h * HS;  // row t at base + t*ld
  const uint16_t* dob = dout + static_cast<int64_t>(b) * T * d.C + h * HS;
  const float* lse_h = lse + (static_cast<int64_t>(b) * d.NH + h) * T;
  uint16_t* dbase = dqkv + static_cast<int64_t>(b) * T * ld + h * HS;
  // D_t = dout_t . out_t of the head (in the thread's scratch: no per-call allocation).
  const uint16_t* oh = out + static_cast<int64_t>(b) * T * d.C + h * HS;
  float* delta = w.delta;
  for (int t = 0; t < T; ++t) delta[t] = dot_bf16(dob + t * d.C, oh + t * d.C, HS);
  pack_pairs_transposed(w.kt, base + d.C, ld, d);
  pack_pairs_transposed(w.vt, base + 2 * d.C, ld, d);
  pack_row_pairs(w.kp, base + d.C, ld, d);
  pack_row_pairs(w.qp, base, ld, d);
  pack_row_pairs(w.dop, dob, d.C, d);
  for (int j0 = 0; j0 < T; j0 += kBk) {
    const int nk = std::min(kBk, T - j0);
    for (int i0 = j0; i0 < T; i0 += kBq) {  // j0 is a multiple of kBq: the first block is j0
      const int nq = std::min(kBq, T - i0);
      // S (nq, kBk) = Q K^T and dP = dO V^T, Q and dO rows read as pairs where they lie.
      gemm(false, w.s, kBk, reinterpret_cast<const Pair*>(base + i0 * ld), ld / 2, 1,
           w.kt + static_cast<int64_t>(j0) * H2, kBk, nq, H2, kBk);
      gemm(false, w.dp, kBk, reinterpret_cast<const Pair*>(dob + i0 * d.C), d.C / 2, 1,
           w.vt + static_cast<int64_t>(j0) * H2, kBk, nq, H2, kBk);
      for (int r = 0; r < nq; ++r) {
        const int t = i0 + r;
        BackwardRow(w.s + r * kBk, w.dp + r * kBk, std::clamp(t - j0 + 1, 0, nk), lse_h[t],
                    delta[t], b, h, t, j0, d);
      }
      if (nq % 2) {  // the pair rows read one row past nq
        std::fill(w.s + nq * kBk, w.s + (nq + 1) * kBk, 0.0f);
        std::fill(w.dp + nq * kBk, w.dp + (nq + 1) * kBk, 0.0f);
      }
      const int nq2 = (nq + 1) / 2;
      for (int q2 = 0; q2 < nq2; ++q2) {
        round_row_pair(w.pq + q2 * kBk, w.s + 2 * q2 * kBk, w.s + (2 * q2 + 1) * kBk);
        round_row_pair(w.dsq + q2 * kBk, w.dp + 2 * q2 * kBk, w.dp + (2 * q2 + 1) * kBk);
      }
      for (int r = 0; r < nq; ++r) round_row(w.dsr + r * (kBk / 2), w.dp + r * kBk);
      // dV (nk, HS) += P^T dO;  dK += dS^T Q (P^T, dS^T: the pair rows read by columns);
      // dQ (nq, HS) += dS K. Each = on its first product.
      const bool first = i0 == j0;
      const int64_t q_pairs = static_cast<int64_t>(i0 / 2) * HS;
      gemm(!first, w.dvb, HS, w.pq, 1, kBk, w.dop + q_pairs, HS, nk, nq2, HS);
      gemm(!first, w.dkb, HS, w.dsq, 1, kBk, w.qp + q_pairs, HS, nk, nq2, HS);
      gemm(j0 > 0, w.dq + static_cast<int64_t>(i0) * HS, HS, w.dsr, kBk / 2, 1,
           w.kp + static_cast<int64_t>(j0 / 2) * HS, HS, nq, (nk + 1) / 2, HS);
    }
    for (int r = 0; r < nk; ++r) {
      uint16_t* dk = dbase + static_cast<int64_t>(j0 + r) * ld + d.C;
      add_round_to_bf16(dk, w.dkb + r * HS, HS);
      add_round_to_bf16(dk + d.C, w.dvb + r * HS, HS);
    }
  }
  for (int t = 0; t < T; ++t) {
    add_round_to_bf16(dbase + static_cast<int64_t>(t) * ld, w.dq + static_cast<int64_t>(t) * HS,
                      HS);
  }
}

}  // namespace bf16_native

bool NativeCompiled() { return true; }

void AttentionForwardBf16(AttentionWorkspace& ws, uint16_t* out, float* lse, const uint16_t* qkv,
                          int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  const attention_tiles::Dims d = attention_tiles::make_dims(B, T, C, NH, dropout_p, seed);
  const int64_t ld = 3 * static_cast<int64_t>(C);
  ws.reserve(omp_get_max_threads(), bf16_native::ForwardScratch(d, nullptr).floats);
  // Head (b, h): row t of Q at q + t*ld, K and V C and 2C further.
  auto head = [&](int b, int h) { return qkv + static_cast<int64_t>(b) * T * ld + h * d.HS; };
  attention_tiles::run_forward_tasks(
      d, [&](int thread) { return bf16_native::ForwardScratch(d, ws.thread_block(thread)); },
      [&](bf16_native::ForwardScratch& w, int b, int h) {
        bf16_native::pack_pairs_transposed(w.kt, head(b, h) + C, ld, d);
        bf16_native::pack_row_pairs(w.vp, head(b, h) + 2 * C, ld, d);
      },
      [&](bf16_native::ForwardScratch& w, int b, int h, int i0) {
        bf16_native::forward_block(out, lse, head(b, h), b, h, i0, d, w);
      });
}

void AttentionBackwardBf16(AttentionWorkspace& ws, uint16_t* dqkv, const uint16_t* dout,
                           const uint16_t* out, const float* lse, const uint16_t* qkv, int B, int T,
                           int C, int NH, float dropout_p, uint64_t seed) {
  const attention_tiles::Dims d = attention_tiles::make_dims(B, T, C, NH, dropout_p, seed);
  const int BH = B * NH;
  ws.reserve(omp_get_max_threads(), bf16_native::BackwardScratch(d, nullptr).floats);
  // Whole heads in static bands at small T (attention_tiles::static_whole_heads), else dynamic.
  const bool whole_heads = attention_tiles::static_whole_heads(BH, T, omp_get_max_threads());
#pragma omp parallel
  {
    bf16_native::BackwardScratch w(d, ws.thread_block(omp_get_thread_num()));
    const auto head = [&](int64_t bh) {
      bf16_native::backward_head(dqkv, dout, out, lse, qkv, static_cast<int>(bh / NH),
                                 static_cast<int>(bh % NH), d, w);
    };
    attention_tiles::for_each_task(BH, whole_heads, head);
  }
}

NANOGPT_AVX512BF16_END

#else  // a target without the native kernel: attention_bf16_native() is false, nothing calls these

bool NativeCompiled() { return false; }

void AttentionForwardBf16(AttentionWorkspace&, uint16_t*, float*, const uint16_t*, int, int, int,
                          int, float, uint64_t) {
  CHECK(false, "attention_forward_bf16: no native bf16 kernel on this CPU target");
}
void AttentionBackwardBf16(AttentionWorkspace&, uint16_t*, const uint16_t*, const uint16_t*,
                           const float*, const uint16_t*, int, int, int, int, float, uint64_t) {
  CHECK(false, "attention_backward_bf16: no native bf16 kernel on this CPU target");
}

#endif

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(NativeCompiled);
HWY_EXPORT(AttentionForwardBf16);
HWY_EXPORT(AttentionBackwardBf16);

bool attention_bf16_native(int B, int T, int C, int NH) {
  const int HS = C / NH;
  return HWY_DYNAMIC_DISPATCH(NativeCompiled)() && have_bf16_dot_products() && HS % 16 == 0 &&
         HS <= 512 && T > 0 && attention_tiles::key_groups(B * NH, T, omp_get_max_threads()) == 1;
}

void attention_forward_bf16(AttentionWorkspace& ws, uint16_t* out, float* lse, const uint16_t* qkv,
                            int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(AttentionForwardBf16)(ws, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void attention_backward_bf16(AttentionWorkspace& ws, uint16_t* dqkv, const uint16_t* dout,
                             const uint16_t* out, const float* lse, const uint16_t* qkv, int B,
                             int T, int C, int NH, float dropout_p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(AttentionBackwardBf16)
  (ws, dqkv, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void attention_forward_bf16(uint16_t* out, float* lse, const uint16_t* qkv, int B, int T, int C,
                            int NH, float dropout_p, uint64_t seed) {
  AttentionWorkspace ws;
  attention_forward_bf16(ws, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void attention_backward_bf16(uint16_t* dqkv, const uint16_t* dout, const uint16_t* out,
                             const float* lse, const uint16_t* qkv, int B, int T, int C, int NH,
                             float dropout_p, uint64_t seed) {
  AttentionWorkspace ws;
  attention_backward_bf16(ws, dqkv, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
