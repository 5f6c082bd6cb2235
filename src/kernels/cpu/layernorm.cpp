// Fast LayerNorm: forward parallel over rows (two passes over a cached row), also fused with the
// residual add that feeds it (residual_layernorm_forward); backward computes
// dinp per row and reduces dweight/dbias through per-thread partial rows summed in thread order
// (deterministic for a fixed thread count).
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/ops.h"

namespace nanogpt::cpu {

namespace {

// One row: out = (x - mean) * rstd * weight + bias (bias nullable); the one definition the plain
// and the residual-fused forward share, so both give bit-identical rows and statistics (the
// backward recomputes LayerNorm outputs with layernorm_forward and relies on that).
inline void layernorm_row(float* o, float* mean, float* rstd, const float* x, const float* weight,
                          const float* bias, int C) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int c = 0; c < C; ++c) sum += x[c];
  const float m = sum / C;
  float var = 0;
#pragma omp simd reduction(+ : var)
  for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
  const float s = 1.0f / std::sqrt(var / C + 1e-5f);
  if (bias) {
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
  } else {
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c];
  }
  *mean = m;
  *rstd = s;
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    layernorm_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C);
  }
}

// The residual add feeding the next LayerNorm, in one pass: each row of res = a + b is summed
// while it is in cache and normalized right away (one parallel region, one read of a and b).
void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    float* r = res + n * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) r[c] = a[n * C + c] + b[n * C + c];
    layernorm_row(out + n * C, mean + n, rstd + n, r, weight, bias, C);
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int C) {
  const int max_threads = omp_get_max_threads();
  // partial (threads, 2, C): each thread's dweight and dbias sums.
  std::vector<float> partial(static_cast<size_t>(max_threads) * 2 * C, 0.0f);
  int used_threads = 1;
#pragma omp parallel
  {
    const int tid = omp_get_thread_num();
#pragma omp single
    used_threads = omp_get_num_threads();
    float* pw = partial.data() + static_cast<size_t>(tid) * 2 * C;  // (C)
    float* pb = pw + C;                                             // (C)
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const float* x = inp + n * C;   // (C)
      const float* d = dout + n * C;  // (C)
      const float m = mean[n], s = rstd[n];
      float g_sum = 0, gx_sum = 0;
#pragma omp simd reduction(+ : g_sum, gx_sum)
      for (int c = 0; c < C; ++c) {
        const float xhat = (x[c] - m) * s;
        const float g = d[c] * weight[c];
        g_sum += g;
        gx_sum += g * xhat;
        pw[c] += d[c] * xhat;
        pb[c] += d[c];
      }
      const float g_mean = g_sum / C, gx_mean = gx_sum / C;
      if (dinp) {
        float* di = dinp + n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) {
          const float xhat = (x[c] - m) * s;
          di[c] += s * (d[c] * weight[c] - g_mean - xhat * gx_mean);
        }
      }
    }
  }
  for (int t = 0; t < used_threads; ++t) {
    const float* pw = partial.data() + static_cast<size_t>(t) * 2 * C;
    if (dweight) {
#pragma omp simd
      for (int c = 0; c < C; ++c) dweight[c] += pw[c];
    }
    if (dbias) {
#pragma omp simd
      for (int c = 0; c < C; ++c) dbias[c] += pw[C + c];
    }
  }
}

}  // namespace nanogpt::cpu
