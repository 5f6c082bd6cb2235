// Reference causal multi-head attention: forward (out, lse), backward recomputing the
// probabilities from lse, and single-query decode against a KV cache. Double accumulation, one
// (b, h, t) row at a time; the dropout mask is hash_uniform(seed, ((b*NH+h)*T+t)*T+s) >= p.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernels/ops.h"

namespace nanogpt::ref {

namespace {

// Dropout multiplier of attention probability (b,h,t,s): 0 or 1/(1-p); 1 when p == 0.
double attn_mask(float p, uint64_t seed, int b, int h, int t, int s, int T, int NH) {
  if (p == 0) return 1.0;
  const uint64_t idx = ((static_cast<uint64_t>(b) * NH + h) * T + t) * T + s;
  return hash_uniform(seed, idx) >= p ? 1.0 / (1.0 - p) : 0.0;
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                       float dropout_p, uint64_t seed) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  std::vector<double> score(T), acc(HS);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (static_cast<int64_t>(b) * T + t) * 3 * C + h * HS;  // (HS)
        double m = -INFINITY;
        for (int s = 0; s <= t; ++s) {
          const float* k = qkv + (static_cast<int64_t>(b) * T + s) * 3 * C + C + h * HS;
          double dot = 0;
          for (int i = 0; i < HS; ++i) dot += static_cast<double>(q[i]) * k[i];
          score[s] = dot * scale;
          m = std::max(m, score[s]);
        }
        double sum = 0;
        for (int s = 0; s <= t; ++s) sum += std::exp(score[s] - m);
        const double l = m + std::log(sum);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int s = 0; s <= t; ++s) {
          const double p = std::exp(score[s] - l) * attn_mask(dropout_p, seed, b, h, t, s, T, NH);
          const float* v = qkv + (static_cast<int64_t>(b) * T + s) * 3 * C + 2 * C + h * HS;
          for (int i = 0; i < HS; ++i) acc[i] += p * v[i];
        }
        float* o = out + (static_cast<int64_t>(b) * T + t) * C + h * HS;
        for (int i = 0; i < HS; ++i) o[i] = static_cast<float>(acc[i]);
        lse[(static_cast<int64_t>(b) * NH + h) * T + t] = static_cast<float>(l);
      }
    }
  }
}

// With P = softmax(scores), M the dropout multipliers, out = sum_s P_s M_s v_s:
//   dv_s += P_s M_s dout;  dP_s = M_s (dout . v_s);  dscore_s = P_s (dP_s - sum_r P_r dP_r);
//   dq += scale sum_s dscore_s k_s;  dk_s += scale dscore_s q.
// (sum_r P_r dP_r equals dout . out; the reference computes it from its definition.)
void attention_backward(float* dqkv, const float* dout, const float* /*out*/, const float* lse,
                        const float* qkv, int B, int T, int C, int NH, float dropout_p,
                        uint64_t seed) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  std::vector<double> prob(T), dprob(T);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const int64_t row = (static_cast<int64_t>(b) * T + t) * 3 * C;
        const float* q = qkv + row + h * HS;                                     // (HS)
        const float* d = dout + (static_cast<int64_t>(b) * T + t) * C + h * HS;  // (HS)
        const double l = lse[(static_cast<int64_t>(b) * NH + h) * T + t];
        double pdp = 0;
        for (int s = 0; s <= t; ++s) {
          const int64_t srow = (static_cast<int64_t>(b) * T + s) * 3 * C;
          const float* k = qkv + srow + C + h * HS;
          const float* v = qkv + srow + 2 * C + h * HS;
          double dot = 0, dv = 0;
          for (int i = 0; i < HS; ++i) {
            dot += static_cast<double>(q[i]) * k[i];
            dv += static_cast<double>(d[i]) * v[i];
          }
          const double mask = attn_mask(dropout_p, seed, b, h, t, s, T, NH);
          prob[s] = std::exp(dot * scale - l);
          dprob[s] = mask * dv;
          pdp += prob[s] * dprob[s];
          float* dvs = dqkv + srow + 2 * C + h * HS;
          for (int i = 0; i < HS; ++i) dvs[i] += static_cast<float>(prob[s] * mask * d[i]);
        }
        float* dq = dqkv + row + h * HS;
        for (int s = 0; s <= t; ++s) {
          const int64_t srow = (static_cast<int64_t>(b) * T + s) * 3 * C;
          const double ds = prob[s] * (dprob[s] - pdp) * scale;
          const float* k = qkv + srow + C + h * HS;
          float* dk = dqkv + srow + C + h * HS;
          for (int i = 0; i < HS; ++i) {
            dq[i] += static_cast<float>(ds * k[i]);
            dk[i] += static_cast<float>(ds * q[i]);
          }
        }
      }
    }
  }
}

void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t,
                      int C, int NH) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  std::vector<double> score(t), acc(HS);
  for (int h = 0; h < NH; ++h) {
    double m = -INFINITY;
    for (int s = 0; s < t; ++s) {
      double dot = 0;
      for (int i = 0; i < HS; ++i)
        dot += static_cast<double>(q[h * HS + i]) * kcache[s * C + h * HS + i];
      score[s] = dot * scale;
      m = std::max(m, score[s]);
    }
    double sum = 0;
    for (int s = 0; s < t; ++s) sum += std::exp(score[s] - m);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int s = 0; s < t; ++s) {
      const double p = std::exp(score[s] - m) / sum;
      for (int i = 0; i < HS; ++i) acc[i] += p * vcache[static_cast<int64_t>(s) * C + h * HS + i];
    }
    for (int i = 0; i < HS; ++i) out[h * HS + i] = static_cast<float>(acc[i]);
  }
}

}  // namespace nanogpt::ref
