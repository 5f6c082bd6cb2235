// Fast causal attention, flash style: no T x T matrix. Tasks are (b, h) heads, run in parallel;
// each head's K, V (and for backward Q, dout) are packed once into padded/transposed per-thread
// buffers. Forward: 32-query blocks with an online softmax over 64-key blocks. Backward: walks
// key blocks, recomputes probabilities from lse (D_t = dout_t . out_t), accumulates dQ for the
// whole head locally, so no two threads write the same gradient.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/tile_gemm.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ops.h"

namespace nanogpt::cpu {

namespace {

constexpr int kBq = 32;  // query rows per block
constexpr int kBk = 64;  // keys per block (the width of the score tile)

struct Dims {
  int T, TP, C, NH, HS, HSP;  // TP: T rounded up to kBk; HSP: HS rounded up to 16
  float scale, p, keep_scale;
  uint64_t seed;
};

Dims make_dims(int T, int C, int NH, float p, uint64_t seed) {
  const int HS = C / NH;
  return {T,
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

// dst (TP, HSP) = the T rows of src (row stride ld, HS wide), zero padded.
void pack_rows(std::vector<float>& dst, const float* src, int64_t ld, const Dims& d) {
  std::fill(dst.begin(), dst.end(), 0.0f);
  for (int t = 0; t < d.T; ++t) std::copy(src + t * ld, src + t * ld + d.HS, &dst[t * d.HSP]);
}

// dst (HS, TP) = transpose of the T rows of src, zero padded.
void pack_transposed(std::vector<float>& dst, const float* src, int64_t ld, const Dims& d) {
  std::fill(dst.begin(), dst.end(), 0.0f);
  for (int t = 0; t < d.T; ++t) {
    for (int x = 0; x < d.HS; ++x) dst[static_cast<int64_t>(x) * d.TP + t] = src[t * ld + x];
  }
}

inline uint64_t mask_index(int b, int h, int t, int s, const Dims& d) {
  return ((static_cast<uint64_t>(b) * d.NH + h) * d.T + t) * d.T + s;
}

struct ForwardScratch {
  std::vector<float> kt, vp, s, o, m, l;
  explicit ForwardScratch(const Dims& d)
      : kt(static_cast<size_t>(d.HS) * d.TP),
        vp(static_cast<size_t>(d.TP) * d.HSP),
        s(kBq * kBk),
        o(static_cast<size_t>(kBq) * d.HSP),
        m(kBq),
        l(kBq) {}
};

// One query block [i0, i0+nq) of head (b, h); K^T and V already packed in w.
void forward_block(float* out, float* lse, const float* q, int b, int h, int i0, const Dims& d,
                   ForwardScratch& w) {
  const int nq = std::min(kBq, d.T - i0);
  const int64_t ld = 3 * static_cast<int64_t>(d.C);
  float* s = w.s.data();
  float* o = w.o.data();
  std::fill(w.o.begin(), w.o.end(), 0.0f);
  std::fill(w.m.begin(), w.m.end(), -INFINITY);
  std::fill(w.l.begin(), w.l.end(), 0.0f);
  const int last_key = i0 + nq - 1;
  for (int j0 = 0; j0 <= last_key; j0 += kBk) {
    const int nk = std::min(kBk, last_key + 1 - j0);
    // S (nq, kBk) = Q K^T
    tile_gemm_set(s, kBk, q + i0 * ld, ld, 1, w.kt.data() + j0, d.TP, nq, d.HS, kBk);
    for (int r = 0; r < nq; ++r) {
      const int t = i0 + r;
      const int nv = std::clamp(t - j0 + 1, 0, nk);  // causal: keys j0..t
      float* row = s + r * kBk;
      float mx = w.m[r];
#pragma omp simd reduction(max : mx)
      for (int j = 0; j < nv; ++j) mx = row[j] * d.scale > mx ? row[j] * d.scale : mx;
      const float corr = w.m[r] == -INFINITY ? 0.0f : std::exp(w.m[r] - mx);
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int j = 0; j < nv; ++j) {
        row[j] = fast_exp(row[j] * d.scale - mx);
        sum += row[j];
      }
      std::fill(row + nv, row + kBk, 0.0f);
      if (d.p > 0) {
        const uint64_t base = mask_index(b, h, t, j0, d);
#pragma omp simd
        for (int j = 0; j < nv; ++j) row[j] *= dropout_keep(d.seed, base + j, d.p, d.keep_scale);
      }
      w.m[r] = mx;
      w.l[r] = w.l[r] * corr + sum;
      if (corr != 1.0f) {
        float* orow = o + r * d.HSP;
#pragma omp simd
        for (int x = 0; x < d.HSP; ++x) orow[x] *= corr;
      }
    }
    // O += P V
    tile_gemm_acc(o, d.HSP, s, kBk, 1, w.vp.data() + static_cast<int64_t>(j0) * d.HSP, d.HSP, nq,
                  nk, d.HSP);
  }
  for (int r = 0; r < nq; ++r) {
    const int t = i0 + r;
    float* dst = out + (static_cast<int64_t>(b) * d.T + t) * d.C + h * d.HS;
    const float inv = 1.0f / w.l[r];
    for (int x = 0; x < d.HS; ++x) dst[x] = o[r * d.HSP + x] * inv;
    lse[(static_cast<int64_t>(b) * d.NH + h) * d.T + t] = w.m[r] + std::log(w.l[r]);
  }
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                       float dropout_p, uint64_t seed) {
  const Dims d = make_dims(T, C, NH, dropout_p, seed);
  const int64_t ld = 3 * static_cast<int64_t>(C);
#pragma omp parallel
  {
    ForwardScratch w(d);
#pragma omp for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; ++bh) {
      const int b = bh / NH, h = bh % NH;
      const float* q = qkv + static_cast<int64_t>(b) * T * ld + h * d.HS;  // row t at q + t*ld
      pack_transposed(w.kt, q + C, ld, d);
      pack_rows(w.vp, q + 2 * C, ld, d);
      for (int i0 = 0; i0 < T; i0 += kBq) forward_block(out, lse, q, b, h, i0, d, w);
    }
  }
}

namespace {

struct BackwardScratch {
  std::vector<float> qp, dop, kp, kt, vt, dq, delta, s, dp, dkb, dvb;
  explicit BackwardScratch(const Dims& d)
      : qp(static_cast<size_t>(d.TP) * d.HSP),
        dop(qp.size()),
        kp(qp.size()),
        kt(static_cast<size_t>(d.HS) * d.TP),
        vt(kt.size()),
        dq(qp.size()),
        delta(d.TP),
        s(kBq * kBk),
        dp(kBq * kBk),
        dkb(static_cast<size_t>(kBk) * d.HSP),
        dvb(dkb.size()) {}
};

// One (b, h) of the backward pass.
void backward_head(float* dqkv, const float* dout, const float* out, const float* lse,
                   const float* qkv, int b, int h, const Dims& d, BackwardScratch& w) {
  const int T = d.T, HS = d.HS, HSP = d.HSP;
  const int64_t ld = 3 * static_cast<int64_t>(d.C);
  const float* base = qkv + static_cast<int64_t>(b) * T * ld + h * HS;  // row t at base + t*ld
  const float* dob = dout + static_cast<int64_t>(b) * T * d.C + h * HS;
  const float* ob = out + static_cast<int64_t>(b) * T * d.C + h * HS;
  const float* lse_h = lse + (static_cast<int64_t>(b) * d.NH + h) * T;
  float* dbase = dqkv + static_cast<int64_t>(b) * T * ld + h * HS;
  pack_rows(w.qp, base, ld, d);
  pack_rows(w.kp, base + d.C, ld, d);
  pack_rows(w.dop, dob, d.C, d);
  pack_transposed(w.kt, base + d.C, ld, d);
  pack_transposed(w.vt, base + 2 * d.C, ld, d);
  std::fill(w.dq.begin(), w.dq.end(), 0.0f);
  for (int t = 0; t < T; ++t) {  // D_t = dout_t . out_t
    float acc = 0;
    const float* a = dob + static_cast<int64_t>(t) * d.C;
    const float* c = ob + static_cast<int64_t>(t) * d.C;
#pragma omp simd reduction(+ : acc)
    for (int x = 0; x < HS; ++x) acc += a[x] * c[x];
    w.delta[t] = acc;
  }
  for (int j0 = 0; j0 < T; j0 += kBk) {
    const int nk = std::min(kBk, T - j0);
    std::fill(w.dkb.begin(), w.dkb.end(), 0.0f);
    std::fill(w.dvb.begin(), w.dvb.end(), 0.0f);
    for (int i0 = j0 / kBq * kBq; i0 < T; i0 += kBq) {
      const int nq = std::min(kBq, T - i0);
      const float* qb = w.qp.data() + static_cast<int64_t>(i0) * HSP;     // (nq, HSP)
      const float* dobk = w.dop.data() + static_cast<int64_t>(i0) * HSP;  // (nq, HSP)
      tile_gemm_set(w.s.data(), kBk, qb, HSP, 1, w.kt.data() + j0, d.TP, nq, HS, kBk);
      tile_gemm_set(w.dp.data(), kBk, dobk, HSP, 1, w.vt.data() + j0, d.TP, nq, HS, kBk);
      for (int r = 0; r < nq; ++r) {
        const int t = i0 + r;
        const int nv = std::clamp(t - j0 + 1, 0, nk);
        float* srow = w.s.data() + r * kBk;    // scores -> dropped probabilities P*M
        float* dprow = w.dp.data() + r * kBk;  // dout.v -> dscore * scale
        const float lt = lse_h[t], dt = w.delta[t];
        if (d.p > 0) {
          const uint64_t idx = mask_index(b, h, t, j0, d);
#pragma omp simd
          for (int j = 0; j < nv; ++j) {
            const float p = fast_exp(srow[j] * d.scale - lt);
            const float mk = dropout_keep(d.seed, idx + j, d.p, d.keep_scale);
            srow[j] = p * mk;
            dprow[j] = p * (dprow[j] * mk - dt) * d.scale;
          }
        } else {
#pragma omp simd
          for (int j = 0; j < nv; ++j) {
            const float p = fast_exp(srow[j] * d.scale - lt);
            srow[j] = p;
            dprow[j] = p * (dprow[j] - dt) * d.scale;
          }
        }
        std::fill(srow + nv, srow + kBk, 0.0f);
        std::fill(dprow + nv, dprow + kBk, 0.0f);
      }
      // dV += (P*M)^T dO;  dK += dS^T Q;  dQ += dS K.
      tile_gemm_acc(w.dvb.data(), HSP, w.s.data(), 1, kBk, dobk, HSP, nk, nq, HSP);
      tile_gemm_acc(w.dkb.data(), HSP, w.dp.data(), 1, kBk, qb, HSP, nk, nq, HSP);
      tile_gemm_acc(w.dq.data() + static_cast<int64_t>(i0) * HSP, HSP, w.dp.data(), kBk, 1,
                    w.kp.data() + static_cast<int64_t>(j0) * HSP, HSP, nq, nk, HSP);
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
  for (int t = 0; t < T; ++t) {
    float* dq = dbase + static_cast<int64_t>(t) * ld;
    for (int x = 0; x < HS; ++x) dq[x] += w.dq[static_cast<int64_t>(t) * HSP + x];
  }
}

}  // namespace

void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                        const float* qkv, int B, int T, int C, int NH, float dropout_p,
                        uint64_t seed) {
  const Dims d = make_dims(T, C, NH, dropout_p, seed);
#pragma omp parallel
  {
    BackwardScratch scratch(d);
#pragma omp for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; ++bh) {
      backward_head(dqkv, dout, out, lse, qkv, bh / NH, bh % NH, d, scratch);
    }
  }
}

}  // namespace nanogpt::cpu
