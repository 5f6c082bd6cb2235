// Fast causal attention, flash style: no T x T matrix. Both passes are split into tasks finer than
// a head, so that B*NH smaller than the thread count still fills the machine and the causal
// triangle's uneven rows are balanced (dynamic schedule, heaviest tasks first):
//  forward:  tasks (b, h, 32-query block). A thread packs K^T and V of a head (padded, K^T by
//            key tiles) when it starts on that head, then each block runs an online softmax over
//            64-key blocks (tile GEMMs for QK^T and PV).
//  backward: tasks (b, h, key group): the key blocks of a head dealt round-robin to G groups
//            (G = 1 when there are enough heads). A task recomputes probabilities from lse
//            (D_t = dout_t . out_t), owns dK, dV of its keys, and accumulates dQ into its own
//            (T, HS) partial; with G > 1 the partials are summed into dqkv afterwards, so no two
//            threads ever write the same gradient. Extra memory: linear in T.
// Compiled for every CPU target (Highway's foreach_target.h) and dispatched at run time; the
// vector parts are attention_tiles-inl.h and tile_gemm-inl.h (fixed-width vectors: on ARM64 NEON
// serves SVE CPUs too, fixed_width_targets.h).
#include "kernels/cpu/fixed_width_targets.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/cpu/attention_dims.h"
#include "kernels/cpu/attention_tiles-inl.h"
#include "kernels/cpu/attention_workspace.h"
#include "kernels/cpu/row_reduce-inl.h"
#include "kernels/cpu/tile_gemm-inl.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace {

using namespace attention_tiles;  // NOLINT: the shared block sizes, Dims and the task loop
using namespace attention_v;      // NOLINT: this target's row softmax, exp2 and transpose

// dst (TP, HSP) = the T rows of src (row stride ld, HS wide), zero padded.
void pack_rows(float* dst, const float* src, int64_t ld, const Dims& d) {
  if (d.T != d.TP || d.HS != d.HSP) std::fill(dst, dst + static_cast<int64_t>(d.TP) * d.HSP, 0.0f);
  for (int t = 0; t < d.T; ++t) std::copy(src + t * ld, src + t * ld + d.HS, dst + t * d.HSP);
}

// dst (TP/kBk, HS, kBk) = K^T by key blocks: block jb is the (HS, kBk) transpose of rows
// jb*kBk.. of src (row stride ld, HS wide), zero padded. Each tile is contiguous (16 KB at HS 64):
// a plain (HS, TP) transpose puts the rows a tile GEMM walks 4 KB apart at T 1024, all in the
// same L1 sets, which halves the kernel's speed.
void pack_transposed(float* dst, const float* src, int64_t ld, const Dims& d) {
  if (d.T != d.TP) std::fill(dst, dst + static_cast<int64_t>(d.HS) * d.TP, 0.0f);
  for (int t0 = 0; t0 < d.T; t0 += kBk) {
    Transpose(reinterpret_cast<Word32*>(dst + static_cast<int64_t>(t0 / kBk) * d.HS * kBk), kBk,
              reinterpret_cast<const Word32*>(src + t0 * ld), ld, std::min(kBk, d.T - t0), d.HS);
  }
}

// The (HS, kBk) tile of key block j0 (a multiple of kBk) in a pack_transposed buffer.
inline const float* key_tile(const float* packed, int j0, const Dims& d) {
  return packed + static_cast<int64_t>(j0 / kBk) * d.HS * kBk;
}

// Per-thread forward buffers (in the thread's workspace block; contents left by earlier calls);
// kt, vp hold K^T and V of the thread's current head.
struct ForwardScratch {
  float *kt, *vp, *s, *o, *m, *l;
  size_t floats;  // the whole
  ForwardScratch(const Dims& d, float* block) {
    Carver c(block);
    kt = c.take(static_cast<size_t>(d.HS) * d.TP);
    vp = c.take(static_cast<size_t>(d.TP) * d.HSP);
    s = c.take(kBq * kBk);
    o = c.take(static_cast<size_t>(kBq) * d.HSP);
    m = c.take(kBq);
    l = c.take(kBq * 16);  // 16 partial sums per row (softmax_row)
    floats = c.used();
  }
};

// One query block [i0, i0+nq) of head (b, h). kt = K^T (pack_transposed), vp (TP, HSP) = V.
void forward_block(float* out, float* lse, const float* q, const float* kt, const float* vp, int b,
                   int h, int i0, const Dims& d, ForwardScratch& w) {
  const int nq = std::min(kBq, d.T - i0);
  const int64_t ld = 3 * static_cast<int64_t>(d.C);
  float* s = w.s;
  float* o = w.o;  // written by the first key block's P V (set), then accumulated
  std::fill(w.m, w.m + kBq, -INFINITY);
  std::fill(w.l, w.l + kBq * 16, 0.0f);
  const int last_key = i0 + nq - 1;
  for (int j0 = 0; j0 <= last_key; j0 += kBk) {
    const int nk = std::min(kBk, last_key + 1 - j0);
    // S (nq, nk rounded up to 16) = Q K^T: the diagonal block needs only its first nk columns
    // (the rest of each row is zeroed below before anything reads it).
    TileGemmSet(s, kBk, q + i0 * ld, ld, 1, key_tile(kt, j0, d), kBk, nq, d.HS,
                (nk + 15) / 16 * 16);
    for (int r = 0; r < nq; ++r) {
      const int t = i0 + r;
      const int nv = std::clamp(t - j0 + 1, 0, nk);  // causal: keys j0..t
      float* row = s + r * kBk;
      const float corr = SoftmaxRow(row, nv, w.m[r], w.l + 16 * r, b, h, t, j0, d);
      if (j0 > 0 && corr != 1.0f) {
        float* orow = o + r * d.HSP;
#pragma omp simd
        for (int x = 0; x < d.HSP; ++x) orow[x] *= corr;
      }
    }
    // O = P V (first key block), O += P V (the others)
    (j0 == 0 ? TileGemmSet : TileGemmAcc)(
        o, d.HSP, s, kBk, 1, vp + static_cast<int64_t>(j0) * d.HSP, d.HSP, nq, nk, d.HSP);
  }
  for (int r = 0; r < nq; ++r) {
    const int t = i0 + r;
    float* dst = out + (static_cast<int64_t>(b) * d.T + t) * d.C + h * d.HS;
    const float l = SumOf16(w.l + 16 * r);
    const float inv = 1.0f / l;
    for (int x = 0; x < d.HS; ++x) dst[x] = o[r * d.HSP + x] * inv;
    lse[(static_cast<int64_t>(b) * d.NH + h) * d.T + t] = w.m[r] + std::log(l);
  }
}

}  // namespace

void AttentionForward(AttentionWorkspace& ws, float* out, float* lse, const float* qkv, int B,
                      int T, int C, int NH, float dropout_p, uint64_t seed) {
  const Dims d = make_dims(B, T, C, NH, dropout_p, seed);
  const int64_t ld = 3 * static_cast<int64_t>(C);
  ws.reserve(omp_get_max_threads(), ForwardScratch(d, nullptr).floats);
  // Head (b, h): row t of Q at q + t*ld, K and V C and 2C further.
  auto head = [&](int b, int h) { return qkv + static_cast<int64_t>(b) * T * ld + h * d.HS; };
  run_forward_tasks(
      d, [&](int thread) { return ForwardScratch(d, ws.thread_block(thread)); },
      [&](ForwardScratch& w, int b, int h) {
        pack_transposed(w.kt, head(b, h) + C, ld, d);
        pack_rows(w.vp, head(b, h) + 2 * C, ld, d);
      },
      [&](ForwardScratch& w, int b, int h, int i0) {
        forward_block(out, lse, head(b, h), w.kt, w.vp, b, h, i0, d, w);
      });
}

namespace {

// Per-thread backward buffers (in the thread's workspace block, as ForwardScratch).
struct BackwardScratch {
  float *qp, *dop, *kp, *kt, *vt, *s, *dp, *dkb, *dvb, *dq, *delta;
  size_t floats;  // the whole
  BackwardScratch(const Dims& d, bool own_dq, float* block) {
    Carver c(block);
    const size_t rows = static_cast<size_t>(d.TP) * d.HSP, cols = static_cast<size_t>(d.HS) * d.TP;
    qp = c.take(rows);
    dop = c.take(rows);
    kp = c.take(rows);
    kt = c.take(cols);
    vt = c.take(cols);
    s = c.take(kBq * kBk);
    dp = c.take(kBq * kBk);
    dkb = c.take(static_cast<size_t>(kBk) * d.HSP);
    dvb = c.take(static_cast<size_t>(kBk) * d.HSP);
    dq = own_dq ? c.take(rows) : nullptr;
    delta = c.take(static_cast<size_t>(d.T));
    floats = c.used();
  }
};

// Key group g of G of head (b, h): key blocks g, g+G, g+2G, ... . dK, dV of those keys are added
// into dqkv. dQ: with G == 1 the task owns the whole head and adds it into dqkv itself (dq is the
// thread's scratch, set by the first key block, which meets every query block); with G > 1 dq
// (TP, HSP) is this task's partial (zeroed here, summed into dqkv by the caller).
// D_t = dout_t . out_t of the head goes into the thread's scratch (no per-call allocation). Every
// scratch tile is set by its first product, never zero-filled.
void backward_task(float* dqkv, float* dq, const float* dout, const float* out, const float* lse,
                   const float* qkv, int b, int h, int g, int G, const Dims& d,
                   BackwardScratch& w) {
  const int T = d.T, HS = d.HS, HSP = d.HSP;
  const int64_t ld = 3 * static_cast<int64_t>(d.C);
  const float* base = qkv + static_cast<int64_t>(b) * T * ld + h * HS;  // row t at base + t*ld
  const float* dob = dout + static_cast<int64_t>(b) * T * d.C + h * HS;
  const float* lse_h = lse + (static_cast<int64_t>(b) * d.NH + h) * T;
  float* dbase = dqkv + static_cast<int64_t>(b) * T * ld + h * HS;
  const float* oh = out + static_cast<int64_t>(b) * T * d.C + h * HS;
  float* delta = w.delta;
  for (int t = 0; t < T; ++t) delta[t] = row_reduce::dot(dob + t * d.C, oh + t * d.C, HS);
  if (G > 1) std::fill(dq, dq + static_cast<int64_t>(d.TP) * HSP, 0.0f);
  pack_rows(w.qp, base, ld, d);
  pack_rows(w.kp, base + d.C, ld, d);
  pack_rows(w.dop, dob, d.C, d);
  pack_transposed(w.kt, base + d.C, ld, d);
  pack_transposed(w.vt, base + 2 * d.C, ld, d);
  for (int j0 = g * kBk; j0 < T; j0 += G * kBk) {
    const int nk = std::min(kBk, T - j0);
    const int first_i0 = j0 / kBq * kBq;
    for (int i0 = first_i0; i0 < T; i0 += kBq) {
      const int nq = std::min(kBq, T - i0);
      const float* qb = w.qp + static_cast<int64_t>(i0) * HSP;     // (nq, HSP)
      const float* dobk = w.dop + static_cast<int64_t>(i0) * HSP;  // (nq, HSP)
      // Keys of the block some row of this query block sees: the first nkv (fewer than nk only on
      // the diagonal, where kBq < kBk leaves the block's last keys after every query row). Columns
      // past nkv are neither computed nor multiplied (backward_row zeroes them in s and dp).
      const int nkv = std::min(nk, i0 + nq - j0);
      const int wkv = (nkv + 15) / 16 * 16;
      TileGemmSet(w.s, kBk, qb, HSP, 1, key_tile(w.kt, j0, d), kBk, nq, HS, wkv);
      TileGemmSet(w.dp, kBk, dobk, HSP, 1, key_tile(w.vt, j0, d), kBk, nq, HS, wkv);
      for (int r = 0; r < nq; ++r) {
        const int t = i0 + r;
        const int nv = std::clamp(t - j0 + 1, 0, nk);
        float* srow = w.s + r * kBk;    // scores -> dropped probabilities P*M
        float* dprow = w.dp + r * kBk;  // dout.v -> dscore * scale
        BackwardRow(srow, dprow, nv, lse_h[t], delta[t], b, h, t, j0, d);
      }
      // dV += (P*M)^T dO;  dK += dS^T Q;  dQ += dS K (each = on its first product).
      // Rows nkv.. of dV, dK get nothing from this query block: zero when it is the first.
      const auto dkv_gemm = i0 == first_i0 ? TileGemmSet : TileGemmAcc;
      dkv_gemm(w.dvb, HSP, w.s, 1, kBk, dobk, HSP, nkv, nq, HSP);
      dkv_gemm(w.dkb, HSP, w.dp, 1, kBk, qb, HSP, nkv, nq, HSP);
      if (i0 == first_i0 && nkv < nk) {
        std::fill(w.dvb + static_cast<int64_t>(nkv) * HSP, w.dvb + static_cast<int64_t>(nk) * HSP,
                  0.0f);
        std::fill(w.dkb + static_cast<int64_t>(nkv) * HSP, w.dkb + static_cast<int64_t>(nk) * HSP,
                  0.0f);
      }
      (G == 1 && j0 == 0 ? TileGemmSet : TileGemmAcc)(
          dq + static_cast<int64_t>(i0) * HSP, HSP, w.dp, kBk, 1,
          w.kp + static_cast<int64_t>(j0) * HSP, HSP, nq, nkv, HSP);
    }
    for (int r = 0; r < nk; ++r) {
      float* dk = dbase + static_cast<int64_t>(j0 + r) * ld + d.C;
      float* dv = dk + d.C;
      for (int x = 0; x < HS; ++x) {
        dk[x] += w.dkb[r * HSP + x];
        dv[x] += w.dvb[r * HSP + x];
      }
    }
  }
  if (G == 1) {
    for (int t = 0; t < T; ++t) {
      float* dst = dbase + static_cast<int64_t>(t) * ld;
      const float* src = dq + static_cast<int64_t>(t) * HSP;
#pragma omp simd
      for (int x = 0; x < HS; ++x) dst[x] += src[x];
    }
  }
}

}  // namespace

void AttentionBackward(AttentionWorkspace& ws, float* dqkv, const float* dout, const float* out,
                       const float* lse, const float* qkv, int B, int T, int C, int NH,
                       float dropout_p, uint64_t seed) {
  const Dims d = make_dims(B, T, C, NH, dropout_p, seed);
  const int BH = B * NH;
  const int G = key_groups(BH, T, omp_get_max_threads());
  const bool whole_heads = G == 1 && static_whole_heads(BH, T, omp_get_max_threads());
  ws.reserve(omp_get_max_threads(), BackwardScratch(d, G == 1, nullptr).floats);
  const int64_t ld = 3 * static_cast<int64_t>(C);
  const int64_t part = static_cast<int64_t>(d.TP) * d.HSP;  // one dQ partial (TP, HSP)
  // With G > 1: (B*NH, G, TP, HSP), zeroed by the task that owns each partial.
  std::unique_ptr<float[]> dq_parts(G > 1 ? new float[static_cast<size_t>(BH) * G * part]
                                          : nullptr);
#pragma omp parallel
  {
    BackwardScratch w(d, G == 1, ws.thread_block(omp_get_thread_num()));
    // Task i: head i%BH, key group i/BH (group 0 holds the longest key columns).
    const auto task = [&](int64_t i) {
      const int bh = static_cast<int>(i % BH), g = static_cast<int>(i / BH);
      float* dq = G == 1 ? w.dq : dq_parts.get() + (int64_t{bh} * G + g) * part;
      backward_task(dqkv, dq, dout, out, lse, qkv, bh / NH, bh % NH, g, G, d, w);
    };
    for_each_task(int64_t{BH} * G, whole_heads, task);  // whole_heads: G == 1, a band of heads
    // dQ with G > 1: sum the head's partials into dqkv, by rows.
    if (G > 1) {
#pragma omp for schedule(static)
      for (int64_t row = 0; row < int64_t{B} * T; ++row) {
        const int64_t b = row / T, t = row % T;
        for (int h = 0; h < NH; ++h) {
          float* dst = dqkv + row * ld + h * d.HS;
          const float* src = dq_parts.get() + ((b * NH + h) * G) * part + t * d.HSP;
          for (int gi = 0; gi < G; ++gi) {
#pragma omp simd
            for (int x = 0; x < d.HS; ++x) dst[x] += src[gi * part + x];
          }
        }
      }
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(AttentionForward);
HWY_EXPORT(AttentionBackward);

void attention_forward(AttentionWorkspace& ws, float* out, float* lse, const float* qkv, int B,
                       int T, int C, int NH, float dropout_p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(AttentionForward)(ws, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                       float dropout_p, uint64_t seed) {
  AttentionWorkspace ws;
  attention_forward(ws, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void attention_backward(AttentionWorkspace& ws, float* dqkv, const float* dout, const float* out,
                        const float* lse, const float* qkv, int B, int T, int C, int NH,
                        float dropout_p, uint64_t seed) {
  HWY_DYNAMIC_DISPATCH(AttentionBackward)
  (ws, dqkv, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int C, int NH, float dropout_p,
                        uint64_t seed) {
  AttentionWorkspace ws;
  attention_backward(ws, dqkv, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
