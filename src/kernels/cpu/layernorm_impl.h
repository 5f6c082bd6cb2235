// The LayerNorm building blocks of kernels/cpu (internal), shared by the float32 kernels
// (layernorm.cpp) and their 16-bit forms (lowp_elementwise.cpp):
//  - layernorm_row: the one row of every LayerNorm forward (float32, fused with the residual add,
//    16-bit outputs), out-of-line so all of them give bit-identical rows and statistics (the
//    backward recomputes LayerNorm outputs with layernorm_forward and relies on that);
//  - layernorm_backward_rows: the backward over rows for any dout storage, given a function that
//    yields dout's row n as floats; the 16-bit form widens one row at a time and so computes
//    exactly what the float32 kernel computes on the widened dout.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace nanogpt::cpu {

// o (C) = (x - mean) * rstd * weight + bias (bias nullable); *mean, *rstd of x (C), eps 1e-5.
void layernorm_row(float* o, float* mean, float* rstd, const float* x, const float* weight,
                   const float* bias, int C);

// dinp (N, C, nullable) += d inp; dweight, dbias (C, nullable) += their grads. dout_row(n, buf)
// returns row n of dout as C floats (a pointer into dout, or buf (C) filled with its widened row).
// dweight/dbias are reduced through per-part partial rows summed in part order (deterministic for a
// fixed thread count, whether or not the parts run in parallel).
template <class DoutRow>
void layernorm_backward_rows(float* dinp, float* dweight, float* dbias, DoutRow dout_row,
                             const float* inp, const float* weight, const float* mean,
                             const float* rstd, int64_t N, int C) {
  // The rows are cut into one static part per available thread (as OpenMP's static schedule cuts
  // them), each part summing its own dweight/dbias partial; the partials are added in part order.
  // The partition depends only on the thread count, not on whether the parts run in parallel
  // (small calls run them on the calling thread: parallel.h).
  const int parts = std::max(1, omp_get_max_threads());
  // partial (parts, 2, C): each part's dweight and dbias sums.
  std::vector<float> partial(static_cast<size_t>(parts) * 2 * C, 0.0f);
#pragma omp parallel for schedule(static, 1) num_threads(parts) \
    if (worth_parallel(int64_t{4} * N * C))
  for (int p = 0; p < parts; ++p) {
    const int64_t q = N / parts, r = N % parts;
    const int64_t n0 = p * q + std::min<int64_t>(p, r), n1 = n0 + q + (p < r ? 1 : 0);
    float* pw = partial.data() + static_cast<size_t>(p) * 2 * C;  // (C)
    float* pb = pw + C;                                           // (C)
    std::vector<float> buf(static_cast<size_t>(C));               // a widened dout row
    for (int64_t n = n0; n < n1; ++n) {
      const float* x = inp + n * C;              // (C)
      const float* d = dout_row(n, buf.data());  // (C)
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
  for (int p = 0; p < parts; ++p) {
    const float* pw = partial.data() + static_cast<size_t>(p) * 2 * C;
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
