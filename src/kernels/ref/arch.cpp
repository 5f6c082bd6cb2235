// Reference ops of the architecture options (ops_arch.h): QK-norm, rotary embeddings (apart and
// fused in one pass), logit soft-cap, in double per element or head vector, each output rounded
// once to its dtype.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/float16.h"
#include "kernels/ops.h"
#include "kernels/ops_arch.h"

namespace nanogpt::ref {

namespace {

double load(ConstTypedPtr p, int64_t i) {
  switch (p.dtype) {
    case DType::kF32: return static_cast<const float*>(p.data)[i];
    case DType::kBF16: return bf16_to_float(static_cast<const uint16_t*>(p.data)[i]);
    case DType::kF16: return fp16_to_float(static_cast<const uint16_t*>(p.data)[i]);
  }
  return 0;
}

void store(TypedPtr p, int64_t i, double v) {
  const float f = static_cast<float>(v);
  switch (p.dtype) {
    case DType::kF32: static_cast<float*>(p.data)[i] = f; return;
    case DType::kBF16: static_cast<uint16_t*>(p.data)[i] = float_to_bf16(f); return;
    case DType::kF16: static_cast<uint16_t*>(p.data)[i] = float_to_fp16(f); return;
  }
}

// Offset in qkv (N, 3C) of head vector j (0..2NH-1: Q's heads, then K's) of row n.
int64_t head_at(int64_t n, int j, int C, int HS) {
  return n * 3 * C + static_cast<int64_t>(j) * HS;
}

// Rotates every Q and K head vector of every row by sign * its angles.
void rotate(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0, int C,
            int NH, double sign) {
  const int HS = C / NH, half = HS / 2;
  CHECK(HS % 2 == 0, "rotary embeddings need an even head size; got {} (n_embd {} / n_head {})",
        HS, C, NH);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t p = pos0 + n % T;
    for (int j = 0; j < 2 * NH; ++j) {
      const int64_t o = head_at(n, j, C, HS);
      for (int i = 0; i < half; ++i) {
        const double c = cos[p * half + i], s = sign * sin[p * half + i];
        const double a = load(qkv, o + i), b = load(qkv, o + i + half);
        store(qkv, o + i, a * c - b * s);
        store(qkv, o + i + half, a * s + b * c);
      }
    }
  }
}

}  // namespace

void qk_rmsnorm_forward(TypedPtr qkv, float* rstd, int64_t N, int C, int NH) {
  const int HS = C / NH;
  for (int64_t n = 0; n < N; ++n) {
    for (int j = 0; j < 2 * NH; ++j) {
      const int64_t o = head_at(n, j, C, HS);
      double ss = 0;
      for (int i = 0; i < HS; ++i) ss += load(qkv, o + i) * load(qkv, o + i);
      const double r = 1.0 / std::sqrt(ss / HS + 1e-5);
      for (int i = 0; i < HS; ++i) store(qkv, o + i, load(qkv, o + i) * r);
      rstd[n * 2 * NH + j] = static_cast<float>(r);
    }
  }
}

void qk_rmsnorm_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int C,
                         int NH) {
  const int HS = C / NH;
  for (int64_t n = 0; n < N; ++n) {
    for (int j = 0; j < 2 * NH; ++j) {
      const int64_t o = head_at(n, j, C, HS);
      const double r = rstd[n * 2 * NH + j];
      double gy = 0;
      for (int i = 0; i < HS; ++i) gy += load(dqkv, o + i) * load(qkv, o + i);
      gy /= HS;
      for (int i = 0; i < HS; ++i) {
        store(dqkv, o + i, r * (load(dqkv, o + i) - load(qkv, o + i) * gy));
      }
    }
  }
}

void rotary_forward(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                    int C, int NH) {
  rotate(qkv, cos, sin, N, T, pos0, C, NH, 1.0);
}

void rotary_backward(TypedPtr dqkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                     int C, int NH) {
  rotate(dqkv, cos, sin, N, T, pos0, C, NH, -1.0);
}

void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin,
                            int64_t N, int T, int pos0, int C, int NH, float q_gain) {
  const int HS = C / NH, half = HS / 2;
  CHECK(cos == nullptr || HS % 2 == 0,
        "rotary embeddings need an even head size; got {} (n_embd {} / n_head {})", HS, C, NH);
  std::vector<double> v(static_cast<size_t>(HS));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t p = pos0 + n % T;
    for (int j = 0; j < 2 * NH; ++j) {
      const int64_t o = head_at(n, j, C, HS);
      for (int i = 0; i < HS; ++i) v[i] = load(qkv, o + i);
      if (rstd != nullptr) {
        double ss = 0;
        for (int i = 0; i < HS; ++i) ss += v[i] * v[i];
        const double r = 1.0 / std::sqrt(ss / HS + 1e-5);
        const double gain = j < NH ? double{q_gain} : 1.0;  // Q's heads first
        for (int i = 0; i < HS; ++i) v[i] *= r * gain;
        rstd[n * 2 * NH + j] = static_cast<float>(r);
      }
      if (cos != nullptr) {
        for (int i = 0; i < half; ++i) {
          const double c = cos[p * half + i], s = sin[p * half + i], a = v[i], b = v[i + half];
          v[i] = a * c - b * s;
          v[i + half] = a * s + b * c;
        }
      }
      for (int i = 0; i < HS; ++i) store(qkv, o + i, v[i]);
    }
  }
}

void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, const float* cos,
                             const float* sin, int64_t N, int T, int pos0, int C, int NH,
                             float q_gain) {
  const int HS = C / NH, half = HS / 2;
  CHECK(cos == nullptr || HS % 2 == 0,
        "rotary embeddings need an even head size; got {} (n_embd {} / n_head {})", HS, C, NH);
  std::vector<double> g(static_cast<size_t>(HS));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t p = pos0 + n % T;
    for (int j = 0; j < 2 * NH; ++j) {
      const int64_t o = head_at(n, j, C, HS);
      for (int i = 0; i < HS; ++i) g[i] = load(dqkv, o + i);
      if (rstd != nullptr) {
        const double r = rstd[n * 2 * NH + j];
        const double gain = j < NH ? double{q_gain} : 1.0;  // y = gain * the unit-RMS head
        double gy = 0;
        for (int i = 0; i < HS; ++i) gy += g[i] * load(qkv, o + i);
        gy /= HS * gain * gain;
        for (int i = 0; i < HS; ++i) g[i] = gain * r * (g[i] - load(qkv, o + i) * gy);
      }
      if (cos != nullptr) {
        for (int i = 0; i < half; ++i) {
          const double c = cos[p * half + i], s = -sin[p * half + i], a = g[i], b = g[i + half];
          g[i] = a * c - b * s;
          g[i + half] = a * s + b * c;
        }
      }
      for (int i = 0; i < HS; ++i) store(dqkv, o + i, g[i]);
    }
  }
}

void softcap_forward(float* z, int64_t N, float cap) {
  for (int64_t i = 0; i < N; ++i) z[i] = static_cast<float>(cap * std::tanh(z[i] / double{cap}));
}

void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits,
                                           const int* targets, float dloss, int64_t N, int V,
                                           int Vp, float cap) {
  std::vector<float> capped(static_cast<size_t>(Vp));  // one row of capped logits
  for (int64_t n = 0; n < N; ++n) {
    for (int v = 0; v < Vp; ++v) capped[v] = logits[n * Vp + v];
    softcap_forward(capped.data(), Vp, cap);
    float* d = dlogits + n * Vp;  // (Vp), may alias the row of logits
    crossentropy_forward_backward(losses + n, d, capped.data(), targets + n, dloss, 1, V, Vp);
    for (int v = 0; v < Vp; ++v) {
      const double t = capped[v] / double{cap};
      d[v] = static_cast<float>(d[v] * (1.0 - t * t));
    }
  }
}

}  // namespace nanogpt::ref
